"""Hosts on one machine: network namespaces joined by veth pairs into a bridge (iproute2), each
process in its own UTS namespace too (``unshare --uts``: a host name of its own), so a fleet
spread over them talks over real network interfaces and addresses, never loopback, and sees
other host names.

::

    root namespace: bridge mtb<id> 10.213.N.254/24 (the test's own client address)
        ├─ veth ─ namespace mt-<id>-h1: eth0 10.213.N.11   (Redis, the API)
        ├─ veth ─ namespace mt-<id>-h2: eth0 10.213.N.12   (a worker)
        └─ veth ─ namespace mt-<id>-h3: eth0 10.213.N.13   (a worker)

:meth:`Network.cut` takes a host's link down on the bridge side (its packets are dropped, as
when a cable or a switch port dies: no reset reaches anyone), :meth:`Network.restore` brings it
back. Every name carries a random id; :meth:`Network.destroy` removes everything it made and
ends every process it started, whatever state the test left.
"""

from __future__ import annotations

import contextlib
import os
import random
import secrets
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def netns_usable() -> str | None:
    """Why namespaces cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root (make test as root runs this test)"
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install iproute2 util-linux)"
    return None


@dataclass
class Host:
    name: str  # its host name (UTS namespace) and the namespace's suffix
    netns: str
    address: str
    bridge_port: str  # the veth end on the bridge (the link to cut)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def spawn(self, args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
        """Run ``args`` on this host: in its network namespace, under its host name."""
        command = [
            "ip", "netns", "exec", self.netns,
            "unshare", "--uts", "--",
            "sh", "-c", 'hostname "$0" && exec "$@"', self.name, *args,
        ]  # fmt: skip
        out: IO[bytes] = open(log, "ab")  # noqa: SIM115 - the child keeps its own descriptor
        try:
            proc = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        finally:
            out.close()
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs.clear()


@dataclass
class Network:
    id: str = field(default_factory=lambda: secrets.token_hex(2))
    subnet: str = ""  # "10.213.N"
    hosts: dict[str, Host] = field(default_factory=dict)

    @property
    def bridge(self) -> str:
        return f"mtb{self.id}"

    @property
    def gateway(self) -> str:
        """The root namespace's address on the bridge: where the test's own client sits."""
        return f"{self.subnet}.254"

    def create(self, names: list[str]) -> None:
        used = ip("-4", "addr").stdout + ip("route").stdout
        free = [n for n in range(2, 250) if f"10.213.{n}." not in used]
        self.subnet = f"10.213.{random.choice(free)}"
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        for n, name in enumerate(names, start=1):
            netns = f"mt-{self.id}-{name}"
            port = f"mt{self.id}{name}"[:15]
            ip("netns", "add", netns)
            self.hosts[name] = host = Host(name, netns, f"{self.subnet}.{10 + n}", port)
            ip("link", "add", port, "type", "veth", "peer", "name", f"{port}p")
            ip("link", "set", f"{port}p", "netns", netns)
            ip("netns", "exec", netns, "ip", "link", "set", f"{port}p", "name", "eth0")
            ip("netns", "exec", netns, "ip", "addr", "add", f"{host.address}/24", "dev", "eth0")
            ip("netns", "exec", netns, "ip", "link", "set", "eth0", "up")
            ip("netns", "exec", netns, "ip", "link", "set", "lo", "up")
            ip("link", "set", port, "master", self.bridge)
            ip("link", "set", port, "up")

    def cut(self, name: str) -> None:
        ip("link", "set", self.hosts[name].bridge_port, "down")

    def restore(self, name: str) -> None:
        ip("link", "set", self.hosts[name].bridge_port, "up")

    def destroy(self) -> None:
        for host in self.hosts.values():
            host.stop()
        for host in self.hosts.values():
            ip("link", "del", host.bridge_port, check=False)
            ip("netns", "del", host.netns, check=False)
        ip("link", "del", self.bridge, check=False)
        self.hosts.clear()

    def leftovers(self) -> list[str]:
        """Namespaces and links of this network still on the machine (none after destroy)."""
        namespaces = [line.split()[0] for line in ip("netns", "list").stdout.splitlines() if line]
        links = [line.split(":")[1].strip().split("@")[0] for line in
                 ip("-o", "link").stdout.splitlines() if line]  # fmt: skip
        mine = (f"mt-{self.id}-", f"mt{self.id}", self.bridge)
        return sorted(n for n in namespaces + links if n.startswith(mine))
