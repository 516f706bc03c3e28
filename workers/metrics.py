"""Worker-side Prometheus metrics (served on ``MT_WORKER_METRICS_PORT`` when set).

Rates come from counters (``rate(mt_worker_segments_total[1m])`` is segments/s);
docs/operations.md lists the PromQL for each figure an operator watches.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, start_http_server

SEGMENTS = Counter(
    "mt_worker_segments_total", "Segments finished by this worker", ["pool", "lane", "outcome"]
)
CHUNKS = Counter("mt_worker_chunks_total", "Chunks processed by this worker", ["pool", "lane"])
TOKENS = Counter(
    "mt_worker_tokens_total", "Tokens through the engine (in: source, out: generated)", ["dir"]
)
TOKENS_IN = TOKENS.labels("in")  # bound once: a label lookup costs more than the increment
TOKENS_OUT = TOKENS.labels("out")
CACHE_LOOKUPS = Counter(
    "mt_worker_cache_lookups_total",
    "Phrase-cache lookups by workers: segments of chunks that waited in the queue (the API "
    "looked the others up at submission); a hit is a phrase another job translated meanwhile",
    ["result"],
)
ENGINE_BUSY = Counter(
    "mt_worker_engine_busy_seconds_total",
    "Seconds the engine had work (rate() of this is the engine's busy fraction)",
)
BATCH_SEGMENTS = Histogram(
    "mt_worker_batch_segments",
    "Segments per engine call (batch engines) or in flight when work is fed (streaming)",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
)
BATCH_TOKENS = Histogram(
    "mt_worker_batch_tokens",
    "Input tokens per engine call (batch engines) or per feed (streaming engines)",
    buckets=(16, 64, 256, 1024, 2048, 4096, 8192, 16384, 65536),
)
ENGINE_SECONDS = Histogram(
    "mt_worker_engine_seconds",
    "Wall time of one batch-engine call",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
LATENCY = Histogram(
    "mt_worker_chunk_latency_seconds",
    "Enqueue-to-result time of a chunk",
    ["pool", "lane"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800),
)
JOB_LATENCY = Histogram(
    "mt_job_latency_seconds",
    "Submission-to-final time of jobs (observed by the worker that finishes them)",
    ["pool", "lane"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200),
)
RESENT = Counter(
    "mt_worker_chunks_resent_total",
    "Chunks the reconciler found in neither a queue nor a worker and sent again",
)
BUFFERED = Gauge("mt_worker_buffered_segments", "Segments waiting in the scheduler", ["lane"])
INFLIGHT = Gauge("mt_worker_inflight_segments", "Segments inside a streaming engine")
BULK_CAP = Gauge(
    "mt_worker_bulk_inflight_cap",
    "Bulk requests a streaming engine may hold (cut while interactive work runs slow)",
)
WINDOW = Gauge("mt_worker_pull_window_chunks", "Chunks this worker may hold (prefetch count)")
THROUGHPUT = Gauge(
    "mt_worker_throughput_segments_per_busy_second", "Measured engine throughput (pull window)"
)
COST_FIXED = Gauge("mt_worker_cost_fixed_seconds", "Cost model: fixed seconds per engine call")
COST_PER_TOKEN = Gauge("mt_worker_cost_per_token_seconds", "Cost model: seconds per input token")
DEAD_LETTERED = Counter("mt_worker_dead_lettered_total", "Chunks sent to the dead-letter list")
ABORTED = Counter(
    "mt_worker_aborted_total",
    "Segments given up inside or before the engine (cancelled jobs, deadlines, restarts)",
)
TIMED_OUT = Counter(
    "mt_worker_engine_timeouts_total", "Segments that failed alone past their engine deadline"
)
HEALTHY = Gauge(
    "mt_worker_engine_healthy", "1 while the engine serves; 0 while it is down or restarting"
)
ENGINE_RESTARTS = Counter("mt_worker_engine_restarts_total", "Engine restarts after it went down")
RESCUED = Counter(
    "mt_worker_chunks_rescued_total",
    "Chunks a dead worker held that were put back on their queue",
)
RELEASED = Counter(
    "mt_worker_chunks_released_total",
    "Chunks this worker released from the backlog to the broker",
    ["lane"],
)
REQUEUED = Counter(
    "mt_worker_chunks_requeued_total",
    "Chunks this worker could not finish, put back in their key's backlog",
    ["reason"],
)


def observe_batch(segments: int, tokens: int, seconds: float | None) -> None:
    BATCH_SEGMENTS.observe(segments)
    BATCH_TOKENS.observe(tokens)
    if seconds is not None:
        ENGINE_SECONDS.observe(seconds)


class _LaneSeries:
    """A pool lane's chunk series, bound once (a label lookup costs more than the update)."""

    def __init__(self, pool: str, lane: str) -> None:
        self.chunks = CHUNKS.labels(pool, lane)
        self.translated = SEGMENTS.labels(pool, lane, "translated")
        self.cached = SEGMENTS.labels(pool, lane, "cached")
        self.failed = SEGMENTS.labels(pool, lane, "failed")
        self.latency = LATENCY.labels(pool, lane)


#: (pool, lane) -> its series: a worker serves one pool, so this holds two entries.
_LANES: dict[tuple[str, str], _LaneSeries] = {}


def observe_chunk(
    *, pool: str, lane: str, segments: int, cached: int, failed: int, latency_s: float
) -> None:
    series = _LANES.get((pool, lane))
    if series is None:
        series = _LANES[(pool, lane)] = _LaneSeries(pool, lane)
    series.chunks.inc()
    series.translated.inc(max(segments - cached - failed, 0))
    series.cached.inc(cached)
    series.failed.inc(failed)
    series.latency.observe(max(latency_s, 0.0))


def serve(port: int) -> None:
    start_http_server(port, addr="0.0.0.0")


for _result in ("hit", "miss"):
    CACHE_LOOKUPS.labels(_result)  # both series exist from the start
