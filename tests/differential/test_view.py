"""Differential tests for views and in-place together: VIEW-1 to VIEW-9 (spec/view.md).

Grad mode and inference mode are global to the thread, so every program that changes them
restores them in `finally`: a failing engine must not leave later tests running in it.
"""
import pytest

DTYPES = ("float32", "float64")

# chains of view ops from a 2x3 base; each ends in a view of it
CHAINS = {
    "select then slice": lambda b: b[1][1:],
    "t then select": lambda b: b.t()[2],
    "view then slice then unsqueeze": lambda b: b.view(6)[2:5].unsqueeze(0),
    "narrow then select": lambda b: b.narrow(1, 1, 2).select(0, 1),
    "slice then t then slice": lambda b: b[:, 0:2].t()[1:],
    "unbind then slice": lambda b: b.unbind(1)[2][0:1],
    "split then select": lambda b: b.split(1)[1][0],
    "expand": lambda b: b[0].expand(2, 3),
}
# writable chains (no multi-output op, no expand)
WRITABLE = ("select then slice", "t then select", "view then slice then unsqueeze",
            "narrow then select", "slice then t then slice")
WRITES = {
    "mul_": lambda v, w: v.mul_(3.0),
    "add_": lambda v, w: v.add_(2.0),
    "exp_": lambda v, w: v.exp_(),
    "zero_": lambda v, w: v.zero_(),
    "mul_ by a tensor": lambda v, w: v.mul_(w),
    "copy_": lambda v, w: v.copy_(w),
    "setitem": lambda v, w: v.__setitem__(..., w),
    "pow_": lambda v, w: v.pow_(2),
}
MULTI = {
    "split 1": lambda t: t.split(1),
    "split 2 dim 1": lambda t: t.split(2, dim=1),
    "split sizes": lambda t: t.split([1, 2], 1),
    "split_with_sizes": lambda t: t.split_with_sizes((2, 1), -1),
    "Tensor.split": lambda t: t.__class__.split(t, 1, 0),
    "chunk 2 dim 1": lambda t: t.chunk(2, 1),
    "chunk 4 dim 1": lambda t: t.chunk(4, 1),
    "chunk 1": lambda t: t.chunk(1),
    "unbind": lambda t: t.unbind(),
    "unbind dim -1": lambda t: t.unbind(-1),
}


def _clean(torch):
    torch.set_grad_enabled(True)


def _leaf(torch, dtype, rows=2, cols=3):
    """A leaf that requires grad and is no view (a reshape would give a view)."""
    return torch.tensor([[(r * cols + c + 1) * 0.5 for c in range(cols)] for r in range(rows)],
                        dtype=getattr(torch, dtype), requires_grad=True)


def _weights(torch, t, scale=1.0):
    n = 1
    for d in t.shape:
        n *= d
    return (torch.arange(1, n + 1, dtype=t.dtype) * scale).reshape(tuple(t.shape))


def _operand(torch, v):
    """A tensor that requires grad, shaped as view v, with values of its own."""
    return (_weights(torch, v, 0.25) + 1).requires_grad_()


# ======================= VIEW-1 =======================

@pytest.mark.clause("VIEW-1")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("requires_grad", (True, False))
def test_every_view_of_a_view_has_the_first_base(differential, dtype, requires_grad):
    def prog(torch, log):
        x = _leaf(torch, dtype).requires_grad_(requires_grad)
        y = x * 2
        log("bases are None", [x._base is None, y._base is None])
        for name, chain in CHAINS.items():
            for root in (x, y):
                v = chain(root)
                log(name, [v._base is root, v._base._base is None, v.is_leaf, v.requires_grad,
                           v._version == root._version])
    differential(prog)


@pytest.mark.clause("VIEW-1")
@pytest.mark.parametrize("dtype", DTYPES)
def test_detach_of_a_view_is_no_view_and_shares_the_counter(differential, dtype):
    def prog(torch, log):
        x = _leaf(torch, dtype)
        y = x * 2
        for name, chain in CHAINS.items():
            v = chain(y)
            d = v.detach()
            log(name, [d._base is None, d.requires_grad, d.is_leaf, d.grad_fn is None,
                       d[0:1]._base is d, d.shape == v.shape])
        d = y[1][1:].detach()
        d.add_(1.0)
        log("written through the detached view", [y, y._version, d._version, x._version])
    differential(prog)


# ======================= VIEW-2 =======================

@pytest.mark.clause("VIEW-2")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("write", WRITES)
def test_a_write_through_a_view_of_a_view_rewrites_the_base(differential, dtype, write):
    def prog(torch, log):
        for name in WRITABLE:
            x = _leaf(torch, dtype)
            y = x + 0
            v = CHAINS[name](y)
            w = _operand(torch, v)
            WRITES[write](v, w)
            log(name + " base", [y, y.is_leaf, y.requires_grad, y._base is None])
            (y * _weights(torch, y)).sum().backward()
            log(name + " x.grad", x.grad)
            log(name + " w.grad", w.grad)
    differential(prog)


@pytest.mark.clause("VIEW-2")
@pytest.mark.parametrize("write", WRITES)
def test_the_chain_sees_the_write_and_differentiates_it(differential, write):
    def prog(torch, log):
        x = _leaf(torch, "float64")
        y = x + 0
        first = y[1]
        second = first[1:]
        w = _operand(torch, second)
        WRITES[write](second, w)
        log("first view", [first, first.is_leaf, first.requires_grad])
        (first * torch.tensor([1.0, 10.0, 100.0], dtype=torch.float64)).sum().backward()
        log("x.grad", x.grad)
        log("w.grad", w.grad)
    differential(prog)


@pytest.mark.clause("VIEW-2")
@pytest.mark.parametrize("write", WRITES)
def test_a_write_through_a_view_of_a_view_of_a_leaf_raises(differential, write):
    def prog(torch, log):
        for name in WRITABLE:
            x = _leaf(torch, "float32")
            v = CHAINS[name](x)
            w = _operand(torch, v)
            log.attempt(name, lambda v=v, w=w: WRITES[write](v, w))
            log(name + " leaf", [x, x._version, x.is_leaf, x.grad_fn is None])
    differential(prog)


@pytest.mark.clause("VIEW-2")
@pytest.mark.parametrize("write", WRITES)
def test_a_write_under_no_grad_through_a_view_of_a_view_of_a_leaf_is_allowed(differential,
                                                                            write):
    def prog(torch, log):
        for name in WRITABLE:
            x = _leaf(torch, "float64")
            v = CHAINS[name](x)
            w = _operand(torch, v)
            try:
                with torch.no_grad():
                    log.attempt(name, lambda v=v, w=w: WRITES[write](v, w))
            finally:
                _clean(torch)
            log(name + " leaf", [x, x.is_leaf, x.grad_fn is None, x.requires_grad])
    differential(prog)


@pytest.mark.clause("VIEW-2")
@pytest.mark.parametrize("chain", ("split then select", "unbind then slice", "no_grad view"))
@pytest.mark.parametrize("leaf", (True, False))
def test_a_write_through_a_chain_with_a_piece_or_a_no_grad_view_raises(differential, chain,
                                                                      leaf):
    def prog(torch, log):
        x = _leaf(torch, "float32")
        y = x if leaf else x * 2
        if chain == "no_grad view":
            try:
                with torch.no_grad():
                    first = y.t()
            finally:
                _clean(torch)
            v = first[1][0:1]
        else:
            v = CHAINS[chain](y)
        log.attempt("mul_", lambda: v.mul_(2.0))
        log.attempt("setitem", lambda: v.__setitem__(..., 3.0))
        log("base", [y, y._version == x._version])
    differential(prog)


# ======================= VIEW-3 =======================

@pytest.mark.clause("VIEW-3")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize("written", ("first view", "the base", "a view of a view"))
def test_views_taken_before_a_write_see_it(differential, dtype, write, written):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=getattr(torch, dtype),
                         requires_grad=True)
        base = x + 0
        v1 = base[0:3]
        v2 = base[2:5]
        v3 = base.view(5, 1).t()
        target = {"first view": v1, "the base": base, "a view of a view": v1[1:][0:2]}[written]
        w = _operand(torch, target)
        WRITES[write](target, w)
        for name, v in (("v2", v2), ("v3", v3), ("v1", v1)):
            log(name, [v, v.requires_grad, v.is_leaf])
        (v2 * torch.tensor([1.0, 10.0, 100.0], dtype=x.dtype)).sum().backward()
        log("x.grad through v2", x.grad)
        log("w.grad through v2", w.grad)
    differential(prog)


@pytest.mark.clause("VIEW-3")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("write", ("copy_", "mul_ by a tensor", "setitem", "add_ of a tensor"))
def test_views_of_a_base_without_grad_require_grad_after_the_write(differential, dtype, write):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        w = torch.tensor([2.0, 3.0], dtype=dt, requires_grad=True)
        buf = torch.ones(2, 2, dtype=dt)
        row0, row1, col1 = buf[0], buf[1], buf[:, 1]
        log("before", [row1.requires_grad, row1.is_leaf, col1.requires_grad])
        value = w * 2
        if write == "copy_":
            row0.copy_(value)
        elif write == "mul_ by a tensor":
            row0.mul_(value)
        elif write == "setitem":
            buf[0] = value
        else:
            buf.add_(value)
        for name, v in (("row0", row0), ("row1", row1), ("col1", col1), ("buf", buf)):
            log(name, [v, v.requires_grad, v.is_leaf])
        (col1 * torch.tensor([10.0, 100.0], dtype=dt)).sum().backward()
        log("w.grad through col1", w.grad)
    differential(prog)


@pytest.mark.clause("VIEW-3")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("leaf", (True, False))
def test_a_write_under_no_grad_is_seen_by_earlier_views(differential, dtype, leaf):
    def prog(torch, log):
        x = _leaf(torch, dtype)
        base = x if leaf else x * 1
        r = base[1]
        c = base[:, 2]
        try:
            with torch.no_grad():
                base.mul_(2.0)
                base[0, 0] = 7.0
        finally:
            _clean(torch)
        log("views", [r, c, r.requires_grad, c.is_leaf])
        (r * r).sum().backward(retain_graph=True)
        log("x.grad through r", x.grad)
        x.grad = None
        (c * 3).sum().backward()
        log("x.grad through c", x.grad)
    differential(prog)


@pytest.mark.clause("VIEW-3")
@pytest.mark.parametrize("dtype", DTYPES)
def test_ops_recorded_before_the_write_keep_their_history(differential, dtype):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=getattr(torch, dtype), requires_grad=True)
        base = x + 0
        v1, v2 = base[0:2], base[1:3]
        before = (v2 * 2 + v2.sum()).sum()
        v1.mul_(10.0)
        after = (v2 * 2 + v2.sum()).sum()
        log("values", [before, after])
        before.backward()
        log("x.grad before", x.grad)
        x.grad = None
        after.backward()
        log("x.grad after", x.grad)
    differential(prog)


@pytest.mark.clause("VIEW-3")
@pytest.mark.parametrize("saving", ("mul", "sin", "pow", "matmul", "log"))
@pytest.mark.parametrize("overlap", (True, False))
def test_an_op_that_saved_an_earlier_view_raises_after_any_write(differential, saving, overlap):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x + 0
        a = y[2:4]
        out = {"mul": lambda: a * a, "sin": lambda: a.sin(), "pow": lambda: a ** 3,
               "matmul": lambda: a @ a, "log": lambda: a.log()}[saving]().sum()
        (y[1:3] if overlap else y[0:2]).mul_(10.0)
        log.attempt("backward", lambda: out.backward())
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("VIEW-3")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("write", ("copy_", "setitem", "add_ of a tensor"))
def test_a_view_that_was_a_leaf_is_moved_into_the_graph_by_a_write(differential, dtype, write):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        w = torch.tensor([[2.0, 3.0], [4.0, 5.0]], dtype=dt, requires_grad=True)
        buf = torch.zeros(2, 2, dtype=dt)
        v = buf[:, 1]
        v.requires_grad_()
        s = (v * torch.tensor([10.0, 100.0], dtype=dt)).sum()
        log("before", [v.requires_grad, v.is_leaf])
        if write == "copy_":
            buf.copy_(w * 1)
        elif write == "setitem":
            buf[0] = w[0]
        else:
            buf.add_(w)
        log("after", [v, v.requires_grad, v.is_leaf])
        log.attempt("a pass to the old accumulator", lambda: s.backward())
        (v * 3).sum().backward()
        log("w.grad through the view", w.grad)
    differential(prog)


# ======================= VIEW-4 =======================

@pytest.mark.clause("VIEW-4")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("write", WRITES)
def test_the_written_view_differentiates_the_write(differential, dtype, write):
    def prog(torch, log):
        x = _leaf(torch, dtype)
        y = x.sin()
        v = y[:, 1:]
        w = _operand(torch, v)
        WRITES[write](v, w)
        log("view", [v, v.is_leaf, v.requires_grad])
        (v * _weights(torch, v)).sum().backward()
        log("x.grad", x.grad)
        log("w.grad", w.grad)
    differential(prog)


@pytest.mark.clause("VIEW-4")
@pytest.mark.parametrize("order", ("a then b", "b then a"))
def test_overlapping_writes_compose_in_order(differential, order):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, requires_grad=True)
        y = x + 0
        a, b = y[0:3], y[2:4]
        first, second = (a, b) if order == "a then b" else (b, a)
        first.mul_(2.0)
        second.pow_(2)
        log("y", y)
        (y * torch.tensor([1.0, 10.0, 100.0, 1000.0], dtype=torch.float64)).sum().backward()
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("VIEW-4")
@pytest.mark.parametrize("write", WRITES)
def test_retain_graph_repeats_a_pass_through_the_write(differential, write):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x + 0
        v = y[1:3]
        w = _operand(torch, v)
        WRITES[write](v, w)
        loss = (y * torch.tensor([1.0, 2.0, 3.0, 4.0])).sum()
        for i in range(3):
            loss.backward(retain_graph=True)
            log(f"pass {i}", [x.grad, w.grad])
        v.sum().backward(retain_graph=True)
        log("through the written view", [x.grad, w.grad])
    differential(prog)


@pytest.mark.clause("VIEW-4")
@pytest.mark.parametrize("write", WRITES)
def test_a_pass_through_a_freed_write_raises(differential, write):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x + 0
        v = y[1:3]
        w = _operand(torch, v)
        WRITES[write](v, w)
        other = y.sum() * 1   # recorded before the first pass
        loss = y.sum()
        loss.backward()
        log("x.grad", x.grad)
        log.attempt("the same loss again", lambda: loss.backward())
        log.attempt("a graph recorded before", lambda: other.backward())
        log.attempt("a graph recorded after, from the base", lambda: (y * 2).sum().backward())
        log.attempt("a graph recorded after, from the view", lambda: v.sum().backward())
        log("x.grad after", x.grad)
    differential(prog)


# ======================= VIEW-5 =======================

@pytest.mark.clause("VIEW-5")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("args", ((0, 0, 1), (0, 1, 1), (1, 1, 2), (-1, -2, 2), (1, 0, 3),
                                  (0, -1, 1), (1, 2, 0)))
def test_narrow_is_the_slice(differential, dtype, args):
    def prog(torch, log):
        x = _leaf(torch, dtype)
        y = x.exp()
        dim, start, length = args
        n = y.narrow(dim, start, length)
        m = torch.narrow(y, dim, start, length)
        log("narrow", [n, m, n._base is y, n.is_leaf, list(n.shape)])
        (n * _weights(torch, n) + m).sum().backward()
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("VIEW-5")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("args", ((0, 0), (0, 1), (0, -1), (1, 0), (1, 2), (-1, -3), (-2, 1)))
def test_select_is_the_index(differential, dtype, args):
    def prog(torch, log):
        x = _leaf(torch, dtype)
        y = x.exp()
        dim, i = args
        s = y.select(dim, i)
        t = torch.select(y, dim, i)
        log("select", [s, t, s._base is y, s.is_leaf, list(s.shape)])
        (s * _weights(torch, s) + t).sum().backward()
        log("x.grad", x.grad)
        v = torch.tensor([1.0, 2.0, 3.0], dtype=getattr(torch, dtype), requires_grad=True)
        e = (v * 1).select(0, i)
        e.backward()
        log("0-d result", [e, list(e.shape), v.grad])
    differential(prog)


@pytest.mark.clause("VIEW-5")
@pytest.mark.parametrize("write", WRITES)
def test_narrow_and_select_are_written_as_views(differential, write):
    def prog(torch, log):
        x = _leaf(torch, "float64")
        y = x + 0
        for name, v in (("narrow", y.narrow(1, 1, 2)), ("select", y.select(1, 0)),
                        ("narrow of select", y.select(0, 1).narrow(0, 0, 2))):
            w = _operand(torch, v)
            WRITES[write](v, w)
            log(name, [y, y._version, v._version])
        log.attempt("backward", lambda: (y * _weights(torch, y)).sum().backward())
        log("x.grad", x.grad)
        log.attempt("narrow of a leaf", lambda: x.narrow(0, 0, 1).mul_(2.0))
        log.attempt("select of a leaf", lambda: x.select(1, 2).zero_())
        log("leaf", [x, x._version])
    differential(prog)


# ======================= VIEW-6 =======================

@pytest.mark.clause("VIEW-6")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", MULTI)
def test_the_pieces_and_their_bases(differential, dtype, op):
    def prog(torch, log):
        x = _leaf(torch, dtype)
        y = x.sin()
        pieces = MULTI[op](y)
        log("pieces", [type(pieces).__name__, len(pieces)])
        log("values", [p for p in pieces])
        log("shapes", [list(p.shape) for p in pieces])
        log("views", [[p._base is y, p.is_leaf, p.requires_grad, p._version] for p in pieces])
        y.detach().add_(1.0)
        log("counters", [p._version for p in pieces])
    differential(prog)


@pytest.mark.clause("VIEW-6")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", MULTI)
@pytest.mark.parametrize("used", ("all", "first", "last", "first twice"))
def test_backward_sums_the_pieces_and_fills_zeros(differential, dtype, op, used):
    def prog(torch, log):
        x = _leaf(torch, dtype)
        y = x * x
        pieces = MULTI[op](y)
        picked = {"all": list(pieces), "first": [pieces[0]], "last": [pieces[-1]],
                  "first twice": [pieces[0], pieces[0]]}[used]
        loss = sum((p * _weights(torch, p, 0.5 + i)).sum() for i, p in enumerate(picked))
        loss.backward()
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("VIEW-6")
@pytest.mark.parametrize("op", MULTI)
def test_a_pass_through_the_pieces_repeats_without_retain_graph(differential, op):
    def prog(torch, log):
        x = _leaf(torch, "float32")
        pieces = MULTI[op](x + 0)
        loss = sum(p.sum() for p in pieces)
        loss.backward()
        loss.backward()
        log("x.grad", x.grad)
        torch.autograd.backward([pieces[0].sum(), pieces[-1].sum()])
        log("x.grad after a pass from two pieces", x.grad)
        log("autograd.grad of one piece", torch.autograd.grad(pieces[-1].sum(), x))
    differential(prog)


@pytest.mark.clause("VIEW-6")
@pytest.mark.parametrize("op", ("split 1", "chunk 2 dim 1", "unbind dim -1"))
def test_the_pieces_under_create_graph(differential, op):
    def prog(torch, log):
        x = _leaf(torch, "float64")
        pieces = MULTI[op](x * x)
        loss = sum((p * p).sum() * (i + 1) for i, p in enumerate(pieces))
        (g,) = torch.autograd.grad(loss, x, create_graph=True)
        log("first derivative", [g, g.requires_grad])
        g.sum().backward()
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("VIEW-6")
def test_the_pieces_of_a_tensor_that_does_not_require_grad(differential):
    def prog(torch, log):
        t = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
        for op in ("split 1", "chunk 2 dim 1", "unbind"):
            pieces = MULTI[op](t)
            log(op, [[p, p.requires_grad, p.is_leaf, p.grad_fn is None, p._base is t]
                     for p in pieces])
        try:
            with torch.no_grad():
                x = _leaf(torch, "float32")
                pieces = x.split(1)
                log("under no_grad", [[p.requires_grad, p.is_leaf] for p in pieces])
        finally:
            _clean(torch)
    differential(prog)


@pytest.mark.clause("VIEW-6")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", (((0,), 0), ((2, 0), 1), ((2, 0), -2), ((0, 3), 0)))
def test_the_pieces_of_an_empty_dimension(differential, dtype, shape, dim):
    def prog(torch, log):
        x = torch.zeros(shape, dtype=getattr(torch, dtype), requires_grad=True)
        y = x + 0
        ops = {"split 1": lambda: y.split(1, dim), "split 3": lambda: y.split(3, dim),
               "split 0": lambda: y.split(0, dim), "chunk 1": lambda: y.chunk(1, dim),
               "chunk 3": lambda: y.chunk(3, dim), "unbind": lambda: y.unbind(dim)}
        for label, op in ops.items():
            pieces = log.attempt(label, op)
            if pieces is None:
                continue
            log(label + " shapes", [list(p.shape) for p in pieces])
            log(label + " flags", [[p._base is y, p.is_leaf, p.requires_grad] for p in pieces])
            if pieces:
                loss = sum((p + p).sum() for p in pieces)
                loss.backward()
                loss.backward()
                log(label + " x.grad", [x.grad, list(x.grad.shape)])
    differential(prog)


# ======================= VIEW-7 =======================

@pytest.mark.clause("VIEW-7")
@pytest.mark.parametrize("op", MULTI)
@pytest.mark.parametrize("write", ("mul_", "setitem", "zero_", "iadd", "a view of it",
                                   "copy_"))
@pytest.mark.parametrize("leaf", (True, False))
def test_writing_a_recorded_piece_raises(differential, op, write, leaf):
    def prog(torch, log):
        x = _leaf(torch, "float32")
        y = x if leaf else x + 0
        piece = MULTI[op](y)[-1]
        if write == "mul_":
            log.attempt("write", lambda: piece.mul_(2.0))
        elif write == "setitem":
            log.attempt("write", lambda: piece.__setitem__(0, 5.0))
        elif write == "zero_":
            log.attempt("write", lambda: piece.zero_())
        elif write == "iadd":
            log.attempt("write", lambda: piece.__iadd__(1.0))
        elif write == "a view of it":
            log.attempt("write", lambda: piece[0:1].mul_(2.0))
        else:
            log.attempt("write", lambda: piece.copy_(piece.detach() * 3))
        log("base", [y, y._version])
        piece.clone().mul_(2.0).sum().backward()
        log("x.grad through a clone", x.grad)
    differential(prog)


@pytest.mark.clause("VIEW-7")
@pytest.mark.parametrize("op", ("split 1", "chunk 2 dim 1", "unbind", "split sizes"))
def test_the_pieces_of_a_tensor_without_grad(differential, op):
    def prog(torch, log):
        buf = torch.zeros(2, 3)
        pieces = MULTI[op](buf)
        log.attempt("a write without grad", lambda: pieces[0].add_(1.0))
        w = (torch.ones(tuple(pieces[-1].shape)) * 2).requires_grad_()
        log.attempt("a write of a value that requires grad", lambda: pieces[-1].copy_(w))
        log.attempt("multiplied by it", lambda: pieces[-1].mul_(w))
        log("buf", [buf, buf._version, buf.requires_grad])
    differential(prog)


@pytest.mark.clause("VIEW-7")
@pytest.mark.parametrize("op", MULTI)
@pytest.mark.parametrize("written", ("the piece", "another piece", "the base",
                                     "another view of the base"))
def test_after_a_write_under_no_grad_the_pieces_refuse_their_history(differential, op,
                                                                      written):
    def prog(torch, log):
        x = _leaf(torch, "float64")
        y = x + 0
        pieces = MULTI[op](y)
        piece = pieces[0]
        before = (piece * 3).sum()
        target = {"the piece": piece, "another piece": pieces[-1], "the base": y,
                  "another view of the base": y[0]}[written]
        try:
            with torch.no_grad():
                target.mul_(2.0)
        finally:
            _clean(torch)
        log("base", [y, y._version])
        log("requires_grad", piece.requires_grad)
        log.attempt("grad_fn", lambda: piece.grad_fn)
        log.attempt("is_leaf", lambda: piece.is_leaf)
        log.attempt("an op", lambda: piece * 2)
        log.attempt("a view of it", lambda: piece[0:1] * 2)
        before.backward()
        log("x.grad from before the write", x.grad)
    differential(prog)


@pytest.mark.clause("VIEW-7")
@pytest.mark.parametrize("op", ("split 1", "chunk 2 dim 1", "unbind dim -1"))
def test_writing_the_base_with_grad_refuses_the_pieces_history(differential, op):
    def prog(torch, log):
        x = _leaf(torch, "float32")
        y = x * 1
        pieces = MULTI[op](y)
        log.attempt("write the base", lambda: y.mul_(2.0))
        log.attempt("write another view", lambda: y.t()[0].add_(1.0))
        log("base", [y, y._version, y.grad_fn is not None])
        log.attempt("grad_fn", lambda: pieces[0].grad_fn)
        log("requires_grad", pieces[0].requires_grad)
        y.sum().backward()
        log("x.grad through the base", x.grad)
    differential(prog)


@pytest.mark.clause("VIEW-7")
@pytest.mark.parametrize("mode", ("no_grad", "inference_mode"))
def test_pieces_taken_in_other_modes_are_the_views_of_those_modes(differential, mode):
    def prog(torch, log):
        x = _leaf(torch, "float32")
        y = x + 0
        try:
            with (torch.no_grad() if mode == "no_grad" else torch.inference_mode()):
                pieces = y.split(1)
                log.attempt("a write inside", lambda: pieces[1].mul_(2.0))
        finally:
            _clean(torch)
        log.attempt("a write outside", lambda: pieces[0].mul_(2.0))
        log("base", [y, y._version])
    differential(prog)


@pytest.mark.clause("VIEW-7")
@pytest.mark.parametrize("op", ("split 1", "chunk 2 dim 1", "unbind", "split sizes"))
@pytest.mark.parametrize("written", ("another piece", "the base", "another view of the base"))
def test_an_unrecorded_piece_refuses_its_history_once_its_base_has_one(differential, op,
                                                                       written):
    def prog(torch, log):
        buf = torch.zeros(2, 3)
        pieces = MULTI[op](buf)
        piece = pieces[0]
        log("before", [piece.requires_grad, piece.is_leaf])
        w = torch.full((3,), 2.0, requires_grad=True)
        target = {"another piece": pieces[-1], "the base": buf,
                  "another view of the base": buf[1]}[written]
        if written == "another piece":
            log.attempt("write the piece", lambda: target.copy_(w[:target.shape[-1]]
                                                                .expand(target.shape)))
            buf[1].copy_(w)
        else:
            target.add_(w)
        log("base", [buf, buf.requires_grad, buf.is_leaf])
        log("requires_grad", piece.requires_grad)
        log.attempt("grad_fn", lambda: piece.grad_fn)
        log.attempt("is_leaf", lambda: piece.is_leaf)
        log.attempt("an op", lambda: piece * 2)
        log("detach", piece.detach() * 2)
    differential(prog)


@pytest.mark.clause("VIEW-7")
def test_the_pieces_of_an_empty_dimension_are_written_without_grad(differential):
    def prog(torch, log):
        buf = torch.zeros(2, 0)
        pieces = buf.chunk(2, 1)
        log.attempt("add_", lambda: pieces[0].add_(1.0))
        log.attempt("setitem", lambda: pieces[1].__setitem__(..., 2.0))
        log("buf", [buf, list(buf.shape), buf.requires_grad])
    differential(prog)


# ======================= VIEW-8 =======================

@pytest.mark.clause("VIEW-8")
@pytest.mark.parametrize("grad_enabled", (True, False))
def test_detach__on_a_view_raises(differential, grad_enabled):
    def prog(torch, log):
        x = _leaf(torch, "float32")
        y = x * 2
        plain = torch.ones(2, 3)
        try:
            with torch.no_grad():
                quiet = y[0]
            torch.set_grad_enabled(grad_enabled)
            for root_name, root in (("leaf", x), ("non-leaf", y), ("no grad", plain)):
                for name, chain in CHAINS.items():
                    v = chain(root)
                    before = [v.requires_grad, v.is_leaf, v._version]
                    log.attempt(f"{root_name} {name}", lambda v=v: v.detach_())
                    log(f"{root_name} {name} after", [before, v.requires_grad, v.is_leaf,
                                                      v._version])
            log.attempt("a view taken under no_grad", lambda: quiet.detach_())
        finally:
            _clean(torch)
        log("detach() of the same view", [y[1:].detach().requires_grad,
                                           y[1:].detach()._base is None])
    differential(prog)


@pytest.mark.clause("VIEW-8")
def test_detach__in_inference_mode_and_on_inference_views(differential):
    def prog(torch, log):
        plain = torch.ones(3)
        try:
            with torch.inference_mode():
                inf = torch.ones(3)
                log.attempt("a view of an ordinary tensor, inside", lambda: plain[1:].detach_())
                log.attempt("a view of an inference tensor, inside", lambda: inf[1:].detach_())
                taken = plain[1:]
        finally:
            _clean(torch)
        log.attempt("a view of an inference tensor, outside", lambda: inf[0:2].detach_())
        log.attempt("a view taken inside, outside", lambda: taken.detach_())
    differential(prog)


@pytest.mark.clause("VIEW-8")
@pytest.mark.clause("INPLACE-1")
@pytest.mark.parametrize("kind", ("leaf", "non-leaf", "no grad"))
def test_detach__on_a_tensor_that_is_not_a_view(differential, kind):
    def prog(torch, log):
        x = _leaf(torch, "float64")
        t = {"leaf": x, "non-leaf": x * 2, "no grad": torch.ones(2)}[kind]
        version = t._version
        out = t.detach_()
        log("result", [out is t, t.requires_grad, t.is_leaf, t.grad_fn is None,
                       t._version == version])
        log("values", t)
    differential(prog)


@pytest.mark.clause("VIEW-8")
@pytest.mark.parametrize("chain", ("select then slice", "t then select", "narrow then select",
                                   "split then select", "unbind then slice", "expand"))
def test_views_of_inference_tensors_are_no_views(differential, chain):
    def prog(torch, log):
        try:
            with torch.inference_mode():
                i = torch.ones(2, 3)
                inside = CHAINS[chain](i)
                log("inside", [inside._base is None, inside.is_inference()])
        finally:
            _clean(torch)
        outside = CHAINS[chain](i)
        log("outside", [outside._base is None, outside.is_inference(), outside.is_leaf])
        log.attempt("detach_ outside", lambda: outside.detach_())
    differential(prog)


# ======================= VIEW-9 =======================

@pytest.mark.clause("VIEW-9")
@pytest.mark.parametrize("op", MULTI)
def test_one_node_for_the_pieces_and_their_output_numbers(differential, op):
    def prog(torch, log):
        x = _leaf(torch, "float32")
        y = x + 0
        pieces = MULTI[op](y)
        log("names", [p.grad_fn.name() for p in pieces])
        log("one node", [p.grad_fn is pieces[0].grad_fn for p in pieces])
        log("its edge", [(n.name(), i) for n, i in pieces[0].grad_fn.next_functions])
        z = pieces[-1] * pieces[0]
        log("output numbers", [(n.name(), i) for n, i in z.grad_fn.next_functions])
        log("a view of a piece", [pieces[-1][0].grad_fn.name(),
                                  [(n.name(), i) for n, i in
                                   pieces[-1][0].grad_fn.next_functions]])
    differential(prog)


@pytest.mark.clause("VIEW-9")
def test_the_names_of_narrow_and_select(differential):
    def prog(torch, log):
        x = _leaf(torch, "float32")
        views = [x.narrow(0, 0, 1), torch.narrow(x, 1, 1, 2), x.select(0, 1),
                 torch.select(x, 1, -1), x.narrow(1, 0, 3)]
        log("names", [v.grad_fn.name() for v in views])
        log("edges", [[n.name() for n, i in v.grad_fn.next_functions] for v in views])
    differential(prog)


@pytest.mark.clause("VIEW-9")
@pytest.mark.parametrize("write", WRITES)
def test_the_edges_of_copy_slices(differential, write):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x + 0
        earlier = y[1:][0:2]
        v = y[1:3]
        w = _operand(torch, v)
        WRITES[write](v, w)
        log("base", [y.grad_fn.name(),
                     [None if n is None else n.name() for n, i in y.grad_fn.next_functions]])
        log("earlier view of a view", [earlier.grad_fn.name(),
                                       [n.name() for n, i in earlier.grad_fn.next_functions]])
        y[0:1].fill_(2.0)
        log("after a second write", [None if n is None else n.name()
                                     for n, i in y.grad_fn.next_functions])
    differential(prog)


@pytest.mark.clause("VIEW-9")
def test_chunk_of_an_empty_dimension_is_split_with_sizes(differential):
    def prog(torch, log):
        x = torch.zeros(2, 0, requires_grad=True)
        log("chunk", [p.grad_fn.name() for p in x.chunk(3, 1)])
        log("split", [p.grad_fn.name() for p in x.split(2, 1)])
        log("chunk of a non-empty dimension", [p.grad_fn.name() for p in x.chunk(2, 0)])
    differential(prog)


@pytest.mark.clause("VIEW-9")
@pytest.mark.parametrize("write", ("mul_ by a tensor", "copy_", "setitem"))
def test_copy_slices_of_a_base_without_a_grad_fn(differential, write):
    def prog(torch, log):
        buf = torch.zeros(4)
        v = buf[1:3]
        w = _operand(torch, v)
        WRITES[write](v, w)
        log("base", [buf.grad_fn.name(), [(None if n is None else n.name(), i)
                                          for n, i in buf.grad_fn.next_functions]])
    differential(prog)
