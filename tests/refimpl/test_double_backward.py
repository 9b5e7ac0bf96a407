"""create_graph=True against torch: the gradients are recorded (DOUBLE-1), second and third
derivatives of every op in scope (DOUBLE-2), accumulation into `.grad` (DOUBLE-3, DOUBLE-4),
freeing (DOUBLE-5, FREE-7), version checks (DOUBLE-6), grad mode (DOUBLE-7), the warning of
backward (DOUBLE-8), hooks in the second pass (DOUBLE-9) and the piecewise-linear ops
(DOUBLE-10), each in float32 and float64 and over several shapes."""
import warnings

import pytest

import refimpl

from ._twin import same as _same


def same(prog, rel_tol: float | None = None):
    """torch and refimpl agree, and the program ran to its end on torch (an error that both
    raise half way would hide what follows it)."""
    want = _same(prog, rel_tol)
    assert not (isinstance(want, tuple) and want[:1] == ("raises",)), want
    return want

DTYPES = ("float32", "float64")

# op -> f(torch, x, y): x and y are two leaves of shape (2, 3) with values away from the kinks
# and poles of every op (so that derivatives are defined, and equal within tolerance)
OPS = {
    "mul": lambda t, x, y: x * y * x,
    "mul_scalar": lambda t, x, y: (x * 3.0) * x,
    "div": lambda t, x, y: x / y,
    "rdiv": lambda t, x, y: 2.0 / x,
    "reciprocal": lambda t, x, y: x.reciprocal() * y,
    "add_sub_neg": lambda t, x, y: (x + y - 2.0 * x).neg() * y,
    "rsub": lambda t, x, y: (1.0 - x) * x,
    "pow2": lambda t, x, y: x ** 2,
    "pow3": lambda t, x, y: x ** 3 * y,
    "pow_half": lambda t, x, y: x ** 0.5,
    "pow_neg": lambda t, x, y: x ** -1.5,
    "pow1": lambda t, x, y: x ** 1 * y,
    "pow0": lambda t, x, y: x ** 0 * y * x,
    "rpow": lambda t, x, y: 2.0 ** x,
    "exp": lambda t, x, y: x.exp(),
    "log": lambda t, x, y: x.log() * y,
    "sqrt": lambda t, x, y: x.sqrt(),
    "sin": lambda t, x, y: x.sin() * y,
    "cos": lambda t, x, y: x.cos(),
    "tanh": lambda t, x, y: x.tanh(),
    "sigmoid": lambda t, x, y: x.sigmoid() * y,
    "relu": lambda t, x, y: (x - 1.2).relu() * x,
    "abs": lambda t, x, y: (x - 1.2).abs() * x,
    "clamp": lambda t, x, y: x.clamp(0.9, 1.6) * x,
    "clamp_min": lambda t, x, y: x.clamp(min=1.0) * y,
    "sum_dim": lambda t, x, y: (x * x).sum(0) * y.sum(0),
    "sum_keepdim": lambda t, x, y: (x * y).sum(1, keepdim=True) * x,
    "mean": lambda t, x, y: (x.exp()).mean() * y,
    "mean_dim": lambda t, x, y: (x * x).mean(1) * y.sum(1),
    "mm": lambda t, x, y: (x @ y.t()) * (x @ y.t()),
    "mv": lambda t, x, y: (x @ y[0]).sin(),
    "dot": lambda t, x, y: (x[0] @ y[1]) * x,
    "vec_mat": lambda t, x, y: (y[0] @ x.t()).exp(),
    "bmm": lambda t, x, y: (x.unsqueeze(0).expand(2, 2, 3) @ y.t().unsqueeze(0) * 0.3).tanh(),
    "batch_fold": lambda t, x, y: (x.reshape(2, 3, 1).expand(2, 3, 2) @ y[:, :2]).sin(),
    "views": lambda t, x, y: (x.t().reshape(6).view(3, 2).unsqueeze(0).squeeze(0) * y.t()).exp(),
    "transpose": lambda t, x, y: x.transpose(0, 1).sin() * y.T,
    "expand": lambda t, x, y: x[:, :1].expand(2, 3).exp() * y,
    "broadcast": lambda t, x, y: x * y[0] * x[1],
    "index": lambda t, x, y: x[1].sin() * y[0, 1:2] * x[..., 0:1].squeeze(1)[0],
    "clone": lambda t, x, y: x.clone().exp() * y,
    "inplace": lambda t, x, y: (x * 1).mul_(y).exp_() * x,
    "inplace_view": lambda t, x, y: _write_view(x, y),
    "setitem": lambda t, x, y: _setitem(x, y),
    "copy": lambda t, x, y: (x * 1).copy_(y.sin()) * x,
    "fill_tensor": lambda t, x, y: (x * 1).fill_(y[0, 0] * y[0, 1]) * x,
    "zero": lambda t, x, y: (x * 1).zero_() + x * y,
    "floor_sign_round": lambda t, x, y: (x * 2).floor() * x + x.sign() * y * x + x.round() * y,
    "cast": lambda t, x, y: (x.double() * y.double()).float() * x,
    "where": lambda t, x, y: t.where(x > 1.2, x * y, x.exp()) * x,
    "max_min": lambda t, x, y: x.max() * y + x.min() * x,
    "max_dim": lambda t, x, y: (x.max(1).values.sin() * y.sum(1)
                                + (x.min(0, keepdim=True)[0] * x).sum(1)),
}


def _write_view(x, y):
    z = x * 1
    z[0].mul_(y[1])  # CopySlices: the base's gradient through the view's formula
    return z.exp() * x


def _setitem(x, y):
    z = y.sin() + 1
    z[:, 1] = x[:, 0] * x[:, 2]
    return z * x


def _leaves(torch, dtype):
    dt = getattr(torch, dtype)
    x = torch.tensor([[1.1, 1.3, 1.7], [0.8, 1.45, 1.25]], dtype=dt, requires_grad=True)
    y = torch.tensor([[0.9, 1.6, 1.2], [1.35, 0.7, 1.05]], dtype=dt, requires_grad=True)
    return x, y


def _plain(t):
    """A gradient as a plain tensor: torch returns some zero second derivatives as tensors whose
    values cannot be read (abs's sgn: a ZeroTensor), which `+ 0` makes ordinary (UNSPEC-9)."""
    return None if t is None else t + 0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(OPS))
def test_second_and_third_derivatives(op, dtype):
    """DOUBLE-1, DOUBLE-2: the first derivative records a graph exactly when torch's does, the
    second derivative (a Hessian-vector product over both leaves) and a third equal torch's."""
    def prog(torch):
        x, y = _leaves(torch, dtype)
        out = OPS[op](torch, x, y)
        gx, gy = torch.autograd.grad(out.sum(), (x, y), create_graph=True, allow_unused=True)
        res = [[g, None if g is None else g.requires_grad] for g in (gx, gy)]
        graphed = [g for g in (gx, gy) if g is not None and g.requires_grad]
        if graphed:
            v = sum((g * (i + 1.5)).sum() for i, g in enumerate(graphed))
            hx, hy = torch.autograd.grad(v, (x, y), create_graph=True, allow_unused=True)
            res.append([_plain(hx), _plain(hy)])
            third = [h for h in (hx, hy) if h is not None and h.requires_grad]
            if third:
                w = sum((h * h).sum() for h in third)
                res.append([_plain(t) for t in torch.autograd.grad(w, (x, y), allow_unused=True)])
        return res
    # float32: torch's MKL and numpy's BLAS sum a product in another order, which can differ in
    # the last bit (mv on an Intel core: 5.1099997 against 5.1100001); sin's derivatives carry
    # it on and the third derivative grows it to about 2e-5 relative
    same(prog, 1e-4 if dtype == "float32" else None)


@pytest.mark.parametrize("shape", [(), (3,), (2, 2)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_backward_accumulates_out_of_place(shape, dtype):
    """DOUBLE-3, DOUBLE-4: the first `.grad` a copy (CopyBackwards, version 1), a second one a
    new sum (AddBackward0), the old one unchanged; then a plain backward in place (LEAF-7);
    through backward(inputs=) and a gradient that requires grad too."""
    def prog(torch):
        warnings.simplefilter("ignore")
        dt = getattr(torch, dtype)
        x = torch.full(shape, 1.5, dtype=dt, requires_grad=True)
        v = torch.full(shape, 1.0, dtype=dt, requires_grad=True)
        (x ** 3).sum().backward(create_graph=True)
        first = x.grad
        out = [first, first.grad_fn.name(), first._version, first.requires_grad]
        (x.sin() * x).backward(v, create_graph=True, inputs=[x])
        out += [x.grad, x.grad.grad_fn.name(), x.grad._version, x.grad is first, first]
        x.grad.sum().backward()  # into x.grad in place: the same tensor, its version bumped
        out += [x.grad, x.grad is not first, x.grad._version, v.grad]
        lin = torch.full(shape, 1.0, dtype=dt, requires_grad=True)
        (lin * 2).sum().backward(create_graph=True)
        out += [lin.grad, lin.grad.requires_grad, lin.grad.grad_fn, lin.grad._version]
        (lin * lin).sum().backward(create_graph=True)
        out += [lin.grad, lin.grad.grad_fn.name(), lin.grad._version]
        return out
    same(prog)


# leaf layouts (DOUBLE-4, GRAD-2): dense ones get a copy_ into their own strides, ones with
# gaps or overlaps a row-major clone
LAYOUTS = {
    "vector": lambda t, dt: t.arange(1.0, 4.0, dtype=dt),
    "scalar": lambda t, dt: t.tensor(1.5, dtype=dt),
    "matrix": lambda t, dt: t.arange(1.0, 7.0, dtype=dt).reshape(2, 3),
    "transposed": lambda t, dt: t.arange(1.0, 7.0, dtype=dt).reshape(2, 3).t(),
    "dense_slice": lambda t, dt: t.arange(1.0, 9.0, dtype=dt)[2:6],
    "gaps": lambda t, dt: t.arange(1.0, 9.0, dtype=dt)[::2],
    "column": lambda t, dt: t.arange(1.0, 7.0, dtype=dt).reshape(2, 3)[:, 1:],
    "expanded": lambda t, dt: t.arange(1.0, 3.0, dtype=dt).expand(3, 2),
    "empty_column": lambda t, dt: t.arange(1.0, 7.0, dtype=dt).reshape(2, 3).narrow(1, 2, 0),
}
# a loss per shape of the gradient's computation: recorded (it reads the leaf) or linear
LEAF_LOSSES = {
    "square": lambda x: (x * x).sum(),
    "exp": lambda x: x.exp().sum(),
    "linear": lambda x: (x * 3.0).sum(),
}


def _node(t):
    return None if t.grad_fn is None else t.grad_fn.name()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("first, second", [("square", "exp"), ("linear", "square"),
                                           ("linear", "linear"), ("exp", "linear")])
def test_recorded_grad_nodes_per_leaf_layout(layout, dtype, first, second):
    """DOUBLE-4: a leaf's first recorded .grad is a copy_ (CopyBackwards) into its own strides
    where its memory is dense, a row-major clone (CloneBackward0) where it has gaps or
    overlaps; a second create_graph pass's sum is AddBackward0; either only where DOUBLE-1
    records it; a plain pass after adds in place and leaves the node."""
    def prog(torch):
        warnings.simplefilter("ignore")
        x = LAYOUTS[layout](torch, getattr(torch, dtype)).requires_grad_()
        LEAF_LOSSES[first](x).backward(create_graph=True)
        g = x.grad
        out = [g, _node(g), g._version, g.requires_grad, g.is_contiguous()]
        LEAF_LOSSES[second](x).backward(create_graph=True)
        out += [x.grad, _node(x.grad), x.grad is g, g]
        kept = x.grad
        LEAF_LOSSES["square"](x).backward()
        out += [x.grad, _node(x.grad), x.grad is kept]
        return out
    same(prog)


@pytest.mark.parametrize("dtype", DTYPES)
def test_plain_then_recorded_accumulation_and_retained_grads(dtype):
    """DOUBLE-3, DOUBLE-4: after a plain backward, a create_graph one adds out of place; a
    retained non-leaf's `.grad` is a clone, then a sum; a non-leaf input of backward(inputs=)."""
    def prog(torch):
        warnings.simplefilter("ignore")
        x = torch.tensor([0.5, 1.5], dtype=getattr(torch, dtype), requires_grad=True)
        (x * x).sum().backward()
        plain = x.grad
        (x * x * x).sum().backward(create_graph=True)
        out = [plain, x.grad, x.grad is plain, x.grad.grad_fn.name()]
        h = x.exp()
        h.retain_grad()
        (h * h).sum().backward(create_graph=True)
        out += [h.grad, h.grad.grad_fn.name(), h.grad._version]
        (h * h * h).sum().backward(create_graph=True)
        out += [h.grad, h.grad.grad_fn.name()]
        k = x * 2
        (k * k).sum().backward(create_graph=True, inputs=[k])
        out += [k.grad, k.grad.grad_fn.name()]
        out.append(torch.autograd.grad(h.grad.sum(), x))
        return out
    same(prog)


@pytest.mark.parametrize("dtype", DTYPES)
def test_retain_graph_defaults_to_create_graph_and_freeing(dtype):
    """FREE-7, DOUBLE-5: create_graph keeps the first graph by default; with retain_graph=False
    it is freed, which the gradient's graph reaches where it read a saved result (exp) and not
    where it read a leaf (sin); a backward through the gradient's graph frees that in turn."""
    def prog(torch):
        warnings.simplefilter("ignore")
        dt = getattr(torch, dtype)
        out = []
        x = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
        y = x.exp().sum()
        y.backward(create_graph=True)
        y.backward()
        out.append(x.grad)
        for f in (lambda x: x.exp(), lambda x: x.sin(), lambda x: x * x,
                  lambda x: x.sin().exp(), lambda x: (x * 3).sin(), lambda x: x.tanh()):
            x = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
            y = f(x).sum()
            g, = torch.autograd.grad(y, x, create_graph=True, retain_graph=False)
            for root in (g.sum, g.sum, lambda y=y: y):
                try:
                    root().backward()
                    out.append(["ok", x.grad])
                except RuntimeError as exc:
                    out.append(str(exc)[:40])
        return out
    same(prog)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["sigmoid_", "exp_", "tanh_", "relu_", "sqrt_"])
def test_a_result_saved_through_a_view_leads_to_the_views_history(op, dtype):
    """DOUBLE-2: a result an in-place op saved through a view (y[1:].exp_()) leads, in the
    gradient's graph, to the view's history after the write (AsStridedBackward0, CopySlices),
    not to the op's node inside CopySlices: one pass through the gradient's graph runs each
    node of the first graph once, and frees it once (retain_graph False)."""
    def prog(torch):
        out = []
        for index in (slice(1, None), slice(0, 1), 0):
            x = torch.tensor([1.5, 2.0, 0.5], dtype=getattr(torch, dtype), requires_grad=True)
            y = x * 2.0
            getattr(y[index], op)()
            g, = torch.autograd.grad(y.cos().sum(), x, create_graph=True)
            (g * x).sum().backward()
            out.append(x.grad)
            try:
                y.cos().sum().backward()        # the first graph, freed by the second pass
                out.append(["ok", x.grad])
            except RuntimeError as exc:
                out.append(str(exc)[:40])
        return out
    same(prog)


@pytest.mark.parametrize("dtype", DTYPES)
def test_version_checks_on_the_gradients_graph(dtype):
    """DOUBLE-6: a write after the first pass to a value the second derivative reads raises at
    the second backward (a leaf sin read, an exp result, x**3's input), one it does not read
    (h * h's h) does not."""
    def prog(torch):
        warnings.simplefilter("ignore")
        dt = getattr(torch, dtype)
        out = []
        cases = [("leaf", lambda x: x.sin()), ("leaf", lambda x: x ** 3),
                 ("leaf", lambda x: x.log()), ("h", lambda h: h * h), ("h", lambda h: h.cos()),
                 ("out", None), ("leaf_backward", lambda x: x ** 3)]
        for what, f in cases:
            x = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
            h = x * 1
            if what == "out":
                h = x.exp()
                g, = torch.autograd.grad(h.sum(), x, create_graph=True)
            elif what == "h":
                g, = torch.autograd.grad(f(h).sum(), x, create_graph=True)
            elif what == "leaf_backward":
                f(x).sum().backward(create_graph=True)
                g = x.grad
            else:
                g, = torch.autograd.grad(f(x).sum(), x, create_graph=True)
            if what == "h" or what == "out":
                h.add_(1)
            else:
                with torch.no_grad():
                    x.mul_(2)
            try:
                out.append(torch.autograd.grad(g.sum(), x))
            except RuntimeError as exc:
                out.append(str(exc)[:40])
        return out
    same(prog)


def test_grad_mode_in_each_node_and_in_hooks():
    """DOUBLE-7: hooks of every kind see grad mode on and recorded gradients, inside no_grad
    too; what a hook returns keeps its graph; a hook that changes grad mode changes it for the
    rest of its own node only (MODE-8 for the plain pass)."""
    def prog(torch):
        warnings.simplefilter("ignore")
        seen = []

        def look(label):
            return lambda *a: seen.append([label, torch.is_grad_enabled()]
                                          + [t.requires_grad for t in _flat(a)])
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        h = x.exp()
        h.register_hook(look("tensor"))
        h.grad_fn.register_prehook(look("pre"))
        h.grad_fn.register_hook(look("post"))
        x.register_hook(look("leaf"))
        x.register_post_accumulate_grad_hook(look("acc"))
        loss = (h * h).sum()
        with torch.no_grad():
            loss.backward(create_graph=True)
            seen.append(["after", torch.is_grad_enabled(), x.grad.requires_grad])
        z = torch.tensor([1.0, 2.0], requires_grad=True)
        z.register_hook(lambda g: g * z)
        (z * z).sum().backward(create_graph=True)
        seen.append([z.grad, torch.autograd.grad(z.grad.sum(), z)])
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        k = w * w
        k.register_hook(lambda g: _set_mode(torch, False))
        k.grad_fn.register_hook(look("off"))
        w.register_hook(look("next node"))
        k.sin().sum().backward(create_graph=True)
        seen.append(["end", torch.is_grad_enabled(), w.grad.requires_grad])
        torch.set_grad_enabled(True)
        m = w * w
        s = m.sin()
        s.register_hook(lambda g: _set_mode(torch, True))
        # what the formula of s's node records then is left open (UNSPEC-9): grad mode only
        m.register_hook(lambda g: seen.append(["plain next node", torch.is_grad_enabled()]))
        loss = s.sum()
        with torch.no_grad():
            loss.backward()
        seen.append(["plain end", torch.is_grad_enabled()])
        return seen
    same(prog)


def _set_mode(torch, mode):
    torch.set_grad_enabled(mode)


def _flat(args):
    for a in args:
        if isinstance(a, tuple):
            yield from (t for t in a if t is not None)
        elif hasattr(a, "requires_grad"):
            yield a


def test_hooks_run_in_the_second_pass():
    """DOUBLE-9: a leaf's hook runs in each pass that reaches it; a non-leaf's when the
    gradient's graph leads back through its node (sin read h), not otherwise (h * 3)."""
    def prog(torch):
        warnings.simplefilter("ignore")
        seen = []
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: seen.append(["x", g, g.requires_grad]))
        h = x * x
        h.register_hook(lambda g: seen.append(["h", g, g.requires_grad]))
        k = x * 3
        k.register_hook(lambda g: seen.append(["k", g, g.requires_grad]))
        (h.sin() + k * k).sum().backward(create_graph=True)
        seen.append("second")
        x.grad.sum().backward()
        seen.append("grad")
        h = x * x
        h.register_hook(lambda g: seen.append(["h2", g, g.requires_grad]))
        k = x * 3
        k.register_hook(lambda g: seen.append(["k2", g, g.requires_grad]))
        g, = torch.autograd.grad((h.cos() * k).sum(), x, create_graph=True)
        torch.autograd.grad(g.sum(), x)
        return seen
    same(prog)


def test_the_warning_of_backward_with_create_graph():
    """DOUBLE-8: with set_warn_always(True) every backward(create_graph=True) warns, after the
    hooks' warnings and also when the pass raises; autograd.grad and calls refused before the
    pass do not."""
    def prog(torch):
        prev = torch.is_warn_always_enabled()
        torch.set_warn_always(True)
        out = []
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        h = x * x
        h.register_hook(lambda g: warnings.warn("from a hook", stacklevel=1))
        steps = [lambda: (h * h).sum().backward(create_graph=True),
                 lambda: torch.autograd.backward((x * x).sum(), create_graph=True),
                 lambda: torch.autograd.grad((x * x).sum(), x, create_graph=True),
                 lambda: (x * x).backward(create_graph=True),
                 lambda: (x * x).sum().backward(create_graph=True, inputs=[]),
                 lambda: torch.tensor(1.0).backward(create_graph=True),
                 lambda: _freed(torch, x).backward(create_graph=True),
                 lambda: (x * x).sum().backward()]
        try:
            for step in steps:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        step()
                        res = "ok"
                    except RuntimeError as exc:
                        res = str(exc)[:30]
                out.append([res, [str(w.message)[:40] for w in caught]])
        finally:
            torch.set_warn_always(prev)
        return out
    same(prog)


def _freed(torch, x):
    y = x.exp().sum()
    y.backward()
    return y


def test_warning_is_given_once_unless_warn_always():
    """DOUBLE-8: refimpl, as torch, warns at most once per process without set_warn_always."""
    x = refimpl.tensor([1.0], requires_grad=True)
    refimpl.set_warn_always(False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            (x * x).sum().backward(create_graph=True)
    assert len([w for w in caught if "create_graph=True" in str(w.message)]) <= 1
    assert refimpl.autograd._warned[0]


@pytest.mark.parametrize("stop", ["requires_grad_", "detach_"])
@pytest.mark.parametrize("op", ["mul", "div", "matmul", "mul_sin"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_saved_leaf_that_stopped_requiring_grad_is_not_recorded(stop, op, dtype):
    """DOUBLE-1: whether a gradient is recorded is judged when the pass runs: a saved leaf is
    read as it is then, so one that stopped requiring grad since it was saved does not make
    the gradient require grad (torch unpacks the leaf itself)."""
    def prog(torch):
        warnings.simplefilter("ignore")
        dt = getattr(torch, dtype)
        x = torch.tensor([0.5, 1.5], dtype=dt, requires_grad=True)
        c = torch.tensor([2.0, -1.0], dtype=dt, requires_grad=True)
        y = {"mul": lambda: c * x, "div": lambda: x / c, "matmul": lambda: x @ c,
             "mul_sin": lambda: (c * x).sin()}[op]()
        s = y.sum()
        getattr(c, stop)(*([False] if stop == "requires_grad_" else []))
        g, = torch.autograd.grad(s, x, create_graph=True, retain_graph=True)
        out = [g, g.requires_grad, g.grad_fn is None]
        s.backward(create_graph=True)
        out += [x.grad, x.grad.grad_fn is None, c.grad]
        return out
    same(prog)
