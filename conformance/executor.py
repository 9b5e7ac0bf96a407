"""Old path of conformance.judge.executor (running a program on an engine into a Trace);
kept as a re-export for one release."""
from .judge.executor import *  # noqa: F403
from .judge.executor import (  # noqa: F401
    HARNESS,
    OTHER,
    VALUED,
    Event,
    HarnessError,
    Trace,
    binds,
    execute,
    index_of,
    plain,
    refs,
)
