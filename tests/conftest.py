import pytest

from tests import engines


@pytest.fixture(params=engines.ENGINE_NAMES)
def engine(request):
    """The engine module bound to `torch` in examples: the oracle, then refimpl."""
    return engines.load(request.param)
