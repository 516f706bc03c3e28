"""The ops panel's figures from the fleet's records: Prometheus-style quantiles from the
workers' latency buckets, rows per (pool, lane), a worker's rates from its own metrics, and
GPU readings through NVML (a stand-in for its binding), and none where it is missing."""

from __future__ import annotations

import math
import sys
import types

import pytest

from mtfleet.api.fleet import lane_rows
from mtfleet.api.ops import fleet_latency, histogram_quantile
from mtfleet.core import keys
from mtfleet.core.queues import QueueReading
from mtfleet.core.registry import GpuReading, WorkerInfo, WorkerStats
from mtfleet.workers import gpustats, metrics
from mtfleet.workers.gpustats import GpuStats
from mtfleet.workers.stats import LATENCY_WINDOW_S, StatsSampler

INF = math.inf


def worker(name: str, engine: str, lanes: list[str], **extra: object) -> WorkerInfo:
    return WorkerInfo(
        name=name,
        instance=name,
        engine=engine,
        model=engine,
        fingerprint="fp",
        pairs=[("en", "es")],
        lanes=lanes,
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("q", "buckets", "expected"),
    [
        (0.5, [(0.1, 0), (0.5, 10), (1.0, 10), (INF, 10)], 0.3),  # linear inside (0.1, 0.5]
        (0.95, [(0.1, 5), (0.5, 10), (INF, 10)], 0.46),
        (0.5, [(0.1, 10), (INF, 10)], 0.05),  # the first bucket starts at 0
        (0.99, [(0.1, 5), (1.0, 5), (INF, 10)], 1.0),  # in +Inf: the last finite bound
        (0.5, [(0.1, 0), (INF, 0)], None),  # nothing observed
        (0.5, [], None),
    ],
)
def test_histogram_quantile_reads_buckets_as_prometheus_does(
    q: float, buckets: list[tuple[float, float]], expected: float | None
) -> None:
    got = histogram_quantile(q, buckets)
    assert got == pytest.approx(expected) if expected is not None else got is None


def test_fleet_latency_adds_up_every_workers_buckets() -> None:
    a = worker(
        "a",
        "apertium",
        ["interactive"],
        stats=WorkerStats(
            latency_window_s=60,
            latency_buckets={"interactive": [("0.1", 8), ("1.0", 10), ("+Inf", 10)]},
        ),
    )
    b = worker(
        "b",
        "apertium",
        ["interactive"],
        stats=WorkerStats(
            latency_window_s=30,
            latency_buckets={"interactive": [("0.1", 2), ("1.0", 10), ("+Inf", 10)]},
        ),
    )
    got = fleet_latency([a, b, worker("c", "vllm", ["bulk"])], "interactive")
    assert (got.jobs, got.window_s) == (20, 60)
    assert got.p50_s == pytest.approx(0.1)  # 10 of 20 within 0.1 s
    assert got.p95_s == pytest.approx(0.1 + 0.9 * (19 - 10) / 10)
    assert fleet_latency([a, b], "bulk").p95_s is None


def test_rows_per_pool_and_lane_with_a_pool_nobody_serves_any_more() -> None:
    workers = [
        worker(
            "gpu0@h", "vllm", ["interactive"], stats=WorkerStats(segments_per_s={"interactive": 5})
        ),
        worker("gpu1@h", "vllm", ["interactive"], healthy=False, unhealthy_reason="restarting"),
        worker(
            "cpu@h",
            "apertium",
            ["interactive"],
            stats=WorkerStats(segments_per_s={"interactive": 2}),
        ),
    ]
    queue = keys.queue("vllm", "interactive")
    gone = keys.queue("nllb", "bulk")
    rows = lane_rows(
        ["apertium", "nllb", "vllm"],
        workers,
        {queue: QueueReading(queue, 7, 3.5), gone: QueueReading(gone, 4, 60.0)},
        {queue: (2, 1.25)},
    )
    got = {(r.pool, r.lane): r for r in rows}
    assert set(got) == {(p, lane) for p in ("apertium", "nllb", "vllm") for lane in keys.LANES}
    vllm = got[("vllm", "interactive")]
    assert (vllm.workers, vllm.segments_per_s) == (1, 5)  # the unhealthy one does not serve
    assert (vllm.queued, vllm.oldest_queued_s, vllm.in_flight, vllm.oldest_in_flight_s) == (
        7,
        3.5,
        2,
        1.25,
    )
    assert got[("apertium", "interactive")].workers == 1
    # a pool whose workers are gone: its work waits for nobody
    nobody = got[("nllb", "bulk")]
    assert (nobody.workers, nobody.queued, nobody.oldest_queued_s) == (0, 4, 60.0)
    assert (got[("vllm", "bulk")].workers, got[("vllm", "bulk")].queued) == (0, 0)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_a_workers_rates_come_from_its_own_metrics() -> None:
    clock = Clock()
    sampler = StatsSampler(clock)
    first = sampler.sample()
    assert first.window_s == 0 and first.segments_per_s == {}  # no rate from one reading
    metrics.observe_chunk(
        pool="apertium", lane="bulk", segments=40, cached=0, failed=0, latency_s=0.2
    )
    metrics.ENGINE_BUSY.inc(1.5)
    metrics.JOB_LATENCY.labels("apertium", "interactive").observe(0.07)
    metrics.JOB_LATENCY.labels("vllm", "interactive").observe(0.3)  # a lane's pools add up
    metrics.WINDOW.set(6)
    clock.t += 2.0
    second = sampler.sample()
    assert second.window_s == 2.0
    assert second.segments_per_s["bulk"] == pytest.approx(20.0)
    assert second.busy_share == pytest.approx(0.75)
    assert second.pull_window == 6
    interactive = dict(second.latency_buckets["interactive"])
    assert (interactive["0.05"], interactive["0.1"], interactive["+Inf"]) == (0, 1, 2)
    # beats every 5 s: past the latency window the job no longer counts; rates cover ~10 s
    for _ in range(13):
        clock.t += 5.0
        later = sampler.sample()
    assert dict(later.latency_buckets["interactive"])["+Inf"] == 0
    assert later.latency_window_s == LATENCY_WINDOW_S
    assert later.segments_per_s["bulk"] == 0 and later.window_s == 10.0


def test_no_gpu_readings_without_gpus_or_without_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    assert GpuStats([]).read() is None
    # a host without the binding (nvidia-ml-py): the worker reports no readings
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert GpuStats([0]).read() is None


class FakeNvml(types.SimpleNamespace):
    """NVML as nvidia-ml-py exposes it, for three GPUs: 0 answers everything, 1 is gone, 2 has
    no utilisation counter (as under MIG)."""

    class NVMLError(Exception):
        pass

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        if index == 1:
            raise self.NVMLError("GPU is lost")
        return index

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> types.SimpleNamespace:
        return types.SimpleNamespace(used=(handle + 1) * 1024 * 2**20, total=141_312 * 2**20)

    def nvmlDeviceGetName(self, handle: int) -> bytes:
        return b"NVIDIA H200"

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> types.SimpleNamespace:
        if handle == 2:
            raise self.NVMLError("not supported")
        return types.SimpleNamespace(gpu=87)


def test_gpu_readings_per_gpu_through_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    loads = []
    monkeypatch.setattr(gpustats, "_load_nvml", lambda: loads.append(1) or FakeNvml())
    stats = GpuStats([0, 1, 2])
    first = stats.read()
    assert first == [
        GpuReading(
            index=0,
            name="NVIDIA H200",
            memory_used_mib=1024.0,
            memory_total_mib=141312.0,
            utilization_pct=87.0,
        ),
        GpuReading(
            index=2,
            name="NVIDIA H200",
            memory_used_mib=3072.0,
            memory_total_mib=141312.0,
            utilization_pct=None,
        ),
    ]  # the lost GPU is left out, the others still read
    assert stats.read() == first and loads == [1]  # NVML is initialised once
