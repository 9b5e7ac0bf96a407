"""Size and device: the plain values a Tensor reports as `shape` and `device` (no clause of its
own; LEAF-1 and API-3 read shapes through them)."""
from __future__ import annotations


class Size(tuple):
    def __repr__(self):
        return f"torch.Size({list(self)})"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n


class device:
    def __init__(self, type_: str):
        self.type = str(type_).split(":")[0]

    __str__ = lambda self: self.type
    __repr__ = lambda self: f"device(type='{self.type}')"
    __eq__ = lambda self, other: str(self) == str(other)
    __hash__ = lambda self: hash(self.type)
