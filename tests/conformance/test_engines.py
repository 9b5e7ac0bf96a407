"""conformance.engines: choosing an engine by name, import path or entry point, and the
one-line errors for everything that can go wrong (clear before a run starts)."""
from __future__ import annotations

import pytest

from conformance.engines import EngineError, load_engine
from conformance.engines.base import Engine
from conformance.engines.torchlike import ALL_CAPABILITIES, TorchLike, nest
from conformance.specdoc import spec_dir

MOD = "tests.conformance.test_executor"


def test_torch_by_name():
    e = load_engine("torch")
    assert isinstance(e, TorchLike) and e.name == "torch" and e.device == "cpu"
    assert e.version.startswith("2.") and e.render_prelude() == "import torch"


def test_import_path_factory_gets_the_device():
    e = load_engine(f"{MOD}:no_leaf_check")
    assert isinstance(e, Engine) and e.name == "noleafcheck"
    assert e.render_prelude() is None   # a subclass changes behaviour: repro is a replay


@pytest.mark.parametrize("spec, device, words", [
    ("nope", None, "unknown engine 'nope'"),
    ("torch", "tpu", "unknown device 'tpu'"),
    ("no.such.module:f", None, "cannot import no.such.module"),
    (f"{MOD}:missing", None, "has no attribute 'missing'"),
    (f"{MOD}:MOD", None, "is not callable"),
    (f"{MOD}:not_an_engine", None, "not an Engine"),
    (f"{MOD}:failing_factory", None, "factory failed on cpu: ImportError: libfoo.so"),
    ("", None, "no engine named"),
])
def test_bad_engines_fail_in_one_line(spec, device, words):
    with pytest.raises(EngineError) as info:
        load_engine(spec, device)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_cuda_fails_clearly_without_a_gpu():
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(EngineError, match="CUDA is not available") as info:
        load_engine("torch", "cuda")
    assert "\n" not in str(info.value)
    with pytest.raises(EngineError, match="refimpl' on cuda") as info:
        load_engine("refimpl", "cuda")
    assert "\n" not in str(info.value)


def test_capability_vocabulary_matches_the_spec():
    text = (spec_dir() / "README.md").read_text(encoding="utf-8")
    section = text.split("## Capability vocabulary", 1)[1].split("\n## ", 1)[0]
    rows = [ln.split("|")[1].strip() for ln in section.splitlines()
            if ln.startswith("| ") and not ln.startswith("| capability")]
    assert set(rows) == ALL_CAPABILITIES


def test_nest():
    assert nest([1.0], []) == 1.0
    assert nest([1, 2, 3, 4, 5, 6], [2, 3]) == [[1, 2, 3], [4, 5, 6]]
    assert nest([], [0, 2]) == []


def test_entry_point_engines(monkeypatch):
    from importlib.metadata import EntryPoint

    import conformance.engines as engines
    eps = [EntryPoint("fake", f"{MOD}:no_leaf_check", "gradspec.engines"),
           EntryPoint("broken", "no.such.module:engine", "gradspec.engines")]
    monkeypatch.setattr(engines.metadata, "entry_points", lambda group: eps)
    assert load_engine("fake").name == "noleafcheck"
    with pytest.raises(EngineError, match="cannot load entry point no.such.module") as info:
        load_engine("broken")
    assert "\n" not in str(info.value)
    assert load_engine("torch").name == "torch"    # a broken plugin breaks nothing else
