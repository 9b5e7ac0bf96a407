import pytest

from tests import engines


def pytest_addoption(parser):
    parser.addoption(
        "--search-unshrunk", action="store_true",
        help="this repository's Hypothesis search (test_engine_conformance.py) fails with the "
             "first divergent program, unshrunk: for the plugin's tests that need a failure but "
             "not its shrinking, which took two thirds of such a session (shrinking has tests "
             "of its own)")


@pytest.fixture(params=engines.ENGINE_NAMES)
def engine(request):
    """The engine module bound to `torch` in examples: the oracle, then refimpl."""
    return engines.load(request.param)


# Modules whose tests run whole campaigns, pytest sessions or subprocesses (tens of seconds
# each, measured by tox's --durations). Collected first, so that pytest-xdist hands them out
# while the many quick tests fill the other workers, instead of leaving them for the end of
# the run, where two of them kept a 2-core CI machine busy for minutes after the rest.
SLOW_FIRST = (
    "tests/conformance/test_broken_engines_caught.py", "tests/conformance/test_pytest_plugin.py",
    "tests/conformance/test_runner.py", "tests/conformance/test_cluster.py",
    "tests/conformance/test_fault_drills.py", "tests/conformance/test_xfail.py",
    "tests/conformance/test_cli.py", "tests/conformance/test_site.py",
    "tests/conformance/test_injection.py", "tests/conformance/test_engine_guide.py",
    "tests/thirdparty/", "tests/test_packaging.py", "tests/test_bench_conformance.py",
)


def pytest_collection_modifyitems(config, items):
    """Slow modules first (SLOW_FIRST); the order within each group as collected."""
    def slow(item) -> bool:
        return any(item.nodeid.startswith(p) for p in SLOW_FIRST)
    items[:] = [i for i in items if slow(i)] + [i for i in items if not slow(i)]
