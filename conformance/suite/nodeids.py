"""The pytest node-ID entries of an expected-failure file (`--gradspec-xfail`): marking the
tests they name xfail, and listing the stale ones at the end of the run."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


class NodeIdEntries:
    """The node-ID entries of the expected-failure file in one pytest run: they mark the tests
    they name xfail, and what the run collected and how each test ended tells which are stale
    (conformance/judge/xfail.py, stale_tests). Registered by the plugin's pytest_configure
    where there is an expected-failure file; `entries` gives the node-ID entries for the engine
    under test."""

    def __init__(self, config: pytest.Config, entries: Callable[[], list]):
        self.config, self.entries = config, entries
        self.collected: dict[str, None] = {}
        self.outcomes: dict[str, str] = {}     # node ID -> passed | failed | skipped

    @pytest.hookimpl(tryfirst=True)     # before deselection: a deselected test is collected
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Node-ID entries mark their tests xfail (a parametrized test by its base ID too)."""
        from conformance.judge.xfail import marked_tests
        self.collected.update(dict.fromkeys(item.nodeid for item in items))
        marked = marked_tests(self.entries(), [item.nodeid for item in items])
        for item in items:
            x = marked.get(item.nodeid)
            if x is not None:
                item.add_marker(pytest.mark.xfail(reason=f"{x.id}: {x.reason}", strict=False))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under pytest-xdist the controller collects nothing itself: it learns the IDs here."""
        self.collected.update(dict.fromkeys(ids))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """An xpass counts as passed, an xfail as failed (what it expects happened)."""
        if report.failed or (report.skipped and hasattr(report, "wasxfail")):
            self.outcomes[report.nodeid] = "failed"
        elif report.skipped:
            self.outcomes.setdefault(report.nodeid, "skipped")
        elif report.when == "call" and self.outcomes.get(report.nodeid) != "failed":
            self.outcomes[report.nodeid] = "passed"

    def stale(self) -> list[dict[str, Any]]:
        from conformance.judge.xfail import stale_tests
        root = self.config.rootpath
        return stale_tests(self.entries(), self.collected, self.outcomes,
                           lambda path: (root / path).is_file())

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):     # an xdist worker: the controller reports
            return
        stale = self.stale()
        if stale:
            terminalreporter.section("gradspec: stale expected failures")
            for x in stale:
                terminalreporter.write_line(f"stale expected failure, line {x['line']}: "
                                            f"{x['id']}: {x['stale']}")
