"""Finding the cpu controller's cgroup for bulk work's idle cgroup (``workers.priority``), on
cgroup v1 and v2 hosts: this machine is v1, so v2 is read from a written ``mountinfo``."""

from __future__ import annotations

from pathlib import Path

from mtfleet.workers.priority import _cpu_mount, _own_cgroup

V1 = """\
25 30 0:22 / /sys/fs/cgroup rw,relatime shared:9 - tmpfs tmpfs rw,mode=755
26 25 0:23 / /sys/fs/cgroup/cpuset rw,relatime shared:10 - cgroup cgroup rw,cpuset
27 25 0:24 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:11 - cgroup cgroup rw,cpu,cpuacct
28 25 0:25 / /sys/fs/cgroup/unified rw,relatime shared:12 - cgroup2 cgroup2 rw
"""


def test_v1_the_hierarchy_with_the_cpu_controller_not_cpuset() -> None:
    assert _cpu_mount(V1) == (Path("/sys/fs/cgroup/cpu,cpuacct"), 1)
    cgroup = "5:cpuset:/\n4:cpu,cpuacct:/docker/abc\n0::/user.slice\n"
    assert _own_cgroup(cgroup, 1) == "/docker/abc"


def test_v2_only_where_its_root_offers_the_cpu_controller(tmp_path: Path) -> None:
    mountinfo = f"30 1 0:26 / {tmp_path} rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    assert _cpu_mount(mountinfo) == (tmp_path, 2)
    assert _own_cgroup("0::/system.slice/mtfleet-worker.service\n", 2) == (
        "/system.slice/mtfleet-worker.service"
    )
    (tmp_path / "cgroup.controllers").write_text("memory pids\n")
    assert _cpu_mount(mountinfo) is None
