"""conformance.engines: choosing an engine by name, import path or entry point, and the
one-line errors for everything that can go wrong (clear before a run starts)."""
from __future__ import annotations

import sys

import pytest

from conformance.engines import EngineError, load_engine
from conformance.engines.base import Engine
from conformance.engines.torchlike import ALL_CAPABILITIES, TorchLike, nest
from conformance.spec.capabilities import FINER
from conformance.spec.reader import CAPABILITIES
from conformance.specdoc import spec_dir

MOD = "tests.conformance.test_executor"


def test_torch_by_name():
    e = load_engine("torch")
    assert isinstance(e, TorchLike) and e.name == "torch" and e.device == "cpu"
    assert e.version.startswith("2.") and e.render_prelude() == "import torch"


# a pass through a Python-written formula: abs's gradient differentiated again with
# create_graph imports torch._dynamo in torch 2.13 (torch/_compile.py, _disable_dynamo)
_DYNAMO_PASS = ("import torch\n"
                "x = torch.tensor([1.0, -0.375, 1.25], dtype=torch.float64, requires_grad=True)\n"
                "g, = torch.autograd.grad(x.abs().sum(), x, create_graph=True)\n"
                "before = set(sys.modules)\n"
                "(g * x).sum().backward(create_graph=True)\n"
                "print(sorted(m for m in set(sys.modules) - before if 'dynamo' in m)[:3])\n")


@pytest.mark.parametrize("forking, imported_by_the_pass", [
    (True, "[]"),           # paid before forking: the pass imports nothing of dynamo's
    (False, "['torch._dynamo', "),      # why: without it, the pass imports it
])
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers fork on Linux only")
def test_torch_pays_its_lazy_imports_before_workers_start(forking, imported_by_the_pass):
    """The first backward given a gradient tensor imports sympy (at load: seconds), and the
    first through one of torch's Python-written formulas torch._dynamo (1 s): paid before a
    campaign forks its workers (campaign/process.py, PRELOAD), so that no program's timeout
    pays them and no worker pays them again; neither starts a thread in the process that
    forks. A load alone, which forks nothing, does not pay the second."""
    import subprocess
    code = ("import os, sys\nfrom conformance.engines import load_engine\n"
            "load_engine('torch')\n"
            "assert 'torch.fx.experimental.symbolic_shapes' in sys.modules, 'not at load'\n"
            "assert 'torch._dynamo' not in sys.modules, 'dynamo at load'\n"
            + ("from conformance.campaign.process import context\n"
               "threads = len(os.listdir('/proc/self/task'))\n"
               "assert context(['refimpl', 'torch'], 'cpu').get_start_method() == 'fork'\n"
               "assert len(os.listdir('/proc/self/task')) == threads, 'a thread started'\n"
               if forking else "") + _DYNAMO_PASS)
    r = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().startswith(imported_by_the_pass), r.stdout


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
    assert set(rows) == set(CAPABILITIES)
    # the finer ones (spec/capabilities.py) are implied by the coarse ones torch declares
    assert set(CAPABILITIES) - set(FINER) == ALL_CAPABILITIES


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


# ---- what each capability needs (engines/base.py: NEEDS) ---------------------------------------

class _Minimal(Engine):
    """The abstract methods and nothing else: `core` needs `data` and `autograd_backward` too."""
    capabilities = frozenset({"core"})

    def leaf(self, values, shape, dtype, requires_grad): ...
    def call(self, fn, args, kw): ...
    def detach(self, t): ...
    def requires_grad_(self, t, value): ...
    def backward(self, t, gradient, retain_graph, inputs): ...
    def set_grad(self, t, value): ...
    def to_list(self, t): ...
    def get_grad(self, t): ...
    def is_leaf(self, t): ...
    def requires_grad(self, t): ...
    def shape(self, t): ...
    def dtype(self, t): ...


class _Core(_Minimal):
    def data(self, t): ...
    def autograd_backward(self, tensors, grad_tensors, retain_graph): ...


class _HooksDeclared(_Core):
    capabilities = frozenset({"core", "hooks", "views"})

    def register_hook(self, t, fn): ...
    def view(self, target, fn, kw): ...


class _GradBeforeCreateGraph(TorchLike):
    """A torch-shaped adapter written before create_graph: it inherits the capability from
    TorchLike but overrides backward and autograd_grad without the keyword."""

    def __init__(self):
        import torch
        super().__init__(torch, "old-adapter")

    def backward(self, t, gradient, retain_graph, inputs):
        super().backward(t, gradient, retain_graph, inputs)

    def autograd_grad(self, outputs, inputs, grad_outputs, retain_graph, allow_unused):
        return super().autograd_grad(outputs, inputs, grad_outputs, retain_graph, allow_unused)


def minimal(device="cpu"):
    return _Minimal()


def grad_before_create_graph(device="cpu"):
    return _GradBeforeCreateGraph()


def core(device="cpu"):
    return _Core()


def hooks_declared(device="cpu"):
    return _HooksDeclared()


HERE = "tests.conformance.test_engines"


@pytest.mark.parametrize("factory, lacking", [
    ("minimal", "core: data; core: autograd_backward"),
    ("hooks_declared", "hooks: remove_hook; views: getitem"),
    ("grad_before_create_graph",
     "create_graph: backward(create_graph=...); create_graph: autograd_grad(create_graph=...)"),
])
def test_a_declared_capability_must_have_its_methods(factory, lacking):
    with pytest.raises(EngineError) as info:
        load_engine(f"{HERE}:{factory}")
    text = str(info.value)
    assert "\n" not in text and lacking in text and "docs/engines.md" in text


def test_the_core_methods_are_enough_for_core():
    assert load_engine(f"{HERE}:core").capabilities == {"core"}


def test_every_shipped_engine_implements_what_it_declares():
    from conformance.engines import builtin_names
    from conformance.engines.base import unimplemented
    for name in builtin_names():
        try:
            e = load_engine(name)       # load_engine itself refuses one that does not
        except EngineError as exc:
            assert "declares capabilities" not in str(exc), exc
            continue
        assert unimplemented(e, e.capabilities) == [], name


def test_the_third_party_adapters_declare_no_adapter_artifacts():
    """docs/findings.md, P14 and C5: Paddle declares no post-accumulate hooks (it has no public
    one; declaring them without the method is refused at load), and torch-compile's regions
    take `.data` inside instead of passing an alias of another input."""
    from conformance.engines import compiled, paddle  # both import their engine lazily
    from conformance.engines.base import unimplemented
    assert "data" in compiled._ATTRIBUTES and "post_accumulate_hooks" in compiled.CAPABILITIES
    assert "post_accumulate_hooks" not in paddle.CAPABILITIES
    assert paddle.PaddleEngine.register_post_accumulate_grad_hook is \
        Engine.register_post_accumulate_grad_hook
    pytest.importorskip("paddle", reason="paddlepaddle is not installed (extra 'paddle')")
    e = load_engine("paddle")
    assert unimplemented(e, {"post_accumulate_hooks"}) == [
        "post_accumulate_hooks: register_post_accumulate_grad_hook"]


def test_the_table_of_needs_covers_what_the_statements_call():
    """Every engine method a statement kind's code calls (`x.e.METHOD(`) or an observable
    reads is in NEEDS under one of the capabilities the kind (or observable) needs, and every
    method NEEDS names is one of Engine's: the table cannot drift from the kinds."""
    import inspect
    import re

    from conformance.engines.base import NEEDS
    from conformance.kinds import KINDS
    from conformance.kinds.observe import TABLE
    for cap, methods in NEEDS.items():
        assert all(callable(getattr(Engine, m, None)) for m in methods), cap
    ignore = {"classify_error", "classify_warning"}      # with defaults: every engine has them
    for name, k in KINDS.items():
        called = set(re.findall(r"\bx\.e\.(\w+)\(", inspect.getsource(type(k)))) - ignore
        allowed = {m for c in ("core", *k.caps, *k.optional_caps) for m in NEEDS.get(c, ())}
        assert called <= allowed, (name, sorted(called - allowed))
    for what, o in TABLE.items():
        probe = _Recorder()
        o.read(probe, object())
        allowed = {m for c in ("core", o.cap) for m in NEEDS.get(c, ())}
        assert set(probe.calls) <= allowed, (what, probe.calls)


class _Recorder:
    """An engine stand-in that records which methods are called."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def method(*args, **kw):
            self.calls.append(name)
            return [] if name in ("shape", "next_functions") else None
        return method


class _Narrowed(TorchLike):
    """A subclass that declares its capabilities as any Engine does, as a class attribute."""
    capabilities = frozenset({"core", "hooks", "views"})


class _NarrowedBadly(TorchLike):
    capabilities = frozenset({"core", "bogus_cap"})


def narrowed(device="cpu"):
    import torch
    return _Narrowed(torch, "narrowed", device)


def narrowed_badly(device="cpu"):
    import torch
    return _NarrowedBadly(torch, "narrowed-badly", device)


def test_a_torchlike_subclass_declares_capabilities_as_a_class_attribute():
    """TorchLike set every capability on the instance, hiding a subclass's own declaration
    (and an unknown name in it): the class attribute holds, and is checked, as an argument is."""
    here = "tests.conformance.test_engines"
    assert load_engine(f"{here}:narrowed").capabilities == {"core", "hooks", "views"}
    with pytest.raises(EngineError, match="unknown capabilities bogus_cap"):
        load_engine(f"{here}:narrowed_badly")
    import torch
    assert TorchLike(torch, "t").capabilities == ALL_CAPABILITIES
    assert TorchLike(torch, "t", capabilities={"core"}).capabilities == {"core"}


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="a CUDA build")
def test_a_torchlike_engine_on_cuda_without_cuda_does_not_load():
    with pytest.raises(EngineError, match="CUDA is not available"):
        load_engine("tests.conformance.test_engines:narrowed", "cuda")
