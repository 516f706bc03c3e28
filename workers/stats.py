"""A worker's figures for the ops panel, read from its own Prometheus metrics at each heartbeat.

The metrics (:mod:`mtfleet.workers.metrics`) stay the one record of what the worker did; this
module only reads them (each metric's ``collect()``) and turns counters into rates over the
last ten seconds, and the job-latency histogram into its buckets over the last minute, so the
API can show throughput and latency without scraping every worker's port (which may not be
served at all). The result travels in the worker's registry entry
(:class:`~mtfleet.core.registry.WorkerStats`).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.utils import floatToGoString

from mtfleet.core.registry import WorkerStats
from mtfleet.workers import metrics

#: The job-latency buckets a heartbeat carries cover this many seconds (the readings kept).
LATENCY_WINDOW_S = 60.0

Buckets = dict[str, list[tuple[float, float]]]  # lane -> [(le, cumulative count)]
_BUSY = "mt_worker_engine_busy_seconds_total"


def _samples(metric: MetricWrapperBase, name: str) -> list[tuple[dict[str, str], float]]:
    return [(s.labels, s.value) for fam in metric.collect() for s in fam.samples if s.name == name]


def _segments_by_lane() -> dict[str, float]:
    out: dict[str, float] = {}
    for labels, value in _samples(metrics.SEGMENTS, "mt_worker_segments_total"):
        out[labels["lane"]] = out.get(labels["lane"], 0.0) + value
    return out


def _latency_buckets() -> Buckets:
    """Per lane, each bucket's cumulative count, summed over the pools that have a series
    (one in a worker; a bucket listed once per pool would make a lane's counts the last
    pool's)."""
    out: dict[str, dict[float, float]] = {}
    for labels, value in _samples(metrics.JOB_LATENCY, "mt_job_latency_seconds_bucket"):
        lane = out.setdefault(labels["lane"], {})
        le = float(labels["le"])
        lane[le] = lane.get(le, 0.0) + value
    return {lane: sorted(b.items()) for lane, b in out.items()}


def _delta(now: Buckets, then: Buckets) -> dict[str, list[tuple[str, int]]]:
    """Per lane, each bucket's count since ``then``, its bound as Prometheus writes it
    (``"0.25"``, ``"+Inf"``: JSON has no infinity)."""
    out = {}
    for lane, buckets in now.items():
        before = dict(then.get(lane, []))
        out[lane] = [(floatToGoString(le), round(n - before.get(le, 0.0))) for le, n in buckets]
    return out


@dataclass(frozen=True)
class _Reading:
    at: float
    segments: dict[str, float]  # lane -> finished, cumulative
    busy: float  # engine busy seconds, cumulative
    latency: Buckets


class StatsSampler:
    """Call :meth:`sample` once per heartbeat. Segments are counted when a chunk finishes, so a
    rate over one beat would jump between 0 and a chunk's worth: rates cover the last
    ``RATE_WINDOW_S`` (or the time since the worker started, when shorter)."""

    RATE_WINDOW_S = 10.0

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._history: deque[_Reading] = deque()

    def _base(self, now: float, window_s: float) -> _Reading:
        """The oldest reading kept that is no older than ``window_s`` (or the only one)."""
        return next(r for r in self._history if r.at >= now - window_s or r is self._history[-1])

    def sample(self) -> WorkerStats:
        now = self.clock()
        reading = _Reading(
            at=now,
            segments=_segments_by_lane(),
            busy=sum(v for _, v in _samples(metrics.ENGINE_BUSY, _BUSY)),
            latency=_latency_buckets(),
        )
        self._history.append(reading)
        while self._history[0].at < now - LATENCY_WINDOW_S:
            self._history.popleft()
        stats = WorkerStats()
        base = self._base(now, self.RATE_WINDOW_S)
        if base.at < now:
            dt = now - base.at
            stats.window_s = round(dt, 3)
            stats.segments_per_s = {
                lane: round((n - base.segments.get(lane, 0.0)) / dt, 3)
                for lane, n in reading.segments.items()
            }
            stats.busy_share = round(min(1.0, max(0.0, (reading.busy - base.busy) / dt)), 4)
        base = self._history[0]
        if base.at < now:
            stats.latency_window_s = round(now - base.at, 3)
            stats.latency_buckets = _delta(reading.latency, base.latency)

        window = sum(v for _, v in _samples(metrics.WINDOW, "mt_worker_pull_window_chunks"))
        stats.pull_window = int(window) if window > 0 and math.isfinite(window) else None
        lookups = {
            labels["result"]: int(v)
            for labels, v in _samples(metrics.CACHE_LOOKUPS, "mt_worker_cache_lookups_total")
        }
        stats.cache_hits = lookups.get("hit", 0)
        stats.cache_lookups = stats.cache_hits + lookups.get("miss", 0)
        return stats
