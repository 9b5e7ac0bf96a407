"""Campaigns on a Dask cluster (conformance/campaign/cluster.py, `gradspec run --scheduler`):
a local cluster of 2 worker processes writes the report a serial run writes, programs that
crash the engine stay isolated, a lost worker's programs are rerun, and a cluster that cannot
run the campaign is one line and exit 2."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from conformance.campaign.cluster import DAEMONIC, ClusterError, slices
from conformance.cli import main
from conformance.runner import run_campaign
from tests.conformance.test_executor import MOD, source

distributed = pytest.importorskip("distributed", reason="Dask's distributed is not installed "
                                  "(pip install 'gradspec[cluster]')")
import dask  # noqa: E402 - after the skip: installed with distributed

KILL_MARK = "GRADSPEC_TEST_KILL_MARK"
SPARE = "GRADSPEC_TEST_SPARE_PID"       # the test process, whose serial runs are not killed


def killing_source(seed: int, capabilities=None, size: int = 20):
    """A program source that, the first time it is called anywhere on the cluster, kills the
    Dask worker it runs under (the parent of the child process that runs programs) as a machine
    lost mid-run would; afterwards, `source`."""
    mark = os.environ.get(KILL_MARK)
    if mark and os.getppid() != int(os.environ.get(SPARE, "0")):     # never the test run
        try:
            os.close(os.open(mark, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            pass
        else:
            os.kill(os.getppid(), signal.SIGKILL)
    return source(seed, capabilities, size)


def _cluster(daemon: bool):
    with dask.config.set({"distributed.worker.daemon": daemon}):
        return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                        dashboard_address=":0", silence_logs=50)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    mark = tmp_path_factory.mktemp("kill") / "killed"
    os.environ[KILL_MARK] = str(mark)           # before the workers start: they inherit it
    os.environ[SPARE] = str(os.getpid())
    try:
        with _cluster(daemon=False) as c:
            yield c, mark
    finally:
        os.environ.pop(KILL_MARK, None)
        os.environ.pop(SPARE, None)


def _report(folder: Path) -> dict:
    """report.json with what may differ between two runs of the same seeds left out: the time
    taken, the folder's name (in every path), the jobs asked for."""
    text = (folder / "report.json").read_text().replace(str(folder), "OUT")
    data = json.loads(text)
    for key in ("seconds", "jobs", "folder"):
        data.pop(key)
    return data


def _files(folder: Path) -> dict[str, str]:
    """The folder's files but report.json and report.html (times, folder names): the program,
    trace and repro files of every divergent or crashed program."""
    return {str(p.relative_to(folder)): p.read_text().replace(str(folder), "OUT")
            for p in sorted(folder.rglob("*")) if p.is_file()
            and p.name not in ("report.json", "report.html")}


def _both(tmp_path, cluster, engine, **kw):
    kw = dict({"count": 12, "timeout": 5.0, "progress": None}, **kw)
    serial = run_campaign(engine, "torch", out_dir=tmp_path / "serial", **kw)
    spread = run_campaign(engine, "torch", out_dir=tmp_path / "dask",
                          scheduler=cluster.scheduler_address, **kw)
    return serial, spread


def test_slices_cover_the_campaign_in_order():
    for n, threads in ((1, 2), (12, 2), (100, 2), (1000, 16), (7, 64)):
        parts = slices(n, threads)
        assert [i for lo, hi in parts for i in range(lo, hi)] == list(range(n))
        assert all(hi - lo >= min(n, 4) for lo, hi in parts[:-1])


def test_the_cluster_writes_the_report_a_serial_run_writes(tmp_path, cluster):
    serial, spread = _both(tmp_path, cluster[0], f"{MOD}:no_leaf_check", source=source)
    assert serial.exit_code == spread.exit_code == 1 and serial.divergences
    assert _report(tmp_path / "serial") == _report(tmp_path / "dask")
    assert _files(tmp_path / "serial") == _files(tmp_path / "dask")


def test_an_engine_crash_is_isolated_per_program_on_the_cluster(tmp_path, cluster):
    serial, spread = _both(tmp_path, cluster[0], f"{MOD}:crashing", source=source)
    assert spread.crashes and [d["index"] for d in spread.crashes] == \
        [d["index"] for d in serial.crashes]
    assert spread.programs == 12 and _report(tmp_path / "serial") == _report(tmp_path / "dask")


def test_generated_programs_on_the_cluster_match_a_serial_run(tmp_path, cluster):
    serial, spread = _both(tmp_path, cluster[0], "refimpl", count=24, size=12)
    assert serial.exit_code == spread.exit_code == 0 and spread.programs == 24
    assert _report(tmp_path / "serial") == _report(tmp_path / "dask")


def test_a_lost_worker_has_its_programs_rerun(tmp_path, cluster):
    c, mark = cluster
    assert not mark.exists()
    serial, spread = _both(tmp_path, c, "torch", source=killing_source, count=8)
    assert mark.exists()                        # a worker was killed, once
    assert spread.programs == 8 and spread.crashes == [] and spread.exit_code == 0
    assert _report(tmp_path / "serial") == _report(tmp_path / "dask")


def test_daemonic_workers_are_one_line(tmp_path):
    with _cluster(daemon=True) as c, pytest.raises(ClusterError, match="DAEMON=False"):
        run_campaign("torch", "torch", out_dir=tmp_path, count=4, progress=None,
                     source=source, scheduler=c.scheduler_address)
    assert "DASK_DISTRIBUTED__WORKER__DAEMON=False" in DAEMONIC


def test_an_unreachable_scheduler_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    import conformance.campaign.cluster as cluster_module
    monkeypatch.setattr(cluster_module, "CONNECT_SECONDS", 1.0)
    code = main(["run", "--engine", "torch", "--count", "2", "--out", str(tmp_path / "o"),
                 "--scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "cannot reach the Dask scheduler" in err[0]
    assert not (tmp_path / "o").exists()


def test_jobs_and_a_scheduler_exclude_each_other(tmp_path, capsys):
    code = main(["run", "--count", "2", "-n", "2", "--scheduler", "tcp://127.0.0.1:9",
                 "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "exclude each other" in err[0]
