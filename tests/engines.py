"""Which engine modules the project's own tests run on.

torch is the oracle and must be installed for the tests. refimpl is the reference engine. A
refimpl that fails to import is a test failure, not a skip: the engine under test is not optional.
"""
from __future__ import annotations

import importlib
from types import ModuleType

ENGINE_NAMES = ("torch", "refimpl")


def load(name: str) -> ModuleType:
    return importlib.import_module(name)
