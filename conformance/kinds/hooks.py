"""Hook statements: tensor hooks, post-accumulate hooks, node hooks, and handle removal."""
from __future__ import annotations

from .registry import Kind, kind


@kind
class Hook(Kind):
    name = "hook"


@kind
class PostHook(Kind):
    name = "post_hook"


@kind
class NodeHook(Kind):
    name = "node_hook"


@kind
class Remove(Kind):
    name = "remove"
