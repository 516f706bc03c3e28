"""A Redis Sentinel group on loopback for the high-availability tests: a primary, its replica
and three Sentinels (quorum 2), each a real ``redis-server`` process (``--sentinel`` for the
Sentinels: Debian's redis-server package runs them, no separate package needed).

The primary and the replica require ``PASSWORD`` (the fleet's URL carries it), the Sentinels
``SENTINEL_PASSWORD`` (the URL's ``sentinel_password``). Failure detection is quick for a test:
a server that does not answer for 1 s is down, a failover may take 5 s.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from mtfleet.fleet.localfleet import free_port, redis_server_command

MASTER = "mymaster"
PASSWORD = "primary-s3cret"
SENTINEL_PASSWORD = "sentinel-s3cret"
# A server that has not answered a Sentinel's PING for this long is down to it. 1000 (five times
# faster than the deployment guide's 5000) failed a suite run on a saturated machine: a
# Sentinel's fresh link to the just-promoted replica had no PONG within 1 s, and the group
# failed over a second time, back to the restarted old primary (its Sentinel logs, 2026-12-07).
DOWN_AFTER_MS = 3000
FAILOVER_TIMEOUT_MS = 5000


@dataclass
class Server:
    port: int
    workdir: Path
    args: list[str]
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        with open(self.workdir / "server.log", "ab") as log:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self, n: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join((self.workdir / "server.log").read_text().splitlines()[-n:])
        return ""


@dataclass
class SentinelGroup:
    """Start with :meth:`start`; :meth:`stop` ends every process it started."""

    workdir: Path
    host: str = "127.0.0.1"
    servers: dict[int, Server] = field(default_factory=dict)
    sentinels: dict[int, Server] = field(default_factory=dict)
    first_primary: int = 0

    def server_args(self, port: int, *, replica_of: int | None = None) -> list[str]:
        args = redis_server_command(port, self.workdir / str(port), appendonly=True)
        args += ["--requirepass", PASSWORD, "--masterauth", PASSWORD]
        if replica_of is not None:
            args += ["--replicaof", self.host, str(replica_of)]
        return args

    def start(self) -> None:
        primary, replica = free_port(), free_port()
        self.first_primary = primary
        for port, of in ((primary, None), (replica, primary)):
            server = Server(port, self.workdir / str(port), self.server_args(port, replica_of=of))
            self.servers[port] = server
            server.start()
        for _ in range(3):
            port = free_port()
            conf = self.workdir / f"sentinel-{port}" / "sentinel.conf"
            conf.parent.mkdir(parents=True)
            conf.write_text(
                f"port {port}\nbind {self.host}\ndir {conf.parent}\n"
                f"requirepass {SENTINEL_PASSWORD}\nsentinel sentinel-pass {SENTINEL_PASSWORD}\n"
                f"sentinel monitor {MASTER} {self.host} {primary} 2\n"
                f"sentinel auth-pass {MASTER} {PASSWORD}\n"
                f"sentinel down-after-milliseconds {MASTER} {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {MASTER} {FAILOVER_TIMEOUT_MS}\n"
                # known at once, not after the first INFO round (10 s)
                f"sentinel known-replica {MASTER} {self.host} {replica}\n"
            )
            sentinel = Server(port, conf.parent, ["redis-server", str(conf), "--sentinel"])
            self.sentinels[port] = sentinel
            sentinel.start()
        # ready: the replica has synced with the primary (a job needs its acknowledgement:
        # MT_REDIS_MIN_REPLICAS) and the Sentinels know it and each other
        self.wait(
            lambda: (
                self.replicas_online(primary) >= 1
                and self.replicas_seen() >= 1
                and self.sentinels_seen() >= 2
            ),
            30,
            "group",
        )

    def url(self, db: int = 0) -> str:
        hosts = ",".join(f"{self.host}:{p}" for p in self.sentinels)
        return (
            f"sentinel://:{PASSWORD}@{hosts}/{db}?master={MASTER}"
            f"&sentinel_password={SENTINEL_PASSWORD}"
        )

    def _sentinel(self, port: int) -> redis.Redis:
        return redis.Redis(
            self.host, port, password=SENTINEL_PASSWORD, socket_timeout=1, decode_responses=True
        )

    def primary_port(self) -> int | None:
        """The primary's port as the Sentinels that answer see it now (the most common)."""
        ports = []
        for port in self.sentinels:
            with contextlib.suppress(redis.RedisError):
                addr = self._sentinel(port).sentinel_get_master_addr_by_name(MASTER)
                if addr:
                    ports.append(int(addr[1]))
        return max(set(ports), key=ports.count) if ports else None

    def _master_field(self, name: str) -> int:
        for port in self.sentinels:
            with contextlib.suppress(redis.RedisError):
                return int(self._sentinel(port).sentinel_master(MASTER).get(name, 0))
        return 0

    def replicas_online(self, port: int) -> int:
        """Replicas the server on ``port`` streams to (synced: ``state=online``)."""
        with contextlib.suppress(redis.RedisError):
            client = redis.Redis(self.host, port, password=PASSWORD, socket_timeout=1)
            info = client.info("replication")
            return sum(
                1
                for k, v in info.items()
                if k.startswith("slave") and isinstance(v, dict) and v.get("state") == "online"
            )
        return 0

    def replicas_seen(self) -> int:
        return self._master_field("num-slaves")

    def sentinels_seen(self) -> int:
        return self._master_field("num-other-sentinels")

    def kill_primary(self) -> int:
        """SIGKILL the primary; returns its port."""
        port = self.primary_port()
        assert port is not None, "no primary known to the Sentinels"
        self.servers[port].kill()
        return port

    def restart(self, port: int) -> None:
        """Start a killed server again on its files (Sentinel makes it a replica of the new
        primary once it sees it)."""
        self.servers[port].start()

    def role(self, port: int) -> str | None:
        with contextlib.suppress(redis.RedisError):
            client = redis.Redis(self.host, port, password=PASSWORD, socket_timeout=1)
            return str(client.execute_command("ROLE")[0].decode())
        return None

    @staticmethod
    def wait(ok: object, timeout: float, what: str) -> float:
        """Poll ``ok()`` until true; returns when (``time.time()``)."""
        deadline = time.monotonic() + timeout
        while not ok():  # type: ignore[operator]
            assert time.monotonic() < deadline, f"{what} not ready after {timeout}s"
            time.sleep(0.05)
        return time.time()

    def stop(self) -> None:
        for server in [*self.sentinels.values(), *self.servers.values()]:
            server.stop()
