"""An expected-failure file (`--gradspec-xfail`) in a pytest session: its node-ID entries mark
the tests they name xfail, and at the end of the session its stale entries are listed, as
`gradspec run --xfail` lists them (the same matcher, conformance/judge/xfail.py): node-ID
entries by the tests they name, clause entries by the clause items
(conformance/suite/test_clauses.py), and an entry naming an engine gradspec does not know
whatever engine the session tests."""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

CLAUSE_ITEM = re.compile(r"::test_clause\[([A-Z]+-[0-9]+)\]$")


class ExpectedFailureEntries:
    """The expected-failure file's entries for the engine under test in one pytest session:
    node-ID entries mark the tests they name xfail, and what the session collected and how
    each test ended tells which entries are stale (conformance/judge/xfail.py, stale_tests and
    stale_items). Registered by the plugin's pytest_configure where there is an
    expected-failure file."""

    def __init__(self, config: pytest.Config, every: Callable[[], list], engine: str,
                 adapter: Callable[[], Any]):
        self.config, self.every = config, every     # every entry of the file, read once
        self.engine, self.adapter = engine, adapter     # as given; its adapter, loaded once
        self.collected: dict[str, None] = {}
        self.outcomes: dict[str, str] = {}     # node ID -> passed | failed | skipped
        self.expected: list[str] = []          # the reasons of the tests that xfailed

    def entries(self) -> list:
        """The entries for the engine under test (by the name it was given)."""
        from conformance.suite.checks import for_engine
        return for_engine(self.every(), (self.engine,))

    def known_engines(self) -> set[str]:
        """The engine names an @ENGINE may give, as `gradspec run` knows them: the built-ins,
        the entry points, and the engine under test as given and as its adapter names itself.
        The adapter is asked only when an entry names no other known engine (the controller
        of pytest-xdist has not loaded it); an adapter that does not load names nothing."""
        from conformance.engines import every_engine_name
        known = {*every_engine_name(), self.engine}
        if any(e not in known and ":" not in e for x in self.every() for e in x.engines):
            try:
                known.add(self.adapter().name)
            except Exception:   # the session's tests report an engine that does not load
                pass
        return known

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
            if report.skipped:
                self.expected.append(str(report.wasxfail))
        elif report.skipped:
            self.outcomes.setdefault(report.nodeid, "skipped")
        elif report.when == "call" and self.outcomes.get(report.nodeid) != "failed":
            self.outcomes[report.nodeid] = "passed"

    def stale(self) -> list[dict[str, Any]]:
        from conformance.judge.xfail import stale_items, stale_tests, unknown_engines
        root = self.config.rootpath
        entries = self.entries()
        items = {m.group(1): outcome for nodeid, outcome in self.outcomes.items()
                 if (m := CLAUSE_ITEM.search(nodeid))}
        # an entry that made any test xfail is used (checks.expected_reason names it)
        used = {x.line for x in entries
                if any(f"{x.id}: {x.reason}" in reason for reason in self.expected)}
        # an entry naming an unknown engine is told so, once, as gradspec run tells it
        found = unknown_engines(self.every(), self.known_engines())
        told = {x["line"] for x in found}
        found += [x for x in stale_tests(entries, self.collected, self.outcomes,
                                         lambda path: (root / path).is_file()) +
                  stale_items(entries, items, used) if x["line"] not in told]
        return sorted(found, key=lambda x: x["line"])

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):     # an xdist worker: the controller reports
            return
        stale = self.stale()
        if stale:
            terminalreporter.section("gradspec: stale expected failures")
            for x in stale:
                terminalreporter.write_line(f"stale expected failure, line {x['line']}: "
                                            f"{x['id']}: {x['stale']}")
