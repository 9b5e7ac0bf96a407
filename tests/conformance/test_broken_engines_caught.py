"""Every deliberately broken engine (tests/broken_engines/) is caught within the CI profile:
some generated program makes it diverge from torch, and the report carries a repro."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import Phase

from conformance.engines import load_engine
from conformance.pytest_plugin import PROFILE_TABLE
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
