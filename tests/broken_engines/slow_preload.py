"""Not an engine: a module a test adds to the forkserver's preload list
(conformance/campaign/pool.py, PRELOAD), so that the forkserver is still importing when the
test sends Ctrl-C. It writes the file $GRADSPEC_TEST_PRELOADING when its import begins and
then waits, as a long import (torch's) does, until the process that started the forkserver is
gone (or 60 s)."""
from __future__ import annotations

import os
import time
from pathlib import Path

_parent = os.getppid()
Path(os.environ["GRADSPEC_TEST_PRELOADING"]).write_text(str(os.getpid()))
_end = time.monotonic() + 60
while os.getppid() == _parent and time.monotonic() < _end:
    time.sleep(0.05)
