"""`mtfleet worker` checks before its first start: an engine that cannot run exits at once with
what to install or fix, instead of restarting forever."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from mtfleet.core.settings import Settings
from mtfleet.workers.preflight import problems

# `mtfleet worker` in a Python where vLLM cannot be imported (as on a machine without it:
# importlib.util.find_spec answers None for a module set to None in sys.modules)
WITHOUT_VLLM = (
    "import sys; sys.modules['vllm'] = None; "
    "from mtfleet.__main__ import main; sys.argv = ['mtfleet', *sys.argv[1:]]; main()"
)


def worker(
    *args: str, code: str | None = None, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    cmd = [sys.executable, "-c", code, *args] if code else [
        sys.executable, "-m", "mtfleet", *args
    ]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
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


def test_vllm_settings_vllm_does_not_know_are_refused_with_the_valid_ones(
    redis_url: str, tmp_path: Path
) -> None:
    from tests.conftest import tiny_model_path

    env = {
        "MT_VLLM_ARGS": '{"swap_spce": 4}',
        "MT_QUANTIZATION": "awqq",
        "MT_KV_CACHE_DTYPE": "fp7",
        "MT_LORA_ADAPTERS": f"legal={tmp_path}",
    }
    proc, _ = worker("worker", "--engine", "vllm", "--model", tiny_model_path(), env=env)
    assert proc.returncode == 2, proc.stderr
    err = " ".join(proc.stderr.split())
    assert "MT_VLLM_ARGS: vLLM has no engine argument swap_spce; valid names:" in err
    assert "block_size" in err and "max_num_seqs" in err  # the list of valid names
    assert "MT_QUANTIZATION=awqq is not a vLLM quantization method; valid:" in err
    assert "gptq" in err and "fp8" in err
    assert "MT_KV_CACHE_DTYPE=fp7 is not a vLLM KV-cache dtype; valid: auto" in err
    assert f"MT_LORA_ADAPTERS: legal={tmp_path} has no adapter_config.json" in err
    assert "starting" not in proc.stderr


def test_a_vllm_argument_with_a_setting_of_its_own_is_refused(redis_url: str) -> None:
    proc, _ = worker("worker", "--engine", "vllm", env={"MT_VLLM_ARGS": '{"max_num_seqs": 8}'})
    assert proc.returncode == 2
    assert "MT_VLLM_ARGS sets max_num_seqs (use MT_MAX_SEQS)" in " ".join(proc.stderr.split())


def test_pairs_the_engine_does_not_translate_are_refused(redis_url: str) -> None:
    proc, _ = worker("worker", "--engine", "apertium", "--pairs", "en-es,en-fr")
    assert proc.returncode == 2
    err = " ".join(proc.stderr.split())
    assert "MT_PAIRS names en-fr, which engine apertium does not translate here" in err
    assert "en-es" in err  # what it does translate


def test_malformed_routes_stop_the_api_before_it_serves(redis_url: str) -> None:
    for routes, said in [
        ("en-zh", "expected name=value items"),
        ("en-zz=hunyuan", "unknown language code 'zz'"),
        ("en-zh=Hunyuan MT", "is not a pool name"),
        ("en=hunyuan", "use *, src-*, *-tgt or src-tgt"),
    ]:
        proc, _ = worker("api", "--port", "1", env={"MT_ROUTES": routes})
        assert proc.returncode == 2, (routes, proc.stderr)
        err = " ".join(proc.stderr.split())
        assert "invalid settings" in err and said in err, (routes, err)


def test_a_taken_metrics_port_stops_the_worker_until_it_is_free(redis_url: str) -> None:
    """Before, the taken port's error was swallowed with the rest of the boot: the worker
    consumed chunks without an engine. Now it exits, says why, and the launcher's restarts
    find the port once it is free."""
    # An Apertium host runs a worker per lane, on MT_WORKER_METRICS_PORT + its index: both
    # ports are taken (with one, the other lane's worker is rightly ready meanwhile).
    holders: list[socket.socket] = []
    while len(holders) < 2:
        for held in holders:
            held.close()
        holders = [socket.socket()]
        holders[0].bind(("0.0.0.0", 0))
        port = holders[0].getsockname()[1]
        nxt = socket.socket()
        try:
            nxt.bind(("0.0.0.0", port + 1))
        except OSError:
            nxt.close()
            continue
        holders.append(nxt)
    for held in holders:
        held.listen()
    env = {**os.environ, "MT_REDIS_URL": redis_url, "MT_WORKER_METRICS_PORT": str(port)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mtfleet", "worker", "--engine", "apertium"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True).start()
    try:
        deadline = time.monotonic() + 60
        said = f"MT_WORKER_METRICS_PORT={port}: cannot serve metrics there"
        while not any(said in line for line in lines):
            assert time.monotonic() < deadline, "".join(lines[-30:])
            time.sleep(0.2)
        assert not any(" ready." in line for line in lines), "".join(lines)  # never consumed
        for held in holders:
            held.close()
        while True:  # the next restart binds it and serves
            assert time.monotonic() < deadline + 30, "".join(lines[-30:])
            with contextlib.suppress(httpx.HTTPError):
                text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
                if "mt_worker_engine_healthy 1.0" in text:
                    break
            time.sleep(0.5)
    finally:
        for held in holders:
            held.close()
        proc.terminate()
        proc.wait(30)
