"""The idle cgroup bulk work runs in (``workers.priority``) is the worker's while it runs and is
gone when it stops: removed when the worker stops, and, after a worker killed -9 (which cleans
up nothing), by the next worker that starts on the host. Real ``mtfleet worker`` processes
with Apertium's bulk pipeline, on this machine's cgroups."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from mtfleet.fleet.localfleet import LocalFleet, Proc
from mtfleet.producer.client import MTClient
from mtfleet.workers.engines.apertium import discover_modes
from tests.e2e.fleet_control import kill_worker
from tests.integration.cgroups import cgroups_here, idle_cgroups

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        ("en", "es") not in discover_modes(), reason="apertium-eng-spa is not installed"
    ),
]

WORKER = ("--engine", "apertium", "--lanes", "interactive,bulk")


def family(proc: Proc) -> list[int]:
    """The ``mtfleet worker`` launcher and every process below it."""
    with contextlib.suppress(psutil.NoSuchProcess):
        return [proc.popen.pid, *(p.pid for p in psutil.Process(proc.popen.pid).children(True))]
    return []


def bulk_work_running(fleet: LocalFleet, worker: Proc) -> set[Path]:
    """Run a bulk job (Apertium's bulk pipeline starts, and stays, in the idle cgroup); the
    idle cgroups of the worker's processes."""
    with MTClient(fleet.api_url) as mt:
        texts = ["The red shirt is in the house."] * 20
        job = mt.submit(texts, source="en", target="es", lane="bulk")
        assert mt.wait(job.id, timeout=BULK_WAIT_S).status.value == "succeeded"
    groups = idle_cgroups(family(worker))
    assert groups, f"the bulk pipeline is in no idle cgroup: {family(worker)}"
    return groups


def until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@pytest.fixture(autouse=True)
def may_make_cgroups(monkeypatch: pytest.MonkeyPatch) -> None:
    why = cgroups_here()
    if why is not None:
        pytest.skip(f"this host does not let a process make an idle cgroup: {why}")
    # the default the suite changes (tests/conftest.py): bulk work at the lowest priority
    monkeypatch.delenv("MT_BULK_PRIORITY", raising=False)


#: How long a bulk process may take to boot or to finish a job here: at the lowest priority it
#: gets next to no CPU while the suite's other processes keep both cores busy.
BULK_WAIT_S = 300


def test_a_stopped_worker_leaves_no_idle_cgroup(redis_url: str) -> None:
    with LocalFleet(redis_url=redis_url, env={"MT_HEARTBEAT_S": "1"}) as fleet:
        fleet.start_redis()
        worker = fleet.start_worker(*WORKER)
        fleet.start_api()
        fleet.wait_ready(BULK_WAIT_S)
        groups = bulk_work_running(fleet, worker)
    # stopped as an operator (and the demo) stops it: SIGTERM to the launcher
    assert worker.popen.returncode == 0
    assert {g for g in groups if g.exists()} == set()


def test_a_killed_workers_idle_cgroup_is_removed_by_the_next_worker(redis_url: str) -> None:
    with LocalFleet(redis_url=redis_url, env={"MT_HEARTBEAT_S": "1"}) as fleet:
        fleet.start_redis()
        worker = fleet.start_worker(*WORKER)
        fleet.start_api()
        fleet.wait_ready(BULK_WAIT_S)
        groups = bulk_work_running(fleet, worker)
        kill_worker(worker)  # kill -9: nothing of it cleans up
        # its bulk pipeline ends once its worker is gone (its input closes)
        until(
            lambda: all(not (g / "cgroup.procs").read_text().split() for g in groups),
            30,
            "the killed worker's bulk pipeline is still there",
        )
        assert all(g.exists() for g in groups)  # left behind, empty
        fleet.procs.remove(worker)
        nxt = fleet.start_worker(*WORKER, name="next")
        # the next worker removes it as it starts (the killed one's heartbeat may still be
        # live, so /readyz says nothing about the new one: wait for the removal itself)
        until(lambda: not any(g.exists() for g in groups), 60, f"still there: {groups}")
        assert nxt.alive()
