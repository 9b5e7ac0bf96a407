"""refimpl against torch: a leaf's `grad_dtype` (LEAF-9, LEAF-13), the dtype its gradient is
cast to where it enters the leaf, and what an assigned `.grad` is checked against."""
import pytest

from ._twin import same


def test_default_follows_the_dtype():
    def prog(lib):
        x = lib.ones(2, requires_grad=True)
        out = [x.grad_dtype, lib.ones(2).grad_dtype]
        x.data = lib.ones(2, dtype=lib.float64)   # never set: follows the tensor's dtype
        out.append(x.grad_dtype)
        (x * 2).sum().backward()
        out.append(x.grad.dtype)
        y = lib.ones(2, requires_grad=True)
        y.grad_dtype = lib.float32                # set: stays, whatever `.data =` does
        y.data = lib.ones(2, dtype=lib.float64)
        return [str(d) for d in out + [y.grad_dtype]]
    assert same(prog) == ["torch.float32"] * 2 + ["torch.float64"] * 2 + ["torch.float32"]


@pytest.mark.parametrize("when", ["before the graph", "after the graph"])
def test_the_gradient_is_cast_where_it_enters_the_leaf(when):
    def prog(lib):
        x = lib.ones(2, requires_grad=True)
        seen = []
        x.register_hook(lambda g: seen.append(str(g.dtype)))
        if when == "before the graph":
            x.grad_dtype = lib.float64
        y = (x * 3).sum()
        x.grad_dtype = lib.float64
        y.backward()
        (x * 3).sum().backward()
        r = lib.autograd.grad((x * 2).sum(), x)[0]
        return [x.grad, str(x.grad.dtype), seen, str(r.dtype)]
    assert same(prog)[1] == "torch.float64"


def test_none_keeps_the_dtype_that_arrives_and_accepts_any_grad():
    def prog(lib):
        x = lib.ones(2, requires_grad=True)
        x.grad_dtype = None
        (x * lib.ones(2, dtype=lib.float64)).sum().backward()
        out = [x.grad_dtype, str(x.grad.dtype)]
        x.grad = lib.tensor([1, 2])
        out.append(str(x.grad.dtype))
        try:
            x.grad = lib.zeros(3)
        except RuntimeError as e:
            out.append(str(e)[:40])
        return out
    assert same(prog)[:3] == [None, "torch.float64", "torch.int64"]


def test_errors():
    def prog(lib):
        out = []
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        x.grad = lib.zeros(2)
        attempts = [lambda: y.grad_dtype, lambda: setattr(y, "grad_dtype", None),
                    lambda: x[0].grad_dtype,
                    lambda: setattr(x, "grad_dtype", lib.float64),   # a float32 .grad exists
                    lambda: setattr(x, "grad_dtype", None)]
        for attempt in attempts:
            try:
                attempt()
                out.append("ok")
            except RuntimeError as e:
                out.append(str(e))
        x.grad = None
        x.grad_dtype = lib.float64
        try:
            x.grad = lib.zeros(2)
        except RuntimeError as e:
            out.append(str(e))
        return out
    got = same(prog)
    assert got[4] == "ok" and all(m != "ok" for m in got[:4] + got[5:])
