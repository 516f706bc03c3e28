"""API-side Prometheus metrics, plus fleet gauges read from Redis at scrape time."""

from __future__ import annotations

from collections.abc import Iterator

import redis
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from mtfleet.core import keys
from mtfleet.core.registry import Registry

REGISTRY = CollectorRegistry(auto_describe=True)

JOBS = Counter("mt_api_jobs_total", "Jobs accepted", ["lane"], registry=REGISTRY)
REJECTED = Counter(
    "mt_api_rejected_total",
    "Submissions refused with 429 because the lane's queue was past its limit",
    ["lane"],
    registry=REGISTRY,
)
SEGMENTS = Counter("mt_api_segments_total", "Segments accepted", ["lane"], registry=REGISTRY)
CACHE_LOOKUPS = Counter(
    "mt_api_cache_lookups_total",
    "Phrase-cache lookups at submission",
    ["result"],
    registry=REGISTRY,
)
REQUESTS = Histogram(
    "mt_api_request_seconds",
    "HTTP request latency",
    ["route", "method", "status"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY,
)
DOCUMENT_WORK = Histogram(
    "mt_api_document_seconds",
    "Time documents spent in the API's document workers, per operation (read: cut at "
    "submission; render: the translated file) and outcome (ok, refused: invalid or over a "
    "limit, too_complex: past the deadline or the memory limit)",
    ["op", "outcome"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=REGISTRY,
)
JOB_LATENCY = Histogram(
    "mt_api_job_seconds",
    "Submission-to-final time of jobs waited on by /v1/translate",
    ["lane"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY,
)


class FleetCollector(Collector):
    """Queue depth, chunks held by workers and the oldest's age per lane, live workers and
    dead letters, read when Prometheus scrapes."""

    def __init__(self) -> None:
        self.r: redis.Redis | None = None  # set by the app's lifespan

    def collect(self) -> Iterator[GaugeMetricFamily]:
        if self.r is None:
            return
        depth = GaugeMetricFamily("mt_queue_depth", "Chunks waiting per lane", labels=["lane"])
        workers = GaugeMetricFamily("mt_live_workers", "Workers with a fresh heartbeat")
        dead = GaugeMetricFamily("mt_dead_letter_chunks", "Chunks in the dead-letter list")
        held = GaugeMetricFamily(
            "mt_chunks_held",
            "Chunks workers fetched and have not finished, per lane (queued + held is the "
            "lane's real depth)",
            labels=["lane"],
        )
        oldest = GaugeMetricFamily(
            "mt_oldest_held_chunk_seconds",
            "Seconds the longest-held chunk has been in a worker, per lane (0: none): far "
            "above a chunk's usual time, work is stuck",
            labels=["lane"],
        )
        try:
            pipe = self.r.pipeline(transaction=False)
            for lane in keys.LANES:
                pipe.llen(keys.queue(lane))
            pipe.llen(keys.DEAD_LETTER)
            *depths, n_dead = pipe.execute()
            for lane, n in zip(keys.LANES, depths, strict=True):
                depth.add_metric([lane], n)
            registry = Registry(self.r)
            workers.add_metric([], len(registry.live_workers()))
            dead.add_metric([], n_dead)
            for lane, (n, age) in registry.held().items():
                held.add_metric([lane], n)
                oldest.add_metric([lane], round(age, 3))
        except redis.RedisError:
            return
        yield depth
        yield workers
        yield dead
        yield held
        yield oldest


FLEET = FleetCollector()
REGISTRY.register(FLEET)
