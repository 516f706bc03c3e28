"""`mtfleet worker --gpus ...`: one pinned, named worker per GPU group, restarted if it dies."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import psutil
import pytest
import redis

from mtfleet.core.errors import ConfigError
from mtfleet.core.registry import Registry, WorkerInfo
from mtfleet.core.settings import Settings
from mtfleet.fleet.localfleet import LocalFleet, Proc
from mtfleet.producer.client import MTClient
from mtfleet.workers import priority
from mtfleet.workers.gpus import gpu_groups
from mtfleet.workers.supervisor import lanes_apart, worker_plan
from tests.integration.cgroups import cgroups_here, cpu_cgroup


@pytest.fixture
def launcher(redis_url: str) -> Iterator[tuple[LocalFleet, Proc]]:
    fleet = LocalFleet(redis_url=redis_url, env={"MT_REDIS_URL": redis_url, "MT_HEARTBEAT_S": "1"})
    fleet.start_redis()
    proc = fleet.start_worker("--engine", "apertium", "--gpus", "0-3", "--tp", "2")
    yield fleet, proc
    fleet.stop()


def live(registry: Registry, n: int, timeout: float = 60) -> dict[str, WorkerInfo]:
    deadline = time.monotonic() + timeout
    while True:
        workers = {w.name.split("@")[0]: w for w in registry.live_workers()}
        if len(workers) == n:
            return workers
        assert time.monotonic() < deadline, workers
        time.sleep(0.2)


def test_one_worker_per_gpu_group_pinned_and_restarted(
    launcher: tuple[LocalFleet, Proc], r: redis.Redis
) -> None:
    _, proc = launcher
    registry = Registry(r)
    workers = live(registry, 2)
    assert {name: w.gpus for name, w in workers.items()} == {"gpu0-1": [0, 1], "gpu2-3": [2, 3]}
    for w in workers.values():
        # What each worker process itself sees (Celery's process title hides /proc/PID/environ).
        assert w.cuda_visible_devices == ",".join(map(str, w.gpus))
        assert w.tensor_parallel_size == 2
        assert psutil.Process(w.pid).ppid() == proc.popen.pid  # children of the supervisor

    warned = proc.log_path.read_text().count("superuser privileges")
    assert warned == (2 if os.geteuid() == 0 else 0)  # Celery's root warning, once per group

    victim = workers["gpu2-3"].pid
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while True:
        now = {w.name.split("@")[0]: w.pid for w in registry.live_workers()}
        if now.get("gpu2-3") not in (None, victim) and psutil.pid_exists(now["gpu2-3"]):
            break
        assert time.monotonic() < deadline, now
        time.sleep(0.3)
    assert now["gpu0-1"] == workers["gpu0-1"].pid  # the other group was left alone
    assert proc.log_path.read_text().count("superuser privileges") == warned  # not again


def test_uneven_gpu_split_is_refused_before_anything_starts(redis_url: str) -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "mtfleet", "worker", "--gpus", "0,1,2", "--tp", "2"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MT_REDIS_URL": redis_url},
    )
    assert out.returncode == 2
    assert "3 GPUs cannot be split into tensor-parallel groups of 2" in out.stderr
    assert not redis.Redis.from_url(redis_url).keys("mt:worker:*")


def test_the_default_cpu_worker_runs_a_process_per_lane_bulk_at_the_lowest_priority(
    redis_url: str, r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default ``mtfleet worker`` (no MT_PROCESS_PER_LANE) of a CPU engine serving both
    lanes: one Celery worker per lane, the bulk one at bulk priority (``SCHED_IDLE``, niced,
    in the launcher's session; the idle cgroup where allowed)."""
    monkeypatch.delenv("MT_PROCESS_PER_LANE", raising=False)
    monkeypatch.delenv("MT_BULK_PRIORITY", raising=False)  # (tests/conftest.py sets normal)
    env = {"MT_REDIS_URL": redis_url, "MT_HEARTBEAT_S": "1"}
    with LocalFleet(redis_url=redis_url, env=env) as fleet:
        fleet.start_redis()
        launcher = fleet.start_worker("--engine", "apertium")
        # (at the lowest priority the bulk worker boots on what the suite's processes leave)
        workers = live(Registry(r), 2, timeout=300)
        assert {name: w.lanes for name, w in workers.items()} == {
            "cpu-interactive": ["interactive"],
            "cpu-bulk": ["bulk"],
        }
        mine = psutil.Process().nice()
        assert psutil.Process(workers["cpu-interactive"].pid).nice() == mine
        bulk, interactive = workers["cpu-bulk"].pid, workers["cpu-interactive"].pid
        assert psutil.Process(bulk).nice() == min(19, mine + 19)
        assert os.sched_getscheduler(bulk) == os.SCHED_IDLE
        assert os.sched_getscheduler(interactive) == os.SCHED_OTHER
        assert os.getsid(bulk) == os.getsid(interactive) != os.getsid(0)  # the launcher's
        assert os.getpgid(bulk) == bulk
        here = cpu_cgroup()
        idle = here / f"{priority.IDLE_CGROUP}-{launcher.popen.pid}" if here else None
        if cgroups_here() is None:  # root here: the bulk worker is in its launcher's idle cgroup
            assert idle is not None and cpu_cgroup(bulk) == idle
            assert cpu_cgroup(interactive) == here
            assert (idle / "cpu.idle").read_text().strip() == "1"
    assert idle is None or not idle.exists()  # gone with the launcher


def test_with_bulk_priority_normal_the_bulk_worker_runs_as_the_interactive_one(
    redis_url: str, r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``MT_BULK_PRIORITY=normal``: still a Celery worker per lane, the bulk one at the
    launcher's own priority, in no idle cgroup, and its Apertium bulk pipeline too."""
    monkeypatch.delenv("MT_PROCESS_PER_LANE", raising=False)
    env = {"MT_REDIS_URL": redis_url, "MT_HEARTBEAT_S": "1", "MT_BULK_PRIORITY": "normal"}
    with LocalFleet(redis_url=redis_url, env=env) as fleet:
        fleet.start_redis()
        launcher = fleet.start_worker("--engine", "apertium")
        fleet.start_api()
        fleet.wait_ready(60)
        workers = live(Registry(r), 2)
        assert sorted(workers) == ["cpu-bulk", "cpu-interactive"]
        with MTClient(fleet.api_url) as mt:  # a bulk job: the bulk pipeline starts
            job = mt.submit(
                ["The red shoes are on the table."], source="en", target="es", lane="bulk"
            )
            assert mt.wait(job.id, timeout=60).status.value == "succeeded"
        bulk = psutil.Process(workers["cpu-bulk"].pid)
        family = [bulk, *bulk.children(recursive=True)]
        assert len(family) > 5  # the bulk Celery worker, its pipeline's shell and programs
        mine = psutil.Process().nice()
        assert {p.nice() for p in family} == {mine}
        assert {os.sched_getscheduler(p.pid) for p in family} == {os.SCHED_OTHER}
        here = cpu_cgroup()
        assert {cpu_cgroup(p.pid) for p in family} == {here}
        assert here is None or not (here / f"{priority.IDLE_CGROUP}-{launcher.popen.pid}").exists()
    assert launcher.popen.returncode == 0


@pytest.mark.parametrize(
    ("setting", "engine", "gpus", "lanes", "apart"),
    [
        ("auto", "apertium", [], ["interactive", "bulk"], True),  # the default: a CPU engine
        ("auto", "apertium", [0, 1], ["interactive", "bulk"], False),  # each GPU group: one
        ("auto", "apertium", [], ["bulk"], False),  # one lane: nothing to keep apart
        ("auto", "vllm", [], ["interactive", "bulk"], False),  # it would load the model twice
        ("auto", "transformers", [], ["interactive", "bulk"], False),
        ("auto", "tests.support:ScriptedEngine", [], ["interactive", "bulk"], False),
        ("false", "apertium", [], ["interactive", "bulk"], False),  # as the operator says
        ("true", "tests.support:ScriptedEngine", [], ["interactive", "bulk"], True),
    ],
)
def test_lanes_run_apart_by_default_where_the_engine_can_run_twice(
    setting: str, engine: str, gpus: list[int], lanes: list[str], apart: bool
) -> None:
    settings = Settings(process_per_lane=setting, engine=engine, lanes=lanes, model="m")
    assert lanes_apart(settings, gpus) is apart


def test_a_process_per_lane_is_refused_with_gpus() -> None:
    groups = gpu_groups([0, 1], 1)
    assert [name for name, _, _ in worker_plan(groups, ["interactive", "bulk"], False)] == [
        "gpu0",
        "gpu1",
    ]
    with pytest.raises(ConfigError, match="not with --gpus"):
        worker_plan(groups, ["interactive", "bulk"], True)
    cpu = worker_plan(gpu_groups([], 1), ["interactive", "bulk"], True)
    assert [(name, lanes) for name, _, lanes in cpu] == [
        ("cpu-interactive", ["interactive"]),
        ("cpu-bulk", ["bulk"]),
    ]
