"""API-side Prometheus metrics, plus fleet gauges read from Redis at scrape time."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import redis
from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from mtfleet.api.fleet import read_fleet
from mtfleet.core import keys, outbox
from mtfleet.core.errors import ConfigError

REGISTRY = CollectorRegistry(auto_describe=True)

JOBS = Counter("mt_api_jobs_total", "Jobs accepted", ["pool", "lane"], registry=REGISTRY)
REJECTED = Counter(
    "mt_api_rejected_total",
    "Submissions refused with 429 because the pool's lane queue was past its limit",
    ["pool", "lane"],
    registry=REGISTRY,
)
SEGMENTS = Counter(
    "mt_api_segments_total", "Segments accepted", ["pool", "lane"], registry=REGISTRY
)
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
    "submission; render: the translated file; tm: a translation memory's import, export, "
    "correction or page of segments) and outcome (ok, refused: invalid or over a "
    "limit, too_complex: past the deadline or the memory limit)",
    ["op", "outcome"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=REGISTRY,
)
DETECTED_TEXTS = Counter(
    "mt_api_detected_texts_total",
    "Texts whose language the API detected (source_lang auto), counted as each detection starts",
    registry=REGISTRY,
)
JOB_LATENCY = Histogram(
    "mt_api_job_seconds",
    "Submission-to-final time of jobs waited on by /v1/translate",
    ["lane"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY,
)

WEBHOOK_ATTEMPTS = Counter(
    "mt_webhook_attempts_total",
    "Webhook delivery attempts by how they went: delivered (2xx), gone (410: no more "
    "attempts), http_error (another status), network_error, timeout, refused (the target "
    "resolved to an address webhooks may not go to), no_secret (nothing to sign with)",
    ["outcome"],
    registry=REGISTRY,
)
WEBHOOK_EVENTS = Counter(
    "mt_webhook_events_total",
    "Webhook events ended, by how: delivered, gone (the receiver answered 410) or failed "
    "(given up)",
    ["state"],
    registry=REGISTRY,
)


class FleetCollector(Collector):
    """Per pool and lane: chunks waiting and the oldest's wait, chunks held by workers and the
    oldest's age, the two together (the lane's depth, which autoscaling reads), live workers;
    live workers per pool; dead letters and pending webhooks in all. Read when Prometheus
    scrapes (:func:`mtfleet.api.fleet.read_fleet`, which ``/v1/ops`` reads too)."""

    def __init__(self) -> None:
        self.r: redis.Redis | None = None  # set by the app's lifespan

    def collect(self) -> Iterator[GaugeMetricFamily]:
        if self.r is None:
            return
        where = ["pool", "lane"]
        depth = GaugeMetricFamily(
            "mt_queue_depth",
            "Chunks waiting per pool and lane: in its backlog and its broker queue",
            labels=where,
        )
        waited = GaugeMetricFamily(
            "mt_oldest_queued_chunk_seconds",
            "Seconds the oldest chunk waiting on the pool and lane's queue has waited (0: none "
            "waits)",
            labels=where,
        )
        workers = GaugeMetricFamily(
            "mt_live_workers", "Workers with a fresh heartbeat, per pool", labels=["pool"]
        )
        lane_workers = GaugeMetricFamily(
            "mt_lane_live_workers",
            "Live, healthy workers of the pool that consume the lane (0: its chunks wait for "
            "nobody)",
            labels=where,
        )
        dead = GaugeMetricFamily("mt_dead_letter_chunks", "Chunks in the dead-letter list")
        held = GaugeMetricFamily(
            "mt_chunks_held",
            "Chunks workers fetched and have not finished, per pool and lane (queued + held is "
            "the lane's real depth)",
            labels=where,
        )
        lane_depth = GaugeMetricFamily(
            "mt_lane_depth",
            "Chunks of the pool and lane not finished: waiting on its queue plus held by "
            "workers (mt_queue_depth + mt_chunks_held). What an autoscaler scales a pool on: "
            "the queue alone reads 0 while workers still hold the work",
            labels=where,
        )
        oldest = GaugeMetricFamily(
            "mt_oldest_held_chunk_seconds",
            "Seconds the longest-held chunk has been in a worker, per pool and lane (0: none): "
            "far above a chunk's usual time, work is stuck",
            labels=where,
        )
        by_key = GaugeMetricFamily(
            "mt_backlog_chunks",
            "Chunks waiting in the pool and lane's backlog, per API key ('-': MT_AUTH=off): "
            "each key with work waiting gets its turn, by its weight (docs/reliability.md)",
            labels=[*where, "key"],
        )
        webhooks = GaugeMetricFamily(
            "mt_webhooks_pending",
            "Webhook events not yet delivered nor given up (the outbox), in the whole fleet",
        )
        try:
            fleet = read_fleet(self.r)
            webhooks.add_metric([], outbox.pending(self.r))
        except redis.RedisError:
            return
        for row in fleet.lanes:
            at = [row.pool, row.lane]
            depth.add_metric(at, row.queued)
            waited.add_metric(at, row.oldest_queued_s or 0.0)
            held.add_metric(at, row.in_flight)
            lane_depth.add_metric(at, row.queued + row.in_flight)
            oldest.add_metric(at, row.oldest_in_flight_s or 0.0)
            lane_workers.add_metric(at, row.workers)
            for key, n in row.waiting_by_key.items():
                by_key.add_metric([*at, key or "-"], n)
        for pool in fleet.pools:
            workers.add_metric([pool], sum(1 for w in fleet.workers if w.pool_name == pool))
        dead.add_metric([], fleet.dead_letters)
        yield depth
        yield waited
        yield workers
        yield lane_workers
        yield dead
        yield held
        yield lane_depth
        yield oldest
        yield by_key
        yield webhooks


FLEET = FleetCollector()
REGISTRY.register(FLEET)

# The series whose labels are known at start exist from the start (at 0), so a dashboard or an
# alert that reads one finds it before the first event (Prometheus's advice for labelled
# counters); a pool's series appear with its first job (its refusals' too: Routing.admit).
for _lane in keys.LANES:
    JOB_LATENCY.labels(_lane)
for _result in ("hit", "miss"):
    CACHE_LOOKUPS.labels(_result)


def serve(host: str, port: int | None) -> Callable[[], None]:
    """``MT_API_METRICS_PORT``: :data:`REGISTRY` on a listener of its own (a thread), without a
    key, for scrapers on a private network; returns what stops it (nothing to stop without a
    port). A port the process cannot have is a :class:`ConfigError` naming the setting: the API
    does not start rather than serve without the metrics it was told to export."""
    if port is None:
        return lambda: None
    try:
        server, _ = start_http_server(port, addr=host, registry=REGISTRY)
    except OSError as exc:  # taken, or an address this host does not have
        raise ConfigError(
            f"MT_API_METRICS_PORT={port}: cannot serve metrics on {host}:{port} ({exc}); free "
            "the port or choose another (MT_API_METRICS_HOST picks the address)"
        ) from None

    def stop() -> None:
        server.shutdown()
        server.server_close()

    return stop
