"""Differential tests for RETAIN-1 .. RETAIN-8 (spec/retain.md): `retain_grad()`, retained
gradients under hooks, in-place ops and `autograd.grad`, and the non-leaf `.grad` warning.

Each program probes its clause from another angle than the spec example (float64, broadcasting,
views, repeated passes); torch's log is the expected one.
"""
import pytest

from tests.differential.test_function import _twice


@pytest.mark.clause("RETAIN-1")
def test_retained_grads_float64_broadcast_and_view(differential):
    def prog(torch, log):
        x = torch.tensor([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]], dtype=torch.float64,
                         requires_grad=True)
        b = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64, requires_grad=True)
        h = (x + b).tanh()              # broadcast add, then a non-linear op
        r = h.reshape(3, 2)             # a view of a non-leaf
        loss = (r * r).sum()
        for t in (h, r, loss):
            t.retain_grad()
        loss.backward()
        log("loss.grad", loss.grad)
        log("r.grad", r.grad)
        log("h.grad", h.grad)
        log("h.grad shape", list(h.grad.shape))
        log("h.grad is float64", h.grad.dtype == torch.float64)
        log("b.grad", b.grad)
        log("reading h.grad", log.attempt("h.grad read", lambda: h.grad) is not None)
    differential(prog)


@pytest.mark.clause("RETAIN-2")
def test_retain_grad_rejected_without_requires_grad(differential):
    def prog(torch, log):
        w = torch.ones(3, requires_grad=True)
        with torch.no_grad():
            nog = w * 2
        log.attempt("no_grad result", lambda: nog.retain_grad())
        log.attempt("float64 constant", lambda: torch.zeros(2, dtype=torch.float64).retain_grad())
        log.attempt("op on constants", lambda: (torch.ones(2) + torch.ones(2)).retain_grad())
        log.attempt("view of a detached tensor", lambda: w.detach()[1:].retain_grad())
        log.attempt("non-leaf that requires grad", lambda: (w * 2).retain_grad())
    differential(prog)


@pytest.mark.clause("RETAIN-3")
def test_retain_grad_on_leaf_changes_nothing(differential):
    def prog(torch, log):
        w = torch.tensor([0.5, -1.5], dtype=torch.float64, requires_grad=True)
        log("retains_grad before", w.retains_grad)
        log.attempt("retain_grad on leaf", lambda: w.retain_grad())
        log("retains_grad after", w.retains_grad)
        for _ in range(2):
            (w.exp() * 2).sum().backward()
        log("w.grad after two passes", w.grad)
        log("is_leaf", w.is_leaf)
        log.attempt("reading leaf grad", lambda: w.grad)
    differential(prog)


@pytest.mark.clause("RETAIN-4")
def test_retained_grad_accumulates_and_resets(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, -1.0, 2.0], requires_grad=True)
        y = x.sin()
        y.retain_grad()
        z = (y * torch.tensor([1.0, 2.0, 3.0])).sum()
        for i in range(3):
            z.backward(retain_graph=True)
            log(f"y.grad after pass {i + 1}", y.grad)
        y.grad = None
        z.backward()
        log("y.grad after reset and one pass", y.grad)
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("RETAIN-4")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_retained_grad_reads_the_sum_after_each_pass_an_assigned_one_included(differential,
                                                                             dtype, shape):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = (torch.ones(shape, dtype=dt) * 0.5).requires_grad_()
        y = x.exp()
        y.retain_grad()
        z = (y * y).sum()
        z.backward(retain_graph=True)
        log("after backward", y.grad)   # a tensor read now may not see the sums (UNSPEC-16)
        torch.autograd.grad(z, x, retain_graph=True)
        log("after autograd.grad", y.grad)
        z.backward(inputs=[y], retain_graph=True)
        log("after backward(inputs=[y])", y.grad)
        y.grad = torch.full(shape, 10.0, dtype=dt)
        z.backward(retain_graph=True)
        log("onto an assigned tensor", [y.grad, str(y.grad.dtype), tuple(y.grad.shape)])
    differential(prog)


@pytest.mark.clause("RETAIN-5")
def test_retained_grad_sees_hooks_registered_before_and_after(differential):
    def prog(torch, log):
        x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
        y = x * x
        y.register_hook(lambda g: g + 1)              # before retain_grad
        y.retain_grad()
        y.register_hook(lambda g: None)               # observer, changes nothing
        y.register_hook(lambda g: g * torch.tensor([[1.0, 0.0], [0.0, 1.0]],
                                                   dtype=torch.float64))  # after
        y.sum().backward()
        log("y.grad", y.grad)
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("RETAIN-6")
def test_retained_grad_follows_inplace_updates(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.add_(1)
        y.mul_(torch.tensor([2.0, -1.0, 0.5], dtype=torch.float64))  # a second in-place update
        (y * torch.tensor([1.0, 0.5, 0.25], dtype=torch.float64)).sum().backward()
        log("y.grad", y.grad)
        log("x.grad", x.grad)
        u = x * 1
        u.pow_(2)
        u.retain_grad()             # retain after the in-place op
        (u * u).sum().backward()
        log("u.grad", u.grad)
    differential(prog)


_VIEW_WRITES = {
    "mul_": lambda torch, v: v.mul_(3),
    "two writes": lambda torch, v: v.mul_(3).add_(1),
    "a dirty Function": lambda torch, v: _twice(torch).apply(v),
}


@pytest.mark.clause("RETAIN-6")
@pytest.mark.parametrize("write", list(_VIEW_WRITES))
@pytest.mark.parametrize("view", ["slice", "select", "view"])
def test_a_retained_view_written_in_place_leaves_the_old_graph_without_it(differential,
                                                                          write, view):
    """retain_grad moves with a view's history when the view itself is written in place: a
    pass through a graph recorded before the write no longer fills its .grad, and one
    recorded after gives the gradient with respect to the value after the write."""
    def prog(torch, log):
        for dt in (torch.float32, torch.float64):
            x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=dt, requires_grad=True)
            y = x * 2
            v = (y[1:3] if view == "slice" else y.view(2, 2)[1] if view == "view"
                 else y.select(0, 2))
            v.retain_grad()
            w = torch.full(v.shape, 10.0, dtype=dt)
            old = (v * w).sum()
            _VIEW_WRITES[write](torch, v)
            new = (v * (w / 5)).sum()
            old.backward(retain_graph=True)
            log(f"{dt} after the old graph", v.grad)
            new.backward()
            log(f"{dt} after the new one", [v.grad, x.grad])
    differential(prog)


@pytest.mark.clause("RETAIN-7")
def test_nonleaf_grad_warning_cases(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        log("before backward", log.attempt("y.grad before backward", lambda: y.grad))
        y.sum().backward()
        log("after backward", log.attempt("y.grad after backward", lambda: y.grad))
        z = x * 3
        z.retain_grad()
        log("retained, before backward", log.attempt("z.grad retained", lambda: z.grad))
        with torch.no_grad():
            n = x * 3
        log("no_grad result", log.attempt("n.grad", lambda: n.grad))
        log("detached", log.attempt("detached grad", lambda: y.detach().grad))
        log("leaf", log.attempt("x.grad", lambda: x.grad))
    differential(prog)


@pytest.mark.clause("RETAIN-8")
def test_autograd_grad_fills_retained_grads_only(differential):
    def prog(torch, log):
        x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
        h = x.matmul(x)
        h.retain_grad()
        out = h.relu()
        v = torch.tensor([[1.0, 0.0], [0.0, -1.0]], dtype=torch.float64)
        for i in range(2):
            g = torch.autograd.grad(out, x, grad_outputs=v, retain_graph=True)
            log(f"grad {i + 1}", g)
            log(f"h.grad after call {i + 1}", h.grad)
        log("x.grad", x.grad)
        out.backward(v)
        log("h.grad after backward", h.grad)
        log("x.grad after backward", x.grad)
    differential(prog)
