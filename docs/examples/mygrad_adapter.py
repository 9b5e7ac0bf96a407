"""A gradspec adapter for mygrad 2.5 (https://mygrad.readthedocs.io), an engine that does not
look like torch: docs/engines.md's worked example. It declares `core` and `views` only, so the
generator draws no hooks, in-place ops, grad modes or autograd.grad for it.

    PYTHONPATH=docs/examples gradspec run --engine mygrad_adapter:engine --count 200

What it cannot express it refuses with NotImplementedError (a divergence of kind OTHER where
torch succeeds, which the report shows): mygrad fixes `constant` at creation (no
requires_grad_), has no multi-tensor backward and a read-only `.grad`. And mygrad's own
backward differs from torch's as its docstring (mygrad 2.5.0, `Tensor.backward`) says: a
non-scalar tensor backpropagates as if summed (torch raises IMPLICIT_GRAD_NONSCALAR, API-1),
and "once back-propagation is finished, the present tensor is removed from all computational
graphs, and the preceding graph is cleared" (so a non-leaf reads as a leaf afterwards: the
`core` probe reports it). The adapter answers each question with what mygrad says.
"""
import mygrad as mg
import numpy as np

from conformance.engines.base import Engine

DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "bool": np.bool_}
CALLS = {"add": mg.add, "sub": mg.subtract, "mul": mg.multiply, "div": mg.divide,
         "neg": mg.negative, "exp": mg.exp, "log": mg.log, "sin": mg.sin, "cos": mg.cos,
         "tanh": mg.tanh, "abs": mg.absolute, "sqrt": mg.sqrt, "matmul": mg.matmul,
         "clone": mg.positive}   # not Tensor.copy(): its docstring says the copy has no creator


class MyGrad(Engine):
    name, version = "mygrad", mg.__version__
    capabilities = frozenset({"core", "views"})

    def __init__(self, device="cpu"):
        self.device = device

    # ---- making tensors ----
    def leaf(self, values, shape, dtype, requires_grad):
        data = np.array(values, dtype=DTYPES[dtype]).reshape(shape)
        return mg.tensor(data, constant=not requires_grad)

    def call(self, fn, args, kw):
        if fn == "pow":
            return args[0] ** kw["exponent"]
        if fn == "clamp":
            return mg.clip(args[0], kw.get("min"), kw.get("max"))
        if fn in ("sum", "mean"):
            axis = kw.get("dim")
            return getattr(mg, fn)(args[0], axis=None if axis is None else tuple(axis),
                                   keepdims=bool(kw.get("keepdim", False)))
        if fn == "sigmoid":
            return 1 / (1 + mg.exp(-args[0]))
        if fn == "relu":
            return mg.maximum(args[0], 0.0)
        if fn not in CALLS:
            raise NotImplementedError(f"mygrad adapter: no op {fn}")
        return CALLS[fn](*args)

    def view(self, target, fn, kw):
        if fn in ("reshape", "view"):
            return target.reshape(*kw["shape"]) if kw["shape"] else target.reshape(())
        if fn == "t":
            return target.T
        if fn == "transpose":
            return mg.swapaxes(target, *kw["dims"])
        if fn == "unsqueeze":
            return mg.expand_dims(target, kw["dim"])
        if fn == "squeeze":
            return mg.squeeze(target, kw.get("dim"))
        if fn == "expand":
            return mg.broadcast_to(target, kw["size"])
        raise NotImplementedError(f"mygrad adapter: no view {fn}")

    def getitem(self, target, index):
        return target[index]

    def detach(self, t):
        return mg.Tensor(t, constant=True, copy=False)    # shares memory, no graph

    def data(self, t):
        return mg.Tensor(t.data, constant=True, copy=False)

    def requires_grad_(self, t, value):
        raise NotImplementedError("mygrad tensors are constant or not from creation")

    # ---- backward ----
    def backward(self, t, gradient, retain_graph, inputs):
        if inputs is not None:
            raise NotImplementedError("mygrad's backward has no inputs")
        t.backward(None if gradient is None else gradient.data)

    def autograd_backward(self, tensors, grad_tensors, retain_graph):
        raise NotImplementedError("mygrad backpropagates from one tensor at a time")

    def set_grad(self, t, value):
        raise NotImplementedError("mygrad's .grad is read-only")

    # ---- observations ----
    def to_list(self, t):
        return np.asarray(t.data if isinstance(t, mg.Tensor) else t).tolist()

    def get_grad(self, t):
        return None if t.grad is None else mg.tensor(t.grad, constant=True)

    def is_leaf(self, t):
        return t.creator is None

    def requires_grad(self, t):
        return not t.constant

    def shape(self, t):
        return tuple(t.shape)

    def dtype(self, t):
        return np.dtype(t.dtype).name        # 'float32', 'float64', 'int64', 'bool'

    def classify_error(self, exc):
        # The spec's error kind of an exception, or None (kind OTHER). The default matches
        # torch's messages (spec/errors.md); mygrad raises none of those kinds by name.
        return None


def engine(device="cpu"):
    return MyGrad(device)
