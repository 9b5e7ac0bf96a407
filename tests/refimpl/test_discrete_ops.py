"""refimpl against torch for the non-differentiable ops and the derivatives at kinks: results
that never require grad (DERIV-1), zero-derivative ops that still record (DERIV-2), casts
(DERIV-3), relu/abs/clamp/sqrt/pow at their kinks (DERIV-4), max/min ties (DERIV-5), where
(DERIV-6), their node names and edges (DERIV-7, GRAPH-4) and what they save (DERIV-8), in
float32 and float64, 0-d and n-d, with grad mode on and off."""
import pytest

from ._twin import graph, same

NAN, INF = float("nan"), float("inf")
DTYPES = ["float32", "float64"]
SHAPES = {"0-d": 0.75, "1-d": [0.5, -1.5, 2.0, 0.0], "2-d": [[0.5, -1.5, 2.0], [1.0, 2.0, -0.75]]}


def flags(t):
    return [t, str(t.dtype), t.requires_grad, t.is_leaf, t.grad_fn is None]


def agree(prog):
    """torch and refimpl agree on what prog returns, and neither raised."""
    out = same(prog)
    assert not (isinstance(out, tuple) and out[:1] == ("raises",)), out
    return out


# ---- DERIV-1: results that never require grad ---------------------------------------------
NON_DIFFERENTIABLE = {
    "gt": lambda lib, x, y: x.gt(y), "lt": lambda lib, x, y: x.lt(0.5),
    "ge": lambda lib, x, y: lib.ge(x, y), "le": lambda lib, x, y: lib.le(x, 2.0),
    "eq": lambda lib, x, y: x.eq(x), "ne": lambda lib, x, y: lib.ne(y, x),
    "> op": lambda lib, x, y: x > y, "<= op": lambda lib, x, y: x <= 1,
    "== op": lambda lib, x, y: x == y, "!= op": lambda lib, x, y: x != 0.5,
    "reflected <": lambda lib, x, y: 1 < x, "broadcast >=": lambda lib, x, y: x >= y.sum(),
    "mixed dtypes": lambda lib, x, y: x > y.double(),
    "argmax": lambda lib, x, y: x.argmax(), "argmin": lambda lib, x, y: lib.argmin(x),
    "argmax dim": lambda lib, x, y: x.argmax(0), "argmax -1 keep": lambda lib, x, y: x.argmax(
        -1, keepdim=True), "argmax keep": lambda lib, x, y: x.argmax(keepdim=True),
    "long": lambda lib, x, y: x.long(), "to int64": lambda lib, x, y: x.to(lib.int64),
    "to bool": lambda lib, x, y: x.to(lib.bool), "to dtype=": lambda lib, x, y: x.to(
        dtype=lib.int64), "max indices": lambda lib, x, y: x.max(0).indices,
    "min indices": lambda lib, x, y: lib.min(x, -1, keepdim=True)[1],
    "nonzero": lambda lib, x, y: x.nonzero(), "nonzero fn": lambda lib, x, y: lib.nonzero(y),
}


@pytest.mark.parametrize("grad", ["grad", "no_grad"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(NON_DIFFERENTIABLE))
def test_non_differentiable_results_are_leaves_that_do_not_require_grad(name, dtype, shape, grad):
    def prog(lib):
        x = lib.tensor(SHAPES[shape], dtype=getattr(lib, dtype), requires_grad=True)
        y = (x * 0.5).detach().requires_grad_()
        with lib.set_grad_enabled(grad == "grad"):
            return flags(NON_DIFFERENTIABLE[name](lib, x * 1, y))
    out = agree(prog)
    assert out[2:] == [False, True, True]


def test_a_mask_from_a_comparison_is_a_constant_of_the_graph():
    def prog(lib):
        x = lib.tensor([-1.0, 0.0, 2.0, 3.0], requires_grad=True)
        y = (x * (x > 0) + x.argmax() * x).sum()
        y.backward()
        return [y, x.grad, graph(y)]
    agree(prog)


# ---- DERIV-2: zero-derivative ops record and give exact zeros ----------------------------
ZERO = {
    "floor": lambda lib, h: h.floor(), "sign": lambda lib, h: lib.sign(h),
    "round": lambda lib, h: h.round(), "round fn": lambda lib, h: lib.round(h),
    "round 1": lambda lib, h: h.round(decimals=1), "round -1": lambda lib, h: h.round(
        decimals=-1), "floor_": lambda lib, h: h.floor_(), "sign_": lambda lib, h: h.sign_(),
    "round_": lambda lib, h: h.round_(),
}
VALUES = [0.5, 1.5, 2.5, -0.5, -2.5, 0.0, -0.0, 0.25, 0.35, 2.675, 15.0, 25.0, -1.7, NAN, INF]
UPSTREAM = [1.0, NAN, INF, -INF, 2.0, 0.0, 1.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(ZERO))
def test_zero_derivative_ops_record_and_give_zeros(name, dtype):
    def prog(lib):
        x = lib.tensor(VALUES, dtype=getattr(lib, dtype), requires_grad=True)
        y = ZERO[name](lib, x * 1)
        y.backward(lib.tensor(UPSTREAM, dtype=getattr(lib, dtype)), retain_graph=True)
        first = x.grad.clone()
        y.backward(lib.tensor(UPSTREAM, dtype=getattr(lib, dtype)))  # nothing saved, no error
        return flags(y) + [y.grad_fn.name(), first, str(x.grad.dtype), x.grad]
    out = agree(prog)
    assert out[2:4] == [True, False] and set(out[6]) == {0.0}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_zero_derivative_ops_of_shapes_and_of_integers(shape):
    def prog(lib):
        x = lib.tensor(SHAPES[shape], requires_grad=True)
        outs = [x.floor(), x.sign(), x.round()]
        lib.autograd.backward(outs, [lib.ones_like(o) for o in outs])
        i = lib.tensor([-3, 0, 2])
        return [outs, x.grad, [flags(f(i)) for f in (lambda t: t.floor(), lambda t: t.sign(),
                                                     lambda t: t.round())]]
    agree(prog)


# ---- DERIV-3: casts between floating dtypes ------------------------------------------------
CASTS = {
    "double": lambda lib, x: x.double(), "float": lambda lib, x: x.float(),
    "to float64": lambda lib, x: x.to(lib.float64), "to float32": lambda lib, x: x.to(
        lib.float32), "to dtype=": lambda lib, x: x.to(dtype=lib.float64),
    "to copy": lambda lib, x: x.to(x.dtype, copy=True), "to other": lambda lib, x: x.to(
        lib.ones(1, dtype=lib.float64)),
}


@pytest.mark.parametrize("grad", ["grad", "no_grad"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(CASTS))
def test_float_casts_record_or_return_the_tensor_itself(name, dtype, grad):
    def prog(lib):
        x = lib.tensor([1.5, -2.25], dtype=getattr(lib, dtype), requires_grad=True)
        with lib.set_grad_enabled(grad == "grad"):
            y = CASTS[name](lib, x)
        out = flags(y) + [y is x, None if y.grad_fn is None else y.grad_fn.name()]
        if y.requires_grad and grad == "grad":
            (y * 3).sum().backward()
            out += [x.grad, str(x.grad.dtype), graph(y)]
        return out
    agree(prog)


# ---- DERIV-4: kinks of relu, abs, clamp, sqrt and pow --------------------------------------
KINKS = {
    "relu": lambda t: t.relu(), "abs": lambda t: t.abs(), "sqrt": lambda t: t.sqrt(),
    "pow 0.5": lambda t: t.pow(0.5), "pow 1.5": lambda t: t ** 1.5, "pow 2": lambda t: t ** 2,
    "pow -1": lambda t: t.pow(-1), "pow 0": lambda t: t.pow(0), "pow 1": lambda t: t.pow(1),
    "pow -0.5": lambda t: t.pow(-0.5),
    "clamp": lambda t: t.clamp(-0.6, 0.8), "clamp min": lambda t: t.clamp(min=-0.6),
    "clamp max": lambda t: t.clamp(max=0.8), "clamp min>max": lambda t: t.clamp(0.8, -0.6),
    "clamp min=max": lambda t: t.clamp(0.5, 0.5), "clip": lambda t: t.clip(0.0, 1.0),
}
# signed zeros: torch's pow computes exponent -0.5 as 1 / sqrt, so -0.0 gives -inf (in pow
# -0.5 itself, and in the derivative of pow 0.5 and of sqrt), where IEEE pow gives +inf
KINK_VALUES = {"0-d": 0.0, "n-d": [[0.0, -0.6, 0.8], [0.5, 1.0, -1.0]],
               "signed zeros": [-0.0, 0.0, 4.0]}


@pytest.mark.parametrize("upstream", ["ones", "zeros", "nan"])
@pytest.mark.parametrize("shape", list(KINK_VALUES))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(KINKS))
def test_derivatives_at_kinks(name, dtype, shape, upstream):
    def prog(lib):
        x = lib.tensor(KINK_VALUES[shape], dtype=getattr(lib, dtype), requires_grad=True)
        y = KINKS[name](x * 1)
        y.backward(lib.ones_like(y) * {"ones": 1.0, "zeros": 0.0, "nan": NAN}[upstream])
        return [y, x.grad, str(x.grad.dtype)]
    agree(prog)


# ---- DERIV-5: max and min, full and along a dim --------------------------------------------
EXTREMES = {
    "ties": [1.0, 3.0, 3.0, 2.0], "all equal": [3.0, 3.0, 3.0], "2-d ties": [[1.0, 5.0],
                                                                              [5.0, 2.0]],
    "rows": [[2.0, 2.0, 1.0], [0.0, 4.0, 4.0]], "0-d": 3.0, "inf": [INF, 1.0, INF],
    "-inf": [-INF, -INF], "signed zeros": [0.0, -0.0], "nan": [1.0, NAN, 2.0, NAN],
}
REDUCTIONS = {
    "max": lambda lib, x: x.max(), "min": lambda lib, x: x.min(),
    "torch.max": lambda lib, x: lib.max(x), "max 0": lambda lib, x: x.max(0),
    "min 0": lambda lib, x: lib.min(x, 0), "max -1 keep": lambda lib, x: x.max(-1, keepdim=True),
    "min dim= keep": lambda lib, x: x.min(dim=0, keepdim=True),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("values", list(EXTREMES))
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_max_and_min_share_or_select_the_gradient(name, values, dtype):
    def prog(lib):
        x = lib.tensor(EXTREMES[values], dtype=getattr(lib, dtype), requires_grad=True)
        r = REDUCTIONS[name](lib, x * 1)
        v = r if not isinstance(r, tuple) else r.values
        v.backward(lib.ones_like(v) * 2.0)
        idx = [] if not isinstance(r, tuple) else [r.indices, flags(r.indices), r[0] is r.values]
        return flags(v) + [v.grad_fn.name(), x.grad, str(x.grad.dtype),
                           x.argmax(), x.argmin()] + idx
    agree(prog)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_max_along_a_dim_of_a_larger_tensor(dim):
    def prog(lib):
        vals = [[[float((i * 7 + j * 3 + k) % 5) for k in range(4)] for j in range(3)]
                for i in range(2)]
        x = lib.tensor(vals, requires_grad=True)
        v, i = x.max(dim)
        (v * lib.arange(v.numel()).reshape(v.shape)).sum().backward()
        return [v, i, x.grad, x.argmax(dim), x.max(), x.argmax()]
    agree(prog)


def test_an_empty_max_raises_and_a_bad_dim_raises():
    def empty(lib):
        return lib.zeros(0).max()

    def bad_dim(lib):
        return lib.ones(2).max(1)
    assert same(empty)[0] == "raises" and same(bad_dim)[0] == "raises"


# ---- DERIV-6: where ---------------------------------------------------------------------
WHERE = {
    "broadcast": lambda lib, c, a, b: lib.where(c, a, b),
    "swapped": lambda lib, c, a, b: lib.where(c, b, a),
    "scalar other": lambda lib, c, a, b: lib.where(c, a, 0.0),
    "scalar self": lambda lib, c, a, b: lib.where(c, 1.5, a),
    "method": lambda lib, c, a, b: a.where(c, b), "same": lambda lib, c, a, b: lib.where(c, a, a),
    "promote": lambda lib, c, a, b: lib.where(c, a, b.double()),
    "0-d other": lambda lib, c, a, b: lib.where(c, a, lib.tensor(5.0, dtype=lib.float64)),
    "only b": lambda lib, c, a, b: lib.where(c, a.detach(), b),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(WHERE))
def test_where_selects_the_gradient(name, dtype):
    def prog(lib):
        dt = getattr(lib, dtype)
        a = lib.tensor([1.0, -2.0, 3.0], dtype=dt, requires_grad=True)
        b = lib.tensor([[10.0], [20.0]], dtype=dt, requires_grad=True)
        c = lib.tensor([True, False, True])
        y = WHERE[name](lib, c, a, b)
        up = lib.ones_like(y)
        up[..., 1] = NAN            # where the condition is False: b's side only
        y.backward(up)
        return flags(y) + [graph(y), a.grad, b.grad]
    agree(prog)


def test_where_needs_a_bool_condition():
    def prog(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        return lib.where(lib.tensor([1.0, 0.0]), a, a)
    assert same(prog)[0] == "raises"


# ---- DERIV-8: what they save ---------------------------------------------------------------
SAVES = {  # (forward, the tensor then written in place)
    "floor input": lambda lib, h: (h.floor(), h), "sign output": lambda lib, h: (
        (lambda r: (r * 1, r))(h.sign())), "max input": lambda lib, h: (h.max(), h),
    "max output": lambda lib, h: ((lambda r: (r * 1, r))(h.max())),
    "min input": lambda lib, h: (h.min(), h),
    "max dim input": lambda lib, h: (h.max(1).values, h),
    "max dim values": lambda lib, h: ((lambda r: (r.values * 1, r.values))(h.max(1))),
    "max dim indices": lambda lib, h: ((lambda r: (r.values, r.indices))(h.max(1))),
    "min dim indices": lambda lib, h: ((lambda r: (r.values, r.indices))(h.min(0, True))),
    "where condition": lambda lib, h: ((lambda c: (lib.where(c, h, 0.0), c))(h > 1)),
    "where input": lambda lib, h: (lib.where(h > 1, h, 0.0), h),
    "where output": lambda lib, h: ((lambda r: (r * 1, r))(lib.where(h > 1, h, 0.0))),
    "double input": lambda lib, h: (h.double(), h),
    "double output": lambda lib, h: ((lambda r: (r * 1, r))(h.double())),
}


@pytest.mark.parametrize("name", list(SAVES))
def test_what_is_saved(name):
    def prog(lib):
        x = lib.tensor([[0.5, 2.0, -1.5], [3.0, 3.0, 0.2]], requires_grad=True)
        out, written = SAVES[name](lib, x + 0)
        out.sum().backward(retain_graph=True)
        first = x.grad.clone()
        with lib.no_grad():
            written.fill_(1)
        try:
            out.sum().backward()
            return [first, "ok", x.grad]
        except RuntimeError as e:
            return [first, str(e).split(":")[0]]
    agree(prog)


@pytest.mark.parametrize("name", ["floor", "max", "max dim", "where", "double"])
def test_second_backward(name):
    """Only the nodes that saved something refuse a second backward (FREE-3, DERIV-8)."""
    forward = {"floor": lambda lib, h: h.floor(), "max": lambda lib, h: h.max(),
               "max dim": lambda lib, h: h.max(0).values,
               "where": lambda lib, h: lib.where(h > 1, h, 0.0),
               "double": lambda lib, h: h.double()}[name]

    def prog(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = forward(lib, x + 0).sum()
        y.backward()
        y.backward()
        return x.grad
    out = same(prog)
    assert (out == ("raises", "GRAPH_FREED")) == (name in ("max", "max dim", "where"))


# ---- UNSPEC-8: where the function is undefined ---------------------------------------------
UNDEFINED = {
    "sqrt -1": lambda lib, x: x.sqrt(), "log -1": lambda lib, x: x.log(),
    "pow 0.5 -1": lambda lib, x: x.pow(0.5), "relu nan": lambda lib, x: (x * NAN).relu(),
    "abs nan": lambda lib, x: (x * NAN).abs(), "max nan": lambda lib, x: (x * NAN).max(),
    "where sqrt": lambda lib, x: lib.where(x > 0, x.sqrt(), lib.zeros(1)),
}


@pytest.mark.parametrize("name", list(UNDEFINED))
def test_gradients_where_the_function_is_undefined(name):
    """UNSPEC-8 leaves these gradients open; refimpl still gives torch's (NaN for sqrt, log and
    pow of -1, relu's 1 and abs's 0 at NaN, max's share among NaNs), and the forward values."""
    def prog(lib):
        x = lib.tensor([-1.0], requires_grad=True)
        y = UNDEFINED[name](lib, x)
        y.sum().backward()
        return [y, x.grad]
    agree(prog)
