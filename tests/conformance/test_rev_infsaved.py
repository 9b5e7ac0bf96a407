"""Review: INFERENCE_SAVED vs an error of no kind is opened even where the shapes fit."""
import copy
from conformance.compare import compare
from conformance.engines import load_engine
from conformance.executor import execute
from conformance.program import Program
from conformance.program import Stmt as S
from tests.conformance.test_executor import leaf, obs


def test_fitting_shapes_inference_saved_vs_other_is_hidden():
    torch_engine = load_engine("torch")
    p = Program([
        leaf("x", [1.0, 2.0], [2], rg=True),
        S("mode", params={"mode": "inference_mode"},
          body=[leaf("a", [3.0, 3.0], [2], rg=False)]),
        S("call", out="y", args=["x", "a"], params={"fn": "mul", "kw": {}}),   # shapes fit
        obs("x", "value")])
    o = execute(p, torch_engine)
    assert o.by_path()["2"].error == "INFERENCE_SAVED"       # INFER-5: specified
    assert not o.by_path()["2"].inference_operand          # shapes fit: no flag
    e = copy.deepcopy(o)
    e.by_path()["2"].error = "OTHER"                         # an engine's wrong error
    e.by_path()["2"].message = "some unrelated failure"
    # INFER-5 specifies INFERENCE_SAVED here (shapes fit); UNSPEC-10 opens only shapes that do not
    assert [d.path for d in compare(p, o, e)] == ["2"]
