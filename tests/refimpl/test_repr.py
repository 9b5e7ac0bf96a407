"""repr in torch's format for the shapes and values the seeds and spec use."""
import pytest

from ._twin import same

CASES = [
    "torch.tensor(7.3891)", "torch.tensor(2.0, requires_grad=True).exp()",
    "torch.tensor([1.0, 2.0], requires_grad=True)", "torch.ones(2, 2) * 2",
    "torch.tensor([1.0, 2.0], dtype=torch.float64)", "torch.tensor([1, 2])",
    "torch.tensor([True, False])", "torch.tensor([1.5, 2.25, -3.125])",
    "torch.tensor([1e-5, 1.0])", "torch.tensor([100000.0, 1.0])", "torch.tensor([1e10, 1.0])",
    "torch.tensor([0.0, 0.0])", "torch.tensor([-1.0, 2.0])", "torch.tensor(0.25)",
    "torch.tensor([1.123456789e-3, 2.0])", "torch.arange(30.0)", "torch.arange(5)",
    "torch.ones(2, 3, 4)", "torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True) * 2",
    "torch.ones(3, 2, requires_grad=True).sum(0)", "torch.ones(2, dtype=torch.float64, "
    "requires_grad=True)", "torch.tensor([])", "torch.zeros(0, 3)", "torch.tensor(3)",
    "torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)",
    "torch.tensor([0.25] * 4).view(2, 2)",
    "torch.tensor(40.0).data", "torch.tensor([float('nan'), 1.0])",
    "torch.tensor([float('inf'), -2.5])", "torch.arange(12.0).view(3, 4) / 7",
]


@pytest.mark.parametrize("expr", CASES)
def test_repr_matches_torch(expr):
    same(lambda torch: repr(eval(expr, {"torch": torch})))


def test_size_device_dtype_reprs():
    same(lambda torch: [repr(torch.ones(2, 3).shape), str(torch.ones(1).device),
                        repr(torch.float64), repr(torch.ones(1).dtype), repr(torch.ones(1).device)])
