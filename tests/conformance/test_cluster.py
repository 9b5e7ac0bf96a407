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
        # the setting stays for the fixture's life: a nanny restarting a killed worker reads
        # the configuration of that moment
        with dask.config.set({"distributed.worker.daemon": False}), \
                _cluster(daemon=False) as c:
            yield c, mark
    finally:
        os.environ.pop(KILL_MARK, None)
        os.environ.pop(SPARE, None)


def _report(folder: Path) -> dict:
    """report.json with what may differ between two runs of the same seeds left out: the time
    taken, the folder's name (in every path), the jobs asked for, the scheduler."""
    text = (folder / "report.json").read_text().replace(str(folder), "OUT")
    data = json.loads(text)
    for key in ("seconds", "jobs", "folder", "scheduler"):
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


def _kill_kept_children() -> int:
    """On a Dask worker: kill the child processes its kept pools hold (idle between
    campaigns), as the OOM killer or an administrator might."""
    from conformance.campaign import cluster as on_worker
    n = 0
    for pool in on_worker._ALL_KEPT:
        for slot in pool._kept or []:
            slot.proc.kill()
            slot.proc.join()
            n += 1
    return n


def test_a_kept_child_that_died_while_idle_is_replaced(tmp_path, cluster):
    c = cluster[0]
    run_campaign("torch", "torch", out_dir=tmp_path / "warm", count=8, progress=None,
                 source=source, scheduler=c.scheduler_address)
    with distributed.Client(c.scheduler_address, set_as_default=False) as client:
        killed = sum(client.run(_kill_kept_children).values())
    assert killed >= 1
    serial, spread = _both(tmp_path, c, "torch", source=source, count=8)
    assert spread.programs == 8 and spread.exit_code == 0 and spread.crashes == []
    assert _report(tmp_path / "serial") == _report(tmp_path / "dask")


def _pretend_versions(versions) -> None:
    from conformance.campaign import cluster as on_worker
    for key in list(on_worker._WARM):
        on_worker._WARM[key] = tuple(versions)


def test_workers_with_other_versions_stop_the_run(tmp_path, cluster, capsys):
    c = cluster[0]
    run_campaign("torch", "torch", out_dir=tmp_path / "warm", count=8, progress=None,
                 source=source, scheduler=c.scheduler_address)
    with distributed.Client(c.scheduler_address, set_as_default=False) as client:
        client.run(_pretend_versions, ("0.0.1", "9.9.9", "9.9.9"))
        try:
            code = main(["run", "--engine", "torch", "--oracle", "torch", "--count", "8",
                         "--out", str(tmp_path / "o"), "--scheduler", c.scheduler_address,
                         "--source", f"{MOD}:source", "--quiet"])
        finally:
            client.run(lambda: __import__("conformance.campaign.cluster").campaign
                       .cluster._WARM.clear())
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "other versions: gradspec 0.0.1" in err[0], err


def _break_slices(broken: bool) -> None:
    from conformance.campaign import cluster as on_worker
    if broken:
        on_worker._real_check = on_worker.check_programs

        def fail(*args, **kw):
            raise RuntimeError("the worker's disk is full")
        on_worker.check_programs = fail
    elif hasattr(on_worker, "_real_check"):
        on_worker.check_programs = on_worker._real_check


def test_a_cluster_failing_mid_run_could_not_judge_exit_3(tmp_path, cluster, capsys):
    c = cluster[0]
    with distributed.Client(c.scheduler_address, set_as_default=False) as client:
        client.run(_break_slices, True)
        try:
            code = main(["run", "--engine", "torch", "--oracle", "torch", "--count", "8",
                         "--out", str(tmp_path / "o"), "--scheduler", c.scheduler_address,
                         "--source", f"{MOD}:source", "--quiet"])
        finally:
            client.run(_break_slices, False)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3 and len(err) == 1, err
    assert "failed on the cluster: RuntimeError: the worker's disk is full" in err[0]


@pytest.mark.parametrize("address, words", [
    ("foo", "give host:port"),
    ("tcp://", "give host:port"),
    ("tls://127.0.0.1:9", "only tcp://"),
    ("ucx://127.0.0.1:9", "only tcp://"),
    ("", "is empty"),
])
def test_a_bad_scheduler_address_is_one_line_and_exit_2(address, words, tmp_path):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "conformance", "run", "--engine", "torch",
                        "--count", "2", "--out", str(tmp_path / "o"), "--scheduler", address],
                       capture_output=True, text=True, timeout=120)
    err = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(err) == 1 and words in err[0], r.stderr
    assert "Traceback" not in r.stderr
