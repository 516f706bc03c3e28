"""Worker-side Prometheus metrics (served on ``MT_WORKER_METRICS_PORT`` when set)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram, start_http_server

SEGMENTS = Counter(
    "mt_worker_segments_total", "Segments finished by this worker", ["lane", "outcome"]
)
CHUNKS = Counter("mt_worker_chunks_total", "Chunks processed by this worker", ["lane"])
ENGINE_SECONDS = Histogram(
    "mt_worker_engine_seconds",
    "Wall time of one engine call (one chunk's distinct texts)",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
LATENCY = Histogram(
    "mt_worker_chunk_latency_seconds",
    "Enqueue-to-result time of a chunk",
    ["lane"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800),
)
DEAD_LETTERED = Counter("mt_worker_dead_lettered_total", "Chunks sent to the dead-letter list")


def observe_chunk(
    *,
    lane: str,
    segments: int,
    translated: int,
    cached: int,
    failed: int,
    engine_seconds: float,
    latency_s: float,
) -> None:
    CHUNKS.labels(lane).inc()
    SEGMENTS.labels(lane, "translated").inc(max(segments - cached - failed, 0))
    SEGMENTS.labels(lane, "cached").inc(cached)
    SEGMENTS.labels(lane, "failed").inc(failed)
    if translated:
        ENGINE_SECONDS.observe(engine_seconds)
    LATENCY.labels(lane).observe(max(latency_s, 0.0))


def serve(port: int) -> None:
    start_http_server(port, addr="0.0.0.0")
