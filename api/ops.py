"""``GET /v1/ops``: the operations panel's data, from what the fleet already records.

Everything comes from one :func:`~mtfleet.api.fleet.read_fleet` (the registry, the queues, the
chunks workers hold, the dead-letter list), the workers' own metrics as their heartbeats carry
them (:class:`~mtfleet.core.registry.WorkerStats`: rates over the last seconds, job-latency
buckets over the last minute) and this API process's phrase-cache counters. Nothing is stored
for the panel: it keeps its trend charts in the browser, one point per poll.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from mtfleet.api import metrics
from mtfleet.api.fleet import DEAD_LETTERS_SHOWN, FleetReading, LaneRow
from mtfleet.core import keys
from mtfleet.core.registry import GpuReading, WorkerInfo

#: Keys listed per lane in the panel (the most waiting first): /metrics has every one.
KEYS_SHOWN = 10


class LanePublic(BaseModel):
    pool: str = Field(
        description="The pool (its workers' engine's name unless they name one); a pool whose "
        "workers are all gone keeps its rows while the registry knows it."
    )
    lane: str
    queued: int = Field(
        description="Chunks waiting: in the lane's backlog and its broker queue (exact at any "
        "depth)."
    )
    oldest_queued_s: float | None = Field(description="How long the oldest waiting chunk waited.")
    in_flight: int = Field(description="Chunks workers fetched and have not finished.")
    oldest_in_flight_s: float | None
    workers: int = Field(
        description="Live, healthy workers of the pool on this lane; 0: none consumes it, its "
        "chunks wait for a worker of the pool to come."
    )
    segments_per_s: float = Field(description="Segments those workers finished per second.")
    waiting_by_key: dict[str, int] = Field(
        default_factory=dict,
        description=f"Chunks waiting in the backlog per API key id ('-': MT_AUTH=off), the "
        f"{KEYS_SHOWN} keys with the most; their turns are fair shares (docs/operations.md).",
    )


class LatencyPublic(BaseModel):
    lane: str
    window_s: float = Field(description="The jobs counted finished within this many seconds.")
    jobs: int
    p50_s: float | None = Field(description="Submission to final, as histogram_quantile reads it.")
    p95_s: float | None


class CachePublic(BaseModel):
    hits: int
    lookups: int
    ratio: float | None = Field(description="hits / lookups; null before any lookup.")


class WorkerPublic(BaseModel):
    name: str
    instance: str
    pool: str
    engine: str
    model: str
    lanes: list[str]
    gpus: list[int]
    tensor_parallel_size: int
    pull_window: int | None = Field(description="Chunks the worker may hold now.")
    busy_share: float | None = Field(description="Engine busy seconds per second, 0..1.")
    segments_per_s: float | None
    healthy: bool
    unhealthy_reason: str | None
    host: str
    started_at: float
    beat_at: float = Field(description="Its last heartbeat (Unix time).")
    gpu_readings: list[GpuReading] | None = Field(
        description="NVML readings at its last heartbeat; null: no GPU (or no NVML)."
    )


class DeadLetterPublic(BaseModel):
    job_id: str | None = None
    chunk: int | None = None
    lane: str | None = None
    reason: str = ""
    at: float | None = None


class OpsPublic(BaseModel):
    at: float = Field(description="When this was read (Unix time, the API's clock).")
    lanes: list[LanePublic]
    segments_per_s: float = Field(description="The whole fleet, per its workers' last beats.")
    latency: list[LatencyPublic]
    cache: CachePublic
    workers: list[WorkerPublic]
    dead_letters: int = Field(description="Chunks in the dead-letter list.")
    latest_dead_letters: list[DeadLetterPublic]


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Prometheus's ``histogram_quantile`` over cumulative buckets [(upper bound, count)],
    ``+inf`` last: linear within the bucket the rank falls in (the last finite bound when it
    falls in ``+inf``); None without observations."""
    buckets = sorted(buckets)
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower
            if count == below:
                return bound
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower


def fleet_latency(workers: list[WorkerInfo], lane: str) -> LatencyPublic:
    """A lane's job latency over the last minute: the workers' bucket counts added up."""
    summed: dict[float, float] = {}
    window = 0.0
    for w in workers:
        if w.stats is None:
            continue
        for bound, count in w.stats.latency_buckets.get(lane, []):
            le = float(bound)
            summed[le] = summed.get(le, 0.0) + count
        window = max(window, w.stats.latency_window_s)
    buckets = sorted(summed.items())
    p50, p95 = histogram_quantile(0.5, buckets), histogram_quantile(0.95, buckets)
    return LatencyPublic(
        lane=lane,
        window_s=round(window, 3),
        jobs=int(buckets[-1][1]) if buckets else 0,
        p50_s=None if p50 is None else round(p50, 4),
        p95_s=None if p95 is None else round(p95, 4),
    )


def cache_figures(workers: list[WorkerInfo]) -> CachePublic:
    """Lookups at submission by this API process and by the live workers, since each
    started."""
    api = {s.labels["result"]: s.value for s in _api_cache_lookups()}
    hits = int(api.get("hit", 0)) + sum(w.stats.cache_hits for w in workers if w.stats)
    lookups = int(api.get("hit", 0) + api.get("miss", 0))
    lookups += sum(w.stats.cache_lookups for w in workers if w.stats)
    return CachePublic(
        hits=hits, lookups=lookups, ratio=round(hits / lookups, 4) if lookups else None
    )


def _api_cache_lookups() -> list[Any]:
    """This API process's lookups at submission (``mt_api_cache_lookups_total``), by result."""
    name = "mt_api_cache_lookups_total"
    return [s for fam in metrics.CACHE_LOOKUPS.collect() for s in fam.samples if s.name == name]


def worker_public(w: WorkerInfo) -> WorkerPublic:
    s = w.stats
    return WorkerPublic(
        name=w.name,
        instance=w.instance,
        pool=w.pool_name,
        engine=w.engine,
        model=w.model,
        lanes=w.lanes,
        gpus=w.gpus,
        tensor_parallel_size=w.tensor_parallel_size,
        pull_window=s.pull_window if s else None,
        busy_share=s.busy_share if s and s.window_s else None,
        segments_per_s=round(sum(s.segments_per_s.values()), 3) if s and s.window_s else None,
        healthy=w.healthy,
        unhealthy_reason=w.unhealthy_reason,
        host=w.host,
        started_at=w.started_at,
        beat_at=w.beat_at,
        gpu_readings=w.gpu_readings,
    )


def lane_public(row: LaneRow) -> LanePublic:
    most = sorted(row.waiting_by_key.items(), key=lambda kv: (-kv[1], kv[0]))[:KEYS_SHOWN]
    return LanePublic.model_validate({**vars(row), "waiting_by_key": dict(most)})


def summary(fleet: FleetReading) -> OpsPublic:
    dead = []
    for entry in fleet.latest_dead[:DEAD_LETTERS_SHOWN]:
        try:
            dead.append(DeadLetterPublic.model_validate(entry))
        except ValidationError:  # not one of ours: shown by its reason alone
            dead.append(DeadLetterPublic(reason=str(entry.get("reason", ""))[:500]))
    return OpsPublic(
        at=fleet.at,
        lanes=[lane_public(row) for row in fleet.lanes],
        segments_per_s=round(sum(r.segments_per_s for r in fleet.lanes), 3),
        latency=[fleet_latency(fleet.workers, lane) for lane in keys.LANES],
        cache=cache_figures(fleet.workers),
        workers=[worker_public(w) for w in sorted(fleet.workers, key=lambda w: w.name)],
        dead_letters=fleet.dead_letters,
        latest_dead_letters=dead,
    )
