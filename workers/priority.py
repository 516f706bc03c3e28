"""Giving bulk work less CPU than interactive work on one host.

A process's nice value only ranks it among the processes of its own session where Linux groups
sessions (autogroup, on by default on many servers and desktops): there each session competes
with every other at equal weight whatever its processes' nice values, so a bulk process in a
session of its own would take as much CPU as the interactive one. Lowering the session's
autogroup niceness (``/proc/<pid>/autogroup``) gives the whole session less; without autogroup
(systemd units, containers: cgroups) the process's own nice value does the work.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

#: Niceness of bulk work next to interactive work on one host (the most Linux allows).
BULK_NICENESS = 19


def lower(pid: int, niceness: int) -> None:
    """Give the session ``pid`` leads ``niceness`` as a whole (its autogroup), where the kernel
    groups sessions; a no-op elsewhere."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(f"{niceness}\n")


def nice_self(niceness: int) -> None:
    """In a child before exec: lower this process's own priority by ``niceness``."""
    with contextlib.suppress(OSError):
        os.nice(niceness)
