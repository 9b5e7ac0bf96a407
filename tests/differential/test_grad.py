"""Differential tests for the `.grad` tensor: GRAD-1 to GRAD-7 (spec/grad.md), and UNSPEC-16.

What spec/unspecified.md leaves open is never logged: the `_version` of a `.grad` (UNSPEC-3),
strides in dimensions of size 1 (UNSPEC-16), and, once one of them was written, what a tensor
the program supplied as a gradient, a hook argument or another leaf's `.grad` holds (a first
`.grad` may share their memory, UNSPEC-16, pytorch/pytorch#34082). `stride()` is logged only
for dimensions of size other than 1.
A backward with `create_graph=True` warns CREATE_GRAPH_CYCLE once a process (DOUBLE-8), so such
calls go through `_graphed`, which silences it on both engines alike.
"""
import warnings

import pytest

DTYPES = ("float32", "float64")
SHAPES = ((), (3,), (2, 3))
# a loss of one leaf, and of two leaves that meet in an op
LOSSES = {
    "mul": lambda x: (x * 2).sum(),
    "exp": lambda x: x.exp().sum(),
    "square": lambda x: (x * x).sum(),
    "relu": lambda x: (x - 0.5).relu().sum(),
}


def _leaf(torch, dtype, shape, scale=0.5):
    n = 1
    for d in shape:
        n *= d
    return (torch.arange(1, n + 1, dtype=getattr(torch, dtype)) * scale).reshape(shape)


def _graphed(t):
    """t.backward(create_graph=True) without the CREATE_GRAPH_CYCLE warning (DOUBLE-8)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t.backward(create_graph=True)


def _dt(dtype):
    """A dtype as its name, which both engines' logs compare (None stays None)."""
    return None if dtype is None else str(dtype)


def _strides(t):
    """t's strides in its dimensions of size other than 1 (UNSPEC-16 leaves the others open)."""
    return [s for s, n in zip(t.stride(), t.shape, strict=True) if n != 1]


# ---- GRAD-1: the first .grad ---------------------------------------------------------------

@pytest.mark.clause("GRAD-1")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_first_grad_is_a_leaf_without_history(differential, dtype, shape, loss):
    def prog(torch, log):
        x = _leaf(torch, dtype, shape).requires_grad_()
        LOSSES[loss](x).backward()
        g = x.grad
        log("flags", [g.requires_grad, g.grad_fn is None, g.is_leaf, _dt(g.dtype), tuple(g.shape)])
        log("values", g)
    differential(prog)


@pytest.mark.clause("GRAD-1")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_writing_the_first_grad_reaches_no_other_tensor(differential, dtype, shape):
    def prog(torch, log):
        x = _leaf(torch, dtype, shape).requires_grad_()
        w = _leaf(torch, dtype, shape, 0.25).requires_grad_()
        y = x + w                       # AddBackward0 sends one gradient to both leaves
        e = y.exp()
        (e * 1 + x.sin()).sum().backward()
        log("grads", [x.grad, w.grad])
        versions = [x._version, w._version, y._version, e._version]
        x.grad.add_(100.0)              # whether w.grad sees it is open (UNSPEC-16)
        log("x.grad", x.grad)
        log("leaves and forward values", [x, w, y, e])
        log("versions unchanged", [x._version, w._version, y._version, e._version] == versions)
    differential(prog)


@pytest.mark.clause("GRAD-1")
@pytest.mark.parametrize("dtype", DTYPES)
def test_first_grad_shares_nothing_with_a_retained_grad(differential, dtype):
    def prog(torch, log):
        a = _leaf(torch, dtype, (2, 3)).requires_grad_()
        seen = []
        a.register_hook(lambda g: seen.append(g))
        h = a.view(6)
        h.retain_grad()
        k = h * 3
        k.retain_grad()
        k.sum().backward()
        log("hook argument", seen[0])   # what it reads after a.grad is written: UNSPEC-16
        a.grad.zero_()
        log("retained", [h.grad, k.grad])
        log("a.grad", a.grad)
    differential(prog)


VIEWS = {  # a view op on each of two leaves, whose one gradient reaches both (UNSPEC-16)
    "view": ((2, 3), lambda t: t.view(6)),
    "reshape": ((2, 3), lambda t: t.reshape(3, 2)),
    "unsqueeze": ((3,), lambda t: t.unsqueeze(0)),
    "squeeze": ((1, 3), lambda t: t.squeeze(0)),
    "0-d view": ((), lambda t: t.view(1)),
}


@pytest.mark.clause("GRAD-1")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(VIEWS))
def test_first_grads_through_view_ops_leave_forward_values_and_retained_grads_alone(
        differential, dtype, op):
    def prog(torch, log):
        shape, view = VIEWS[op]
        x = _leaf(torch, dtype, shape).requires_grad_()
        w = _leaf(torch, dtype, shape, 0.25).requires_grad_()
        xv, wv = view(x), view(w)
        xv.retain_grad()
        y = xv + wv
        y.retain_grad()
        e = y.exp()
        ((e + xv.sin()) * 2 + wv).sum().backward()
        log("first grads", [x.grad, w.grad])
        forward = [x, w, xv, wv, y, e]
        values = [t.tolist() for t in forward]
        retained = [xv.grad.tolist(), y.grad.tolist()]
        versions = [t._version for t in forward]
        x.grad.add_(100.0)
        w.grad.mul_(-3.0)
        log("forward values unchanged", [t.tolist() for t in forward] == values)
        log("retained unchanged", [xv.grad.tolist(), y.grad.tolist()] == retained)
        log("versions unchanged", [t._version for t in forward] == versions)
    differential(prog)


@pytest.mark.clause("GRAD-1")
def test_first_grad_through_a_view_leaf_is_its_own(differential):
    def prog(torch, log):
        base = _leaf(torch, "float64", (6,))
        v = base[1:5].requires_grad_()       # a leaf that is a view of a plain tensor
        (v * v).sum().backward()
        log("v", [v.is_leaf, v.grad])
        base.mul_(10.0)                       # changes v, not v.grad
        log("after writing the base", [v, v.grad, base.grad])
        (v * 1).sum().backward()
        log("accumulated", v.grad)
    differential(prog)


# ---- GRAD-2: the first .grad's layout ------------------------------------------------------

LAYOUTS = {  # leaves whose layout is non-overlapping and dense
    "contiguous": lambda torch, dt: torch.zeros(2, 3, dtype=dt),
    "transposed": lambda torch, dt: torch.zeros(3, 2, dtype=dt).t(),
    "square transposed": lambda torch, dt: torch.zeros(3, 3, dtype=dt).t(),
    "unsqueezed": lambda torch, dt: torch.zeros(3, dtype=dt).unsqueeze(0),
    "column": lambda torch, dt: torch.zeros(2, 1, dtype=dt),
    "0-d": lambda torch, dt: torch.zeros((), dtype=dt),
    "1-d": lambda torch, dt: torch.zeros(4, dtype=dt),
}
GAPS = {  # leaves that are not: a strided slice, an expand, both, a transpose of a slice
    "every other column": lambda torch, dt: torch.zeros(2, 6, dtype=dt)[:, ::2],
    "every other row": lambda torch, dt: torch.zeros(4, 3, dtype=dt)[::2],
    "1-d strided": lambda torch, dt: torch.zeros(6, dtype=dt)[::2],
    "transposed slice": lambda torch, dt: torch.zeros(6, 2, dtype=dt)[::2].t(),
    "expanded row": lambda torch, dt: torch.zeros(3, dtype=dt).expand(2, 3),
    "expanded column": lambda torch, dt: torch.zeros(2, 1, dtype=dt).expand(2, 3),
}
# how the gradient arrives: in the leaf's layout, transposed, from a matmul, from a reshape
ARRIVALS = {
    "mul": lambda x: (x * 2).sum(),
    "through t()": lambda x: (x.t() * 3).t().sum() if x.dim() == 2 else (x * 3).sum(),
    "matmul": lambda x: (x @ x.t()).sum() if x.dim() == 2 else (x * x).sum(),
    "reshape": lambda x: x.exp().reshape(-1).sum(),
}


@pytest.mark.clause("GRAD-2")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("graphed", [False, True], ids=["plain", "create_graph"])
def test_first_grad_takes_a_dense_leafs_strides(differential, dtype, layout, graphed):
    def prog(torch, log):
        for name, loss in ARRIVALS.items():
            x = LAYOUTS[layout](torch, getattr(torch, dtype)).requires_grad_()
            _graphed(loss(x)) if graphed else loss(x).backward()
            log(name, [_strides(x.grad), _strides(x), x.grad.is_contiguous(), x.grad])
    differential(prog)


@pytest.mark.clause("GRAD-2")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", sorted(GAPS))
@pytest.mark.parametrize("graphed", [False, True], ids=["plain", "create_graph"])
def test_first_grad_of_a_leaf_with_gaps_is_row_major(differential, dtype, layout, graphed):
    def prog(torch, log):
        for name, loss in ARRIVALS.items():
            x = GAPS[layout](torch, getattr(torch, dtype)).requires_grad_()
            _graphed(loss(x)) if graphed else loss(x).backward()
            log(name, [x.grad.is_contiguous(), _strides(x.grad), x.grad])
    differential(prog)


@pytest.mark.clause("GRAD-2")
@pytest.mark.parametrize("dtype", DTYPES)
def test_first_grad_layout_holds_after_a_grad_dtype_cast(differential, dtype):
    def prog(torch, log):
        other = torch.float64 if dtype == "float32" else torch.float32
        x = torch.zeros(3, 2, dtype=getattr(torch, dtype)).t().requires_grad_()
        x.grad_dtype = other
        (x.t() * 2).t().sum().backward()
        log("cast grad", [_dt(x.grad.dtype), _strides(x.grad), x.grad])
    differential(prog)


# ---- GRAD-3: .grad holds the tensor stored in it ---------------------------------------------

@pytest.mark.clause("GRAD-3")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_assigned_grad_is_the_tensor_itself(differential, dtype, shape):
    def prog(torch, log):
        x = _leaf(torch, dtype, shape).requires_grad_()
        g = torch.zeros(shape, dtype=getattr(torch, dtype))
        x.grad = g
        log("same object", [x.grad is g, x.grad is x.grad])
        g.fill_(4.0)
        log("write to g shows", x.grad)
        y = x * 2                                   # a non-leaf
        r = torch.ones(shape, dtype=getattr(torch, dtype))
        y.grad = r
        log("non-leaf", y.grad is r)
        r.mul_(3.0)
        log("write to r shows", y.grad)
    differential(prog)


@pytest.mark.clause("GRAD-3")
@pytest.mark.parametrize("dtype", DTYPES)
def test_assigned_view_grad_follows_its_base(differential, dtype):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = torch.ones(2, 2, dtype=dt, requires_grad=True)
        buf = torch.zeros(8, dtype=dt)
        x.grad = buf[2:6].view(2, 2)
        buf[3] = 5.0
        log("through the base", x.grad)
        x.grad[1, 1] = 9.0
        log("base after a write through .grad", buf)
        (x * 2).sum().backward()
        log("same after backward", x.grad is x.grad)
    differential(prog)


# ---- GRAD-4: accumulation in place -------------------------------------------------------------

@pytest.mark.clause("GRAD-4")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_accumulation_writes_into_the_grad_it_finds(differential, dtype, shape, loss):
    def prog(torch, log):
        x = _leaf(torch, dtype, shape).requires_grad_()
        (x * 3).sum().backward()
        g = x.grad
        flat = g.reshape(-1)                  # a view of the contiguous .grad
        for i in range(2):
            LOSSES[loss](x).backward()
            log(f"pass {i}", [x.grad is g, g, flat])
        log("layout and flags", [tuple(g.shape), _dt(g.dtype), _strides(g), g.requires_grad,
                                 g.grad_fn is None])
    differential(prog)


@pytest.mark.clause("GRAD-4")
@pytest.mark.parametrize("dtype", DTYPES)
def test_grads_assigned_as_views_of_one_bucket_accumulate_into_it(differential, dtype):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        w = torch.tensor([[1.0, -1.0, 2.0], [0.5, 0.0, 1.5]], dtype=dt, requires_grad=True)
        b = torch.tensor([0.25, -0.5], dtype=dt, requires_grad=True)
        bucket = torch.zeros(9, dtype=dt)
        w.grad = bucket[:6].view(2, 3)
        b.grad = bucket[7:]
        x = torch.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 1.0]], dtype=dt)
        for i in range(3):
            ((x @ w.t() + b) ** 2).sum().backward()
            log(f"bucket after pass {i}", bucket)
    differential(prog)


@pytest.mark.clause("GRAD-4")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["transposed", "strided slice"])
def test_accumulation_keeps_an_assigned_layout(differential, dtype, kind):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=dt, requires_grad=True)
        if kind == "transposed":
            g = torch.zeros(3, 2, dtype=dt).t()
        else:
            g = torch.zeros(2, 6, dtype=dt)[:, ::2]
        x.grad = g
        for loss in LOSSES.values():
            loss(x).backward()
        log("kept", [x.grad is g, _strides(x.grad), x.grad.is_contiguous(), g])
    differential(prog)


@pytest.mark.clause("GRAD-4")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["leaf requiring grad", "non-leaf", "from create_graph"])
def test_accumulation_into_a_grad_that_requires_grad_records_nothing(differential, dtype, kind):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = torch.tensor([1.0, -2.0, 0.5], dtype=dt, requires_grad=True)
        w = torch.tensor([2.0, 3.0, 4.0], dtype=dt, requires_grad=True)
        if kind == "leaf requiring grad":
            x.grad = torch.zeros(3, dtype=dt, requires_grad=True)
        elif kind == "non-leaf":
            x.grad = w * 1
        else:
            _graphed((x ** 3).sum())
        g = x.grad
        before = [g.requires_grad, g.is_leaf, g.grad_fn is None]
        (x * x).sum().backward()
        log("same tensor, same flags", [x.grad is g,
                                        [g.requires_grad, g.is_leaf, g.grad_fn is None] == before])
        log("values", g)
        if kind != "leaf requiring grad":
            log.attempt("backward through the .grad's own graph", lambda: g.sum().backward())
            log("w.grad or x.grad after", [w.grad, x.grad])
    differential(prog)


@pytest.mark.clause("GRAD-4")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("saved", ["the .grad", "a view of it", "its base"])
def test_accumulation_is_seen_by_the_saved_value_check(differential, dtype, saved):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
        w = torch.tensor([3.0, -1.0], dtype=dt, requires_grad=True)
        buf = torch.zeros(4, dtype=dt)
        x.grad = buf[1:3]
        t = {"the .grad": x.grad, "a view of it": x.grad[1:], "its base": buf}[saved]
        loss = (w.sum() * t).sum() if saved == "its base" else (w[: t.shape[0]] * t).sum()
        log.attempt("before any accumulation", lambda: loss.backward(retain_graph=True))
        (x * 2).sum().backward()
        log.attempt("after one", lambda: loss.backward())
        log("buf", buf)
    differential(prog)


@pytest.mark.clause("GRAD-4")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("saved", ["grad.data", "grad.detach()", "assigned g, saved g.data",
                                   "assigned g.data, saved g"])
def test_a_tensor_sharing_only_the_grads_memory_is_not_version_checked(differential, dtype,
                                                                        saved):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
        w = torch.tensor([3.0, 4.0], dtype=dt, requires_grad=True)
        if saved.startswith("assigned"):
            g = torch.zeros(2, dtype=dt)
            x.grad = g if saved == "assigned g, saved g.data" else g.data
            t = g.data if saved == "assigned g, saved g.data" else g
        else:
            (x * 2).sum().backward()
            t = x.grad.data if saved == "grad.data" else x.grad.detach()
        loss = (w * t).sum()
        (x * 3).sum().backward()              # writes into x.grad's memory (GRAD-4)
        log.attempt("backward through the saved tensor", lambda: loss.backward())
        log("saved tensor reads the sum", t)
        if saved != "grad.detach()":           # w.grad after a raising backward: UNSPEC-1
            log("w.grad from the written values", w.grad)
    differential(prog)


@pytest.mark.clause("GRAD-4")
@pytest.mark.parametrize("dtype", DTYPES)
def test_grads_assigned_overlapping_views_of_one_buffer_get_both_additions(differential, dtype):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        buf = torch.zeros(4, dtype=dt)
        x = torch.tensor([1.0, 2.0, -1.0], dtype=dt, requires_grad=True)
        w = torch.tensor([[3.0, 4.0], [0.5, -2.0]], dtype=dt, requires_grad=True)
        x.grad = buf[0:3]
        w.grad = buf.view(2, 2)
        ((x * 2).sum() + (w * w).sum()).backward()        # both .grads are views of buf
        log("after both leaves", [buf, x.grad, w.grad])
        (x * 2 + x.exp()).sum().backward()                 # x alone
        log("after x alone", [buf, x.grad, w.grad])
    differential(prog)


@pytest.mark.clause("GRAD-4")
@pytest.mark.parametrize("dtype", DTYPES)
def test_accumulation_keeps_a_grad_of_another_dtype(differential, dtype):
    def prog(torch, log):
        other = torch.float64 if dtype == "float32" else torch.float32
        x = torch.tensor([1.0, 2.0, 3.0], dtype=getattr(torch, dtype), requires_grad=True)
        x.grad_dtype = None
        g = torch.full((3,), 0.5, dtype=other)
        x.grad = g
        (x * x).sum().backward()
        (x * torch.ones(3, dtype=other)).sum().backward()   # arrives in the other dtype
        log("kept", [x.grad is g, _dt(x.grad.dtype), x.grad])
    differential(prog)


@pytest.mark.clause("DOUBLE-3")
@pytest.mark.clause("GRAD-4")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hook", ["leaf hook", "AccumulateGrad pre-hook"])
@pytest.mark.parametrize("first", [True, False], ids=["first grad", "grad set"])
def test_a_hook_turning_grad_mode_off_makes_a_create_graph_pass_accumulate_in_place(
        differential, dtype, hook, first):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = torch.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=dt, requires_grad=True)
        if not first:
            (x * 2).sum().backward()
        g = x.grad

        def off(*args):
            torch.set_grad_enabled(False)
        y = (x * x).sum()
        if hook == "leaf hook":
            x.register_hook(off)
        else:
            (x * 1).grad_fn.next_functions[0][0].register_prehook(off)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y.backward(create_graph=True)
        log("same tensor", None if g is None else x.grad is g)
        log("flags", [x.grad.requires_grad, x.grad.grad_fn is None, x.grad.is_leaf])
        log("values", [x.grad, g])
        log("grad mode after", torch.is_grad_enabled())
    differential(prog)


# ---- GRAD-5, GRAD-6: Module.zero_grad ----------------------------------------------------------

def _net(torch, dt):
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = torch.nn.Linear(3, 2, dtype=dt)
            self.outer = torch.nn.Linear(2, 1, dtype=dt)
            self.shared = self.inner                      # the same parameters twice
            self.scale = torch.tensor(2.0, dtype=dt, requires_grad=True)   # not a Parameter
            self.unused = torch.nn.Linear(1, 1, dtype=dt)   # its .grad stays None

        def forward(self, x):
            return self.outer(self.shared(x).relu() + 1.0) * self.scale

    net = Block()
    with torch.no_grad():  # fixed values: torch and refimpl draw different initial ones
        for i, p in enumerate(net.parameters()):
            p.copy_(torch.arange(p.numel(), dtype=dt).reshape(p.shape) * 0.25 - 0.5 * i)
    return net


def _params(net):
    return [p.grad for p in net.parameters()]


@pytest.mark.clause("GRAD-5")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("call", ["zero_grad()", "zero_grad(set_to_none=True)"])
def test_zero_grad_sets_every_parameter_grad_to_none(differential, dtype, call):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        net = _net(torch, dt)
        x = torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], dtype=dt)
        net(x).sum().backward()
        old = [p.grad for p in net.parameters()]
        scale_grad = net.scale.grad
        net.zero_grad() if call == "zero_grad()" else net.zero_grad(set_to_none=True)
        log("grads", _params(net))
        log("old tensors keep their values", old)
        log("not a parameter", [net.scale.grad is scale_grad, net.scale.grad])
        net(x).sum().backward()
        same = [p.grad is o for p, o in zip(net.parameters(), old, strict=True)]
        log("new grads", [same, _params(net)])
    differential(prog)


@pytest.mark.clause("GRAD-6")
@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_grad_without_none_zeroes_in_place(differential, dtype):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        net = _net(torch, dt)
        x = torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], dtype=dt)
        net(x).sum().backward()
        held = [p.grad for p in net.parameters()]
        rows = [g[0] for g in held if g is not None]
        net.zero_grad(set_to_none=False)
        same = [p.grad is g for p, g in zip(net.parameters(), held, strict=True)]
        log("same tensors", same)
        log("zeros", [_params(net), rows])
        log("flags", [[g.requires_grad, g.grad_fn is None] for g in held if g is not None])
        net(x).sum().backward()
        same = [p.grad is g for p, g in zip(net.parameters(), held, strict=True)]
        log("accumulated into the same", [same, _params(net)])
    differential(prog)


@pytest.mark.clause("GRAD-6")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("assigned", ["from create_graph", "assigned leaf requiring grad"])
def test_zero_grad_without_none_cuts_a_grad_from_its_graph(differential, dtype, assigned):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        net = torch.nn.Linear(2, 2, dtype=dt)
        with torch.no_grad():
            net.weight.copy_(torch.tensor([[1.0, -1.0], [0.5, 2.0]], dtype=dt))
            net.bias.copy_(torch.tensor([0.25, -0.5], dtype=dt))
        x = torch.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=dt)
        if assigned == "from create_graph":
            _graphed((net(x) ** 2).sum())
        else:
            net.weight.grad = torch.ones(2, 2, dtype=dt, requires_grad=True)
            net.bias.grad = torch.ones(2, dtype=dt, requires_grad=True)
        held = [net.weight.grad, net.bias.grad]
        log("before", [[g.requires_grad, g.grad_fn is None] for g in held])
        net.zero_grad(set_to_none=False)
        log("after", [[net.weight.grad is held[0], net.bias.grad is held[1]],
                      [[g.requires_grad, g.grad_fn is None, g.is_leaf] for g in held], held])
        (net(x) ** 2).sum().backward()
        log("accumulated", [net.weight.grad is held[0], held])
    differential(prog)


# ---- GRAD-7: grad_dtype belongs to one tensor ----------------------------------------------------

@pytest.mark.clause("GRAD-7")
@pytest.mark.parametrize("dtype", DTYPES)
def test_grad_dtype_is_not_carried_to_tensors_made_from_a_leaf(differential, dtype):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        other = torch.float64 if dtype == "float32" else torch.float32
        x = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
        x.grad_dtype = other
        with torch.no_grad():
            r = x * 2
        made = {"detach": x.detach(), "data": x.data, "no_grad result": r}
        log("grad_dtype", [_dt(x.grad_dtype)] + [_dt(t.grad_dtype) for t in made.values()])
        for name, t in made.items():
            t.requires_grad_()
            (t * 3).sum().backward()
            log(name, [_dt(t.grad.dtype), t.grad])
        log("x untouched", [x.grad, _dt(x.grad_dtype)])
    differential(prog)


@pytest.mark.clause("GRAD-7")
@pytest.mark.parametrize("dtype", DTYPES)
def test_grad_dtype_set_before_requires_grad_applies(differential, dtype):
    def prog(torch, log):
        other = torch.float64 if dtype == "float32" else torch.float32
        x = torch.tensor([1.0, -2.0, 0.5], dtype=getattr(torch, dtype))
        x.grad_dtype = other
        log("set on a tensor that does not require grad", [x.requires_grad, _dt(x.grad_dtype)])
        x.requires_grad_()
        x.exp().sum().backward()
        log("grad", [_dt(x.grad.dtype), x.grad])
    differential(prog)


@pytest.mark.clause("GRAD-7")
@pytest.mark.parametrize("dtype", DTYPES)
def test_grad_dtype_may_be_reset_to_the_grads_dtype_or_none(differential, dtype):
    def prog(torch, log):
        other = torch.float64 if dtype == "float32" else torch.float32
        x = torch.tensor([1.0, 2.0], dtype=getattr(torch, dtype), requires_grad=True)
        x.grad_dtype = other
        (x * x).sum().backward()
        g = x.grad
        log.attempt("same dtype", lambda: setattr(x, "grad_dtype", other))
        log.attempt("None", lambda: setattr(x, "grad_dtype", None))
        log("grad kept", [x.grad is g, _dt(x.grad.dtype), x.grad, _dt(x.grad_dtype)])
    differential(prog)


# ---- UNSPEC-16: what is specified around the open points ------------------------------------

@pytest.mark.clause("UNSPEC-16")
@pytest.mark.parametrize("dtype", DTYPES)
def test_values_around_unspecified_grad_memory_agree(differential, dtype):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=dt, requires_grad=True)
        g = torch.full((4,), 2.0, dtype=dt)
        x.view(4).backward(g)
        log("x.grad before any write to g", x.grad)      # g may be x.grad's memory
        kept = []
        w = torch.tensor([1.0, -1.0], dtype=dt, requires_grad=True)
        w.register_hook(lambda gr: kept.append(gr * 5) or kept[-1])
        (w * 2).sum().backward()
        log("w.grad from a hook's kept result", w.grad)  # may share kept[0]'s memory
        y = x * 2
        y.retain_grad()
        for i in range(2):
            y.sum().backward(retain_graph=True)
            log(f"retained after pass {i}", y.grad)     # identity left open
    differential(prog)


@pytest.mark.clause("UNSPEC-16")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(VIEWS))
def test_values_around_grads_that_may_share_memory_through_view_ops(differential, dtype, op):
    def prog(torch, log):
        shape, view = VIEWS[op]
        x = _leaf(torch, dtype, shape).requires_grad_()
        w = _leaf(torch, dtype, shape, 0.25).requires_grad_()
        u = _leaf(torch, dtype, shape, -1.0).requires_grad_()
        kept = []
        xv = view(x)
        xv.register_hook(lambda g: kept.append(g))   # a.grad may be a view of it
        y = ((xv + view(w)) * 2 + view(u) * view(u)).sum()
        y.backward(retain_graph=True)
        log("first grads", [x.grad, w.grad, u.grad])
        log("kept hook argument before any write", kept[0])
        y.backward()          # x.grad and w.grad may share memory: their sums are open now
        log("a grad that shares nothing", u.grad)
        log("leaves", [x, w, u])
    differential(prog)


@pytest.mark.clause("UNSPEC-16")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hook", ["leaf hook", "AccumulateGrad pre-hook"])
@pytest.mark.parametrize("first", [True, False], ids=["first grad", "grad set"])
def test_values_when_a_hook_turns_grad_mode_on_for_the_accumulator(differential, dtype, hook,
                                                                    first):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = torch.tensor([1.0, -2.0, 0.5], dtype=dt, requires_grad=True)
        if not first:
            (x * 2).sum().backward()

        def on(*args):
            torch.set_grad_enabled(True)
        y = (x * x).sum()
        if hook == "leaf hook":
            x.register_hook(on)
        else:
            (x * 1).grad_fn.next_functions[0][0].register_prehook(on)
        y.backward()          # whether x.grad is the tensor it held, and its flags: open
        log("x.grad", x.grad)
        log("grad mode after", torch.is_grad_enabled())
    differential(prog)


# ---- LEAF-9: grad_dtype at a backward root, and None after a cast or a narrower product ------
@pytest.mark.clause("LEAF-9")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("how", ["backward", "autograd.backward", "autograd.grad",
                                 "backward inputs"])
def test_a_leaf_root_gets_its_gradient_in_its_grad_dtype(differential, dtype, how):
    """A leaf that is itself a pass's root: torch casts the given gradient to its grad_dtype
    before its hooks see it, as it casts one arriving through an op."""
    def prog(torch, log):
        dt = getattr(torch, dtype)
        other = torch.float32 if dtype == "float64" else torch.float64
        x = torch.tensor([1.25, -0.5], dtype=dt, requires_grad=True)
        x.grad_dtype = other
        x.register_hook(lambda g: log("hook", [_dt(g.dtype), g]))
        g = torch.tensor([-0.75, 0.5], dtype=dt)
        if how == "backward":
            x.backward(g)
        elif how == "autograd.backward":
            w = torch.ones(2, dtype=dt, requires_grad=True)
            torch.autograd.backward([w, x], grad_tensors=[g, g])
        elif how == "autograd.grad":
            got, = torch.autograd.grad(x, x, g)
            log("result", [_dt(got.dtype), got])
            return
        else:
            x.backward(g, inputs=[x])
        log(".grad", [_dt(x.grad.dtype), x.grad])
    differential(prog)


@pytest.mark.clause("LEAF-9")
@pytest.mark.clause("API-3")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (2,), (2, 3)])
@pytest.mark.parametrize("how", ["backward", "autograd.backward", "autograd.grad",
                                 "backward inputs", "create_graph"])
@pytest.mark.parametrize("held", [False, True], ids=["no grad", "grad held"])
def test_a_leaf_root_whose_grad_dtype_is_none_keeps_a_floating_gradient_dtype(
        differential, dtype, shape, how, held):
    """A leaf that is itself a root, its grad_dtype None, given a floating `gradient` of the
    other dtype: torch 2.13 does not cast it (its root metadata names no dtype), so its hooks,
    a first .grad and autograd.grad's result have the gradient's dtype; a .grad already held
    keeps its own (the sum is made in place, or, under create_graph, promoted)."""
    def prog(torch, log):
        dt = getattr(torch, dtype)
        other = torch.float32 if dtype == "float64" else torch.float64
        x = torch.full(shape, 1.5, dtype=dt, requires_grad=True)
        x.grad_dtype = None
        if held:
            x.grad = torch.full(shape, 0.25, dtype=dt)
        x.register_hook(lambda g: log("hook", [_dt(g.dtype), g]))
        x.register_post_accumulate_grad_hook(lambda t: log("post", _dt(t.grad.dtype)))
        g = torch.full(shape, -0.75, dtype=other)
        if how == "backward":
            x.backward(g)
        elif how == "autograd.backward":
            torch.autograd.backward([x], grad_tensors=[g])
        elif how == "autograd.grad":
            got, = torch.autograd.grad(x, x, g)
            log("result", [_dt(got.dtype), got])
            return
        elif how == "backward inputs":
            x.backward(g, inputs=[x])
        else:
            x.backward(g, create_graph=True)
        log(".grad", [_dt(x.grad.dtype), x.grad.detach()])
        (x * 2).sum().backward()          # a later gradient of x's dtype adds into it
        log(".grad after a pass through mul", [_dt(x.grad.dtype), x.grad.detach()])
    differential(prog)


@pytest.mark.clause("LEAF-9")
@pytest.mark.clause("DERIV-3")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("create_graph", [False, True])
def test_a_cast_sends_its_gradient_back_in_the_input_dtype_whatever_grad_dtype(
        differential, dtype, create_graph):
    """ToCopyBackward0 casts in its formula: a leaf whose grad_dtype is None still gets its
    own dtype through x.float() / x.double(), and so does autograd.grad."""
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = torch.tensor([1.0, -2.0], dtype=dt, requires_grad=True)
        x.grad_dtype = None
        y = x.float() if dtype == "float64" else x.double()
        got, = torch.autograd.grad((y * y).sum(), x, create_graph=create_graph)
        log("autograd.grad", [_dt(got.dtype), got])
        (y * 3).sum().backward()
        log(".grad", [_dt(x.grad.dtype), x.grad])
    differential(prog)


@pytest.mark.clause("LEAF-9")
@pytest.mark.parametrize("op", ["mul", "div"])
@pytest.mark.parametrize("first", [True, False], ids=["scalar first", "scalar second"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_a_wider_0d_operand_does_not_widen_the_gradient(differential, op, first, create_graph):
    """A 0-d float64 operand times a float32 tensor gives float32 (it does not promote), and
    so does torch's gradient for the float32 tensor; with grad_dtype None that is its .grad's
    dtype, where numpy's promotion would give float64."""
    def prog(torch, log):
        x = torch.tensor([1.25, 1.0], requires_grad=True)
        x.grad_dtype = None
        s = torch.tensor([1.25, 0.25, 0.5], dtype=torch.float64, requires_grad=True)[1]
        a, b = (s, x) if first else (x, s)
        getattr(a, op)(b).sum().backward(create_graph=create_graph)
        log(".grad", [_dt(x.grad.dtype), x.grad.detach()])
    differential(prog)
