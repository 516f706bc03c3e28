"""Giving bulk work the CPU only when nothing else wants it, on one host.

Bulk processes (a bulk-only worker, a bulk engine pipeline) get three things, each where the
host allows it:

1. ``SCHED_IDLE`` (any user may lower a process to it): the scheduler preempts one the moment
   a normal task *of the same CPU group* wakes, instead of letting it finish its time slice;
2. :data:`BULK_NICENESS` (what ``ps`` and ``top`` show; where ``SCHED_IDLE`` is missing it
   still ranks them last);
3. an idle cgroup of their own (``cpu.idle = 1``, :data:`IDLE_CGROUP` below the worker's
   cgroup), where the worker may create one (root on the host, a delegated systemd unit): a
   group that every wake-up preempts, *whatever* group the woken task is in.

Why the groups matter: Linux schedules the tasks within one group (a cgroup — a container, a
systemd unit — or, where the kernel groups sessions, autogroup: a session) and then the groups
against each other, and a group is not idle because one of its tasks is. An interactive request
hops through ~20 processes (the API, Redis, the interactive worker, eleven Apertium stages);
each hop in another group than the running bulk process waited for its slice to end. So bulk
processes stay in the session of the ``mtfleet worker`` that starts them (each in a process
group of its own, to be signalled and killed whole), and move into the idle cgroup where they
can. What each of these measured, and what did not work (the whole local fleet in one
session put the API among a busy worker's threads), is in docs/benchmarks.md.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shlex
import shutil
from pathlib import Path

log = logging.getLogger(__name__)

#: Niceness of bulk work next to interactive work on one host (the most Linux allows).
BULK_NICENESS = 19
#: The idle cgroup's name, below the worker's own cpu cgroup.
IDLE_CGROUP = "mtfleet-bulk"


def _cpu_mount(mountinfo: str) -> tuple[Path, int] | None:
    """The cpu controller's mount point and cgroup version, from ``/proc/self/mountinfo``."""
    v2: Path | None = None
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, kind = left.split(), right.split()
        if len(fields) < 5 or len(kind) < 3:
            continue
        if kind[0] == "cgroup" and "cpu" in kind[2].split(","):
            return Path(fields[4]), 1
        if kind[0] == "cgroup2":
            v2 = Path(fields[4])
    if v2 is not None and "cpu" in (v2 / "cgroup.controllers").read_text().split():
        return v2, 2
    return None


def _own_cgroup(proc_cgroup: str, version: int) -> str:
    for line in proc_cgroup.splitlines():
        _, controllers, path = line.split(":", 2)
        if (version == 2 and controllers == "") or "cpu" in controllers.split(","):
            return path
    return "/"


@functools.cache
def idle_cgroup() -> Path | None:
    """The idle cgroup's ``cgroup.procs``, made if need be; None where this host does not let
    this process make one (not root, a read-only cgroup mount in a container, a cgroup v2
    parent that has processes and is not delegated, a kernel before 5.15)."""
    try:
        found = _cpu_mount(Path("/proc/self/mountinfo").read_text())
        if found is None:
            return None
        mount, version = found
        own = mount / _own_cgroup(Path("/proc/self/cgroup").read_text(), version).strip("/")
        if own.name == IDLE_CGROUP:  # a bulk worker's process, already in it
            return own / "cgroup.procs"
        control = own / "cgroup.subtree_control"
        # a v2 cgroup's children get the cpu controller only from an enabled parent
        if version == 2 and "cpu" not in control.read_text().split():
            control.write_text("+cpu\n")
        group = own / IDLE_CGROUP
        group.mkdir(exist_ok=True)
        (group / "cpu.idle").write_text("1\n")
        return group / "cgroup.procs"
    except (OSError, ValueError) as exc:
        log.debug("no idle cgroup for bulk work here: %s", exc)
        return None


def lower_self(procs: Path | None) -> None:
    """In a child before exec: bulk priority for this process (and what it starts);
    ``procs``: :func:`idle_cgroup`'s answer, found before the fork."""
    if procs is not None:
        with contextlib.suppress(OSError):
            procs.write_text(f"{os.getpid()}\n")
    with contextlib.suppress(OSError):
        os.nice(BULK_NICENESS)
    if hasattr(os, "SCHED_IDLE"):
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def shell_command(command: str) -> list[str]:
    """argv that runs the bash ``command`` (and the pipeline it starts) at bulk priority, for a
    threaded process to start (``preexec_fn`` is unsafe with threads): ``chrt --idle 0`` where
    util-linux has it, ``nice``, and the shell joins the idle cgroup before it starts anything."""
    procs = idle_cgroup()
    if procs is not None:
        command = f"echo $$ > {shlex.quote(str(procs))} 2>/dev/null; {command}"
    prefix = ["nice", "-n", str(BULK_NICENESS)]
    chrt = shutil.which("chrt")
    if chrt:
        prefix = [chrt, "--idle", "0", *prefix]
    return [*prefix, "bash", "-o", "pipefail", "-c", command]


def describe() -> str:
    """How bulk work is lowered on this host, for the worker's start-up log."""
    procs = idle_cgroup()
    where = f"idle cgroup {procs.parent}" if procs is not None else "no idle cgroup (not allowed)"
    return f"SCHED_IDLE, nice {BULK_NICENESS}, {where}"
