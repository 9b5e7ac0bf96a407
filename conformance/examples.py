"""Old path of conformance.spec.examples (running the spec's examples); kept as a re-export for
one release."""
from .spec.examples import *  # noqa: F403
from .spec.examples import _markers  # noqa: F401
