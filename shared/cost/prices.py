"""The price table: what an hour on each queue's hardware and a storage request cost.

Set ``DAGQ_PRICES`` to a JSON or YAML file (or inline JSON) of this shape::

    currency: USD
    queues:
      gpu: {gpus: 1, gpu_hour: 0.526}    # per GPU-hour; a task's own ``gpus`` wins
      cpu: {slot_hour: 0.10}             # per task-slot hour
    default: {slot_hour: 0.10}           # queues not listed
    storage: {per_10k_requests: 0.05}
    vms: {Standard_NC4as_T4_v3: 0.526}   # per VM-hour, for the pool's VM-hours

The defaults below are illustrative list prices (docs/cost.md says where they come from); put
your region's and contract's figures in the file. Without a file, the ``gpu`` queue's price is
derived from the GPU pool's VM size (``DAGQ_GPU_VM_SKU``, which the deployment sets): the VM's
hourly list price divided by its GPUs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared.errors import ConfigError


@dataclass(frozen=True)
class VmSize:
    """An Azure GPU VM size: its GPUs and its hourly list price (USD)."""

    gpus: int
    hour_price: float


VM_SIZES: dict[str, VmSize] = {
    # Pay-as-you-go Linux list prices, East US, from Azure's VM pricing page
    # (azure.microsoft.com/pricing/details/virtual-machines/linux/); approximate, and they change.
    # Spot prices are far lower and vary: put yours in DAGQ_PRICES.
    "Standard_NC4as_T4_v3": VmSize(1, 0.526),
    "Standard_NC8as_T4_v3": VmSize(1, 0.752),
    "Standard_NC16as_T4_v3": VmSize(1, 1.204),
    "Standard_NC64as_T4_v3": VmSize(4, 4.352),
    "Standard_NC24ads_A100_v4": VmSize(1, 3.673),
    "Standard_NC48ads_A100_v4": VmSize(2, 7.346),
    "Standard_NC96ads_A100_v4": VmSize(4, 14.692),
}
DEFAULT_VM_SKU = "Standard_NC4as_T4_v3"
"""The GPU pool's default size (infra/modules/gpu-vmss.bicep, ``vmSku``)."""


def gpu_hour_price(vm_sku: str | None) -> float:
    """One GPU-hour on ``vm_sku`` (its hourly price / its GPUs); an unknown or missing size: the
    default pool size's."""
    size = VM_SIZES.get(vm_sku or DEFAULT_VM_SKU, VM_SIZES[DEFAULT_VM_SKU])
    return round(size.hour_price / size.gpus, 4)


class _Prices(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class QueuePrice(_Prices):
    """What running on one queue's hardware costs."""

    gpus: int = Field(default=0, ge=0, le=64)
    """GPUs one task gets on this queue (0: a CPU queue), unless the task says ``gpus``."""
    gpu_hour: float = Field(default=gpu_hour_price(None), ge=0)
    """Price of one GPU for one hour (default: the default GPU pool size's, per GPU)."""
    slot_hour: float = Field(default=0.10, ge=0)
    """Price of one task slot for one hour, on a queue without GPUs."""


class StoragePrice(_Prices):
    """What storage requests cost (a blend of queue, blob and table transaction prices)."""

    per_10k_requests: float = Field(default=0.05, ge=0)


class PriceTable(_Prices):
    """Prices per queue (``default`` for queues not listed) and of storage requests."""

    currency: str = Field(default="USD", max_length=8)
    queues: dict[str, QueuePrice] = Field(
        default_factory=lambda: {"gpu": QueuePrice(gpus=1), "cpu": QueuePrice()}
    )
    default: QueuePrice = Field(default_factory=QueuePrice)
    storage: StoragePrice = Field(default_factory=StoragePrice)
    vms: dict[str, Annotated[float, Field(ge=0)]] = Field(default_factory=dict)
    """Price of one hour of a VM size, for the pool's VM-hours (a size not listed: its list price
    in ``VM_SIZES``, if there is one)."""

    def of(self, queue: str) -> QueuePrice:
        """The price of ``queue``'s hardware."""
        return self.queues.get(queue, self.default)

    def vm_hour(self, vm_size: str) -> float | None:
        """The price of one hour of ``vm_size`` (None: a size with no price)."""
        if vm_size in self.vms:
            return self.vms[vm_size]
        known = VM_SIZES.get(vm_size)
        return None if known is None else known.hour_price


DEFAULT_PRICES = PriceTable()
MAX_PRICE_FILE_BYTES = 1024 * 1024


def default_prices(vm_sku: str | None = None) -> PriceTable:
    """The defaults, with the ``gpu`` queue priced from the pool's VM size."""
    if not vm_sku or vm_sku not in VM_SIZES:
        return DEFAULT_PRICES
    gpu = QueuePrice(gpus=1, gpu_hour=gpu_hour_price(vm_sku))
    return DEFAULT_PRICES.model_copy(update={"queues": {**DEFAULT_PRICES.queues, "gpu": gpu}})


def load_prices(spec: str | None, vm_sku: str | None = None) -> PriceTable:
    """The price table of ``DAGQ_PRICES``: None or empty -> the defaults (the ``gpu`` queue at
    ``vm_sku``'s price per GPU, ``DAGQ_GPU_VM_SKU``); text starting with ``{`` -> inline JSON;
    anything else -> a JSON or YAML file's path. Raises ConfigError saying what is wrong and
    where."""
    if not spec or not spec.strip():
        return default_prices(vm_sku)
    where = "DAGQ_PRICES"
    text = spec
    if not spec.lstrip().startswith("{"):
        path = Path(spec)
        where = f"DAGQ_PRICES file {path}"
        try:
            with path.open("rb") as handle:
                raw = handle.read(MAX_PRICE_FILE_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"{where}: cannot read it: {exc.strerror or exc}") from None
        if len(raw) > MAX_PRICE_FILE_BYTES:
            raise ConfigError(f"{where}: larger than {MAX_PRICE_FILE_BYTES} bytes")
        text = raw.decode("utf-8", "replace")
    try:
        data = yaml.safe_load(text) if where != "DAGQ_PRICES" else json.loads(text)
        return PriceTable.model_validate(data)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{where}: not valid JSON or YAML: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ConfigError(f"{where}: {loc}: {first['msg']}") from None
