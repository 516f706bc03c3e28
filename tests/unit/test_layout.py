"""The source layout: each top-level folder is one ``mtfleet.*`` subpackage, mapped in
pyproject.toml (no symlinks), and every file is imported under that one name."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import ROOT

CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
MAPPED = {package: ROOT / folder for package, folder in CONFIG["package-dir"].items()}


def test_no_symlink_is_tracked_or_left_in_the_package_folders() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert [line for line in tracked.splitlines() if line.startswith("120000")] == []
    links = [p for folder in MAPPED.values() for p in folder.rglob("*") if p.is_symlink()]
    assert links == []


def test_every_package_folder_is_listed_for_setuptools() -> None:
    """A new subpackage left out of ``packages`` would be missing from the wheel while the
    editable install imports it: listed or refused here."""
    found = set()
    for package, folder in MAPPED.items():
        for init in folder.rglob("__init__.py"):
            parts = init.parent.relative_to(folder).parts
            found.add(".".join([package, *parts]))
    listed = set(CONFIG["packages"])
    assert found <= listed, sorted(found - listed)
    for package in listed - found:  # the data folders (Lua scripts, the pages' assets)
        top = max((p for p in MAPPED if package.startswith(p + ".")), key=len)
        folder = MAPPED[top].joinpath(*package.removeprefix(top + ".").split("."))
        assert folder.is_dir() and not list(folder.glob("*.py")), package


def test_each_file_is_found_as_its_mtfleet_module() -> None:
    for package, folder in MAPPED.items():
        for path in folder.rglob("*.py"):
            parts = [p for p in path.relative_to(folder).with_suffix("").parts if p != "__init__"]
            name = ".".join([package, *parts])
            spec = importlib.util.find_spec(name)
            assert spec is not None and Path(spec.origin or "") == path, name


def test_no_file_of_ours_is_loaded_under_a_second_name() -> None:
    """What this test session imported from the package folders came in as ``mtfleet.*``
    (never as a top-level ``api`` or ``core``, which would run a module twice)."""
    importlib.import_module("mtfleet.api.app")  # the API and, through it, most of core
    importlib.import_module("mtfleet.__main__")  # the CLI and the SDK

    folders = [f for p, f in MAPPED.items() if p != "mtfleet"]
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if origin and any(Path(origin).is_relative_to(f) for f in folders):
            assert name.startswith("mtfleet."), (name, origin)
