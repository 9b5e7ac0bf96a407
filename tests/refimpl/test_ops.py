"""refimpl against torch, op by op: grad_fn names and graph shape (GRAPH-3, GRAPH-4, GRAPH-10),
gradients (LEAF-8), what each op saves (VER-9..VER-13, FREE-3) and dtype promotion."""
import pytest

from ._twin import graph, same

X = [[0.5, -1.5, 2.0], [1.0, 0.25, -0.75]]

UNARY = {
    "neg": lambda t: -t, "exp": lambda t: t.exp(), "log": lambda t: t.abs().log(),
    "sin": lambda t: t.sin(), "cos": lambda t: t.cos(), "tanh": lambda t: t.tanh(),
    "sigmoid": lambda t: t.sigmoid(), "relu": lambda t: t.relu(), "abs": lambda t: t.abs(),
    "clamp": lambda t: t.clamp(-1, 1), "clamp min": lambda t: t.clamp(min=0),
    "clamp max": lambda t: t.clamp(max=0.3), "pow 2": lambda t: t ** 2,
    "pow 0": lambda t: t.pow(0), "pow 0.5": lambda t: t.abs() ** 0.5, "rpow": lambda t: 2 ** t,
    "sum": lambda t: t.sum(), "sum 0": lambda t: t.sum(0), "sum keep": lambda t: t.sum(1, True),
    "sum dims": lambda t: t.sum((0, 1)), "mean": lambda t: t.mean(),
    "mean -1": lambda t: t.mean(-1),
    "view": lambda t: t.view(3, 2), "reshape": lambda t: t.reshape(-1),
    "reshape copy": lambda t: t.t().reshape(6), "t": lambda t: t.t(),
    "transpose": lambda t: t.transpose(1, 0), "unsqueeze": lambda t: t.unsqueeze(1),
    "squeeze": lambda t: t.unsqueeze(0).squeeze(), "squeeze 0": lambda t: t[None].squeeze(0),
    "expand": lambda t: t[0:1].expand(4, 3), "select": lambda t: t[1], "slice": lambda t: t[:, 1:],
    "step": lambda t: t[:, ::2], "select 2": lambda t: t[1, -1], "alias": lambda t: t[...],
    "none": lambda t: t[:, None], "ellipsis": lambda t: t[..., 0], "clone": lambda t: t.clone(),
    "add number": lambda t: t + 2, "radd": lambda t: 2 + t, "sub number": lambda t: t - 2,
    "rsub": lambda t: 2 - t, "mul number": lambda t: 3 * t, "div number": lambda t: t / 4,
    "rdiv": lambda t: 1 / t, "add alpha": lambda t: t.add(t, alpha=2),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_graph_and_grad(name):
    def prog(lib):
        x = lib.tensor(X, requires_grad=True)
        y = UNARY[name](x)
        y.backward(lib.ones_like(y) * 0.5)
        return [graph(y), y, x.grad, y.requires_grad, y.is_leaf]
    same(prog)


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_second_backward(name):
    """The second backward raises exactly when the op saved a tensor (FREE-1, FREE-3)."""
    def prog(lib):
        x = lib.tensor(X, requires_grad=True)
        y = UNARY[name](x).sum()
        y.backward()
        y.backward()
        return x.grad
    same(prog)


BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "matmul": lambda a, b: a @ b.t(),
    "matmul mv": lambda a, b: a @ b[0], "matmul vm": lambda a, b: a[0] @ b.t(),
    "dot": lambda a, b: a[0] @ b[1], "broadcast": lambda a, b: a * b[0],
    "3d @ 2d": lambda a, b: a.expand(2, 2, 3) @ b.t(), "3d @ 1d": lambda a, b: a[None] @ b[0],
    "batched": lambda a, b: a[None] @ b.t()[None],
}


@pytest.mark.parametrize("needs", ["both", "left", "right"])
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_graph_grad_and_saved(name, needs):
    """Each side saves the other only when the other needs grad (VER-11, VER-12): modifying an
    operand raises at backward exactly when torch's does."""
    def prog(lib):
        a = lib.tensor(X, requires_grad=needs != "right")
        b = lib.tensor([[2.0, -1.0, 0.5], [0.5, 3.0, -2.0]], requires_grad=needs != "left")
        y = BINARY[name](a, b)
        y.sum().backward(retain_graph=True)
        out = [graph(y), a.grad, b.grad]
        with lib.no_grad():
            a.mul_(2)
        try:
            y.sum().backward()
            out.append("ok")
        except RuntimeError as e:
            out.append(str(e)[:60])
        return out
    same(prog)


def test_promotion():
    def prog(lib):
        i = lib.tensor([1, 2])
        f = lib.tensor([1.0, 2.0])
        d = lib.tensor(3.0, dtype=lib.float64)
        return [str((i * 2.5).dtype), str((i / i).dtype), str((f + d).dtype),
                str((i + d).dtype), str((f * True).dtype), str(lib.tensor(1).dtype),
                str((lib.tensor([True]) + 1).dtype), (i * 2.5).tolist()]
    same(prog)


def test_inplace_variants_on_non_leaves():
    ops = ["add_(2)", "sub_(1)", "mul_(3)", "div_(2)", "neg_()", "pow_(2)", "exp_()",
           "abs_().log_()", "sin_()", "cos_()", "tanh_()", "sigmoid_()", "relu_()",
           "clamp_(0, 1)", "zero_()", "fill_(3)"]
    for op in ops:
        def prog(lib, op=op):
            x = lib.tensor(X, requires_grad=True)
            y = x * 1
            eval("y." + op)
            out = [graph(y), y._version, y]
            y.sum().backward(retain_graph=True)
            out.append(x.grad)
            with lib.no_grad():
                y.add_(1)  # does the op's node need y's value after the op?
            try:
                y.sum().backward()
                out.append("ok")
            except RuntimeError as e:
                out.append(str(e)[:50])
            return out
        same(prog)


def test_setitem_and_views_rewrite_history():
    def prog(lib):
        x = lib.tensor(X, requires_grad=True)
        s = lib.tensor(5.0, requires_grad=True)
        y = x * 1
        v = y[1]
        y[0, 1] = s
        y[:, 2] = lib.tensor([7.0, 8.0])
        v.mul_(2)
        z = y.t()
        out = [graph(y), graph(v), graph(z), y._version, v._version, v.is_leaf, y]
        (y * y).sum().backward()
        return out + [x.grad, s.grad]
    same(prog)


def test_write_into_a_tensor_without_grad():
    def prog(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        buf = lib.zeros(3, 2)
        buf[1] = x * 2
        buf[2].copy_(x)
        out = [graph(buf), buf.is_leaf, buf.requires_grad, buf._version]
        buf.sum().backward()
        return out + [x.grad]
    same(prog)


def test_overlapping_write_raises():
    def prog(lib):
        y = lib.tensor([1.0, 2.0]).expand(3, 2)
        y.add_(1)
    same(prog)


def test_layouts_decide_whether_view_works():
    """Memory layouts follow torch's (TensorIterator's output order, expand and unsqueeze
    strides), since they decide whether view() works and what reshape records (GRAPH-10)."""
    def prog(lib):
        c, f = lib.ones(3, 4), lib.ones(4, 3).t()
        out = []
        for t in (c + f, f + c, f * 2, f + lib.ones(4), lib.ones(3, 1) + lib.ones(4),
                  lib.ones(2).expand(3, 2), lib.ones(2, 3).unsqueeze(1)):
            try:
                t.view(-1)
                out.append("view")
            except RuntimeError:
                out.append("no view")
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        out.append(graph((x.t() + x).reshape(4)))
        return out
    same(prog)


def test_overlap_and_expand_errors():
    def prog(lib):
        out = []
        for fn in (lambda: lib.ones(1, 3).mul_(lib.ones(1, 3).squeeze(0)),
                   lambda: lib.ones(2, 3).expand(3),
                   lambda: lib.ones(2).expand(3, 3),
                   lambda: lib.ones(2).expand(3, 2).add_(1),
                   lambda: lib.ones(2).expand(1, 2).add_(1)):
            try:
                fn()
                out.append("ok")
            except RuntimeError as e:
                out.append(str(e)[:40])
        return out
    same(prog)


@pytest.mark.parametrize("target, operand", [((3,), (2, 3)), ((1, 3), (2, 3)), ((2, 1), (2, 3)),
                                             ((2, 3), (3, 2)), ((), (2,)), ((2, 3), (2, 1))])
@pytest.mark.parametrize("op", ["add_", "mul_", "sub_", "div_", "copy_", "+="])
def test_inplace_ops_keep_their_targets_shape(op, target, operand):
    """An operand that broadcasts the target larger is refused with torch's error of no kind,
    not as an overlapping write, and nothing is written; one that broadcasts to the target's
    shape is written."""
    def prog(lib):
        y = lib.full(target, 2.0, dtype=lib.float64)
        other = lib.full(operand, 3.0, dtype=lib.float64)
        try:
            if op == "+=":
                y += other
            else:
                getattr(y, op)(other)
            outcome = "ok"
        except RuntimeError as e:
            outcome = str(e)
        return [outcome, y, y._version]
    got = same(prog)
    assert (got[0] == "ok") == (operand == (2, 1) or target == operand), got


def test_gradients_returned_as_views_made_under_no_grad():
    """A gradient that torch's formula returns as a view (sum's expand, a view op's inverse) is a
    view made under no_grad: in-place on it with grad mode on raises (MODE-9)."""
    def prog(lib):
        out = []
        for make in (lambda x: x.sum(), lambda x: x.mean(), lambda x: x.t().sum(),
                     lambda x: (x * 2).sum(), lambda x: x.expand(2, 2, 3).sum()):
            x = lib.ones(2, 3, requires_grad=True)
            (g,) = lib.autograd.grad(make(x), x)
            g.requires_grad_(True)
            try:
                g.add_(1.0)
                out.append("ok")
            except RuntimeError as e:
                out.append(str(e)[:30])
        return out
    same(prog)
