"""refimpl's public API: every name the spec's subset uses exists and
behaves like torch's on a small program, and what is out of scope says so."""
import pytest

import refimpl

from ._twin import same

PUBLIC = ["tensor", "ones", "zeros", "ones_like", "zeros_like", "arange", "randn", "manual_seed",
          "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "autograd",
          "float32", "float64", "int64", "bool", "Tensor", "Size", "device", "exp", "matmul"]
TENSOR = ["requires_grad", "is_leaf", "grad", "grad_dtype", "grad_fn", "_version", "data",
          "shape", "dtype", "device", "detach", "requires_grad_", "retain_grad", "retains_grad",
          "register_hook",
          "register_post_accumulate_grad_hook", "backward", "item", "tolist", "numpy", "clone",
          "sum", "mean", "zero_", "fill_", "copy_", "view", "reshape", "t", "transpose",
          "unsqueeze", "squeeze", "expand", "matmul"]
OPS = ["add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sin", "cos", "tanh", "sigmoid",
       "relu", "abs", "clamp"]


@pytest.mark.parametrize("name", PUBLIC)
def test_module_names(name):
    assert hasattr(refimpl, name)


@pytest.mark.parametrize("name", TENSOR + OPS + [op + "_" for op in OPS])
def test_tensor_names(name):
    assert hasattr(refimpl.Tensor, name)


def test_autograd_functions():
    assert callable(refimpl.autograd.grad) and callable(refimpl.autograd.backward)


def test_node_api():
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        fn = y.grad_fn
        seen = []
        h1 = fn.register_prehook(lambda go: seen.append(("pre", go[0].tolist())))
        h2 = fn.register_hook(lambda gi, go: seen.append(("post", gi[0].tolist())))
        acc = fn.next_functions[0][0]
        out = [fn.name(), acc.name(), acc.variable is x, len(fn.next_functions)]
        y.sum().backward()
        h1.remove()
        h2.remove()
        (x * 2).sum().backward()
        return out + [seen, x.grad]
    same(prog)


def test_numpy_item_tolist():
    def prog(torch):
        x = torch.tensor([[1.0, 2.0]], requires_grad=True)
        out = [x.tolist(), x.sum().item(), x.detach().numpy().tolist()]
        try:
            x.numpy()
        except RuntimeError as e:
            out.append(str(e))
        return out
    same(prog)


def test_grad_modes_as_decorators_and_functions():
    def prog(torch):
        @torch.no_grad()
        def f(t):
            return t * 2

        @torch.enable_grad
        def g(t):
            return t * 2

        x = torch.tensor(1.0, requires_grad=True)
        out = [f(x).requires_grad]
        with torch.no_grad():
            out.append(g(x).requires_grad)
        torch.set_grad_enabled(False)
        out.append(torch.is_grad_enabled())
        torch.set_grad_enabled(True)
        with torch.set_grad_enabled(False):
            out.append((x * 1).requires_grad)
        out.append(torch.is_grad_enabled())
        return out
    same(prog)


def test_seeded_randn_repeats():
    refimpl.manual_seed(3)
    a = refimpl.randn(2, 3).tolist()
    refimpl.manual_seed(3)
    assert refimpl.randn(2, 3).tolist() == a


def test_out_of_scope_features_say_so():
    x = refimpl.tensor([1.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="scalar exponent"):
        x ** x


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("writeable", [True, False])
def test_tensor_of_a_numpy_array_is_a_copy(dtype, writeable):
    """torch.tensor copies an array it is given: a later write to either side does not show in
    the other, and an array numpy marks read-only gives a tensor that can be written."""
    import numpy as np
    import torch
    for lib in (torch, refimpl):
        a = np.arange(1, 4).astype(dtype)
        a.flags.writeable = writeable
        t = lib.tensor(a, dtype=getattr(lib, dtype))
        t.add_(1)
        if writeable:
            a[0] = 10
        assert t.tolist() == [2, 3, 4], lib.__name__
        assert a.tolist() == ([10, 2, 3] if writeable else [1, 2, 3]), lib.__name__
