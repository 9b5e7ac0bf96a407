"""Every deliberately broken engine (tests/broken_engines/) is caught within the CI profile and
by `gradspec run` at its default budget: some generated program makes it diverge from torch,
the report carries a repro, and the verdict names a rule the engine breaks (BROKEN) as the
primary clause: in the CI profile, of the program found; in the campaign, of its largest
problem, of most divergent programs, and the rule the engine is named for among them."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import Phase

from conformance.engines import load_engine
from conformance.judge.verdict import lead
from conformance.pytest_plugin import PROFILE_TABLE
from conformance.runner import run_campaign
from tests.broken_engines import BROKEN
from tests.conformance.test_engine_conformance import Divergent, search

SPEC = "tests.broken_engines.reversed_hooks:factory"


@pytest.mark.parametrize("spec", sorted(BROKEN))
def test_broken_engine_is_caught(spec):
    engine, oracle = load_engine(spec), load_engine("torch")
    with pytest.raises(Divergent) as caught:
        # no shrinking: finding it is the test; `gradspec run` shows the shrunk repro
        search(engine, oracle, PROFILE_TABLE["ci"], phases=[Phase.explicit, Phase.generate])
    report = str(caught.value)
    assert "divergence" in report and "repro" in report and '"statements"' in report
    first = lead(caught.value.divergences)
    assert first.primary in BROKEN[spec], (first.primary, first.signature, report[:2000])


@pytest.mark.parametrize("spec", sorted(BROKEN))
def test_gradspec_run_names_the_rule_the_engine_breaks(spec, tmp_path):
    """The default budget of `gradspec run` (300 programs of 20 statements; without the ~100
    programs its per-clause minimum adds, which only cost time here: each engine is caught in
    the first 300), unshrunk: a program's primary clause is that of its first divergence,
    shrunk or not."""
    report = run_campaign(spec, "torch", out_dir=tmp_path, progress=None, shrink=False,
                          probe=False, per_clause=0)
    judged = [d for d in report.divergences if d["what"] != "internal"]
    assert report.exit_code == 1 and judged and report.groups
    primaries = [d["primary"][0] if d["primary"] else None for d in judged]
    named = sum(p in BROKEN[spec] for p in primaries)
    assert BROKEN[spec][0] in primaries
    assert report.groups[0]["primary"] in BROKEN[spec], report.groups[0]
    assert named >= 0.9 * len(judged), [(g["primary"], g["signature"], g["count"])
                                        for g in report.groups]
    assert sum(g["count"] for g in report.groups) == len(report.divergences)


def test_ci_search_is_the_same_in_another_process():
    """The CI profile is derandomized: another process (another hash seed, as under
    `pytest -n auto`) finds the same first divergent program."""
    code = ("from hypothesis import Phase\n"
            "from conformance.engines import load_engine\n"
            "from conformance.pytest_plugin import PROFILE_TABLE\n"
            "from tests.conformance.test_engine_conformance import Divergent, search\n"
            "try:\n"
            f"    search(load_engine({SPEC!r}), load_engine('torch'), PROFILE_TABLE['ci'],\n"
            "           phases=[Phase.explicit, Phase.generate])\n"
            "except Divergent as exc:\n"
            "    print(exc)\n")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    root = Path(__file__).resolve().parents[2]
    other = subprocess.run([sys.executable, "-c", code], env=env, cwd=root,
                           capture_output=True, text=True, timeout=300)
    assert other.returncode == 0, other.stderr[-2000:]
    with pytest.raises(Divergent) as here:
        search(load_engine(SPEC), load_engine("torch"), PROFILE_TABLE["ci"],
               phases=[Phase.explicit, Phase.generate])
    assert other.stdout.strip() == str(here.value).strip()
