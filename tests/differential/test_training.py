"""Training-loop patterns: optimizer-style updates of leaves between backward passes."""
from __future__ import annotations

import pytest

ALPHAS = ("2", "-0.5", "0", "True", "False", "torch.tensor(2.0)", "torch.tensor(True)",
          "torch.tensor([2.0])", "None", "1j")


@pytest.mark.clause("VER-13")
@pytest.mark.parametrize("alpha", ALPHAS)
def test_alpha_of_add_and_sub_checked_as_torch_checks_it(differential, alpha):
    """torch takes a number or a 0-d tensor as `alpha`; a bool only for a bool result, a float
    not for an integer one, a complex number never. An optimizer step
    `p.add_(p.grad, alpha=-lr)` under no_grad leaves the graph that `add` recorded usable."""
    def prog(torch, log):
        a = eval(alpha, {"torch": torch})
        for dt in (torch.float32, torch.float64, torch.int64):
            x = torch.tensor([1, 0, 1], dtype=dt)
            for op in ("add", "sub", "add_", "sub_"):
                log.attempt(f"{dt} {op}", lambda op=op, x=x, dt=dt: log(
                    f"{dt} {op} value", getattr(x.clone(), op)(x, alpha=a)))
            log.attempt(f"{dt} add scalar", lambda x=x: log("value", x.add(2, alpha=a)))
        p = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
        w = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
        y = log.attempt("forward", lambda: p.add(w, alpha=a).sum())
        if y is not None:
            log.attempt("backward", lambda: y.backward(retain_graph=True))
            log("grads", [p.grad, w.grad])
        with torch.no_grad():
            log.attempt("step", lambda: p.add_(torch.ones(3), alpha=a))
        log("p", [p, p._version])
        if y is not None:
            log.attempt("stale backward", lambda: y.backward())
            log("w.grad", w.grad)
        leaf = torch.tensor([1.0, 2.0], requires_grad=True)
        log.attempt("update outside no_grad", lambda: leaf.sub_(torch.ones(2), alpha=a))
    differential(prog)


SHAPES = {(): True, (3,): [True, False, True], (2, 2): [[True, False], [False, True]]}


@pytest.mark.clause("VER-13")
@pytest.mark.parametrize("shape", list(SHAPES))
def test_alpha_of_a_bool_add_keeps_a_bool_result(differential, shape):
    """A bool tensor plus a Python bool is a bool, and stays one with any alpha torch takes for
    it (True, False, 0, 2: a | (b & alpha)), in the method, function, in-place and operator
    forms; a bool times a bool is a bool too."""
    def prog(torch, log):
        b = torch.tensor(SHAPES[shape])
        for s in (True, False, torch.tensor(False), b):
            for alpha in (None, True, False, 0, 1, 2, 1.5):
                kw = {} if alpha is None else {"alpha": alpha}
                forms = {"b.add": lambda s=s, kw=kw: b.add(s, **kw),
                         "torch.add": lambda s=s, kw=kw: torch.add(b, s, **kw),
                         "b.add_": lambda s=s, kw=kw: b.clone().add_(s, **kw)}
                for label, form in forms.items():
                    r = log.attempt(f"{s!r} {label} {kw}", form)
                    if r is not None:
                        log(f"{s!r} {label} {kw} result", [str(r.dtype), r.tolist()])
            for label, form in {"b + s": lambda s=s: b + s, "s + b": lambda s=s: s + b,
                                "b * s": lambda s=s: b * s, "s * b": lambda s=s: s * b}.items():
                r = log.attempt(f"{s!r} {label}", form)
                if r is not None:
                    log(f"{s!r} {label} result", [str(r.dtype), r.tolist()])
    differential(prog)


@pytest.mark.clause("VER-13")
@pytest.mark.parametrize("alpha", ("True", "1.5", "1j", "2"))
def test_alpha_is_checked_after_the_operands_shapes_and_the_result_dtype(differential, alpha):
    """torch checks alpha against the result's dtype once its TensorIterator is built: operands
    that do not broadcast, an in-place target whose shape or dtype cannot take the result, and
    an in-place target with elements sharing memory are refused first."""
    def prog(torch, log):
        a = eval(alpha)
        i64, b = torch.int64, torch.bool
        cases = {"f32[2] f32[3]": (torch.ones(2), torch.ones(3)),
                 "i64[2] f32[3]": (torch.ones(2, dtype=i64), torch.ones(3)),
                 "b[2] b[3]": (torch.ones(2, dtype=b), torch.ones(3, dtype=b)),
                 "i64[1] i64[3]": (torch.ones(1, dtype=i64), torch.ones(3, dtype=i64)),
                 "i64[3] f32[3]": (torch.ones(3, dtype=i64), torch.ones(3)),
                 "i64[] f32[]": (torch.tensor(1), torch.tensor(2.0)),
                 "b[3] 1": (torch.ones(3, dtype=b), 1), "b[3] 2.0": (torch.ones(3, dtype=b), 2.0),
                 "i64 2.0": (torch.tensor([1, 2]), 2.0), "b[] b[1]": (torch.tensor(True),
                                                                      torch.tensor([True])),
                 "expanded i64 f32": (torch.ones(3, dtype=i64).expand(2, 3), torch.ones(3)),
                 "expanded b 1": (torch.ones(3, dtype=b).expand(2, 3), 1)}
        for label, (x, y) in cases.items():
            for op in ("add", "sub", "add_", "sub_"):
                target = x.clone() if op.endswith("_") and "expanded" not in label else x
                r = log.attempt(f"{label} {op}", lambda op=op, t=target, y=y:
                                getattr(t, op)(y, alpha=a))
                if r is not None:
                    log(f"{label} {op} result", [str(r.dtype), r.tolist()])
    differential(prog)
