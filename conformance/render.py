"""Old path of conformance.reports.render (a program as a standalone script); kept as a
re-export for one release."""
from .reports.render import *  # noqa: F403
from .reports.render import HELPERS, body, render, render_replay, statement  # noqa: F401
