"""The wheel: everything under one ``mtfleet`` package, nothing that could shadow a backend's own
``core`` or ``api``, and it works installed outside the source tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    left = not (ROOT / "build").exists()  # setuptools builds in the tree: tidy up after it
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    if left:
        shutil.rmtree(ROOT / "build", ignore_errors=True)
    (found,) = out.glob("mtfleet-*.whl")
    return found


def test_the_wheel_installs_one_top_level_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/", 1)[0] for n in names}
    assert top == {"mtfleet", next(t for t in top if t.endswith(".dist-info"))}, sorted(top)
    assert {n.split("/")[1] for n in names if n.startswith("mtfleet/") and n.count("/") > 1} == {
        "api",
        "core",
        "producer",
        "workers",
    }
    assert "mtfleet/api/static/swagger-ui/swagger-ui-bundle.js" in names  # /docs offline
    for page in ("translator.html", "ops.html", "session.js", "progress.js", "chart.js", "ui.css"):
        assert f"mtfleet/api/static/ui/{page}" in names  # the pages, offline
    lua = [n for n in names if n.endswith(".lua")]
    assert "mtfleet/core/lua/lib.lua" in lua and len(lua) >= 8
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "mtfleet = mtfleet.producer.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_the_installed_wheel_works_outside_the_source_tree(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    code = (
        "import mtfleet, importlib.util as u\n"
        "from mtfleet import MTClient\n"
        "from mtfleet.core import scripts\n"
        "import mtfleet.api.app, mtfleet.workers.scheduler\n"
        "from mtfleet.api.routes.docs import ASSETS\n"
        "assert (ASSETS / 'swagger-ui-bundle.js').stat().st_size > 1_000_000\n"
        "assert scripts.source('start_chunk').startswith('-- Shared steps')\n"
        "print(mtfleet.__file__, MTClient.__module__, [u.find_spec(n) for n in "
        "('core', 'api', 'workers', 'producer')])\n"
    )
    # The base interpreter, with the wheel first and this virtualenv's packages (the wheel's
    # dependencies) after it: a PYTHONPATH entry's .pth files are not read, so the checkout's
    # editable install (found first in this virtualenv, see the Makefile) is not in the way.
    deps = sysconfig.get_paths()["purelib"]
    out = subprocess.run(
        [getattr(sys, "_base_executable", sys.executable), "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": f"{target}{os.pathsep}{deps}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    where, module, others = out.stdout.split(" ", 2)
    assert where.startswith(str(target)) and module == "mtfleet.producer.client"
    assert others.strip() == "[None, None, None, None]"  # no `core`, `api`... to shadow a backend's
