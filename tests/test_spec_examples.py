"""The executable spec: every example in spec/ runs on torch and on refimpl with its stated
outcome (spec/README.md, "Examples are executable")."""
import pytest

from conformance.examples import run_example
from conformance.specdoc import load_spec
from tests import engines

EXAMPLES = [ex for c in load_spec().clauses.values() for ex in c.examples]


@pytest.mark.parametrize("engine_name", engines.ENGINE_NAMES)
@pytest.mark.parametrize("example", EXAMPLES, ids=[ex.id for ex in EXAMPLES])
def test_example(example, engine_name):
    failures = run_example(example, engines.load(engine_name))
    assert not failures, f"{engine_name}:\n" + "\n".join(map(str, failures))
