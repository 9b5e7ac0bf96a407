"""The conformance suite under pytest: `pytest tests/conformance --engine NAME --oracle NAME`.

Options (also read from the environment, so tox and CI can pass them through):
    --engine NAME            engine under test (GRADSPEC_ENGINE; default refimpl, or torch when
                             GRADSPEC_TEST_ENGINES leaves refimpl out)
    --oracle NAME            the oracle (GRADSPEC_ORACLE; default torch)
    --gradspec-device DEV    cpu or cuda (GRADSPEC_DEVICE; default cpu)
    --gradspec-profile NAME  Hypothesis profile (GRADSPEC_PROFILE; default "ci" when CI is set
                             or under tox, else "dev"):
        dev       fast, random, remembers failures in the Hypothesis database
        ci        derandomized (same programs on every run, serial or `-n auto`), no database
        thorough  long campaigns: many more and longer programs
    --gradspec-timeout SEC   how long one program may run on the oracle and the engine in its
                             worker before it counts as hung (GRADSPEC_TIMEOUT; default 10)
    --gradspec-xfail FILE    expected failures (GRADSPEC_XFAIL), the file and the matcher of
                             `gradspec run --xfail` (conformance/judge/xfail.py): a pytest node
                             ID entry marks that test xfail; a program whose first divergence
                             has the primary clause, error kind or signature an entry names,
                             or whose seed is listed, is expected: the test is
                             reported xfailed instead of failed. Entries with @ENGINE hold only
                             for that engine (the --engine name, or the adapter's name). Stale
                             node-ID entries (matching no collected test of a file the run
                             collected or of no file at all; or naming only tests that passed)
                             are listed at the end of the run, as `gradspec run` lists stale
                             clause and seed entries.

Fixtures: conformance_engine, conformance_oracle (Engine adapters, one per session, loaded in
the test process for their names and capabilities), conformance_isolated (one worker process
per session that runs programs on both, conformance/campaign/resident.py), gradspec_profile (a
Profile: Hypothesis settings plus the program size to draw) and gradspec_xfail (the
expected-failure entries for the engine under test). check_isolated() runs one program on both
in that worker and fails with the divergences, the clause IDs and a standalone repro script;
an engine that crashes or hangs on the program fails that test alone, with the program, its
repro folder and the replay command (EngineFault), and the session goes on. check_program()
runs the program in the test process.

Of the profiles only ci is deterministic; dev may miss a broken engine that ci catches: use ci
in CI.

Loaded for this project's tests by `-p conformance.pytest_plugin` in pyproject.toml's addopts;
another project loads it the same way (`pytest -p conformance.pytest_plugin`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pytest

PROFILES = ("dev", "ci", "thorough")


@dataclass(frozen=True)
class Profile:
    name: str
    max_examples: int
    size: int              # statements per generated program
    derandomize: bool


PROFILE_TABLE = {
    "dev": Profile("dev", 40, 20, False),
    "ci": Profile("ci", 300, 20, True),
    "thorough": Profile("thorough", 10000, 30, False),
}


def _default_engine() -> str:
    if os.environ.get("GRADSPEC_ENGINE"):
        return os.environ["GRADSPEC_ENGINE"]
    names = os.environ.get("GRADSPEC_TEST_ENGINES", "torch,refimpl").split(",")
    return "refimpl" if "refimpl" in [n.strip() for n in names] else "torch"


def _default_profile() -> str:
    # tox sets TOX_ENV_NAME: `tox -e test` (what .ci/run runs) gets the derandomized profile
    ci = os.environ.get("CI") or os.environ.get("TOX_ENV_NAME")
    return os.environ.get("GRADSPEC_PROFILE") or ("ci" if ci else "dev")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradspec", "gradspec conformance suite")
    try:
        group.addoption("--engine", default=None, help="engine under test: torch, refimpl, "
                        "an entry point or pkg.mod:factory")
        group.addoption("--oracle", default=None, help="the oracle engine (default torch)")
        group.addoption("--gradspec-device", default=None, help="cpu (default) or cuda")
        group.addoption("--gradspec-profile", default=None, choices=PROFILES,
                        help="Hypothesis profile: dev, ci or thorough")
        group.addoption("--gradspec-timeout", default=None, metavar="SECONDS",
                        help="seconds one program may run before it counts as hung (10)")
        group.addoption("--gradspec-xfail", default=None, metavar="FILE",
                        help="expected-failure file, as for `gradspec run --xfail`")
    except ValueError:  # registered twice (addopts and a command-line -p): keep the first
        pass


def option(config: pytest.Config, name: str) -> Any:
    """An option's value; None where the plugin's options are not registered."""
    try:
        return config.getoption(name)
    except ValueError:
        return None


def chosen(config: pytest.Config) -> dict[str, str]:
    return {
        "engine": option(config, "--engine") or _default_engine(),
        "oracle": option(config, "--oracle") or os.environ.get("GRADSPEC_ORACLE") or "torch",
        "device": option(config, "--gradspec-device") or os.environ.get("GRADSPEC_DEVICE")
        or "cpu",
        "profile": option(config, "--gradspec-profile") or _default_profile(),
        "xfail": option(config, "--gradspec-xfail") or os.environ.get("GRADSPEC_XFAIL") or "",
    }


def timeout(config: pytest.Config) -> float:
    """--gradspec-timeout (GRADSPEC_TIMEOUT; default 10 s); a UsageError unless finite and
    positive."""
    import math
    text = option(config, "--gradspec-timeout") or os.environ.get("GRADSPEC_TIMEOUT") or "10"
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise pytest.UsageError(f"--gradspec-timeout: expected a finite number of seconds "
                                f"above 0, not {text!r}")
    return seconds


def xfail_entries(config: pytest.Config) -> list:
    """The expected-failure file's entries (all engines); [] without one. Read once."""
    from conformance.judge.xfail import load
    cached = getattr(config, "_gradspec_xfail", None)
    if cached is None:
        path = chosen(config)["xfail"]
        cached = load(path) if path else []
        config._gradspec_xfail = cached     # type: ignore[attr-defined]
    return cached


def _for_engine(entries: list, names: tuple[str, ...]) -> list:
    return [x for x in entries if any(x.applies_to(n) for n in names)]


def register_profiles() -> None:
    from hypothesis import HealthCheck, settings
    quiet = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
    for p in PROFILE_TABLE.values():
        settings.register_profile(
            f"gradspec-{p.name}", max_examples=p.max_examples, derandomize=p.derandomize,
            deadline=None, suppress_health_check=quiet, print_blob=True,
            **({"database": None} if p.derandomize else {}))


def pytest_configure(config: pytest.Config) -> None:
    c = chosen(config)
    if c["profile"] not in PROFILE_TABLE:
        raise pytest.UsageError(f"unknown gradspec profile {c['profile']!r} "
                                f"(choose from {', '.join(PROFILES)})")
    register_profiles()
    timeout(config)
    from conformance.judge.xfail import XfailError
    try:
        xfail_entries(config)
    except XfailError as exc:
        raise pytest.UsageError(f"--gradspec-xfail: {exc}") from None
    if not config.pluginmanager.has_plugin("gradspec-node-id-entries"):
        config.pluginmanager.register(NodeIdEntries(config), "gradspec-node-id-entries")


def _test_entries(config: pytest.Config) -> list:
    """The node-ID entries for the engine under test (by its --engine name)."""
    return _for_engine([x for x in xfail_entries(config) if x.kind == "test"],
                       (chosen(config)["engine"],))


class NodeIdEntries:
    """The node-ID entries of the expected-failure file in one pytest run: they mark the tests
    they name xfail, and what the run collected and how each test ended tells which are stale
    (conformance/judge/xfail.py, stale_tests). Registered by pytest_configure."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.collected: dict[str, None] = {}
        self.outcomes: dict[str, str] = {}     # node ID -> passed | failed | skipped

    @pytest.hookimpl(tryfirst=True)     # before deselection: a deselected test is collected
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Node-ID entries mark their tests xfail (a parametrized test by its base ID too)."""
        from conformance.judge.xfail import marked_tests
        self.collected.update(dict.fromkeys(item.nodeid for item in items))
        marked = marked_tests(_test_entries(self.config), [item.nodeid for item in items])
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
        return stale_tests(_test_entries(self.config), self.collected, self.outcomes,
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


def pytest_report_header(config: pytest.Config) -> str:
    c = chosen(config)
    return (f"gradspec: engine {c['engine']} vs oracle {c['oracle']} on {c['device']}, "
            f"profile {c['profile']}")


@pytest.fixture(scope="session")
def gradspec_profile(pytestconfig: pytest.Config) -> Profile:
    return PROFILE_TABLE[chosen(pytestconfig)["profile"]]


def hypothesis_settings(profile: Profile, **overrides: Any):
    from hypothesis import settings
    register_profiles()
    if profile.derandomize:
        _without_local_constants()
    return settings(settings.get_profile(f"gradspec-{profile.name}"), **overrides)


def _without_local_constants() -> None:
    """Hypothesis also draws literals it finds in the source of the project modules imported
    so far, and which are imported differs between processes (pytest imports every test
    module), so a derandomized run would draw other programs elsewhere. Turn that source of
    draws off. Private Hypothesis API: if it moves, this does nothing."""
    try:
        from hypothesis.internal.conjecture import providers
        empty = providers.Constants()
        providers._get_local_constants = lambda: empty
        providers.CONSTANTS_CACHE.cache.clear()
    except Exception:  # noqa: BLE001 - only a loss of cross-process reproducibility
        pass


def _load(spec: str, device: str):
    from conformance.engines import EngineError, load_engine
    try:
        return load_engine(spec, device)
    except EngineError as exc:
        pytest.fail(f"cannot load engine: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def gradspec_xfail(pytestconfig: pytest.Config, conformance_engine) -> list:
    """Expected-failure entries for the engine under test (clause and seed entries)."""
    names = (chosen(pytestconfig)["engine"], conformance_engine.name)
    return [x for x in _for_engine(xfail_entries(pytestconfig), names) if x.kind != "test"]


def split_expected(divs: list, entries: list, seed: int | None = None,
                   program=None) -> tuple[list, list]:
    """(unexpected, expected) divergences of one program, each expected one paired with the
    entry that expects the program: the matcher of `gradspec run` (conformance/judge/xfail.py,
    `expects`), on its first divergence's primary clause and signature."""
    from conformance.judge.xfail import expects
    caps = program.meta.get("capabilities") if program is not None else None
    verdict, x = expects(entries, divs, seed, caps)
    if verdict == "fails":
        return list(divs), []
    return [], [(d, x) for d in divs] if x is not None else []


def expected_reason(expected: list) -> str:
    seen: dict[str, None] = {}
    for _, x in expected:
        seen.setdefault(f"{x.id}: {x.reason}", None)
    return "expected divergence (--gradspec-xfail): " + "; ".join(seen)


@pytest.fixture(scope="session")
def conformance_engine(pytestconfig: pytest.Config):
    c = chosen(pytestconfig)
    return _load(c["engine"], c["device"])


@pytest.fixture(scope="session")
def conformance_oracle(pytestconfig: pytest.Config):
    c = chosen(pytestconfig)
    return _load(c["oracle"], c["device"])


@pytest.fixture(scope="session")
def conformance_isolated(pytestconfig: pytest.Config, conformance_engine, conformance_oracle,
                         tmp_path_factory: pytest.TempPathFactory):
    """One worker process per session running programs on the oracle and the engine; it is
    replaced after a crash or hang, and stopped at the end of the session."""
    from conformance.campaign.resident import Resident
    c = chosen(pytestconfig)
    resident = Resident(c["engine"], c["oracle"], c["device"], timeout(pytestconfig),
                        tmp_path_factory.mktemp("gradspec-unjudged"))
    yield resident
    resident.close()


class EngineFault(Exception):
    """A program that could not be judged: the engine crashed or hung on it (or the oracle
    did, or gradspec failed). The message names the statement, the repro folder and the
    program."""


def run_isolated(program, isolated, engine):
    """(oracle trace, engine trace, divergences) of one program run in the `isolated` worker
    (conformance_isolated); EngineFault when it was not judged."""
    from conformance.engines import EngineError
    from conformance.judge.compare import Divergence
    from conformance.lang.trace import Trace
    try:
        r = isolated.run(program)
    except EngineError as exc:
        pytest.fail(f"cannot load engine: {exc}", pytrace=False)
    if "oracle" not in r or "engine" not in r:
        raise EngineFault(isolated.explain(program, r, engine))
    return (Trace.from_json(r["oracle"]), Trace.from_json(r["engine"]),
            [Divergence.from_json(d) for d in r["divergences"]])


def run_both(program, oracle, engine):
    """(oracle trace, engine trace, divergences) of one program."""
    from conformance.judge.compare import compare
    from conformance.judge.conditioning import Relief
    from conformance.judge.executor import execute
    o, e = execute(program, oracle), execute(program, engine)
    return o, e, compare(program, o, e, Relief(program, o, lambda p: execute(p, oracle)))


def describe(program, divs: list, engine, traces=()) -> str:
    """A failure message: each divergence with its clauses, then a standalone repro."""
    lines = [f"{len(divs)} divergence(s) of {engine.name} from the oracle:"]
    for d in divs:
        lines.append(f"  statement {d.path} ({d.op}), {d.what}: oracle {d.oracle}; "
                     f"{engine.name} {d.engine}  [{d.primary}; involved: "
                     f"{', '.join(d.clauses)}] {d.signature}")
    try:
        from conformance.reports.render import render
        prelude = engine.render_prelude()
        lines += ["", "repro (plain torch):", render(program, traces=traces)]
        if prelude and prelude != "import torch":
            lines += [f"repro ({engine.name}):", render(program, prelude, traces=traces)]
    except Exception as exc:  # the repro is a courtesy; the divergences are the finding
        lines.append(f"(no repro script: {type(exc).__name__}: {exc})")
    lines += ["program JSON (`gradspec replay FILE --engine NAME`):", program.dumps()]
    return "\n".join(lines)


def check_program(program, oracle, engine, xfails: list = ()) -> None:
    """Fail the test with a readable report if engine and oracle disagree on program; xfail
    it when every divergence is expected by an entry of `xfails` (gradspec_xfail)."""
    _verdict(program, engine, run_both(program, oracle, engine), xfails)


def check_isolated(program, isolated, engine, xfails: list = ()) -> None:
    """check_program with the program run in the `isolated` worker (conformance_isolated): a
    crash or hang fails the test with the program and its repro; the session goes on."""
    try:
        found = run_isolated(program, isolated, engine)
    except EngineFault as exc:
        pytest.fail(str(exc), pytrace=False)
    _verdict(program, engine, found, xfails)


def _verdict(program, engine, found: tuple, xfails) -> None:
    o, e, divs = found
    unexpected, expected = split_expected(divs, list(xfails), program.seed, program)
    if unexpected:
        pytest.fail(describe(program, divs, engine, (o, e)), pytrace=False)
    if expected:
        pytest.xfail(expected_reason(expected))
