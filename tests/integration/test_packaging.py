"""The wheel: everything under one ``mtfleet`` package, nothing that could shadow a backend's own
``core`` or ``api``, it works installed outside the source tree, and installed alone (no extras)
it is the client: the SDK and the client commands, without the server stack or the document
formats' libraries (``[formats]``, which ``mtfleet submit`` names where it is missing)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.e2e.fleet_control import apertium_fleet

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
        "fleet",
        "formats",
        "producer",
        "workers",
    }
    assert "mtfleet/api/static/swagger-ui/swagger-ui-bundle.js" in names  # /docs offline
    for page in ("translator.html", "ops.html", "session.js", "progress.js", "chart.js", "ui.css"):
        assert f"mtfleet/api/static/ui/{page}" in names  # the pages, offline
    lua = [n for n in names if n.endswith(".lua")]
    assert "mtfleet/core/lua/lib.lua" in lua and len(lua) >= 8
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "mtfleet = mtfleet.__main__:main" in zipfile.ZipFile(wheel).read(entry).decode()


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
        "('core', 'formats', 'api', 'workers', 'producer', 'fleet')])\n"
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
    assert (
        others.strip() == "[None, None, None, None, None, None]"
    )  # no `core`, `api`... to shadow a backend's


#: What the client install must not bring: the server stack (issue 34: celery, flower, torch,
#: lingua and uvicorn by name; redis and fastapi are the rest of [server]'s core).
SERVER_ONLY = ("celery", "flower", "torch", "lingua", "uvicorn", "redis", "fastapi")
#: ... nor the document formats' libraries ([formats], issue 42: 77 MB of the 112 it was).
FORMATS_ONLY = ("lxml", "babel", "ruamel", "polib", "srt", "weblate_language_data")
#: The client install's size, everything it put in its virtualenv's site-packages (issue 42).
CLIENT_MB = 40


def _readme_sdk_example() -> str:
    """The README's SDK example (its Python block under "Using it"), as printed there."""
    section = (ROOT / "README.md").read_text().split("## Using it", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return code


def _venv(wheel: Path, folder: Path, extras: str = "") -> Path:
    """A fresh virtualenv holding ``pip install <wheel><extras>`` and nothing else (no pip of its
    own: this one's installs into it; pip resolves the dependencies from the package index
    this machine's pip uses)."""
    venv = folder / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
         f"{wheel}{extras}"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return venv


@pytest.fixture(scope="module")
def client_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip install mtfleet``: the wheel, no extras."""
    return _venv(wheel, tmp_path_factory.mktemp("client"))


@pytest.fixture(scope="module")
def files_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip install 'mtfleet[formats]'``: the client that reads and writes files."""
    return _venv(wheel, tmp_path_factory.mktemp("files"), "[formats]")


def _found(python: Path, names: tuple[str, ...], cwd: Path) -> list[str]:
    """Which of the import ``names`` the virtualenv of ``python`` can import."""
    found = subprocess.run(
        [str(python), "-c", "import importlib.util as u, sys; "
         "print(*[n for n in sys.argv[1:] if u.find_spec(n)])", *names],
        capture_output=True, text=True, timeout=60, cwd=cwd,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    return found.stdout.split()


def test_the_client_install_is_the_sdk_and_names_the_extra_files_need(
    client_venv: Path, tmp_path: Path
) -> None:
    """``pip install mtfleet`` is the SDK (httpx, pydantic) and the CLI (typer, rich), within
    40 MB; the commands that read or write a file (``submit``, its help, ``result --out``)
    answer with the extra to install, in one line, and exit 2."""
    site = next((client_venv / "lib").glob("python3*/site-packages"))
    size = sum(f.stat().st_size for f in site.rglob("*") if f.is_file() and not f.is_symlink())
    assert size <= CLIENT_MB * 1_000_000, f"{size / 1e6:.1f} MB"
    python, mtfleet = client_venv / "bin" / "python", client_venv / "bin" / "mtfleet"
    assert _found(python, SERVER_ONLY + FORMATS_ONLY, tmp_path) == []
    env = {"PATH": f"{client_venv / 'bin'}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp_path)}
    sdk = subprocess.run(
        [str(python), "-c", "from mtfleet import MTClient; print(MTClient.__name__)"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert sdk.returncode == 0 and sdk.stdout.strip() == "MTClient", sdk.stderr
    page = tmp_path / "page.html"
    page.write_text("<p>The red house.</p>", encoding="utf-8")
    for command in (
        ["submit", str(page), "--to", "es"],
        ["submit", "--help"],
        ["result", "0123456789abcdef", "--out", str(tmp_path / "out") + "/"],
    ):
        refused = subprocess.run(
            [str(mtfleet), *command], capture_output=True, text=True, timeout=60, cwd=tmp_path,
            env={**env, "MT_API_URL": "http://127.0.0.1:9"},  # never reached: refused first
        )  # fmt: skip
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "needs mtfleet[formats]" in refused.stderr, refused.stderr
        assert "pip install 'mtfleet[formats]'" in refused.stderr, refused.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "mtfleet-output").exists()


def test_the_client_install_runs_the_sdk_and_client_commands_without_the_server_stack(
    client_venv: Path, files_venv: Path, redis_server: str, tmp_path: Path
) -> None:
    """``pip install mtfleet`` is what a user of the SDK installs: none of the server stack
    comes with it, the README's SDK example and the client commands work against a fleet
    (``mtfleet submit`` with ``[formats]``), and an operator command answers with the extra to
    install, not a traceback."""
    python, mtfleet = client_venv / "bin" / "python", client_venv / "bin" / "mtfleet"
    assert _found(python, SERVER_ONLY, tmp_path) == []
    assert _found(files_venv / "bin" / "python", SERVER_ONLY, tmp_path) == []

    # the fleet runs from this checkout's virtualenv; the clean one only talks to it
    with apertium_fleet(redis_server) as fleet:
        env = {
            "PATH": f"{client_venv / 'bin'}{os.pathsep}/usr/bin:/bin",
            "HOME": str(tmp_path),
            "COLUMNS": "200",
            "MT_API_URL": fleet.api_url,
            "MT_API_KEY": fleet.create_api_key("client-install"),
        }

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                args, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env
            )

        sdk = run(str(python), "-c", _readme_sdk_example())
        assert sdk.returncode == 0, sdk.stderr
        printed = sdk.stdout.lower()
        assert "carro" in printed and "impermeable" in printed, sdk.stdout

        said = run(str(mtfleet), "translate", "--from", "en", "--to", "es", "The red house")
        assert said.returncode == 0 and "casa" in said.stdout, said.stderr
        page = tmp_path / "page.html"
        page.write_text("<html><body><p>The red house.</p></body></html>", encoding="utf-8")
        files = files_venv / "bin" / "mtfleet"  # with [formats]
        sent = run(str(files), "submit", str(page), "--to", "es", "--out", str(tmp_path / "out"))
        assert sent.returncode == 0, sent.stdout + sent.stderr
        assert "casa" in (tmp_path / "out" / "page.es.html").read_text(encoding="utf-8")

        planned = run(str(mtfleet), "plan", "--interactive-rps", "50")  # needs no extra
        assert planned.returncode == 0 and "mtfleet worker --gpus" in planned.stdout, planned.stderr
        # an operator command says which extra it needs, in one line, and exits 2
        operator = {
            "worker": "server",
            "keys list": "server",
            "dead-letters list": "server",
            "pools forget old": "server",
            "demo": "server,flower",
            "flower": "server,flower",
        }
        for command, extra in operator.items():
            refused = run(str(mtfleet), *command.split())
            assert refused.returncode == 2, refused.stdout + refused.stderr
            assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
            assert f"pip install 'mtfleet[{extra}]'" in refused.stderr, refused.stderr
