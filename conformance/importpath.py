"""Where engines named by import path (`--engine pkg.mod:factory`) are found: in the current
folder, as under `python -m`, but after the standard library and the installed packages, so
that a stray numpy.py there is not imported in numpy's place.

`gradspec` calls current_folder_last() before anything else. Importing this module calls it
too: a forkserver imports it first among its preloaded modules, because Python starts the
forkserver with the current folder first on its path and does not hand it the parent's path
until a worker is forked from it.
"""
from __future__ import annotations

import os
import sys


def current_folder_last() -> None:
    """Move the current folder, where Python put it first, to the end of sys.path; add it
    there when it is missing (a console script puts its own folder first instead)."""
    here = ("", ".", os.getcwd())
    if sys.path and sys.path[0] in here:        # `python -m`, `python -c`, a forkserver
        sys.path.append(sys.path.pop(0))
    if not any(p in here for p in sys.path):
        sys.path.append("")


current_folder_last()
