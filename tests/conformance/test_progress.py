"""Progress lines (conformance/reports/progress.py): every long command (run, matrix, replay of
several programs, spec --html) shows count, rate and time left on a terminal, and nothing
when stderr is not one."""
from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from conformance.reports.progress import Bar, CampaignProgress
from tests.conformance.test_executor import MOD

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ["--source", f"{MOD}:source"]


def on_a_terminal(*args: str, cwd: Path = ROOT, size: tuple[int, int] = (120, 24)
                  ) -> tuple[int, str, str]:
    """Run `gradspec ARGS` with stderr on a pseudo-terminal of `size` (columns, lines): (exit
    status, stdout, what the terminal showed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "conformance", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    shown = b""
    while True:
        ready, _, _ = select.select([master], [], [], 300)
        if not ready:
            proc.kill()
            raise AssertionError("no output for 300 s")
        try:
            chunk = os.read(master, 4096)
        except OSError:         # the terminal closed: the command ended
            break
        if not chunk:
            break
        shown += chunk
    out = proc.stdout.read()
    code = proc.wait(timeout=60)
    os.close(master)
    return code, out, shown.decode(errors="replace")


def _final_line(shown: str) -> str:
    """The last state of the redrawn progress line."""
    return shown.replace("\r\n", "\n").split("\n")[-2].split("\r")[-1]


@pytest.mark.parametrize("size", [(120, 24), (0, 0)], ids=["120x24", "no-size"])
def test_run_shows_count_rate_and_time_left_on_a_terminal(tmp_path, size):
    """Also on a terminal that reports no size (some CI consoles, `script`), where tqdm alone
    would draw nothing."""
    code, out, shown = on_a_terminal("run", "--engine", "torch", "--count", "3", "--out",
                                     str(tmp_path), *SOURCE, size=size)
    assert code == 0, shown
    assert "0 divergent" in out
    line = _final_line(shown)
    assert "3/3" in line and "programs/s" in line and "0 failing" in line, shown
    assert re.search(r"\d+:\d\d<\d+:\d\d", line), line        # elapsed<left


def test_replay_of_several_programs_shows_progress_and_a_line_each(tmp_path):
    from tests.conformance.test_executor import sample, saved_output
    for name, program in (("a", sample()), ("b", saved_output())):
        (tmp_path / name).mkdir()
        (tmp_path / name / "program.json").write_text(program.dumps())
    code, out, shown = on_a_terminal("replay", str(tmp_path), "--engine", "torch")
    assert code == 0, shown
    lines = out.strip().splitlines()
    assert [ln.split(":")[0] for ln in lines[:2]] == [str(tmp_path / "a" / "program.json"),
                                                     str(tmp_path / "b" / "program.json")]
    assert all("no divergence" in ln for ln in lines[:2])
    assert lines[-1] == "replayed 2 programs: 2 agree, 0 diverge, 0 could not judge"
    assert "2/2" in _final_line(shown)
    # off a terminal: the same lines, no progress
    r = subprocess.run([sys.executable, "-m", "conformance", "replay", str(tmp_path),
                        "--engine", "torch"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and r.stderr == "" and r.stdout == out


def test_replay_of_several_programs_exits_with_the_worst(tmp_path, capsys):
    from conformance.cli import main
    from tests.conformance.test_executor import sample, saved_output
    run = tmp_path / "out" / "divergences"        # as a run writes them
    for name, program in (("a", saved_output()), ("b", sample())):
        (run / name).mkdir(parents=True)
        (run / name / "program.json").write_text(program.dumps())
    assert main(["replay", str(run / "a"), str(run / "b"), "--engine",
                 f"{MOD}:no_leaf_check"]) == 1
    out = capsys.readouterr().out
    assert "b/program.json: " in out and "divergence(s); first: statement" in out
    assert "[INPLACE-1]" in out and out.strip().endswith("1 agree, 1 diverge, 0 could not judge")
    # the run's output folder: its programs two levels down, in path order
    assert main(["replay", str(tmp_path / "out"), "--engine", f"{MOD}:no_leaf_check"]) == 1
    assert capsys.readouterr().out == out
    # a bad file among them: one line, exit 2, nothing run
    (run / "c").mkdir()
    (run / "c" / "program.json").write_text(json.dumps({"gradspec_program": 99}))
    assert main(["replay", str(run), "--engine", "torch"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1


def test_the_site_build_shows_pages_on_a_terminal(tmp_path):
    pytest.importorskip("markdown_it", reason="needs markdown-it-py")
    code, out, shown = on_a_terminal("spec", "--html", str(tmp_path / "site"))
    assert code == 0, shown
    line = _final_line(shown)
    assert "site" in line and "pages" in line and "index.html" in line, shown


def test_nothing_is_drawn_unless_stderr_is_a_terminal(capsys):
    with Bar(3, "things", "x") as bar:
        bar.advance()
        bar.to(3, "done")
    progress = CampaignProgress()
    for done in range(4):
        progress(done, 3, 0, 0.1)
    assert capsys.readouterr().err == ""
    with Bar(2, "things", "x", show=True) as bar:
        bar.to(2, "note")
    err = capsys.readouterr().err
    assert "2/2" in err and "note" in err


def test_a_campaign_progress_starts_a_new_line_for_the_next_run(capsys):
    progress = CampaignProgress(show=True, what="refimpl")
    for done in (1, 2, 2):
        progress(done, 2, 1, 0.5)
    progress(1, 3, 0, 0.1)       # the next engine of a matrix
    progress.close()
    err = capsys.readouterr().err
    assert "2/2" in err and "1 failing" in err and "1/3" in err and "refimpl" in err


def test_quiet_draws_nothing_even_on_a_terminal(tmp_path):
    code, out, shown = on_a_terminal("run", "--engine", "torch", "--count", "3", "--out",
                                     str(tmp_path), "--quiet", *SOURCE)
    assert code == 0 and "0 divergent" in out
    assert "programs/s" not in shown and "3/3" not in shown, shown


def test_replay_runs_each_program_once_however_it_is_named(tmp_path, capsys, monkeypatch):
    from conformance.cli import main
    from tests.conformance.test_executor import sample
    (tmp_path / "d0").mkdir()
    (tmp_path / "d0" / "program.json").write_text(sample().dumps())
    (tmp_path / "d1").mkdir()
    (tmp_path / "d1" / "program.json").write_text(sample().dumps())
    monkeypatch.chdir(tmp_path)
    assert main(["replay", "d0", str(tmp_path / "d0"), "d1/../d0/program.json", "d1",
                 "--engine", "torch"]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("replayed 2 programs: 2 agree, 0 diverge, 0 could not judge")
