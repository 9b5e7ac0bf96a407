"""What a tensor shares with any array: its shape, strides, dtype and device, and conversions to
Python values (`item`, `tolist`, `numpy`, `len`, iteration, `bool`, `float`, `int`, `format`).
Tensor (refimpl/tensor.py) takes them from here and adds the autograd state."""
from __future__ import annotations

from .sizes import Size, device


class ArraySurface:
    """The array-like surface of Tensor; reads only `_data`, `_dtype` and `_be`."""
    __slots__ = ()

    shape = property(lambda self: Size(self._data.shape))
    dtype = property(lambda self: self._dtype)
    device = property(lambda self: device(self._be.device))
    ndim = property(lambda self: self._data.ndim)

    def size(self, dim=None):
        return self.shape if dim is None else self._data.shape[dim]

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return self.shape.numel()

    def is_floating_point(self) -> bool:
        return self._dtype.is_floating_point

    def stride(self, dim=None):
        """Elements, not bytes, between neighbours along each dim (GRAD-2)."""
        s = self._be.strides(self._data)
        return s if dim is None else s[dim]

    def is_contiguous(self) -> bool:
        """Row-major: each dim of size > 1 steps over all the elements of the dims after it (a
        tensor with no elements is, whatever its strides, as in torch)."""
        if 0 in self._data.shape:
            return True
        need = 1
        for n, s in zip(reversed(self._data.shape), reversed(self.stride()), strict=True):
            if n != 1 and s != need:
                return False
            need *= n
        return True

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to "
                               "Scalar")
        v = self._be.tolist(self._data)
        while isinstance(v, list):
            v = v[0]
        return v

    def tolist(self):
        return self._be.tolist(self._data)

    def numpy(self):
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return self._be.to_host(self._data)

    def __len__(self):
        if not self._data.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    __bool__ = lambda self: bool(self.item())
    __float__ = lambda self: float(self.item())
    __int__ = lambda self: int(self.item())

    def __index__(self):    # torch's: a one-element integer or bool tensor (a flag, an index)
        if self._dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __format__(self, spec):
        return format(self.item(), spec) if self._data.ndim == 0 else repr(self)
