"""A fault drill: the first backward pass aborts the process, later ones work (a flaky native
crash). The file MARKER records that it happened (a fixed path: workers may come from a
forkserver started before the test, so they do not see its environment). Shrinking cannot
reproduce the crash, so it must be reported as first found."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ._base import Broken

MARKER = Path(tempfile.gettempdir()) / "gradspec-drill-aborts-once"


class AbortsOnce(Broken):
    label = "aborts-once"

    def backward(self, t, gradient, retain_graph, inputs, create_graph=False):
        if not MARKER.exists():
            MARKER.write_text("aborted")
            os.abort()
        return super().backward(t, gradient, retain_graph, inputs, create_graph)


def factory(device: str = "cpu") -> AbortsOnce:
    return AbortsOnce(device)
