"""Old path of conformance.gen.strategies (the generator's labelled-draw sources); kept as a
re-export for one release."""
from .gen.strategies import (  # noqa: F401
    Chooser,
    HypothesisChooser,
    RandomChooser,
    boolean,
    choice,
    draws,
)
