"""Plugin engines: engines from the `gradspec.engines` entry-point group of
an installed distribution (here a .dist-info folder on sys.path), `gradspec engines`, and
broken plugins reported in one line without hiding the others."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest

from conformance.cli import main
from conformance.engines import BUILTINS, EngineError, builtin_names, list_engines, load_engine

MODULE = "fake_engine_plugin"

PLUGIN = '''
import torch
from conformance.engines.torchlike import TorchLike


def engine(device="cpu"):
    e = TorchLike(torch, "fake", device)
    e.version = "9.9-fake"
    return e


def not_an_engine(device="cpu"):
    return object()                 # no adapter methods at all


def int_version(device="cpu"):
    e = engine(device)
    e.version = 99                  # wrong type
    return e


def typo_capability(device="cpu"):
    e = engine(device)
    e.capabilities = frozenset({"core", "hookz"})
    return e


def raises(device="cpu"):
    raise RuntimeError("the GPU driver is on fire\\nsecond line")
'''

ENTRY_POINTS = {
    "fake": "engine", "no-methods": "not_an_engine", "int-version": "int_version",
    "typo-caps": "typo_capability", "raising": "raises", "torch": "engine",
}


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A distribution `i5-fake-plugin` with entry points, importable from tmp_path."""
    (tmp_path / f"{MODULE}.py").write_text(PLUGIN)
    info = tmp_path / "fake_engine_plugin-0.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: i5-fake-plugin\nVersion: 0.3\n")
    lines = [f"{name} = {MODULE}:{attr}" for name, attr in ENTRY_POINTS.items()]
    lines.append("missing-module = no_such_module:engine")
    (info / "entry_points.txt").write_text("[gradspec.engines]\n" + "\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop(MODULE, None)


def test_builtins_include_the_third_party_adapters():
    assert builtin_names() == ["torch", "refimpl", "paddle", "torch-compile", "torch-compile-eager",
                              "torch-compile-aot-eager", "torch-compile-inductor",
                              "torch-compile-train-eager", "torch-compile-train-aot-eager",
                              "torch-compile-train-inductor", "torch-compile-dynamic-eager",
                              "torch-compile-dynamic-aot-eager",
                              "torch-compile-dynamic-inductor"]
    for name, path in BUILTINS.items():
        mod, _, attr = path.partition(":")
        assert callable(getattr(__import__(mod, fromlist=[attr]), attr)), name


def test_an_entry_point_engine_loads_by_name(plugin):
    engine = load_engine("fake")
    assert engine.name == "fake" and engine.version == "9.9-fake"
    assert load_engine("torch").version != "9.9-fake"      # built-ins win over entry points


@pytest.mark.parametrize("name,words", [
    ("no-methods", "not an Engine (missing leaf, call"),
    ("int-version", "attribute 'version' must be a string"),
    ("typo-caps", "unknown capabilities hookz"),
    ("raising", "factory failed on cpu: RuntimeError: the GPU driver is on fire"),
    ("missing-module", "cannot load entry point no_such_module:engine"),
])
def test_a_broken_plugin_is_one_line(plugin, name, words):
    with pytest.raises(EngineError) as info:
        load_engine(name)
    assert "\n" not in str(info.value) and words in str(info.value)


def test_listing_reports_broken_plugins_and_keeps_the_others(plugin):
    rows = {r["name"]: r for r in list_engines() if r["name"] != "torch" or r["ok"]}
    assert rows["fake"]["ok"] and rows["fake"]["version"] == "9.9-fake"
    assert rows["fake"]["devices"][0] == "cpu" and "i5-fake-plugin 0.3" in rows["fake"]["source"]
    assert rows["torch"]["ok"] and rows["torch"]["source"] == "built-in"
    for bad in ("no-methods", "int-version", "typo-caps", "raising", "missing-module"):
        assert not rows[bad]["ok"] and "\n" not in rows[bad]["error"], bad
    shadowed = [r for r in list_engines() if r["name"] == "torch" and not r["ok"]]
    assert shadowed and "shadowed by the built-in" in shadowed[0]["error"]


def test_gradspec_engines_command(plugin, capsys):
    assert main(["engines"]) == 0
    out = capsys.readouterr().out.splitlines()
    fake = next(i for i, ln in enumerate(out) if ln.startswith("fake "))
    assert "9.9-fake" in out[fake] and "devices cpu" in out[fake]
    assert "capabilities: core, grad_fn" in out[fake + 1]
    assert any(ln.startswith("refimpl ") for ln in out)
    broken = [ln for ln in out if ln.startswith("typo-caps ")]
    assert len(broken) == 1 and "unavailable: engine 'typo-caps': unknown capabilities" in \
        broken[0]
    assert main(["engines", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"fake", "raising", "torch", "refimpl"} <= {r["name"] for r in rows}


def test_gradspec_run_on_an_entry_point_engine(plugin, tmp_path, capsys):
    code = main(["run", "--engine", "fake", "--count", "3", "--size", "8", "--quiet",
                 "--out", str(tmp_path / "out")])
    assert code == 0, capsys.readouterr()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["engine"] == "fake" and report["engine_version"] == "9.9-fake"


def test_entry_point_names_are_documented():
    import conformance.engines as engines
    assert textwrap.dedent('[project.entry-points."gradspec.engines"]') in engines.__doc__
