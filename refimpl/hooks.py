"""Removable hook handles (HOOK-6), shaped like torch.utils.hooks.RemovableHandle, and the
check every replacement a tensor hook or a post-accumulate-grad hook returns goes through."""
from __future__ import annotations

import itertools

from . import errors

_ids = itertools.count()


class RemovableHandle:
    """Owns one entry of one or more hook dicts; remove() deletes it from each that still has it."""

    def __init__(self, *hooks_dicts: dict):
        self.id = next(_ids)
        self.hooks_dicts = hooks_dicts

    def remove(self) -> None:
        for d in self.hooks_dicts:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add(hooks_dict: dict, fn) -> RemovableHandle:
    handle = RemovableHandle(hooks_dict)
    hooks_dict[handle.id] = fn
    return handle


def check_replacement(hook, res, shape, dtype) -> None:
    """torch's check_single_result, shared by tensor hooks (HOOK-5) and post-accumulate-grad
    hooks (HOOK-13): a value other than None must be a tensor, then of the dtype, then of the
    shape of what it replaces, checked in that order."""
    name = getattr(hook, "__name__", repr(hook))
    res_dtype = getattr(res, "_dtype", None)
    if res_dtype is None:  # not a refimpl tensor (Tensor is above this module)
        raise errors.hook_returned_non_tensor(type(res).__name__)
    if res_dtype is not dtype:
        raise errors.hook_changed_type(name, dtype, res_dtype)
    if tuple(res.shape) != tuple(shape):
        raise errors.hook_changed_size(name)
