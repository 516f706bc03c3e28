"""Shared fixtures. Tests are marked by folder (unit / integration / e2e).

Integration and e2e tests never touch the machine's own Redis: they start a private
``redis-server`` on a free port for the session and flush it between tests.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from mtfleet.fleet.localfleet import free_port, redis_server_command

ROOT = Path(__file__).resolve().parents[1]

# A shell that starts this suite in the background (`make test &`, a CI step runner) hands it
# SIGINT ignored, and an ignored signal stays ignored across exec: the Ctrl-C tests of the CLI
# and the demo would send a signal their process never hears. A handled one is reset to the
# default in every child.
signal.signal(signal.SIGINT, signal.default_int_handler)

# The suite calls /v1 without API keys (in-process and through `mtfleet api` subprocesses, which
# inherit this); tests of authentication ask for MT_AUTH=required themselves.
os.environ.setdefault("MT_AUTH", "off")
# Likewise the keys the suite makes without a rate are not held to the default rate
# (MT_KEY_RATE, 10 a second): tests that send more than that with one key test other things;
# tests of the default rate set it themselves.
os.environ.setdefault("MT_KEY_RATE", "1000")
# And the APIs the suite starts load lingua's models and the document processes on first use,
# not before they serve (MT_PRELOAD=false): preloading is 3.6 of a started API's 5.5 CPU-seconds
# plus 1.1 in its two document processes (measured), and the suite starts 64 APIs on two cores.
# Nothing is skipped, a first detection or document only waits for what it needs; the demo
# runs the default (tests/e2e/test_demo.py), and test_api_edges.py tests both.
os.environ.setdefault("MT_PRELOAD", "false")
# And bulk work runs at the worker's own CPU priority (MT_BULK_PRIORITY=normal). The suite runs
# four pytest processes and their fleets on two cores, so the machine is saturated most of the
# time, and a bulk process at the lowest priority (SCHED_IDLE in an idle cgroup) got next to no
# CPU there: a bulk lane's worker not booted in 60 s, a 500-segment Apertium bulk call not done
# in 60 s (four failures in one run on a slow day). The tests of that priority ask for the
# default themselves (test_idle_cgroup.py, test_launcher_processes.py, test_apertium_lanes.py),
# and the demo runs it (tests/e2e/test_demo.py).
os.environ.setdefault("MT_BULK_PRIORITY", "normal")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(str(item.fspath)).relative_to(ROOT / "tests").parts
        if parts and parts[0] in {"unit", "integration", "e2e"}:
            item.add_marker(getattr(pytest.mark, parts[0]))
    # Slow files first: with files run in parallel (`make test`), the quick ones then fill in
    # around them and the workers finish together, not one long file alone at the end (kept by
    # the Makefile's --no-loadscope-reorder; measured in docs/benchmarks.md, "The suite's time").
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    """A private redis-server for this test session (URL)."""
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="mt-test-redis-")
    proc = subprocess.Popen(
        redis_server_command(port, Path(workdir), appendonly=False),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            if client.ping():
                break
        except redis.ConnectionError:
            time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(10)
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def redis_url(redis_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The private Redis, flushed, and MT_REDIS_URL pointing at it for this test."""
    from mtfleet.core.settings import get_settings

    redis.Redis.from_url(redis_server).flushall()
    monkeypatch.setenv("MT_REDIS_URL", redis_server)
    get_settings.cache_clear()
    _forget_pooled_clients()
    yield redis_server
    get_settings.cache_clear()
    _forget_pooled_clients()


def _forget_pooled_clients() -> None:
    """Close the clients ``redis_conn.connect`` pooled in this process, so no test reaches the
    private Redis through a client an earlier test made (production never needs this: its
    processes start, never fork, and keep one Redis URL)."""
    from mtfleet.core import redis_conn

    with redis_conn._lock:
        for client in redis_conn._clients.values():
            client.close()
        redis_conn._clients.clear()


@pytest.fixture
def r(redis_url: str) -> redis.Redis:
    return redis.Redis.from_url(redis_url, decode_responses=True)


def tiny_seq2seq(family: str) -> str:
    """A tiny encoder-decoder model ``make test`` generates (marian, nllb, metricx: see
    scripts/make_tiny_seq2seq.py); fail loudly when it is missing."""
    path = Path(os.environ.get(f"MT_TINY_{family.upper()}", ROOT / ".cache" / f"tiny-{family}"))
    if not (path / "config.json").exists():
        pytest.fail(f"tiny {family} model missing at {path}: run `make test` (it generates it)")
    return str(path)


def metricx_calibration() -> tuple[list[tuple[str, str]], list[float]]:
    """The (source, translation) pairs the tiny MetricX model's score row was fitted to, with
    their raw scores (scripts/make_tiny_seq2seq.py): known scores, low and high."""
    path = ROOT / "scripts" / "make_tiny_seq2seq.py"
    spec = importlib.util.spec_from_file_location("make_tiny_seq2seq", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pairs, raw = module.metricx_calibration()
    return pairs, raw


def tiny_model_path() -> str:
    """The locally generated tiny model (``make test`` builds it); skip-free: fail loudly."""
    path = os.environ.get("MT_TINY_MODEL", str(ROOT / ".cache" / "tiny-model"))
    if not (Path(path) / "config.json").exists():
        pytest.fail(f"tiny test model missing at {path}: run `make test` (it generates it)")
    return path
