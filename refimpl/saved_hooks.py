"""Saved-tensor hooks (SAVED-1 to SAVED-12), in `refimpl.autograd.graph` (refimpl/graph.py).

A pair of hooks registered by `saved_tensors_hooks(pack, unpack)` is kept on a stack; the
innermost pair is the one in force (SAVED-4). When an op saves a tensor for backward while a
pair is in force, `hook` calls pack once, with grad mode off, on that tensor and keeps what it
returned, whatever it is (SAVED-1, SAVED-5); the node then holds a `HookedValue`, which calls
unpack every time backward reads it (SAVED-2) and computes with what unpack returns (SAVED-3).
A hooked value has no version to check (SAVED-6): VER-7 does not apply to it. Freeing drops it
like any saved value (SAVED-7, FREE-1). `disable_saved_tensors_hooks` refuses to register hooks
while it is active (SAVED-10); `save_on_cpu` is a pair of hooks that keep the tensor itself on
a CPU-only engine, or a copy with pin_memory=True (SAVED-9, UNSPEC-13). A custom Function's
saved tensors are packed alike and unpacked as tensors (SAVED-11, refimpl/function.py); under
create_graph an unpacked value takes the saved tensor's place in the graph as any saved value
does (SAVED-12, refimpl/differentiable.py `_on_graph`).

This module imports no Tensor (refimpl/tensor.py imports it): an unpacked value is checked
against Tensor's base class, ArraySurface.
"""
from __future__ import annotations

import contextlib
import threading

from . import errors, grad_mode
from .node import SavedValue
from .surface import ArraySurface


class _State(threading.local):
    def __init__(self):
        self.hooks: list[tuple] = []          # (pack, unpack), innermost last
        self.disabled: str | None = None      # the message while hooks are disabled
        self.original = None                  # (target, clone) of the in-place op running


_state = _State()


class HookedValue(SavedValue):
    """A saved value packed by a pack hook: what pack returned, and the unpack hook to call.
    Its vc is the version counter of the tensor unpack last returned, which the value a
    create_graph pass computes with shares (DOUBLE-6, refimpl/differentiable.py): a later write
    to that tensor, not to the one saved, makes a backward through the gradient raise."""
    __slots__ = ("packed", "unpack_hook", "tensors")

    def unpack(self):
        t = self.unpack_hook(self.packed)
        if not isinstance(t, ArraySurface):  # refimpl's Tensor is its only subclass
            raise errors.unpack_not_tensor(type(t).__name__)  # SAVED-3
        self.vc = t._vc
        return t if self.tensors else t._data


def hook(value: SavedValue, t, tensors=False) -> SavedValue:
    """value, the saved value of tensor t, packed by the hooks in force (SAVED-1), or value
    itself when none are. tensors: unpack gives tensors (a custom Function's saved_tensors).
    Within an in-place op (packing_original), its target's old value is packed as a copy,
    and its result is packed once it is the target, after the write (commit_inplace)."""
    if not _state.hooks:
        return value
    pack, unpack = _state.hooks[-1]
    original = _state.original
    if original is not None and value.idx == -1:
        return PackLater(value, pack, unpack, tensors)
    if original is not None and t is original[0] and value.idx == 0:
        # torch's original_self = self.clone(), made with the grad mode in force
        t = original[1](t)
        value = SavedValue(t._data, t._vc, value.origin, 0, value.dtype)
    return _pack(value, t, pack, unpack, tensors)


def _pack(value: SavedValue, t, pack, unpack, tensors) -> SavedValue:
    version, was = t._vc[0], grad_mode.enabled[0]
    grad_mode.enabled[0] = False
    try:
        packed = pack(t)
    finally:
        grad_mode.enabled[0] = was
    if t._vc[0] != version:
        raise errors.pack_hook_inplace()  # SAVED-8
    hooked = HookedValue(value.array, None, value.origin, value.idx, value.dtype)
    hooked.packed, hooked.unpack_hook, hooked.tensors = packed, unpack, tensors
    return hooked


class PackLater(SavedValue):
    """The result of an in-place op, saved while hooks are in force: packed by `packed_as`
    once the op has written it into its target, which is what pack then gets."""
    __slots__ = ("hooks",)

    def __init__(self, value: SavedValue, pack, unpack, tensors):
        super().__init__(value.array, value.vc, value.origin, value.idx, value.dtype)
        self.hooks = (pack, unpack, tensors)

    def packed_as(self, target) -> SavedValue:
        value = SavedValue(target._data, target._vc, self.origin, self.idx, self.dtype)
        hooked = _pack(value, target, *self.hooks)
        hooked.edge = self.edge     # set by rebase_history for a write through a view
        return hooked


def in_force() -> bool:
    return bool(_state.hooks)


@contextlib.contextmanager
def packing_original(target, clone):
    """While an in-place op on `target` computes and saves: a saved value of its input 0 is
    packed as clone(target), a copy of the old value (see hook)."""
    outer, _state.original = _state.original, (target, clone)
    try:
        yield
    finally:
        _state.original = outer     # a pack hook may run in-place ops of its own


class saved_tensors_hooks:
    """Context manager: ops save through pack_hook and backward reads through unpack_hook."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        if _state.disabled is not None:
            raise RuntimeError(_state.disabled)  # SAVED-10
        _state.hooks.append((self.pack_hook, self.unpack_hook))

    def __exit__(self, *exc):
        _state.hooks.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors kept on the CPU and moved back for backward; on a CPU tensor the tensor
    itself is kept (SAVED-9), or with pin_memory=True a copy, as torch 2.13 makes one."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__(_pack_copy_to_cpu if pin_memory else _pack_to_cpu, _unpack_from_cpu)


def _pack_to_cpu(t):
    if t.device.type != "cpu":
        raise NotImplementedError("refimpl: save_on_cpu of a tensor on another device")
    return (t.device, t)


def _pack_copy_to_cpu(t):
    """pin_memory=True: a copy into new (pinned) memory, on the CPU too, as torch makes it."""
    return (_pack_to_cpu(t)[0], t.detach().clone())


def _unpack_from_cpu(packed):
    return packed[1]


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Registering saved-tensor hooks inside raises RuntimeError(error_message) (SAVED-10)."""
    previous = _state.disabled
    try:
        if _state.hooks:
            raise RuntimeError(error_message)
        _state.disabled = error_message
        yield
    finally:
        _state.disabled = previous
