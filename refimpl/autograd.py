"""torch.autograd.backward and torch.autograd.grad (API-1..API-13, FREE-4, FREE-7, VER-15,
HOOK-16, RETAIN-8, DOUBLE-1, DOUBLE-5, DOUBLE-8), and Tensor.backward, attached here so that
refimpl/tensor.py stays below the engine."""
from __future__ import annotations

import warnings
from collections.abc import Mapping

from . import (  # torch.autograd has grad_mode and the managers too (imported below)
    differentiable,
    engine,
    errors,
    grad_mode,  # noqa: F401
)
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: F401
from .node import accumulator
from .tensor import Tensor, edge, grad_dtype_of, wrap


def _as_tuple(x):
    if x is None:
        return ()
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _outputs(tensors):
    """`tensors` as a tuple; torch 2.13 asserts each is a tensor (no spec kind)."""
    outs = _as_tuple(tensors)
    for t in outs:
        if not isinstance(t, Tensor):
            raise AssertionError("Expected output to be a torch.Tensor")
    return outs


def _flag(value):
    """create_graph or retain_graph as torch 2.13's engine parses it: an unsigned byte read
    through __index__ (a bool, an int of 0 to 255), else TypeError or OverflowError, in
    torch's words (no spec kind)."""
    if type(value) is bool:
        return value
    if not hasattr(value, "__index__"):
        kind = type(value).__name__
        kind = f"numpy.{kind}" if type(value).__module__ == "numpy" else kind
        raise TypeError(f"'{kind}' object cannot be interpreted as an integer")
    n = value.__index__()
    if not -2**63 <= n < 2**63:
        raise OverflowError("Python int too large to convert to C long")
    if not 0 <= n <= 255:
        raise OverflowError("unsigned byte integer is "
                            + ("greater than maximum" if n > 255 else "less than minimum"))
    return bool(n)


def _inputs(inputs, api):
    """`inputs` as a tuple, and the keys of a dict to return the results under (API-13): a
    plain dict is taken by its values in order; torch 2.13 rejects any other Mapping."""
    if type(inputs) is dict:
        return tuple(inputs.values()), tuple(inputs)
    if isinstance(inputs, Mapping):
        raise TypeError(f"`inputs` argument to `{api}()` must be a dict, not "
                        f"{type(inputs).__name__}. Other Mapping types are not supported.")
    return _as_tuple(inputs), None


def _tensor_input(t):
    """An input, checked in its turn as torch checks each (no spec kind)."""
    if not isinstance(t, Tensor):
        raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got "
                           f"{type(t).__name__}")
    return t


def _roots(outputs, grad_outputs, create_graph):
    """The root edges and seed gradients, checked as torch checks them: the gradient of every
    output that has one first (API-1, API-3; paired as zip pairs them, so gradients beyond the
    outputs are never looked at, API-9), then their count, then every output's grad_fn
    (API-4). Under create_graph the seeds are tensors, a given one itself (its graph carries
    on: DOUBLE-1)."""
    grads = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outputs)
    arrays = [_seed(i, out, g, create_graph)
              for i, (out, g) in enumerate(zip(outputs, grads, strict=False))]
    if len(arrays) != len(outputs):
        raise errors.gradient_count(len(outputs), len(arrays))  # API-9
    edges = []
    for i, out in enumerate(outputs):
        e = edge(out)
        if e[0] is None:
            raise errors.no_grad_fn(i)  # API-4
        edges.append(e)
    return edges, arrays


def _seed(i, out, g, create_graph):
    """The gradient backward starts output i with: ones for one element (API-1), else the
    given one, of the output's shape exactly (API-3) and cast to its dtype, but a floating
    one for a leaf whose grad_dtype is None, which keeps the dtype it is given (LEAF-9)."""
    be = out._be
    if g is None:
        if out.requires_grad and out._data.size != 1:  # one that does not: API-4 raises next
            raise errors.implicit_grad_nonscalar()  # API-1
        ones = be.xp.ones(out._data.shape, dtype=out._data.dtype)
        return wrap(be, ones) if create_graph else ones
    if not isinstance(g, Tensor):   # a number or a list is no gradient (API-9)
        raise errors.gradient_not_tensor(g)
    if tuple(g.shape) != tuple(out.shape):
        raise errors.grad_shape_mismatch(i, g.shape, out.shape)  # API-3
    dtype = out._dtype
    if out.grad_fn is None and out.requires_grad and grad_dtype_of(out) is None \
            and g._dtype.is_floating_point:     # an integer or bool one: UNSPEC-16
        dtype = g._dtype    # torch's root metadata of such a leaf names no dtype to cast to
    if create_graph:
        return g if g._dtype is dtype else differentiable.astype(g, dtype)
    return g._data if g._dtype is dtype else \
        be.xp.astype(g._data, be.native[dtype])  # cast, as torch does


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    if grad_variables is not None:      # deprecated, still honoured by torch 2.13
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.",
                      FutureWarning, stacklevel=2)
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments "
                               "both passed to `backward()`. Please only use `grad_tensors`.")
        grad_tensors = grad_variables
    outputs = _outputs(tensors)
    ins = _inputs(inputs, "backward")[0]
    if inputs is not None and not ins:
        raise errors.backward_empty_inputs()  # checked first, as torch does
    edges, grads = _roots(outputs, grad_tensors, bool(create_graph))
    create_graph = _flag(create_graph)      # the engine's own argument, parsed after those
    targets = []
    for t in map(_tensor_input, ins):  # API-11
        if t.grad_fn is None:
            if not t.requires_grad:  # torch calls retain_grad() on every input, in order
                raise errors.retain_grad_no_requires_grad()
            targets.append((accumulator(t), 0))
        else:
            t.retain_grad()  # torch accumulates into a non-leaf input through retain_grad
            targets.append(edge(t))
    keep = _flag(retain_graph) if retain_graph is not None else create_graph  # FREE-7
    try:
        if edges:   # no outputs: nothing runs, as in torch (the checks above still apply)
            engine.execute(edges, grads, keep, outputs[0]._be, targets, False, bool(create_graph))
    finally:
        if create_graph:  # after the pass, whatever it raised, as torch's engine warns
            _warn_cycle()


_warned = [False]


def _warn_cycle():
    """torch's warning about backward(create_graph=True) (DOUBLE-8): once per process, as
    TORCH_WARN_ONCE, or every time while set_warn_always(True)."""
    if _warned[0] and not warn_always[0]:
        return
    _warned[0] = True
    warnings.warn(errors.CREATE_GRAPH_CYCLE_WARNING, UserWarning, stacklevel=3)


warn_always = [False]  # torch.set_warn_always


def set_warn_always(flag):
    warn_always[0] = bool(flag)


def is_warn_always_enabled():
    return warn_always[0]


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Tensor.backward: autograd.backward from this one tensor."""
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


_tensor_backward.__name__, _tensor_backward.__qualname__ = "backward", "Tensor.backward"
Tensor.backward = _tensor_backward


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    if is_grads_batched:
        raise NotImplementedError("refimpl: is_grads_batched (vmap over grad_outputs) is "
                                  "outside the spec's scope")
    if materialize_grads and allow_unused is False:     # torch checks this first (API-7)
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads="
                         "True, but got: allow_unused=False.")
    outs, (ins, keys) = _outputs(outputs), _inputs(inputs, "grad")
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    edges, grads = _roots(outs, grad_outputs, bool(create_graph))
    create_graph = _flag(create_graph)      # the engine's own argument, parsed after those
    keep = _flag(retain_graph) if retain_graph is not None else create_graph  # FREE-7
    targets = []
    for t in map(_tensor_input, ins):
        if not t.requires_grad:
            raise errors.input_no_requires_grad()  # API-8
        targets.append(edge(t))
    got = engine.execute(edges, grads, keep, outs[0]._be, targets, True, create_graph) \
        if edges else [None] * len(targets)     # no outputs: every input is unused (API-7)
    result = []
    for i, (t, g) in enumerate(zip(ins, got, strict=True)):
        if g is None:
            if materialize_grads:   # zeros_like(t, requires_grad=create_graph), as torch
                g = t._be.xp.zeros(t._data.shape, dtype=t._data.dtype)
                if create_graph:
                    g = wrap(t._be, g)
                    g._requires_grad = True
            elif not allow_unused:
                raise errors.unused_input(i)  # API-7
        if g is not None and g.__class__ is not Tensor:  # create_graph: the tensor itself
            g = _grad_tensor(t._be, g)
        result.append(g)
    return dict(zip(keys, result, strict=True)) if keys is not None else tuple(result)


def _grad_tensor(be, g):
    """A returned gradient. Where a backward formula returned a view (sum's expand, a view op's
    inverse), torch hands back a view made under no_grad, and so does refimpl (MODE-9)."""
    t = wrap(be, g)
    if be.is_view(g):
        t._base = wrap(be, g)
        t._base._vc = t._vc
        t._view_chain, t._view_version, t._view_no_grad = (), t._vc[0], True
    return t


# custom Functions (FUNC-1..FUNC-15): torch.autograd.Function, torch.autograd.function
from . import function  # noqa: E402  (function.py imports the tensor machinery only)

Function = function.Function

# torch.autograd.graph: saved-tensor hooks (SAVED-1..SAVED-10), multi-grad hooks (HOOK-19)
from . import graph  # noqa: E402, F401
