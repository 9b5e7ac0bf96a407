"""`python -m conformance`: the `gradspec` command. Python put the current folder first on the
import path; it goes last before anything else is imported (conformance/importpath.py)."""
import sys

from .importpath import current_folder_last

current_folder_last()

from .cli import main  # noqa: E402

sys.exit(main())
