"""Loading the third-party adapters: by import path, and one clear line when the engine is
missing (these tests need neither paddle nor a working torch.compile)."""
from __future__ import annotations

import importlib.util

import pytest

from conformance.engines import EngineError, load_engine
from conformance.engines import compiled as compiled_mod
from conformance.engines import paddle as paddle_mod


def test_paddle_missing_is_one_line(monkeypatch):
    def broken():
        raise ImportError("No module named 'paddle'")
    monkeypatch.setattr(paddle_mod, "_import_paddle", broken)
    with pytest.raises(EngineError) as info:
        paddle_mod.paddle_engine()
    msg = str(info.value)
    assert "\n" not in msg and "cannot import paddle" in msg and "'paddle' extra" in msg


def test_compile_on_missing_cuda_is_one_line():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(EngineError) as info:
        compiled_mod.compiled_engine(device="cuda")
    assert "\n" not in str(info.value) and "CUDA" in str(info.value)


@pytest.mark.parametrize("spec,module", [
    ("conformance.engines.paddle:paddle_engine", "paddle"),
    ("conformance.engines.compiled:compiled_engine", "torch"),
])
def test_load_by_import_path(spec, module):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    engine = load_engine(spec)
    assert engine.name in ("paddle", "torch-compile") and engine.device == "cpu"
    assert "core" in engine.capabilities
