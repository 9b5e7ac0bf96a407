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
