"""The backend seam: the spec examples on a second array namespace
(array_api_strict) and on cupy where a CUDA GPU is present; nothing outside refimpl/backend.py
imports an array library; device='cuda' without cupy fails clearly."""
import ast
import importlib.util
import pathlib

import pytest

import refimpl
from conformance.examples import run_example
from conformance.specdoc import load_spec
from refimpl import backend

EXAMPLES = [ex for c in load_spec().clauses.values() for ex in c.examples]
REFIMPL = pathlib.Path(refimpl.__file__).parent


@pytest.fixture
def cpu_namespace():
    """Switch refimpl's CPU arrays to another namespace for one test, then back."""
    before = backend.cpu_namespace()
    yield backend.use_cpu_namespace
    backend.use_cpu_namespace(before)


@pytest.mark.parametrize("example", EXAMPLES, ids=[ex.id for ex in EXAMPLES])
def test_spec_example_on_array_api_strict(example, cpu_namespace):
    pytest.importorskip("array_api_strict", reason="array_api_strict is not installed")
    cpu_namespace("array_api_strict")
    failures = run_example(example, refimpl)
    assert refimpl.ones(1)._data.__class__.__module__.startswith("array_api_strict")
    assert not failures, "array_api_strict:\n" + "\n".join(map(str, failures))


def _cuda_or_skip():
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("cupy is not installed: the cupy runs need cupy and a CUDA GPU")
    import cupy
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no driver
        pytest.skip(f"cupy is installed but no CUDA GPU is usable: {exc}")
    if n == 0:
        pytest.skip("cupy is installed but no CUDA GPU was found")


@pytest.mark.gpu
@pytest.mark.parametrize("example", EXAMPLES, ids=[ex.id for ex in EXAMPLES])
def test_spec_example_on_cupy(example):
    _cuda_or_skip()
    refimpl.set_default_device("cuda")
    try:
        assert refimpl.ones(1).device.type == "cuda"
        failures = run_example(example, refimpl)
    finally:
        refimpl.set_default_device("cpu")
    assert not failures, "cupy:\n" + "\n".join(map(str, failures))


def test_cuda_without_cupy_raises_a_clear_error():
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("cupy is installed here")
    with pytest.raises(RuntimeError, match="needs cupy"):
        refimpl.ones(2, device="cuda")


def test_only_the_backend_imports_an_array_library():
    for path in sorted(REFIMPL.rglob("*.py")):
        if path.name == "backend.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for n in names:
                assert n.split(".")[0] not in {"numpy", "cupy", "array_api_strict"}, (
                    f"{path.relative_to(REFIMPL.parent)} imports {n}; only backend.py may")
