"""Error and warning messages, worded as torch 2.13.0 words them (spec/errors.md, UNSPEC-5).

The spec fixes only each kind's exception type and message prefix; the rest of the text follows
torch too, so that a reader can compare outputs line by line.
"""
from __future__ import annotations

HINT = ("Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")


def leaf_inplace():  # INPLACE-1
    return RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                        "operation.")


def view_of_leaf_inplace():  # INPLACE-2, INPLACE-3
    return RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                        "in-place operation.")


def version_mismatch(desc: str, origin: str | None, got: int, want: int):  # VER-7
    where = f", which is output 0 of {_short(origin)}," if origin else ""
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{desc}]{where} is at version {got}; expected version {want} instead. "
        + HINT)


def graph_freed():  # FREE-1
    return RuntimeError(
        "Trying to backward through the graph a second time (or directly access saved tensors "
        "after they have already been freed). Saved intermediate values of the graph are freed "
        "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
        "backward through the graph a second time or if you need to access saved tensors after "
        "calling backward.")


def implicit_grad_nonscalar():  # API-1
    return RuntimeError("grad can be implicitly created only for scalar outputs")


def no_grad_fn(i: int):  # API-4
    return RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")


def unused_input(i: int):  # API-7
    return RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in "
                        "the graph. Set allow_unused=True if this is the desired behavior.")


def input_no_requires_grad():  # API-8
    return RuntimeError("One of the differentiated Tensors does not require grad")


def no_grad_view_inplace(fn=None, indirect=False, mode=True, nr=0):  # MODE-9, INFER-7, VIEW-7
    """`mode`: how the view was made, True (under no_grad), INFERENCE_VIEW (in inference
    mode), CUSTOM_FUNCTION_VIEW or MULTI_OUTPUT_VIEW: torch names the mode in the message, and
    a multi-output op's view that has no grad_fn as one made under no_grad."""
    if mode == CUSTOM_FUNCTION_VIEW or (mode == MULTI_OUTPUT_VIEW and fn is not None):
        return custom_view_inplace(fn, indirect, mode == MULTI_OUTPUT_VIEW, nr)  # FUNC-14, VIEW-7
    who = (f"Output {nr} of {_short(fn.name())} is a view of a view which was created in"
           if fn is not None else "A view was created in")
    what = "its base or another view of its base has been" if indirect else "is being"
    if mode == INFERENCE_VIEW:
        made, now, block = "inference mode", "in normal mode", "inference mode"
    else:
        made, now, block = "no_grad mode", "with grad mode enabled", "no_grad block"
    why = (f"This view {_MULTI}" if mode == MULTI_OUTPUT_VIEW else
           "Given that this use case is ambiguous and error-prone, it is forbidden. You can "
           f"clarify your code by moving both the view and the inplace either both inside the "
           f"{block} (if you don't want the inplace to be tracked) or both outside (if you "
           "want the inplace to be tracked).")
    return RuntimeError(f"{who} {made} and {what} modified inplace {now}. {why}")


INFERENCE_VIEW = "inference"    # Tensor._view_no_grad of a view made in inference mode
MULTI_OUTPUT_VIEW = "multi"     # Tensor._view_no_grad of an output of split, chunk, unbind
_MULTI = ("is the output of a function that returns multiple views. Such functions do not allow "
          "the output views to be modified inplace. You should replace the inplace operation by "
          "an out-of-place one.")


def saved_detached_inplace():  # VER-16
    return RuntimeError(
        "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_()."
        "This is not supported, please use out-of-place `.detach()` instead")


def detach_view_inplace():  # VIEW-8
    return RuntimeError(
        "Can't detach views in-place. Use detach() instead. If you are using "
        "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, "
        "gradients are views of DDP buckets, and hence detach_() cannot be called on these "
        "gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
        "torch/optim/optimizer.py as the solution.")


def inference_version():  # INFER-3
    return RuntimeError("Inference tensors do not track version counter.")


def inference_inplace():  # INFER-4
    return RuntimeError(
        "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
        "clone to get a normal tensor before doing inplace update.See "
        "https://github.com/pytorch/rfcs/pull/17 for more details.")


def unpack_not_tensor(typename):  # SAVED-3
    return TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got result "
                     f"of type {typename}")


def pack_hook_inplace():  # SAVED-8
    return RuntimeError(
        "A saved tensor pack hook is modifying its input in place. Tensors provided as input to "
        "pack hook cannot be modified by in-place operations as this can lead to unexpected "
        "side-effects. Please open an issue if you need to perform in-place operations on the "
        "input to a pack hook.")


def inference_saved():  # INFER-5
    return RuntimeError(
        "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
        "inference mode in computation tracked by autograd. To work around this, you can make a "
        "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead "
        "of `torch.inference_mode()`.")


def inference_requires_grad():  # INFER-6
    return RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode "
                        "is not allowed.")


def _short(name: str) -> str:
    """torch's short node name in messages: ExpBackward0 -> Exp."""
    return name[:name.index("Backward")] if "Backward" in name else name


def post_hook_returned_value():  # HOOK-13
    return RuntimeError("Tensor post accumulate grad hooks should return None.")


def backward_empty_inputs():  # API-11
    return RuntimeError("`inputs` argument to `backward()` cannot be empty.")


def retain_grad_no_requires_grad():  # RETAIN-2
    return RuntimeError("can't retain_grad on Tensor that has requires_grad=False")


def requires_grad_dtype(form: str = "factory"):  # LEAF-15
    """torch words the three forms apart: a factory, `requires_grad_()` and the setter."""
    if form == "method":
        return RuntimeError("only Tensors of floating point dtype can require gradients")
    if form == "setter":
        return RuntimeError("only Tensors of floating point and complex dtype can require "
                            "gradients")
    return RuntimeError("Only Tensors of floating point and complex dtype can require gradients")


def check_bool(value, fn: str, arg: str = "requires_grad", position: int = 0) -> None:
    """A switch or flag that is not a bool (an int, None, a 0-d tensor) is refused as torch's
    argument parser refuses it, before any other check; the setter `t.requires_grad = v`
    raises RuntimeError instead."""
    if type(value) is bool:
        return
    if fn == "setter":
        raise RuntimeError("requires_grad must be a bool")
    kind = type(value)
    name = kind.__name__ if kind.__module__ == "builtins" or kind.__module__.startswith(
        "refimpl") else f"{kind.__module__}.{kind.__name__}"
    at = f" (position {position})" if position else ""
    raise TypeError(f"{fn}(): argument '{arg}'{at} must be bool, not {name}")


def requires_grad_nonleaf(setter: bool = False):  # LEAF-11 (setter: `t.requires_grad = True`)
    if setter:  # the setter given True: the message stops after the first sentence
        return RuntimeError("you can only change requires_grad flags of leaf variables.")
    return RuntimeError(
        "you can only change requires_grad flags of leaf variables. If you want to use a computed "
        "variable in a subgraph that doesn't require differentiation use "
        "var_no_grad = var.detach().")


def hook_no_requires_grad():  # HOOK-7
    return RuntimeError("cannot register a hook on a tensor that doesn't require gradient")


def post_hook_nonleaf():  # HOOK-12
    return RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")


def grad_not_tensor(value):  # no spec kind: torch's check of what `.grad =` is given
    kind = type(value).__name__     # (torch names its C types by module: torch.dtype)
    module = {"refimpl.dtypes": "torch.", "numpy": "numpy."}.get(type(value).__module__, "")
    kind = module + kind
    return TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {kind}")


def grad_assign_shape(got, want):  # LEAF-12
    return RuntimeError(f"attempting to assign a gradient of size '{list(got)}' to a tensor of "
                        f"size '{list(want)}'. Please ensure that the gradient and the tensor are "
                        "the same size")


def gradient_count(outputs, gradients):  # API-9: fewer gradients than outputs; no kind
    return RuntimeError(f"got {outputs} tensors and {gradients} gradients")


def gradient_not_tensor(g):  # API-9: no kind
    return TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")


def grad_assign_self():  # LEAF-12
    return RuntimeError("can't assign Variable as its own grad")


def grad_assign_dtype(got, want):  # LEAF-13
    return RuntimeError(f"attempting to assign a gradient with dtype '{got.c_name}' to a tensor "
                        f"with grad_dtype '{want.c_name.capitalize()}'. The gradient must match "
                        "the tensor's grad_dtype (defaults to the tensor's dtype). You can set the "
                        "tensor's grad_dtype attribute with a specific dtype, or None to allow any "
                        "dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and "
                        "its gradient may break downstream systems that assume they match.")


def grad_dtype_conflict(want, have):  # LEAF-13: grad_dtype set over a .grad of another dtype
    return RuntimeError(f"Cannot set grad_dtype to '{want.c_name.capitalize()}' because there is "
                        f"already a gradient with dtype '{have.c_name}'. Please clear the "
                        "gradient (.grad = None) before changing grad_dtype, or ensure the new "
                        "grad_dtype matches the existing gradient's dtype.")


def hook_changed_size(name: str):  # HOOK-5
    return RuntimeError(f"hook '{name}' has changed the size of value")


def hook_returned_non_tensor(type_name: str):  # HOOK-13
    return TypeError(f"expected Variable, but hook returned '{type_name}'")


def hook_returned_non_tuple(type_name: str):  # HOOK-17
    return TypeError(f"expected tuple, but hook returned '{type_name}'")


def hook_wrong_count(name: str, got: int, want: int):  # HOOK-17
    return RuntimeError(f"hook '{name}' has returned an incorrect number of values (got {got}, "
                        f"but expected {want})")


def hook_replaced_none():  # HOOK-17
    return RuntimeError("can't replace a None gradient with a non-None value")


def hook_changed_type(name: str, was, got):  # HOOK-13
    return RuntimeError(f"hook '{name}' has changed the type of value (was {was.legacy} got "
                        f"{got.legacy})")


def grad_shape_mismatch(i: int, got, want):  # API-3
    return RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {got!r} and "
                        f"output[{i}] has a shape of {want!r}.")


def invalid_gradient(name: str, i: int, got, want):
    return RuntimeError(f"Function {name} returned an invalid gradient at index {i} - got "
                        f"{list(got)} but expected shape compatible with {list(want)}")


_MASK = "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."


def bool_arithmetic(op: str, bools: int):  # no spec kind: torch refuses - and relu on bool
    if op == "neg":
        return RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                            + _MASK)
    if op == "relu":
        return RuntimeError("Boolean inputs not supported for relu")
    if bools == 2:
        return RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                            "supported. Use the `^` or `logical_xor()` operator instead.")
    return RuntimeError(f"Subtraction, the `-` operator, with a bool tensor is not supported. "
                        f"{_MASK}")


def bool_kernel(kernel: str):  # no spec kind: a torch kernel without a bool version
    return NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def negative_integer_power():  # no spec kind: torch's check of pow's exponent
    return RuntimeError("Integers to negative integer powers are not allowed.")


def cast_inplace(got, want):
    return RuntimeError(f"result type {got.c_name.capitalize()} can't be cast to the desired "
                        f"output type {want.c_name.capitalize()}")


def cast_clamp(got, want):
    """clamp_'s own check that its result fits the target (torch names C++ types): no kind."""
    name = {"int64": "long int"}.get(want.name, want.c_name)
    return RuntimeError(f"result type {got.c_name.capitalize()} can't be cast to the desired "
                        f"output type {name}")


def partial_overlap():
    return RuntimeError("unsupported operation: some elements of the input tensor and the "
                        "written-to tensor refer to a single memory location. Please clone() the "
                        "tensor before performing the operation.")


def broadcast_output(shape, wanted):
    """An in-place op whose operands broadcast to a larger shape than its target's: no kind."""
    return RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                        f"{list(wanted)}")


def size_mismatch(a, b, dim):
    """Shapes that do not broadcast (copy_'s source and target): no kind."""
    return RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                        f"non-singleton dimension {dim}")


def overlapping_write():  # LEAF-12, INPLACE-18
    return RuntimeError("unsupported operation: more than one element of the written-to tensor "
                        "refers to a single memory location. Please clone() the tensor before "
                        "performing the operation.")


NONLEAF_GRAD_WARNING = (  # RETAIN-7
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead.")

CREATE_GRAPH_CYCLE_WARNING = (  # DOUBLE-8
    "Using backward() with create_graph=True will create a reference cycle between the parameter "
    "and its gradient which can cause a memory leak. We recommend using autograd.grad when "
    "creating the graph to avoid this. If you have to use this function, make sure to reset the "
    ".grad fields of your parameters to None after use to break the cycle and avoid the leak.")


# ---- a custom autograd.Function's view (its other errors: refimpl/function_errors.py) -------
CUSTOM_FUNCTION_VIEW = "custom_function"  # Tensor._view_no_grad of an input a Function returned


def custom_view_inplace(fn, indirect=False, multi=False, nr=0):  # FUNC-14, VIEW-7
    what = "its base or another view of its base has been" if indirect else "is being"
    why = (_MULTI if multi or fn.n_outputs > 1 else
           "was created inside a custom Function (or because an input was returned as-is) and "
           "the autograd logic to handle view+inplace would override the custom backward "
           "associated with the custom Function, leading to incorrect gradients. This behavior "
           "is forbidden. You can fix this by cloning the output of the custom Function.")
    return RuntimeError(f"Output {nr} of {_short(fn.name())} is a view and {what} modified "
                        f"inplace. This view {why}")


def fill_value_not_0d(ndim: int):  # no spec kind: torch's own check, after check_inplace
    return RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                        f"{ndim} dimensions.")


def data_requires_grad_dtype():  # DATA-6
    return RuntimeError("data set to a tensor that requires gradients must be floating point or "
                        "complex dtype")


def data_not_tensor(value):  # DATA-6
    return TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")


def set_dtype(got, want):  # DATA-7
    return RuntimeError(f"Could not set tensor of type {got.c_name} to a tensor of type "
                        f"{want.c_name}")


def set_backward():  # DATA-8
    return RuntimeError("derivative for set_ is not implemented")


# no spec kind: torch's checks of the `alpha` of add and sub (refimpl/dtypes.py, alpha_value)
def alpha_not_number(op: str, value):
    return TypeError(f"{op}(): argument 'alpha' must be Number, not {type(value).__name__}")


def alpha_bool():
    return RuntimeError("Boolean alpha only supported for Boolean results.")


def alpha_float_integral():
    return RuntimeError("For integral input tensors, argument alpha must not be a floating point "
                        "number.")


def alpha_complex():
    return RuntimeError("For non-complex input tensors, argument alpha must not be a complex "
                        "number.")
