"""`mtfleet worker` checks before its first start: an engine that cannot run exits at once with
what to install or fix, instead of restarting forever."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from mtfleet.core.settings import Settings
from mtfleet.workers.preflight import problems

# `mtfleet worker` in a Python where vLLM cannot be imported (as on a machine without it:
# importlib.util.find_spec answers None for a module set to None in sys.modules)
WITHOUT_VLLM = (
    "import sys; sys.modules['vllm'] = None; "
    "from mtfleet.producer.cli import main; sys.argv = ['mtfleet', *sys.argv[1:]]; main()"
)


def worker(*args: str, code: str | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    cmd = [sys.executable, "-c", code, *args] if code else [
        sys.executable, "-m", "mtfleet.producer.cli", *args
    ]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"}
    )
    return proc, time.monotonic() - t0


def test_vllm_not_installed_says_what_to_install(redis_url: str) -> None:
    proc, took = worker("worker", "--engine", "vllm", "--model", "/nonexistent", code=WITHOUT_VLLM)
    assert proc.returncode == 2, proc.stderr
    assert "vLLM is not installed: pip install 'mtfleet[gpu]'" in proc.stderr
    assert "MT_MODEL=/nonexistent: no such folder" in proc.stderr
    assert "starting" not in proc.stderr  # nothing was started
    assert took < 30


def test_a_folder_that_is_no_model_is_refused(redis_url: str, tmp_path: Path) -> None:
    proc, _ = worker("worker", "--engine", "vllm", "--model", str(tmp_path))
    assert proc.returncode == 2
    assert f"MT_MODEL={tmp_path}: the folder has no config.json" in proc.stderr


def test_an_engine_plugin_that_does_not_import_is_refused(redis_url: str) -> None:
    proc, _ = worker("worker", "--engine", "no_such_module:Engine")
    assert proc.returncode == 2
    assert "engine plugin 'no_such_module:Engine' cannot be imported" in proc.stderr


def test_gpu_ids_the_machine_lacks_are_refused_when_it_shows_gpus(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"):
        (dev / name).touch()
    settings = Settings(engine="apertium")
    assert problems(settings, [0, 1], dev) == []
    assert problems(settings, [0, 1, 2, 3], dev) == [
        "GPU id(s) 2, 3 do not exist: this machine has 2 GPU(s), ids 0-1 (nvidia-smi -L lists them)"
    ]
    assert problems(settings, [5], tmp_path / "empty") == []  # no GPU shown: nothing to check
