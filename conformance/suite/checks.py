"""Judging programs under pytest: the profiles, running one program on the engine and the
oracle (in the test process, or in the isolated worker of conformance/campaign/resident.py) and
the failure that names the divergences, their clauses and a repro.

The pytest plugin (conformance/pytest_plugin.py) re-exports these names, which is where the
first release had them. Nothing here is imported before it is needed, because the plugin loads
in every pytest session of an environment with gradspec installed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

PROFILES = ("dev", "ci", "thorough")


@dataclass(frozen=True)
class Profile:
    """How much a session draws. `max_examples`, `size` and `derandomize` are the Hypothesis
    search's (tests/conformance/test_engine_conformance.py); `programs`, `per_clause` and
    `seed` the clause items' (conformance/suite/clauses.py): the first `programs` programs of
    the stream of campaign seed `seed` (`gradspec run --seed`; None draws one per session),
    then further ones of it until every clause is exercised by `per_clause` of them
    (`gradspec run --per-clause`, campaign/coverage.py)."""
    name: str
    max_examples: int
    size: int              # statements per generated program
    derandomize: bool
    programs: int = 300
    seed: int | None = None
    per_clause: int = 0


PROFILE_TABLE = {
    "dev": Profile("dev", 40, 20, False, programs=60),
    "ci": Profile("ci", 300, 20, True, programs=300, seed=0, per_clause=20),
    "thorough": Profile("thorough", 10000, 30, False, programs=5000, per_clause=20),
}


def for_engine(entries: list, names: tuple[str, ...]) -> list:
    """The expected-failure entries that hold for an engine known by any of `names`."""
    return [x for x in entries if any(x.applies_to(n) for n in names)]


def register_profiles() -> None:
    from hypothesis import HealthCheck, Phase, settings
    quiet = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
    # No explain phase: it reruns the failing program under a line tracer to name the lines
    # only failing runs reached, and those are gradspec's comparison code, not the engine's:
    # it told an engine author nothing and took most of a failing session's time.
    phases = [ph for ph in Phase if ph is not Phase.explain]
    for p in PROFILE_TABLE.values():
        settings.register_profile(
            f"gradspec-{p.name}", max_examples=p.max_examples, derandomize=p.derandomize,
            deadline=None, suppress_health_check=quiet, print_blob=True, phases=phases,
            **({"database": None} if p.derandomize else {}))


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


def check_program(program, oracle, engine, xfails: list = (), classes=None) -> None:
    """Fail the test with a readable report if engine and oracle disagree on program; xfail
    it when every divergence is expected by an entry of `xfails` (gradspec_xfail). With
    `classes` (gradspec_classes) a divergence of a class not among them does not count."""
    _verdict(program, engine, run_both(program, oracle, engine), xfails, classes)


def check_isolated(program, isolated, engine, xfails: list = (), classes=None) -> None:
    """check_program with the program run in the `isolated` worker (conformance_isolated): a
    crash or hang fails the test with the program and its repro; the session goes on."""
    try:
        found = run_isolated(program, isolated, engine)
    except EngineFault as exc:
        pytest.fail(str(exc), pytrace=False)
    _verdict(program, engine, found, xfails, classes)


def _verdict(program, engine, found: tuple, xfails, classes=None) -> None:
    from conformance.judge.verdict import claimed, judged
    o, e, divs = found
    if not any(claimed(d, classes) for d in divs):   # none, or only of unclaimed classes
        return
    divs = judged(divs, classes)
    unexpected, expected = split_expected(divs, list(xfails), program.seed, program)
    if unexpected:
        pytest.fail(describe(program, divs, engine, (o, e)), pytrace=False)
    if expected:
        pytest.xfail(expected_reason(expected))
