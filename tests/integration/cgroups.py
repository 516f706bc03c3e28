"""This machine's cpu cgroups as the tests see them: which one a process is in, whether this
process may make one, and the idle cgroups (``workers.priority``) a set of processes is in."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from mtfleet.workers import priority


def cpu_cgroup(pid: int | str = "self") -> Path | None:
    """The cpu-controller cgroup (its folder) process ``pid`` is in, None without one."""
    found = priority._cpu_mount(Path("/proc/self/mountinfo").read_text())
    if found is None:
        return None
    mount, version = found
    try:
        own = priority._own_cgroup(Path(f"/proc/{pid}/cgroup").read_text(), version)
    except OSError:
        return None
    return mount / own.strip("/")


def cgroups_here() -> str | None:
    """Why this test process may not make a cgroup below its own (None: it may)."""
    own = cpu_cgroup()
    if own is None:
        return "no cpu cgroup controller is mounted here"
    probe = own / f"mtfleet-test-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError as exc:
        return f"cannot make a cgroup in {own} ({exc.strerror}: not root, or read-only)"
    probe.rmdir()
    return None


def idle_cgroups(pids: Iterable[int]) -> set[Path]:
    """The idle cgroups (``workers.priority``'s, by name) these processes are in."""
    found = set()
    for pid in pids:
        group = cpu_cgroup(pid)
        if group is not None and group.name.startswith(priority.IDLE_CGROUP):
            found.add(group)
    return found
