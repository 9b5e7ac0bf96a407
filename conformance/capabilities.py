"""Old path of conformance.judge.probes (capability probes); kept as a re-export for one
release."""
from .judge.probes import *  # noqa: F403
from .judge.probes import X  # noqa: F401
