"""Run one Celery worker per GPU group and keep them running (``mtfleet worker``).

A worker that dies is restarted with backoff; SIGTERM and SIGINT are passed on so each worker
finishes or gives back its chunks.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
from types import FrameType

from mtfleet.core.backoff import Backoff
from mtfleet.core.errors import ConfigError
from mtfleet.core.settings import Settings
from mtfleet.workers import priority
from mtfleet.workers.engines import create_engine
from mtfleet.workers.gpus import GpuGroup, gpu_groups, parse_gpus, worker_command, worker_env

log = logging.getLogger(__name__)


#: Set for a restarted worker: Celery's warning about running as root is not repeated.
ROOT_WARNED = "MT_ROOT_WARNED"


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM if the launcher dies (Linux), so a killed
    launcher never leaves orphaned workers holding GPUs."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Supervisor:
    """Runs the worker processes, restarts the ones that die, forwards stop signals.

    Workers run in process groups of their own (in the launcher's session, so a bulk worker
    shares its CPU group: ``workers.priority``), so a Ctrl-C on the terminal reaches only the
    launcher, which sends each worker one SIGTERM: Celery's warm shutdown finishes (or gives
    back) the chunks in hand. A second signal escalates to SIGQUIT (cold shutdown;
    unacknowledged chunks are redelivered by the broker). Once they have exited, the idle
    cgroups it and they made are removed (``workers.priority``).
    """

    def __init__(
        self,
        commands: list[tuple[str, list[str], dict[str, str]]],
        bulk: set[str] | None = None,
    ) -> None:
        """``bulk``: the workers (by name) that run at bulk priority (``workers.priority``)."""
        self.commands = {name: (cmd, env) for name, cmd, env in commands}
        self.bulk = bulk or set()
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.pids: list[int] = []  # every worker process started, for release()
        self.failures: dict[str, int] = {}
        self.started: dict[str, float] = {}
        self.restart_at: dict[str, float] = {}
        self.signals = 0
        self.signal_at = 0.0
        self.wake = threading.Event()

    def _start(self, name: str) -> None:
        cmd, env = self.commands[name]
        if name in self.started:
            env = {**env, ROOT_WARNED: "1"}  # Celery's root warning was shown at the first start
        bulk = name in self.bulk
        procs = priority.idle_cgroup() if bulk else None
        log.info(
            "starting worker %s%s",
            name,
            f" at bulk priority: {priority.describe()}" if bulk else "",
        )

        def prepare() -> None:
            _die_with_parent()
            if bulk:
                priority.lower_self(procs)

        self.procs[name] = subprocess.Popen(
            cmd, env=env, stdin=subprocess.DEVNULL, process_group=0, preexec_fn=prepare
        )
        self.pids.append(self.procs[name].pid)
        self.started[name] = time.monotonic()

    def _signal(self, _signum: int, _frame: FrameType | None) -> None:
        self.signals += 1
        self.signal_at = self.signal_at or time.monotonic()
        sig = signal.SIGTERM if self.signals == 1 else signal.SIGQUIT
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(sig)
        self.wake.set()

    def run(self, *, max_backoff_s: float = 30.0) -> int:
        signal.signal(signal.SIGTERM, self._signal)
        signal.signal(signal.SIGINT, self._signal)
        priority.sweep()  # idle cgroups a worker killed -9 left on this host
        for name in self.commands:
            self._start(name)
        while not self.signals:
            now = time.monotonic()
            for name, proc in self.procs.items():
                if name in self.restart_at:
                    if now >= self.restart_at[name]:
                        del self.restart_at[name]
                        self._start(name)
                    continue
                code = proc.poll()
                if code is None:
                    continue
                # A worker that ran a while before dying starts over without backoff.
                if now - self.started[name] > 60:
                    self.failures[name] = 0
                n = self.failures.get(name, 0)
                delay = Backoff(0.5, max_backoff_s).wait_s(n) if n else 0.0
                self.failures[name] = n + 1
                log.warning("worker %s exited with %s; restarting in %.1fs", name, code, delay)
                self.restart_at[name] = now + delay
            self.wake.wait(0.2)
        for name, proc in self.procs.items():
            # A worker (re)started while the signal was being forwarded has not had it yet.
            if proc.poll() is None and self.started[name] >= self.signal_at:
                proc.terminate()
        for proc in self.procs.values():
            proc.wait()
        # the idle cgroups this launcher and its worker processes made go with them
        priority.release([os.getpid(), *self.pids])
        return 0


def run_workers(
    *,
    gpus: str | None,
    tp: int,
    pool: str,
    lanes: list[str],
    concurrency: int,
    loglevel: str,
    env_overrides: dict[str, str],
    interactive_prefetch: int = 0,
    process_per_lane: bool = False,
    lower_bulk: bool = True,
    pp: int = 1,
    prefix: str = "",
) -> int:
    groups = gpu_groups(parse_gpus(gpus), tp, pp)
    base = {**os.environ, **env_overrides}
    plan = worker_plan(groups, lanes, process_per_lane, prefix)
    commands = [
        (
            name,
            worker_command(
                g, group_lanes, concurrency, loglevel, interactive_prefetch, name, pool=pool
            ),
            {**worker_env(g, base, tp, i, pp), "MT_LANES": ",".join(group_lanes), "MT_POOL": pool},
        )
        for i, (name, g, group_lanes) in enumerate(plan)
    ]
    # the bulk lane's own process at bulk priority (MT_BULK_PRIORITY=lowest, the default)
    bulk = {name for name, _, ls in plan if ls == ["bulk"]}
    return Supervisor(commands, bulk if process_per_lane and lower_bulk else None).run()


def lanes_apart(settings: Settings, gpus: list[int]) -> bool:
    """Whether ``mtfleet worker`` runs each lane in a worker process of its own: what
    ``MT_PROCESS_PER_LANE`` says, and with ``auto`` (the default) wherever that protects the
    interactive lane at no cost: a worker without --gpus serving both lanes, whose engine can
    run once per lane on one host (``Engine.lane_processes``: Apertium). Measured, one process
    serving both lanes let a bulk backlog raise Apertium's interactive p95 2x; a process per
    lane holds it near idle (docs/benchmarks.md). With --gpus each process would load the
    model again: off (and ``true`` is refused there, :func:`worker_plan`)."""
    if settings.worker.process_per_lane != "auto":
        return settings.worker.process_per_lane
    if gpus or len(settings.worker.lanes) < 2:
        return False
    try:
        return create_engine(settings).lane_processes
    except ConfigError:
        return False  # the preflight says what is wrong with the engine


def worker_plan(
    groups: list[GpuGroup], lanes: list[str], process_per_lane: bool, prefix: str = ""
) -> list[tuple[str, GpuGroup, list[str]]]:
    """(worker name, its GPU group, its lanes) for every worker process: one per group, or
    with ``process_per_lane`` one per group and lane (``cpu-interactive``, ``cpu-bulk``).
    ``prefix`` goes in front of each name (a pool named with --pool: ``hunyuan-gpu0``, so
    workers of several pools on one host have names of their own)."""
    if not process_per_lane or len(lanes) < 2:
        return [(prefix + g.name, g, list(lanes)) for g in groups]
    if any(g.gpus for g in groups):
        raise ConfigError(
            "MT_PROCESS_PER_LANE runs the engine once per lane on one device: it is for CPU "
            "engines (apertium, CPU plugins), not with --gpus, where each process would load "
            "the model again"
        )
    return [(f"{prefix}{g.name}-{lane}", g, [lane]) for g in groups for lane in lanes]
