"""torch 2.13's messages for what custom autograd.Functions get wrong (spec/function.md,
FUNC-3 to FUNC-15; used by refimpl/function.py). The error kinds are in spec/errors.md; a
function without a clause after it is torch's own check, with no kind. A Function's view
written in place is refused in refimpl/errors.py, beside the other view refusals."""
from __future__ import annotations


def function_grad_count(name, expected, got):  # FUNC-7
    return RuntimeError(f"function {name} returned an incorrect number of gradients (expected "
                        f"{expected}, got {got})")


def function_non_tensor_grad(name, position):  # FUNC-6
    return RuntimeError(f"function {name} returned a gradient different than None at position "
                        f"{position}, but the corresponding forward input was not a Variable")


def function_grad_not_tensor(type_name: str):  # FUNC-6: for a tensor argument
    return RuntimeError(f"expected Variable or None (got {type_name})")


def dirty_not_returned():  # FUNC-11
    return RuntimeError("Some elements marked as dirty during the forward method were not "
                        "returned as output. The inputs that are modified inplace must all be "
                        "outputs of the Function.")


def save_not_tensor(i: int, value):  # FUNC-4: where apply records a node
    return TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                     f"{type(value).__name__}")


def dirty_not_tensor(i: int, value):  # FUNC-11: after forward
    return RuntimeError(f"mark_dirty can only accept variables, but argument {i} is of type "
                        f"{type(value).__name__}")


def non_differentiable_not_tensor(value):  # FUNC-12: after forward
    return RuntimeError("mark_non_differentiable only accepts variable arguments, but got "
                        f"{type(value).__name__}")


def returned_input_saved():  # FUNC-3
    return RuntimeError(
        "An input that has been returned as-is as output is being saved for backward. This is "
        "not supported if you override setup_context. You should return and save a view of the "
        "input instead, e.g. with x.view_as(x) or setup ctx inside the forward function itself.")


def dirty_view_outputs():  # FUNC-11
    return RuntimeError(
        "If your Function modifies inplace an input that is a view of another Tensor, your "
        "Function cannot return more than one Tensor. This is not supported by the current "
        "autograd engine. You should either make sure the input is not a view (using .clone() "
        "for example) or make your Function only return one Tensor (potentially splitting it "
        "into two Functions: one doing the inplace that returns a single Tensor and a second "
        "one that does the other operations). You can ask on the forum "
        "https://discuss.pytorch.org/ if you need help to do this change.")


def dirty_leaf():  # FUNC-11
    return RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                        "operation.")


ONCE_DIFFERENTIABLE = ("trying to differentiate twice a function that was marked with "
                       "@once_differentiable")  # FUNC-13


def legacy_function():  # FUNC-15
    return RuntimeError("Legacy autograd function with non-static forward method is deprecated. "
                        "Please use new-style autograd function with static forward method. "
                        "(Example: https://pytorch.org/docs/stable/autograd.html"
                        "#torch.autograd.Function)")
