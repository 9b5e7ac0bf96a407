"""gradspec's pytest plugin: the options, fixtures and checks of the conformance suite, which
ships in the package (`python -m pytest --pyargs conformance.suite --gradspec-engine NAME`,
conformance/suite/) and which this repository's tests/conformance use as well.

pytest loads it in every session of an environment with gradspec installed (the `pytest11`
entry point, named `conformance.pytest_plugin` after the module so that `-p
conformance.pytest_plugin` names the same plugin; `-p no:conformance.pytest_plugin` turns it
off). It is inert unless the session names the suite (`--pyargs conformance.suite`, or a path
in it) or a gradspec option is given: nothing is imported, loaded, checked or printed, and it
adds no tests; its fixtures do nothing until a test asks for them.

Options (each also read from the environment, so tox and CI can pass them through):
    --gradspec-engine NAME   engine under test: torch, refimpl, an entry point of
                             `gradspec.engines` or pkg.mod:factory (GRADSPEC_ENGINE; default
                             refimpl, or torch when GRADSPEC_TEST_ENGINES leaves refimpl out)
    --gradspec-oracle NAME   the oracle (GRADSPEC_ORACLE; default torch)
    --gradspec-device DEV    cpu or cuda (GRADSPEC_DEVICE; default cpu)
    --gradspec-profile NAME  how much to draw (GRADSPEC_PROFILE; default "ci" when CI is set or
                             under tox, else "dev"; conformance/suite/checks.py):
        dev       a few programs per clause, a fresh stream each session
        ci        deterministic: `gradspec run --seed 0`'s programs, every run, serial or -n
        thorough  long campaigns: many more and longer programs, a fresh stream each session
    --gradspec-seed N        the clause items' stream (GRADSPEC_SEED): `gradspec run --seed N`'s
                             programs; by default the profile's (ci: 0; others: drawn per
                             session, shown in the header)
    --gradspec-classes LIST  the conformance classes judged, e.g. core,torch-observable
                             (GRADSPEC_CLASSES; default the engine's claim, Engine.classes): a
                             divergence of another class fails nothing
    --gradspec-timeout SEC   how long one program may run on the oracle and the engine in its
                             worker before it counts as hung (GRADSPEC_TIMEOUT; default 10)
    --gradspec-xfail FILE    expected failures (GRADSPEC_XFAIL), the file and the matcher of
                             `gradspec run --xfail` (conformance/judge/xfail.py): a program whose
                             first divergence has the primary clause, error kind, signature or
                             class an entry names, or whose seed is listed, is expected: its
                             item is reported xfailed instead of failed; a pytest node-ID entry
                             marks that test xfail. Entries with @ENGINE hold only for that
                             engine (the --gradspec-engine name, or the adapter's name). Stale
                             entries are listed at the end of the run (suite/expected.py).
    --engine, --oracle       deprecated aliases of --gradspec-engine and --gradspec-oracle, kept
                             for one release; registered only where no other plugin or initial
                             conftest has taken the name.
A bad value of any of them is a usage error (one line, exit status 4).

Fixtures: conformance_engine, conformance_oracle (Engine adapters, one per session, loaded in
the test process for their names and capabilities), conformance_isolated (one worker process
per session that runs programs on both, conformance/campaign/resident.py), gradspec_profile,
gradspec_classes (the classes judged), gradspec_xfail (the expected-failure entries for the
engine under test) and gradspec_clauses (the clause items, conformance/suite/clauses.py).
check_isolated() and check_program() (conformance/suite/checks.py, re-exported here) judge one
program and fail the test with the divergences, their clauses and a repro.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from conformance.suite.checks import (  # noqa: F401 - the first release's names, kept here
    PROFILE_TABLE,
    PROFILES,
    EngineFault,
    Profile,
    _without_local_constants,
    check_isolated,
    check_program,
    describe,
    expected_reason,
    for_engine,
    hypothesis_settings,
    register_profiles,
    run_both,
    run_isolated,
    split_expected,
)

SUITE = Path(__file__).resolve().parent / "suite"
# key -> (option, environment variable)
OPTIONS = {
    "engine": ("--gradspec-engine", "GRADSPEC_ENGINE"),
    "oracle": ("--gradspec-oracle", "GRADSPEC_ORACLE"),
    "device": ("--gradspec-device", "GRADSPEC_DEVICE"),
    "profile": ("--gradspec-profile", "GRADSPEC_PROFILE"),
    "seed": ("--gradspec-seed", "GRADSPEC_SEED"),
    "classes": ("--gradspec-classes", "GRADSPEC_CLASSES"),
    "timeout": ("--gradspec-timeout", "GRADSPEC_TIMEOUT"),
    "xfail": ("--gradspec-xfail", "GRADSPEC_XFAIL"),
}
ALIASES = {"--engine": "engine", "--oracle": "oracle"}      # deprecated, for one release
HELP = {
    "engine": "engine under test: torch, refimpl, an entry point or pkg.mod:factory",
    "oracle": "the oracle engine (default torch)",
    "device": "cpu (default) or cuda",
    "profile": "how much to draw: dev, ci (deterministic) or thorough",
    "seed": "campaign seed of the clause items' programs (default: the profile's)",
    "classes": "conformance classes judged, comma-separated (default: the engine's claim)",
    "timeout": "seconds one program may run before it counts as hung (10)",
    "xfail": "expected-failure file, as for `gradspec run --xfail`",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradspec", "gradspec conformance suite")
    try:
        for key, (name, env) in OPTIONS.items():
            group.addoption(name, default=None, help=f"{HELP[key]} [{env}]",
                            metavar=key.upper(),
                            **({"choices": PROFILES} if key == "profile" else {}))
    except ValueError:  # registered twice (two copies on the path): keep the first
        pass


@pytest.hookimpl(hookwrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]):
    """The deprecated aliases, added after every plugin and initial conftest has added its
    own options, and only where the name is free: an unrelated project's `--engine` wins."""
    yield
    taken = _option_names(parser)
    group = parser.getgroup("gradspec")
    for alias, key in ALIASES.items():
        if alias not in taken:
            group.addoption(alias, default=None, dest=f"gradspec_alias_{key}",
                            help=f"deprecated alias of {OPTIONS[key][0]} (kept for one "
                                 f"release)")


def _option_names(parser: pytest.Parser) -> set[str] | frozenset[str]:
    """Every option name registered so far. pytest has no public way to ask; where its
    private attributes have moved, every alias counts as taken (none is added)."""
    try:
        groups = [parser._anonymous, *parser._groups]
        return {n for g in groups for opt in g.options for n in opt.names()}
    except (AttributeError, TypeError):
        return frozenset(ALIASES)


def option(config: pytest.Config, name: str) -> Any:
    """An option's value; None where the option is not registered."""
    try:
        return config.getoption(name)
    except ValueError:
        return None


def _alias_given(config: pytest.Config, key: str) -> str | None:
    """The deprecated alias of `key` given on the command line; read by its own dest, so that
    another project's `--engine` is never taken for ours."""
    for alias, k in ALIASES.items():
        if k == key and option(config, f"gradspec_alias_{key}") is not None:
            return alias
    return None


def _value(config: pytest.Config, key: str) -> str | None:
    name, env = OPTIONS[key]
    alias = _alias_given(config, key)
    return option(config, name) or \
        (option(config, f"gradspec_alias_{key}") if alias else None) or \
        os.environ.get(env) or None


def _default_engine() -> str:
    names = os.environ.get("GRADSPEC_TEST_ENGINES", "torch,refimpl").split(",")
    return "refimpl" if "refimpl" in [n.strip() for n in names] else "torch"


def _default_profile() -> str:
    # tox sets TOX_ENV_NAME: `tox -e test` (what .ci/run runs) gets the derandomized profile
    return "ci" if os.environ.get("CI") or os.environ.get("TOX_ENV_NAME") else "dev"


def chosen(config: pytest.Config) -> dict[str, str]:
    return {
        "engine": _value(config, "engine") or _default_engine(),
        "oracle": _value(config, "oracle") or "torch",
        "device": _value(config, "device") or "cpu",
        "profile": _value(config, "profile") or _default_profile(),
        "xfail": _value(config, "xfail") or "",
        "classes": _value(config, "classes") or "",
    }


def active(config: pytest.Config) -> bool:
    """Whether the session asked for gradspec: a gradspec option on the command line, or the
    suite among the arguments. Otherwise the plugin stays out of the way."""
    if any(option(config, n) is not None for n, _ in OPTIONS.values()) or \
            any(_alias_given(config, key) for key in ALIASES.values()):
        return True
    pyargs = bool(option(config, "pyargs"))
    for arg in getattr(config, "args", ()):
        head = str(arg).split("::")[0]
        if pyargs and (head == "conformance.suite" or head.startswith("conformance.suite.")):
            return True
        try:
            path = (Path(config.invocation_params.dir) / head).resolve()
        except (OSError, ValueError):
            continue
        if path == SUITE or SUITE in path.parents:
            return True
    return False


def timeout(config: pytest.Config) -> float:
    """--gradspec-timeout (GRADSPEC_TIMEOUT; default 10 s); a UsageError unless finite and
    positive."""
    import math
    text = _value(config, "timeout") or "10"
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise pytest.UsageError(f"--gradspec-timeout: expected a finite number of seconds "
                                f"above 0, not {text!r}")
    return seconds


def profile(config: pytest.Config) -> Profile:
    name = chosen(config)["profile"]
    if name not in PROFILE_TABLE:
        raise pytest.UsageError(f"--gradspec-profile: unknown profile {name!r} "
                                f"(choose from {', '.join(PROFILES)})")
    return PROFILE_TABLE[name]


def stream_seed(config: pytest.Config) -> int:
    """The clause items' campaign seed: --gradspec-seed, else the xdist controller's, else the
    profile's, else one drawn for the session (the controller hands it to its workers)."""
    cached = getattr(config, "_gradspec_seed", None)
    if cached is None:
        text = _value(config, "seed")
        handed = getattr(config, "workerinput", {}).get("gradspec_seed")
        if text is not None:
            try:
                cached = int(text)
            except ValueError:
                raise pytest.UsageError(f"--gradspec-seed: expected an integer, not "
                                        f"{text!r}") from None
        elif handed is not None:
            cached = int(handed)
        elif profile(config).seed is not None:
            cached = profile(config).seed
        else:
            import random
            cached = random.SystemRandom().getrandbits(32)
        config._gradspec_seed = cached      # type: ignore[attr-defined]
    return cached


def classes_override(config: pytest.Config) -> tuple[str, ...] | None:
    """--gradspec-classes, parsed; None without it (the engine's claim is judged)."""
    text = chosen(config)["classes"]
    if not text:
        return None
    from conformance.reports.classes import ClassError, parse
    try:
        return parse(text)
    except ClassError as exc:
        raise pytest.UsageError(f"--gradspec-classes: {exc}") from None


def xfail_entries(config: pytest.Config) -> list:
    """The expected-failure file's entries (all engines); [] without one. Read once."""
    cached = getattr(config, "_gradspec_xfail", None)
    if cached is None:
        path = chosen(config)["xfail"]
        cached = []
        if path:
            from conformance.judge.xfail import XfailError, load
            try:
                cached = load(path)
            except XfailError as exc:
                raise pytest.UsageError(f"--gradspec-xfail: {exc}") from None
        config._gradspec_xfail = cached     # type: ignore[attr-defined]
    return cached


def load(config: pytest.Config, key: str):
    """The engine (key "engine") or the oracle, loaded once per process; EngineError."""
    from conformance.engines import load_engine
    c = chosen(config)
    loaded = config.__dict__.setdefault("_gradspec_engines", {})
    if (c[key], c["device"]) not in loaded:
        loaded[c[key], c["device"]] = load_engine(c[key], c["device"])
    return loaded[c[key], c["device"]]


def pytest_configure(config: pytest.Config) -> None:
    """Check every gradspec option now, where a mistake is one line: only when asked for."""
    if chosen(config)["xfail"]:
        xfail_entries(config)
        if not config.pluginmanager.has_plugin("gradspec-expected-failures"):
            from conformance.suite.expected import ExpectedFailureEntries
            config.pluginmanager.register(ExpectedFailureEntries(
                config, lambda: xfail_entries(config), chosen(config)["engine"],
                lambda: load(config, "engine")), "gradspec-expected-failures")
    if not active(config):
        return
    profile(config)
    timeout(config)
    stream_seed(config)
    classes_override(config)
    from conformance.engines import DEVICES, EngineError
    if chosen(config)["device"] not in DEVICES:     # the device's mistake, not an engine's
        raise pytest.UsageError(f"{OPTIONS['device'][0]}: unknown device "
                                f"{chosen(config)['device']!r} (choose from {', '.join(DEVICES)})")
    for key in ("engine", "oracle"):
        try:
            load(config, key)
        except EngineError as exc:
            raise pytest.UsageError(f"{OPTIONS[key][0]}: cannot load engine: {exc}") from None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: every worker draws the stream of the controller's seed."""
    if active(node.config):
        node.workerinput["gradspec_seed"] = stream_seed(node.config)


def pytest_report_header(config: pytest.Config) -> list[str]:
    if not active(config):
        return []
    c = chosen(config)
    n = PROFILE_TABLE[c['profile']].per_clause
    lines = [f"gradspec: engine {c['engine']} vs oracle {c['oracle']} on {c['device']}, "
             f"profile {c['profile']}, stream seed {stream_seed(config)}"
             + (f", at least {n} programs a clause" if n else "")]
    for key in ALIASES.values():
        if (alias := _alias_given(config, key)) is not None:
            lines.append(f"gradspec: {alias} is deprecated, use {OPTIONS[key][0]}")
    return lines


def _loaded(config: pytest.Config, key: str):
    from conformance.engines import EngineError
    try:
        return load(config, key)
    except EngineError as exc:
        pytest.fail(f"cannot load engine: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def gradspec_profile(pytestconfig: pytest.Config) -> Profile:
    return profile(pytestconfig)


@pytest.fixture(scope="session")
def conformance_engine(pytestconfig: pytest.Config):
    return _loaded(pytestconfig, "engine")


@pytest.fixture(scope="session")
def conformance_oracle(pytestconfig: pytest.Config):
    return _loaded(pytestconfig, "oracle")


@pytest.fixture(scope="session")
def gradspec_xfail(pytestconfig: pytest.Config, conformance_engine) -> list:
    """Expected-failure entries for the engine under test (clause and seed entries)."""
    names = (chosen(pytestconfig)["engine"], conformance_engine.name)
    return [x for x in for_engine(xfail_entries(pytestconfig), names) if x.kind != "test"]


@pytest.fixture(scope="session")
def gradspec_classes(pytestconfig: pytest.Config, conformance_engine) -> tuple[str, ...]:
    """The conformance classes judged: --gradspec-classes, else the engine's claim."""
    from conformance.engines import EngineError
    from conformance.reports.classes import engine_claim
    try:
        return engine_claim(conformance_engine, classes_override(pytestconfig))
    except EngineError as exc:
        pytest.fail(str(exc), pytrace=False)


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


@pytest.fixture(scope="session")
def gradspec_clauses(pytestconfig: pytest.Config, conformance_engine, conformance_oracle,
                     conformance_isolated, gradspec_profile, gradspec_classes, gradspec_xfail):
    """The clause items of this process (conformance/suite/clauses.py)."""
    from conformance.suite.clauses import ClauseSuite
    return ClauseSuite(conformance_engine, conformance_oracle, conformance_isolated,
                       gradspec_profile, stream_seed(pytestconfig), gradspec_classes,
                       gradspec_xfail)
