"""Start one Celery worker per GPU group and keep them running.

``mtfleet worker --gpus 0,1,2,3 --tp 2`` gives two workers, pinned with ``CUDA_VISIBLE_DEVICES``
to ``0,1`` and ``2,3`` and named ``gpu0-1@host`` and ``gpu2-3@host``. Data-parallel (``--tp 1``,
one engine per GPU) is the default: for a 7B model tensor parallelism buys little throughput.
Without ``--gpus`` one CPU worker starts. A worker that dies is restarted with backoff; SIGTERM
and SIGINT are passed on so each worker finishes or gives back its chunks.

``mtfleet flower`` runs Flower on the same Celery configuration (:func:`run_flower`), always
behind basic auth (:func:`check_flower_auth`).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from types import FrameType

from core.errors import ConfigError
from core.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GpuGroup:
    gpus: tuple[int, ...]

    @property
    def name(self) -> str:
        if not self.gpus:
            return "cpu"
        if len(self.gpus) == 1:
            return f"gpu{self.gpus[0]}"
        return "gpu" + "-".join(str(g) for g in self.gpus)

    @property
    def cuda_visible_devices(self) -> str:
        return ",".join(str(g) for g in self.gpus)


def parse_gpus(spec: str | None) -> list[int]:
    """``"0,1,2"`` or ``"0-3"`` -> GPU ids; empty/None -> no GPUs."""
    if not spec or not spec.strip():
        return []
    ids: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        try:
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if hi < lo:
                    raise ValueError
                ids.extend(range(lo, hi + 1))
            else:
                ids.append(int(part))
        except ValueError:
            raise ConfigError(
                f"bad GPU list {spec!r}: use ids like 0,1,2,3 or a range 0-3"
            ) from None
    if any(i < 0 for i in ids) or len(set(ids)) != len(ids):
        raise ConfigError(f"bad GPU list {spec!r}: ids must be distinct and >= 0")
    return ids


def gpu_groups(gpus: list[int], tp: int) -> list[GpuGroup]:
    """Split GPUs into consecutive groups of ``tp`` (one engine each)."""
    if tp < 1:
        raise ConfigError("--tp must be >= 1")
    if not gpus:
        # One CPU engine; with tp > 1 vLLM-CPU runs tp ranks on this host's cores
        # (VLLM_CPU_OMP_THREADS_BIND assigns them, e.g. "0|1").
        return [GpuGroup(())]
    if len(gpus) % tp:
        raise ConfigError(
            f"{len(gpus)} GPUs cannot be split into tensor-parallel groups of {tp}: "
            f"give a multiple of {tp} GPUs or change --tp"
        )
    return [GpuGroup(tuple(gpus[i : i + tp])) for i in range(0, len(gpus), tp)]


def worker_command(
    group: GpuGroup,
    lanes: list[str],
    concurrency: int,
    loglevel: str,
    interactive_prefetch: int = 0,
) -> list[str]:
    """The Celery worker command line. With both lanes, Celery's own consumer takes bulk only
    and interactive chunks get their own consumer and ``interactive_prefetch`` extra threads
    (``workers.consumers``)."""
    from workers.consumers import consumer_plan

    queues, reserved = consumer_plan(lanes, interactive_prefetch)
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers.celery_app",
        "worker",
        "--pool",
        "threads",
        "--concurrency",
        str(concurrency + reserved),
        "--queues",
        ",".join(queues),
        "--hostname",
        f"{group.name}@%h",
        "--loglevel",
        loglevel,
        "--without-gossip",
        "--without-mingle",
        "-E",
    ]


def worker_env(group: GpuGroup, base: dict[str, str], tp: int, index: int = 0) -> dict[str, str]:
    """The environment of the ``index``-th worker: its GPUs, its TP size, its metrics port
    (``MT_WORKER_METRICS_PORT`` + index, so workers on one host do not collide)."""
    env = dict(base)
    if env.get("MT_WORKER_METRICS_PORT"):
        env["MT_WORKER_METRICS_PORT"] = str(int(env["MT_WORKER_METRICS_PORT"]) + index)
    if group.gpus:
        env["CUDA_VISIBLE_DEVICES"] = group.cuda_visible_devices
        env["MT_TENSOR_PARALLEL_SIZE"] = str(len(group.gpus))
    else:
        env["MT_TENSOR_PARALLEL_SIZE"] = str(tp)
    env["MT_WORKER_GPUS"] = group.cuda_visible_devices
    return env


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

    Workers run in their own sessions, so a Ctrl-C on the terminal reaches only the launcher,
    which sends each worker one SIGTERM: Celery's warm shutdown finishes (or gives back) the
    chunks in hand. A second signal escalates to SIGQUIT (cold shutdown; unacknowledged chunks
    are redelivered by the broker).
    """

    def __init__(self, commands: list[tuple[str, list[str], dict[str, str]]]) -> None:
        self.commands = {name: (cmd, env) for name, cmd, env in commands}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.failures: dict[str, int] = {}
        self.started: dict[str, float] = {}
        self.restart_at: dict[str, float] = {}
        self.signals = 0
        self.signal_at = 0.0
        self.wake = threading.Event()

    def _start(self, name: str) -> None:
        cmd, env = self.commands[name]
        log.info("starting worker %s", name)
        self.procs[name] = subprocess.Popen(
            cmd, env=env, start_new_session=True, preexec_fn=_die_with_parent
        )
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
                delay = min(max_backoff_s, 0.5 * 2**n) if n else 0.0
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
        return 0


DEFAULT_FLOWER_PASSWORD = "change-me"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_flower_auth(host: str, user: str, password: str) -> str | None:
    """Refuse (``ConfigError``) credentials Flower must not start with; return a warning for
    ones it may start with but should not keep.

    Basic auth is never off: an empty password is refused. The default password is accepted on
    a loopback address only (a laptop, the demo), with a warning, and refused anywhere else.
    Flower splits its credential list at commas, so a comma in the user or password would
    turn part of it into a credential of its own: refused, as is a colon in the user name.
    """
    if not password:
        raise ConfigError(
            "MT_FLOWER_PASSWORD is empty: Flower always runs with basic auth; set a password"
        )
    if "," in user or "," in password:
        raise ConfigError("MT_FLOWER_USER and MT_FLOWER_PASSWORD must not contain a comma")
    if ":" in user:
        raise ConfigError("MT_FLOWER_USER must not contain a colon")
    if password == DEFAULT_FLOWER_PASSWORD:
        if not is_loopback(host):
            raise ConfigError(
                f"refusing to serve Flower on {host} with the default password "
                f"{DEFAULT_FLOWER_PASSWORD!r}: set MT_FLOWER_PASSWORD"
            )
        return (
            f"Flower uses the default password {DEFAULT_FLOWER_PASSWORD!r} "
            "(accepted on a loopback address only): set MT_FLOWER_PASSWORD"
        )
    return None


def flower_argv(host: str, port: int) -> list[str]:
    """The ``celery flower`` arguments (credentials travel in the environment, not here)."""
    return [
        "flower",
        f"--address={host}",
        f"--port={port}",
        "--purge_offline_workers=60",
        # Persistent mode keeps Flower's state in a shelve file, which is a pickle: never.
        "--persistent=False",
    ]


def run_flower(settings: Settings, host: str, port: int) -> int:
    """Run Flower in this process on the fleet's own Celery app, so it connects to the broker
    exactly as the workers do (credentials, ``rediss://`` with ``broker_use_ssl``, JSON only).
    Call :func:`check_flower_auth` first."""
    from core.broker import make_celery

    user, password = settings.flower_user, settings.flower_password.get_secret_value()
    # Given through the environment so the password is not visible in `ps`.
    os.environ["FLOWER_BASIC_AUTH"] = f"{user}:{password}"
    app = make_celery(settings, name="mtfleet-flower")
    return int(app.start(flower_argv(host, port)) or 0)


def run_workers(
    *,
    gpus: str | None,
    tp: int,
    lanes: list[str],
    concurrency: int,
    loglevel: str,
    env_overrides: dict[str, str],
    interactive_prefetch: int = 0,
) -> int:
    groups = gpu_groups(parse_gpus(gpus), tp)
    base = {**os.environ, **env_overrides}
    commands = [
        (
            g.name,
            worker_command(g, lanes, concurrency, loglevel, interactive_prefetch),
            worker_env(g, base, tp, i),
        )
        for i, g in enumerate(groups)
    ]
    return Supervisor(commands).run()
