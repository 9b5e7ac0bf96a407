"""Old path of conformance.judge.xfail (expected-failure files); kept as a re-export for one
release."""
from .judge.xfail import *  # noqa: F403
