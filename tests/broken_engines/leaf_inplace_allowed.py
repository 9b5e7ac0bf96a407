"""Lets leaves that require grad be modified in place (breaks INPLACE-1): the write is done
as if under no_grad instead of raising LEAF_INPLACE."""
from __future__ import annotations

import torch

from ._base import Broken


class LeafInplaceAllowed(Broken):
    label = "leaf_inplace_allowed"

    def inplace(self, target, fn, args, kw):
        if target.is_leaf and target.requires_grad and torch.is_grad_enabled():
            with torch.no_grad():
                return super().inplace(target, fn, args, kw)
        return super().inplace(target, fn, args, kw)


def factory(device: str = "cpu") -> LeafInplaceAllowed:
    return LeafInplaceAllowed(device)
