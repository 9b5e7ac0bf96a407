"""The array-namespace seam: the only module that imports an array library (UNSPEC-3, UNSPEC-4).

A tensor's arrays come from the namespace of its device, as in torch: numpy for 'cpu', cupy for
'cuda'. REFIMPL_ARRAY_NAMESPACE=array_api_strict (or `use_cpu_namespace`) swaps the CPU namespace
for a strict Array API one, which proves that the rest of refimpl uses only standard functions.
Everything else in refimpl reaches arrays through `Backend.xp` and the few helpers below.
"""
from __future__ import annotations

import importlib
import os
import types
import warnings

from . import dtypes


class Backend:
    """One array namespace plus the few things the Array API standard does not cover."""

    def __init__(self, name: str, device: str):
        self.name, self.device = name, device
        self.xp = xp = _complete(importlib.import_module(name))
        self.native = {d: getattr(xp, "bool" if d is dtypes.bool_ else d.name) for d in dtypes.ALL}
        self.dtype_of = {xp.asarray(0, dtype=n).dtype: d for d, n in self.native.items()}
        if name == "numpy":
            nd = xp.ndarray
            # numpy turns 0-d results into scalars; a tensor needs a writable array.
            self.wrap = lambda a: a if type(a) is nd else xp.asarray(a)
            self.to_host = lambda a: a
            self.strides = lambda a: tuple(s // a.itemsize for s in a.strides)
            self.address = lambda a: a.__array_interface__["data"][0]
            self.is_view = lambda a: a.base is not None
            # torch's expand is a writable view with stride 0; numpy's broadcast_to is read-only
            strided = importlib.import_module("numpy.lib.stride_tricks").as_strided
            self.expand = lambda a, shape: strided(
                a, shape, _expand_strides(a, shape), writeable=a.flags.writeable)
            self.view = lambda a, shape, strides: strided(
                a, shape, tuple(s * a.itemsize for s in strides), writeable=a.flags.writeable)
            self.unsqueeze = lambda a, d: strided(  # torch's strides, numpy's differ for size 1
                a, a.shape[:d] + (1,) + a.shape[d:], a.strides[:d] + (
                    a.shape[d] * a.strides[d] if d < a.ndim else a.itemsize,) + a.strides[d:],
                writeable=a.flags.writeable)
        elif name == "cupy":
            self.wrap = lambda a: a
            self.copy = lambda a: a.copy()
            self.to_host = lambda a: a.get()
            self.strides = lambda a: tuple(s // a.itemsize for s in a.strides)
            self.address = lambda a: a.data.ptr
            self.is_view = lambda a: a.base is not None
        else:  # a strict Array API namespace: arrays are opaque, so read them through numpy.
            np = importlib.import_module("numpy")
            self.wrap = lambda a: a
            self.to_host = lambda a: np.from_dlpack(a)
            self.strides = lambda a: tuple(
                s // h.itemsize for h in (np.from_dlpack(a),) for s in h.strides)
            self.address = lambda a: np.from_dlpack(a).__array_interface__["data"][0]
            # array_api_strict wraps a numpy array; that is where view-ness shows
            self.is_view = lambda a: getattr(getattr(a, "_array", None), "base", None) is not None
            # torch's expand is a writable view with stride 0 (fill_ and zero_ write it,
            # INPLACE-18), which the Array API cannot make: its broadcast_to may be read-only,
            # and array_api_strict's is. Made over DLPack with numpy, as the strides are read,
            # and wrapped back by asarray, which in array_api_strict shares the memory.
            strided = importlib.import_module("numpy.lib.stride_tricks").as_strided

            def expand(a, shape):
                h = np.from_dlpack(a)
                return xp.asarray(strided(h, shape, _expand_strides(h, shape),
                                          writeable=h.flags.writeable))
            self.expand = expand
        _by_type[type(xp.asarray(0.0))] = self

    def view(self, a, shape, strides):
        return self.xp.reshape(a, shape)

    def unsqueeze(self, a, d):
        return self.xp.expand_dims(a, axis=d)

    def expand(self, a, shape):
        n = 1
        for s in shape:
            n *= s
        if a.size == n:  # nothing repeats: a plain (writable) view
            return self.xp.reshape(a, shape)
        return self.xp.broadcast_to(a, shape)

    def tolist(self, a):
        return self.to_host(a).tolist()

    def copy(self, a):
        return self.xp.asarray(a, copy=True)


def _complete(xp):
    """Fill in the few Array API names an older namespace (cupy before the 2023 standard) lacks."""
    shims = {"permute_dims": lambda a, axes: xp.transpose(a, axes),
             "matrix_transpose": lambda a: xp.swapaxes(a, -1, -2),
             "astype": lambda a, dtype: a.astype(dtype), "bool": getattr(xp, "bool_", None)}
    if all(hasattr(xp, n) for n in shims):
        return xp
    ns = types.SimpleNamespace(**{n: getattr(xp, n) for n in dir(xp) if not n.startswith("__")})
    for n, fn in shims.items():
        if not hasattr(xp, n):
            setattr(ns, n, fn)
    return ns


def _expand_strides(a, shape):
    """torch's inferExpandGeometry: repeated dims get stride 0, new size-1 dims the stride a
    contiguous layout would give them (numpy would give 0); a 0-d tensor gets stride 0 in every
    dim, as torch special-cases it."""
    if a.ndim == 0:
        return (0,) * len(shape)
    n, lead = len(shape), len(shape) - a.ndim
    strides = [0] * n
    for i in range(n - 1, -1, -1):
        d = i - lead
        size = a.shape[d] if d >= 0 else 1
        stride = a.strides[d] if d >= 0 else (
            shape[i + 1] * strides[i + 1] if i + 1 < n else a.itemsize)
        strides[i] = 0 if size != shape[i] else stride
    return tuple(strides)


_by_type: dict[type, Backend] = {}


def namespace_of(a):
    """The array namespace of a backend array (for backward formulas, which get bare arrays)."""
    be = _by_type.get(type(a))
    return be.xp if be is not None else get("cpu").xp  # a numpy scalar


# torch computes inf and nan silently; so does refimpl (numpy would warn from inside our ops)
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"(refimpl|array_api_strict)\.")

_cpu_name = os.environ.get("REFIMPL_ARRAY_NAMESPACE", "numpy")
_backends: dict[str, Backend] = {}


def use_cpu_namespace(name: str) -> None:
    """Choose the CPU array namespace ('numpy' or 'array_api_strict') for tensors made from now."""
    global _cpu_name
    _cpu_name = name
    _backends.pop("cpu", None)


def cpu_namespace() -> str:
    return _cpu_name


_default_device = ["cpu"]


def set_default_device(device) -> None:
    """torch.set_default_device: where factories put tensors when given no device."""
    _default_device[0] = str(device)


def get(device=None) -> Backend:
    """The backend for a device: 'cpu', 'cuda' or 'cuda:N'; None means the default device."""
    device = _default_device[0] if device is None else str(device)
    key = "cuda" if device.startswith("cuda") else device
    be = _backends.get(key)
    if be is None:
        if key == "cpu":
            be = Backend(_cpu_name, "cpu")
        elif key == "cuda":
            be = _cuda()
        else:
            raise RuntimeError(f"refimpl supports devices 'cpu' and 'cuda', not {device!r}")
        _backends[key] = be
    return be


def _cuda() -> Backend:
    try:
        cupy = importlib.import_module("cupy")
    except ImportError as exc:
        raise RuntimeError("refimpl: device='cuda' needs cupy, which is not installed "
                           "(pip install cupy-cuda12x)") from exc
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # cupy raises its own error types when no driver is present
        raise RuntimeError(f"refimpl: device='cuda' needs a CUDA GPU: {exc}") from exc
    if count == 0:
        raise RuntimeError("refimpl: device='cuda' needs a CUDA GPU, and none was found")
    return Backend("cupy", "cuda")
