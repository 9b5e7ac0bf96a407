"""Warns in torch's words but recognises none of its warnings as a spec warning kind, as an
engine whose warnings are its own would (spec/errors.md): it diverges only in the warnings a
statement records, the class diagnostics, and a run that judges only core and
torch-observable passes."""
from __future__ import annotations

from ._base import Broken


class NoSpecWarnings(Broken):
    label = "no_spec_warnings"

    def classify_warning(self, message, category):
        return None


def factory(device: str = "cpu") -> NoSpecWarnings:
    return NoSpecWarnings(device)
