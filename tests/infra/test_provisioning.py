"""A GPU VM's first boot from the rendered user-data, run in a sandbox (tests/infra/
provisioning_sandbox.py): what it installs, enables and whether it reboots, with the NVIDIA driver
install on and off. The driver's switch is rendered by ARM, so this is where string(true) == 'True'
would show: the driver script compared it with "true" and skipped the install."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.infra.provisioning_sandbox import FirstBoot, first_boot
from tests.infra.rendering import SAMPLE_PARAMS, gpu_pool, render


def boot(tmp_path: Path, **params: object) -> FirstBoot:
    cloud_init = yaml.safe_load(render(gpu_pool(**params)))
    result = first_boot(cloud_init, tmp_path)
    assert result.failures == []
    return result


def test_with_the_driver_on_it_installs_the_driver_and_nvidia_smi_then_reboots(
    tmp_path: Path,
) -> None:
    result = boot(tmp_path, installNvidiaDriver=True)
    assert result.ran("ubuntu-drivers install --gpgpu")
    # nvidia-smi (the agent's GPU detection) comes with the utils of the installed branch.
    assert result.ran("apt-get install -y nvidia-utils-550-server")
    assert result.reboots
    # The workers are enabled for the boot after, not started on a machine without the module.
    for queue in SAMPLE_PARAMS["queues"]:
        assert f"systemctl enable dagq-worker@{queue}.service" in result.calls
        assert f"systemctl enable --now dagq-worker@{queue}.service" not in result.calls


def test_with_the_driver_off_it_starts_the_workers_at_once_without_a_reboot(
    tmp_path: Path,
) -> None:
    result = boot(tmp_path, installNvidiaDriver=False)
    assert not result.ran("ubuntu-drivers")
    assert not result.ran("apt-get install -y nvidia-utils")
    assert not result.reboots
    for queue in SAMPLE_PARAMS["queues"]:
        assert f"systemctl enable --now dagq-worker@{queue}.service" in result.calls


def test_every_boot_installs_the_agent_and_the_task_firewall(tmp_path: Path) -> None:
    result = boot(tmp_path)
    assert result.ran("apt-get install -y python3 python3-venv")
    assert result.ran("python3 -m venv")
    assert any(call.startswith("pip install --quiet -c") for call in result.calls)
    assert "systemctl enable --now dagq-task-firewall.service" in result.calls
    assert (result.root / "etc/dagq/worker.env").stat().st_mode & 0o777 == 0o600
