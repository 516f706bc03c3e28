"""The end-to-end tests' usual fleet, and what they do to a running one: run the ``mtfleet``
CLI against it as a user would, stop its worker for a while (jobs then wait in their queue: a
request's wait runs out, deterministically), and count the jobs its Redis holds (a resent
request must not make another)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import redis

from mtfleet.core import keys
from mtfleet.fleet.localfleet import LocalFleet, Proc
from mtfleet.producer import batch
from tests.integration.test_faults import celery_children, signal_all

#: One Apertium worker on both lanes: real translations, no model to load.
APERTIUM_WORKER = ("--engine", "apertium", "--lanes", "interactive,bulk", "--concurrency", "2")


def cli_args(*args: str) -> list[str]:
    """The ``mtfleet`` command line, run by this interpreter (the checkout's own package)."""
    return [sys.executable, "-m", "mtfleet", *args]


def cli_env(fleet: LocalFleet, **extra: str) -> dict[str, str]:
    """The environment a user of ``fleet`` has: its settings and keys, MT_API_URL at its API."""
    return {**os.environ, **fleet.env, "MT_API_URL": fleet.api_url, "COLUMNS": "200", **extra}


def cli(
    fleet: LocalFleet, *args: str, cwd: Path | None = None, timeout: float = 300, **env: str
) -> subprocess.CompletedProcess[str]:
    """``mtfleet ARGS`` against ``fleet``, run to its end (within ``timeout``), output captured."""
    return subprocess.run(
        cli_args(*args),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=cli_env(fleet, **env),
    )


@contextlib.contextmanager
def apertium_fleet(
    redis_url: str,
    env: Mapping[str, str] | None = None,
    *,
    flower: bool = False,
    ready_s: float = 180,
) -> Iterator[LocalFleet]:
    """A fleet on ``redis_url`` (its database flushed first): an Apertium worker, the API and,
    with ``flower``, Flower; ready when entered (within ``ready_s``: a worker's first heartbeat
    has been seen to take over 60 s on this 2-core machine under load), stopped when left."""
    redis.Redis.from_url(redis_url).flushdb()
    with LocalFleet(redis_url=redis_url, env={"MT_HEARTBEAT_S": "1", **(env or {})}) as f:
        f.start_redis()
        f.start_worker(*APERTIUM_WORKER)
        f.start_api()
        if flower:
            f.start_flower()
        f.wait_ready(ready_s)
        yield f


@contextlib.contextmanager
def worker_paused(fleet: LocalFleet) -> Iterator[None]:
    """The fleet's Celery worker stopped (SIGSTOP) inside the block, resumed after it."""
    kids = celery_children(next(p for p in fleet.procs if p.name == "worker"))
    assert kids
    signal_all(kids, signal.SIGSTOP)
    try:
        yield
    finally:
        signal_all(kids, signal.SIGCONT)


def written(out: Path, source: Path) -> Path:
    """Where ``mtfleet submit ... --out OUT`` (an absolute OUT) wrote ``source``'s translation,
    as its manifest records it (the name its ecosystem gives it, under the folder the inputs
    share: docs/api.md, "Output names")."""
    return Path(batch.Manifest.load(out).files[str(source.resolve())].dest)


def jobs_made(fleet: LocalFleet) -> int:
    """How many jobs the fleet's Redis holds."""
    r = redis.Redis.from_url(fleet.env["MT_REDIS_URL"], decode_responses=True)
    return sum(1 for k in r.scan_iter(keys.job("*"), count=1000) if k.count(":") == 2)


def kill_worker(proc: Proc) -> None:
    """kill -9 a worker: its launcher first (stopped, so it restarts nothing), then the
    Celery process, then the launcher."""
    kids = celery_children(proc)
    assert kids
    os.kill(proc.popen.pid, signal.SIGSTOP)
    signal_all(kids, signal.SIGKILL)
    os.kill(proc.popen.pid, signal.SIGKILL)
    proc.popen.wait(10)
