"""The definition package's faces: every public name resolves, and the package's face stays
light (the compiled model loads without the parser or the compiler)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

FACES = [
    "shared.definition",
    "shared.definition.conditions",
    "shared.definition.foreach",
    "shared.definition.templating",
]


@pytest.mark.parametrize("face", FACES)
def test_every_public_name_resolves(face: str) -> None:
    module = importlib.import_module(face)
    assert module.__all__
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{face}.{name}"


def test_the_compiled_model_loads_without_the_compiler() -> None:
    code = (
        "import sys, shared.definition.workflow, shared.definition;"
        "print(sorted(m for m in sys.modules if m.startswith('shared.definition.')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "shared.definition.workflow" in loaded
    assert "compiler" not in loaded
    assert "parsing" not in loaded
