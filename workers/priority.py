"""Giving bulk work the CPU only when nothing else wants it, on one host.

Bulk processes (a bulk-only worker, a bulk engine pipeline) get three things, each where the
host allows it:

1. ``SCHED_IDLE`` (any user may lower a process to it): the scheduler preempts one the moment
   a normal task *of the same CPU group* wakes, instead of letting it finish its time slice;
2. :data:`BULK_NICENESS` (what ``ps`` and ``top`` show; where ``SCHED_IDLE`` is missing it
   still ranks them last);
3. an idle cgroup of their own (``cpu.idle = 1``, ``IDLE_CGROUP-<pid>`` below the worker's
   cgroup), where the worker may create one (root on the host, a delegated systemd unit): a
   group that every wake-up preempts, *whatever* group the woken task is in.

The idle cgroup belongs to the process that made it, whose pid it is named after (the
``mtfleet worker`` launcher for its bulk worker processes, a worker process for its bulk
pipelines), and goes with it: that process removes it when it ends, the launcher also removes
its worker processes' once they have exited (:func:`release`), and one left by a worker killed
-9 is removed by the next worker that starts on the host (:func:`sweep`: an idle cgroup whose
process is gone and that no process is in). A cgroup with a process in it is never removed
(the kernel refuses), nor one of another name.

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

import atexit
import contextlib
import errno
import functools
import logging
import os
import shlex
import shutil
import time
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

#: Niceness of bulk work next to interactive work on one host (the most Linux allows).
BULK_NICENESS = 19
#: The idle cgroups' names: ``IDLE_CGROUP-<pid of the process that made it>``, below that
#: process's own cpu cgroup (earlier versions shared one, named ``IDLE_CGROUP``).
IDLE_CGROUP = "mtfleet-bulk"
#: Seconds :func:`release` waits for the processes in an idle cgroup to leave it (bulk
#: pipelines killed with their worker exit a moment after it).
LEAVE_S = 5.0


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


def _own() -> tuple[Path, int] | None:
    """This process's own cpu cgroup (its folder) and the cgroup version; None without a cpu
    controller."""
    found = _cpu_mount(Path("/proc/self/mountinfo").read_text())
    if found is None:
        return None
    mount, version = found
    own = _own_cgroup(Path("/proc/self/cgroup").read_text(), version)
    return mount / own.strip("/"), version


def _maker(name: str) -> int | None:
    """The pid an idle cgroup's name carries (0: the unnumbered name of earlier versions);
    None for any other name."""
    if name == IDLE_CGROUP:
        return 0
    prefix, _, pid = name.rpartition("-")
    return int(pid) if prefix == IDLE_CGROUP and pid.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


def _remove(group: Path, wait_s: float) -> bool:
    """rmdir ``group`` once no process is in it (within ``wait_s``); whether it is gone."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            group.rmdir()
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() >= deadline:
                log.warning("idle cgroup %s left in place: %s", group, exc.strerror)
                return False
            time.sleep(0.1)
        else:
            log.info("removed idle cgroup %s", group)
            return True


def sweep(parent: Path | None = None) -> list[Path]:
    """Remove the idle cgroups below ``parent`` (this process's cpu cgroup) whose process is
    gone and that no process is in: what a worker killed -9 left. The ones removed."""
    try:
        if parent is None:
            found = _own()
            if found is None:
                return []
            parent = found[0]
        groups = [g for g in parent.iterdir() if g.is_dir()]
    except (OSError, ValueError):
        return []
    removed = []
    for group in groups:
        pid = _maker(group.name)
        if pid is None or (pid and _alive(pid)):
            continue
        with contextlib.suppress(OSError):  # processes in it (EBUSY), or not ours to remove
            group.rmdir()
            log.info("removed idle cgroup %s (its worker is gone)", group)
            removed.append(group)
    return removed


def release(pids: Iterable[int], wait_s: float = LEAVE_S) -> None:
    """Remove the idle cgroups these processes made (this one's; a launcher's worker processes'
    once they have exited), each once no process is in it, waiting at most ``wait_s`` for
    that; one still in use is left (the next worker's :func:`sweep` removes it)."""
    try:
        found = _own()
    except (OSError, ValueError):
        return
    if found is None:
        return
    for pid in pids:
        _remove(found[0] / f"{IDLE_CGROUP}-{pid}", wait_s)


@functools.cache
def idle_cgroup() -> Path | None:
    """The idle cgroup's ``cgroup.procs``, made if need be (named after this process, removed
    when it exits); None where this host does not let this process make one (not root, a
    read-only cgroup mount in a container, a cgroup v2 parent that has processes and is not
    delegated, a kernel before 5.15)."""
    try:
        found = _own()
        if found is None:
            return None
        own, version = found
        if _maker(own.name) is not None:  # a bulk worker's process, in its launcher's already
            return own / "cgroup.procs"
        sweep(own)
        control = own / "cgroup.subtree_control"
        # a v2 cgroup's children get the cpu controller only from an enabled parent
        if version == 2 and "cpu" not in control.read_text().split():
            control.write_text("+cpu\n")
        group = own / f"{IDLE_CGROUP}-{os.getpid()}"
        group.mkdir(exist_ok=True)
        try:
            (group / "cpu.idle").write_text("1\n")
        except OSError:
            _remove(group, 0)
            raise
        # its bulk processes may outlive this one (a pipeline ends when its input closes): a
        # short wait here, then the launcher's release() or the next worker's sweep()
        atexit.register(release, [os.getpid()], 1.0)
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
