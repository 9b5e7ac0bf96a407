"""Differential tests for DERIV-1 (spec/deriv.md): what a comparison operator gives."""
import pytest


@pytest.mark.clause("DERIV-1")
def test_a_comparison_with_an_object_that_is_no_tensor_or_number(differential):
    """`==` and `!=` with None, a string, a list, a tuple, a dict or a plain object give
    Python's False and True (torch's operators return NotImplemented for an operand they
    refuse); `<`, `<=`, `>`, `>=` raise TypeError; a number still compares elementwise."""
    def prog(torch, log):
        class Thing:
            pass
        tensors = {"0-d": torch.tensor(1.0), "1-d": torch.tensor([1.0, 2.0]),
                   "2-d": torch.tensor([[1.0], [2.0]]), "int64": torch.tensor([1, 2]),
                   "bool": torch.tensor([True]), "requires grad": torch.tensor(
                       [1.0, 2.0], requires_grad=True), "empty": torch.zeros(0)}
        others = {"None": None, "str": "a", "list": [1.0, 2.0], "tuple": (1,), "dict": {},
                  "object": Thing()}
        for name, t in tensors.items():
            for other_name, other in others.items():
                log(f"{name} == {other_name}", [t == other, other == t])
                log(f"{name} != {other_name}", [t != other, other != t])
                log.attempt(f"{name} < {other_name}", lambda t=t, o=other: t < o)
                log.attempt(f"{name} >= {other_name}", lambda t=t, o=other: o >= t)
            log(f"{name} == 1", t == 1)
            log(f"{name} != 1.0", (1.0 != t).tolist())
    differential(prog)


@pytest.mark.clause("DERIV-1")
def test_a_complex_number_is_a_number_not_an_object_compared_by_identity():
    """A complex operand is a Python number (torch 2.13 compares element-wise): refimpl,
    which has no complex dtype, refuses it rather than answering False by identity."""
    import refimpl
    t = refimpl.tensor([1.0, 2.0])
    for compare in (lambda: t == 1j, lambda: t != 1j, lambda: 1j == t):
        with pytest.raises(TypeError):
            compare()
