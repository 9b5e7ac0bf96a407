"""Old path of conformance.spec.reader (reading spec/*.md); kept as a re-export for one release."""
from .spec.reader import *  # noqa: F403
from .spec.reader import _paragraph, _parse_clause  # noqa: F401
