"""Which engine modules the project's own tests run on.

torch is the oracle and must be installed for the tests. refimpl is the reference engine. A
refimpl that fails to import is a test failure, not a skip: the engine under test is not optional.
GRADSPEC_TEST_ENGINES=torch narrows the list while an engine is being written.
"""
from __future__ import annotations

import importlib
import os
from types import ModuleType

ENGINE_NAMES = tuple(
    n.strip() for n in os.environ.get("GRADSPEC_TEST_ENGINES", "torch,refimpl").split(",")
    if n.strip())


def load(name: str) -> ModuleType:
    return importlib.import_module(name)
