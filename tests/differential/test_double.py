"""Differential tests for passes with `create_graph=True` over saved values: DOUBLE-1 (which
gradients are recorded, a saved leaf counting as it is when the pass runs, a value saved under
saved-tensor hooks as its tensor was when saved) and DOUBLE-6 (the version counter the values
of the gradient's graph share), with SAVED-6 and SAVED-12 (spec/double.md, spec/saved.md).

The `_version` of gradients is never logged (UNSPEC-3), nor the names of the gradient graph's
nodes (UNSPEC-9).
"""
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
