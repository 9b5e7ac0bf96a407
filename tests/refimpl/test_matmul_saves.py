"""refimpl against torch: what batched matmul saves (VER-12). Torch reaches the inner mm, mv or
bmm through squeezes, transposes, expands and reshapes, and an operand a reshape copies is saved
as that copy, which a later write does not reach; refimpl must take the same path, so the same
writes raise and the others give the gradient of the values the product used."""
import itertools

import pytest

from ._twin import graph, same

SHAPES = [(3,), (2, 3), (3, 2), (3, 1), (1, 3, 2), (4, 3, 2), (4, 2, 3), (1, 2, 3), (4, 3, 1),
          (4, 1, 2, 3), (2, 4, 3, 2), (1, 1, 3, 2), (2, 1, 3, 2)]


def _fits(a, b):
    """a @ b is defined: inner dims agree and the batch dims broadcast."""
    if a[-1] != (b[-2] if len(b) > 1 else b[0]):
        return False
    return all(x == y or 1 in (x, y) for x, y in zip(a[-3::-1], b[-3::-1], strict=False))


PAIRS = [(a, b) for a, b in itertools.product(SHAPES, SHAPES)
         if max(len(a), len(b)) >= 3 and _fits(a, b)]


def _write_then_backward(lib, sa, sb, needs, write, layout=None):
    """a @ b with `needs` ("a", "b" or "ab") requiring grad, `write` ("a" or "b") doubled in
    place after the product; returns the graph, and the error or the gradients."""
    a0 = lib.arange(_numel(sa)).reshape(*sa) * 0.25 + 1.0
    b0 = lib.arange(_numel(sb)).reshape(*sb) * -0.5 + 2.0
    if layout == "b transposed":                # a non-contiguous b: its last two dims swapped
        b0 = (lib.arange(_numel(sb)).reshape(*sb[:-2], sb[-1], sb[-2]) * -0.5).transpose(-1, -2)
    a0 = a0.detach().requires_grad_("a" in needs)
    b0 = b0.detach().requires_grad_("b" in needs)
    a, b = a0 * 1, b0 * 1
    y = a @ b
    out = [graph(y)]
    (a if write == "a" else b).mul_(2.0)
    try:
        y.sum().backward()
    except RuntimeError as e:
        return out + [str(e)[:60]]
    return out + [a0.grad, b0.grad]


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


@pytest.mark.parametrize("needs", ["a", "b", "ab"])
@pytest.mark.parametrize("sa,sb", PAIRS, ids=[f"{a}@{b}" for a, b in PAIRS])
def test_batched_matmul_saves_what_torch_saves(sa, sb, needs):
    for write in "ab":
        same(lambda lib, write=write: _write_then_backward(lib, sa, sb, needs, write))


@pytest.mark.parametrize("sa,sb", [((3,), (4, 3, 2)), ((1, 3), (4, 3, 2)), ((4, 2, 3), (4, 3, 2))])
def test_a_transposed_operand_is_folded_as_torch_folds_it(sa, sb):
    """torch's fold test reads b.mT's strides: a transposed b folds where a contiguous one does
    not, and the other way round."""
    for needs, write in itertools.product(["a", "b"], "ab"):
        same(lambda lib, n=needs, w=write: _write_then_backward(lib, sa, sb, n, w,
                                                                 "b transposed"))


@pytest.mark.parametrize("sa,sb,needs,write,raises", [
    ((2, 3), (4, 3, 2), "a", "b", False),      # b saved as a copy of b.mT's rows
    ((2, 3), (4, 3, 2), "b", "a", True),
    ((4, 2, 3), (3, 2), "a", "b", True),       # a folded as a view: both saved as themselves
    ((4, 1, 2, 3), (4, 3, 2), "b", "a", False),  # batch (4, 4): a broadcast over one dim
    ((1, 2, 3), (4, 3, 2), "a", "b", False),   # a's batch of 1 squeezed, then folded
    ((1, 2, 3), (4, 3, 2), "b", "a", True),    # a needs no grad: expanded to the batch, a view
    ((2, 3), (1, 3, 2), "a", "b", True),       # b's one batch folds without a copy
])
def test_the_cases_of_ver_12(sa, sb, needs, write, raises):
    """The cases VER-12 lists, as torch gives them (the twin test above checks refimpl)."""
    import torch
    result = _write_then_backward(torch, sa, sb, needs, write)
    assert isinstance(result[1], str) == raises, result
