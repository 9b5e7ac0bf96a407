"""What the wheel carries. pyproject.toml lists the packages by hand, because the spec's text
is mapped into the wheel from spec/ at the top of the repository (conformance.spec.text) and
`packages.find` cannot add a mapped package; a package added to the code but not to that list
would be missing from the wheel only. .ci/wheel-check builds and installs the wheel itself."""
from __future__ import annotations

from pathlib import Path

import pytest
from setuptools import find_packages

from conformance.spec import reader

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]
PACKAGED = f"conformance.spec.{reader.PACKAGED_SPEC}"


def _setuptools_config() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]


def test_the_wheel_lists_every_package_of_the_code():
    listed = set(_setuptools_config()["packages"])
    found = set(find_packages(str(ROOT), include=["refimpl", "refimpl.*",
                                                  "conformance", "conformance.*"]))
    assert found - listed == set(), "packages missing from pyproject.toml [tool.setuptools]"
    assert listed - found == {PACKAGED}, "pyproject.toml lists packages that do not exist"


def test_the_wheel_maps_the_whole_spec_folder_where_the_reader_looks():
    config = _setuptools_config()
    assert config["package-dir"] == {PACKAGED: "spec"}
    # every file of spec/ and of its one subfolder, the archived releases (`spec --at`)
    assert config["package-data"][PACKAGED] == ["*", "releases/*.json"]
    assert [p.name for p in (ROOT / "spec").iterdir() if p.is_dir()] == ["releases"]


def test_a_checkout_reads_its_own_spec_folder(monkeypatch):
    """In a checkout or an editable install there is no packaged copy, and edits to spec/*.md
    take effect at once: the reader uses the repository's spec/ (LEAF-5 is read from it)."""
    monkeypatch.delenv("GRADSPEC_SPEC_DIR", raising=False)
    assert not (Path(reader.__file__).parent / reader.PACKAGED_SPEC).exists()
    assert reader.spec_dir() == ROOT / "spec"
    assert reader.load_spec(str(reader.spec_dir())).get("LEAF-5").file == "leaf.md"


def test_an_installed_copy_is_read_before_the_checkout(monkeypatch, tmp_path):
    """Installed, conformance/spec/text exists; the reader must take it, not a folder named
    spec/ that happens to lie two levels up (site-packages/spec of another distribution)."""
    monkeypatch.delenv("GRADSPEC_SPEC_DIR", raising=False)
    copy = tmp_path / "conformance" / "spec"
    (copy / reader.PACKAGED_SPEC).mkdir(parents=True)
    monkeypatch.setattr(reader.importlib.resources, "files", lambda package: copy)
    assert reader.spec_dir() == copy / reader.PACKAGED_SPEC
