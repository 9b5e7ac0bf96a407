"""Statements that make tensors: leaves, op calls, views, indexing, detach and .data."""
from __future__ import annotations

from .registry import Kind, kind


@kind
class Leaf(Kind):
    name = "leaf"


@kind
class Call(Kind):
    name = "call"


@kind
class View(Kind):
    name = "view"


@kind
class Getitem(Kind):
    name = "getitem"


@kind
class Detach(Kind):
    name = "detach"


@kind
class Data(Kind):
    name = "data"
