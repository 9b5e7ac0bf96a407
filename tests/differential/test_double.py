"""Differential tests for passes with `create_graph=True` over saved values: DOUBLE-1 (which
gradients are recorded, a saved leaf counting as it is when the pass runs, a value saved under
saved-tensor hooks as its tensor was when saved) and DOUBLE-6 (the version counter the values
of the gradient's graph share), with SAVED-6 and SAVED-12 (spec/double.md, spec/saved.md).

The `_version` of gradients is never logged (UNSPEC-3), nor the names of the gradient graph's
nodes (UNSPEC-9).
"""
import warnings

import pytest

DTYPES = ("float32", "float64")
SHAPES = ((), (2,), (2, 2))
# ops whose gradient formula reads the saved value again: through their input or their result
UNARY = {
    "sin": lambda h: h.sin(),
    "cos": lambda h: h.cos(),
    "log": lambda h: h.log(),
    "pow": lambda h: h ** 3,
    "tanh": lambda h: h.tanh(),
    "sigmoid": lambda h: h.sigmoid(),
    "reciprocal": lambda h: h.reciprocal(),
    "exp": lambda h: h.exp(),
}


def _leaf(torch, dtype, shape):
    n = 1
    for d in shape:
        n *= d
    x = (torch.arange(1, n + 1, dtype=getattr(torch, dtype)) * 0.25 + 0.25).reshape(shape)
    return x.requires_grad_()


def _second_pass_after_a_write(torch, log, label, r_of, x, keep, written):
    """grad of op's gradient after a write between the passes, the op saved under hooks that
    keep a copy, a detach or the tensor itself."""
    store = []

    def pack(t):
        kept = t.detach().clone() if keep == "clone" else t.detach() if keep == "detach" else t
        store.append(kept)
        return kept
    h = x * 2
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda p: p):
        r = r_of(h)
    g, = torch.autograd.grad(r.sum(), x, create_graph=True)
    log(label + " first", [g, g.requires_grad])
    target = h if written == "input" else r if written == "result" else store[0]
    with torch.no_grad():
        target.mul_(1.0)
    second = log.attempt(label + " second", lambda: torch.autograd.grad(g.sum(), x))
    if second is not None:
        log(label + " second value", second[0])


@pytest.mark.clause("DOUBLE-6")
@pytest.mark.clause("SAVED-6")
@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("keep", ("clone", "detach", "itself"))
@pytest.mark.parametrize("written", ("input", "result", "what unpack returns"))
def test_a_hooked_value_shares_the_counter_of_the_tensor_unpack_returned(
        differential, op, keep, written):
    """Under create_graph a value saved under hooks is recomputed from the tensor unpack
    returned, with that tensor's version counter: a write to the saved input or result
    between the passes raises in the second only where pack kept that tensor or a detach of it,
    and a write to a copy pack made raises where the saved tensor's own write would not."""
    def prog(torch, log):
        for dtype in DTYPES:
            for shape in SHAPES:
                _second_pass_after_a_write(torch, log, f"{dtype} {shape}", UNARY[op],
                                           _leaf(torch, dtype, shape), keep, written)
    differential(prog)


# ops that save their second operand w, a leaf, for the gradient of their first, x
SAVE_W = {
    "mul": lambda x, w: x * w,
    "rmul": lambda x, w: w * x,
    "div": lambda x, w: x / w,
    "dot": lambda x, w: x @ w,
    "mv": lambda x, w: x.expand(2, 3) @ w,
    "mm": lambda x, w: x.view(1, 3) @ w.view(3, 1),
    "where": lambda x, w: (x * w).where(x > 0.7, x),
}


def _change_leaf(w, change):
    if change == "requires_grad_(True)":
        w.requires_grad_(True)
    elif change == "requires_grad = True":
        w.requires_grad = True
    elif change == "requires_grad_(False)":
        w.requires_grad_(False)
    else:
        w.detach_()


def _x_and_saved_leaf(torch, dt, change):
    """x that requires grad, and w, the leaf an op saves: it requires grad when `change`
    will stop it (requires_grad_(False), detach_()), and not when it will start it."""
    stops = change in ("requires_grad_(False)", "detach_()")
    return (torch.tensor([0.5, 1.0, 1.5], dtype=dt, requires_grad=True),
            torch.tensor([1.2, 0.8, 0.3], dtype=dt, requires_grad=stops))


@pytest.mark.clause("DOUBLE-1")
@pytest.mark.clause("DOUBLE-2")
@pytest.mark.parametrize("op", SAVE_W)
@pytest.mark.parametrize("change", ("requires_grad_(True)", "requires_grad = True",
                                    "requires_grad_(False)", "detach_()"))
@pytest.mark.parametrize("pass_", ("grad", "backward"))
def test_a_saved_leaf_counts_as_it_is_when_the_pass_runs(differential, op, change, pass_):
    """A leaf an op saved without hooks, which starts or stops requiring grad before a
    create_graph pass: the gradient is recorded through it as it is then, so that the mixed
    derivative is taken when it started requiring grad, and not when it stopped."""
    def prog(torch, log):
        for dtype in DTYPES:
            dt = getattr(torch, dtype)
            x, w = _x_and_saved_leaf(torch, dt, change)
            y = SAVE_W[op](x, w)
            _change_leaf(w, change)
            if pass_ == "grad":
                g, = torch.autograd.grad(y.sum(), x, create_graph=True)
            else:
                with warnings.catch_warnings():     # CREATE_GRAPH_CYCLE, once a process
                    warnings.simplefilter("ignore")
                    y.sum().backward(create_graph=True)
                g = x.grad
            log(dtype + " gradient", [g, g.requires_grad, g.grad_fn is None])
            if g.requires_grad:
                mixed = log.attempt(dtype + " mixed", lambda g=g, w=w: torch.autograd.grad(
                    g.sum(), w, allow_unused=True))
                log(dtype + " mixed value", mixed)
    differential(prog)


def _hooks(torch, pack):
    graph = torch.autograd.graph
    if pack == "save_on_cpu":
        return graph.save_on_cpu()
    keep = {"detach": lambda t: t.detach(), "clone": lambda t: t.detach().clone(),
            "itself": lambda t: t}[pack]
    return graph.saved_tensors_hooks(keep, lambda p: p)


def _through_the_gradient(torch, log, label, g, w):
    """Log g, whether it is recorded, the mixed derivative, and w.grad after a pass through g."""
    log(label + " gradient", [g, g.requires_grad, g.grad_fn is None])
    if g.requires_grad:
        mixed = log.attempt(label + " mixed", lambda: torch.autograd.grad(
            g.sum(), w, allow_unused=True, retain_graph=True))
        log(label + " mixed value", mixed)
        log.attempt(label + " backward", lambda: g.sum().backward())
        log(label + " w.grad", w.grad)


@pytest.mark.clause("DOUBLE-1")
@pytest.mark.clause("SAVED-12")
@pytest.mark.parametrize("op", SAVE_W)
@pytest.mark.parametrize("change", ("requires_grad_(True)", "requires_grad = True",
                                    "requires_grad_(False)", "detach_()"))
@pytest.mark.parametrize("pack", ("detach", "clone", "itself", "save_on_cpu"))
def test_a_leaf_saved_under_hooks_counts_as_it_was_when_saved(differential, op, change, pack):
    """A leaf an op saved under saved-tensor hooks, which starts or stops requiring grad
    before a create_graph pass: the gradient is recorded through it where it required grad
    when saved (a pass through it then leaves its .grad alone, and the mixed derivative
    raises), and not where it did not."""
    def prog(torch, log):
        for dtype in DTYPES:
            dt = getattr(torch, dtype)
            x, w = _x_and_saved_leaf(torch, dt, change)
            with _hooks(torch, pack):
                y = SAVE_W[op](x, w)
            _change_leaf(w, change)
            g, = torch.autograd.grad(y.sum(), x, create_graph=True)
            _through_the_gradient(torch, log, dtype, g, w)
    differential(prog)


@pytest.mark.clause("DOUBLE-1")
@pytest.mark.clause("SAVED-12")
@pytest.mark.parametrize("change", ("requires_grad_(True)", "requires_grad_(False)",
                                    "detach_()"))
@pytest.mark.parametrize("hooked", (False, True), ids=("plain", "hooked"))
def test_a_custom_functions_saved_leaf_counts_as_double_1_says(differential, change, hooked):
    """ctx.save_for_backward of a leaf input: without hooks it counts as it is when the pass
    runs, under hooks as it was when saved."""
    def prog(torch, log):
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, c):
                ctx.save_for_backward(c)
                return a * c

            @staticmethod
            def backward(ctx, g):
                c, = ctx.saved_tensors
                return g * c, None
        x = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
        w = torch.tensor([2.0, -1.5], dtype=torch.float64,
                         requires_grad=change != "requires_grad_(True)")
        if hooked:
            with _hooks(torch, "detach"):
                y = Scale.apply(x, w)
        else:
            y = Scale.apply(x, w)
        _change_leaf(w, change)
        g, = torch.autograd.grad(y.sum(), x, create_graph=True)
        _through_the_gradient(torch, log, "float64", g, w)
    differential(prog)
