"""Scenario 3: interactive latency while a bulk backlog saturates the fleet (cost-model engine).

Three phases on one fleet, each with its own segments (the phrase cache never helps):

1. *idle*: a Poisson stream of interactive requests (1-5 short strings, ``POST /v1/translate``)
   on an otherwise idle fleet;
2. *bulk alone*: a bulk backlog larger than the fleet can finish in the window; throughput is
   the segments finished during the window (read from the jobs' progress), after a warm-up;
3. *bulk + interactive*: a fresh backlog, and the same interactive stream during the window.

Backlogs are cancelled after their window and the queue is left to drain before the next phase.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

import httpx
import redis

from bench.costengine import CostParams, direct_throughput
from bench.efficiency import cost_requests
from bench.fleet import (
    BenchFleet,
    cost_env,
    patched_environ,
    running_fleet,
    split,
    submit_job,
    warm_up,
)
from bench.loadgen import poisson_stream
from bench.report import Check, Outcome
from bench.run_context import Context
from bench.workload import interactive_requests, segments
from mtfleet.core import keys

RATE_PER_S = 5.0
WARM_S = 3.0


async def _done(http: httpx.AsyncClient, job_ids: list[str]) -> int:
    jobs = await asyncio.gather(*(http.get(f"/v1/jobs/{j}") for j in job_ids))
    return sum(int(r.raise_for_status().json()["progress"]["done"]) for r in jobs)


async def _phase(
    fleet: BenchFleet,
    backlog: list[str],
    window_s: float,
    stream: list[list[str]] | None,
    seed: int,
) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=200)
    async with httpx.AsyncClient(base_url=fleet.api_url, timeout=60, limits=limits) as http:
        job_ids: list[str] = []
        if backlog:
            job_ids = list(
                await asyncio.gather(*(submit_job(http, p, "bulk") for p in split(backlog, 1000)))
            )
            await asyncio.sleep(WARM_S)
        done0, t0 = await _done(http, job_ids), time.monotonic()
        task = None
        if stream is not None:
            task = asyncio.create_task(
                poisson_stream(http, stream, rate_per_s=RATE_PER_S, duration_s=window_s, seed=seed)
            )
        await asyncio.sleep(window_s)
        done1, t1 = await _done(http, job_ids), time.monotonic()
        queued = _queue_len(fleet)
        latency = await task if task is not None else None
        if job_ids:
            await asyncio.gather(*(http.delete(f"/v1/jobs/{j}") for j in job_ids))
    await asyncio.to_thread(_drain, fleet)
    out: dict[str, Any] = {"window_s": t1 - t0, "backlog": len(backlog)}
    if job_ids:
        out["bulk_done"] = done1 - done0
        out["bulk_segments_per_s"] = (done1 - done0) / (t1 - t0)
        out["backlog_left"] = len(backlog) - done1
        out["bulk_queue_len_at_end"] = queued
    if latency is not None:
        out["interactive"] = latency
    return out


def _queue_len(fleet: BenchFleet) -> int:
    """Chunks waiting in the broker's bulk queue."""
    r = redis.Redis.from_url(fleet.fleet.redis_url or "")
    try:
        return int(r.llen(keys.queue("bulk")))
    finally:
        r.close()


def _drain(fleet: BenchFleet, timeout: float = 60) -> None:
    """Until the bulk queue is empty and the worker has let go of its last chunks."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _queue_len(fleet) > 0:
        time.sleep(0.2)
    time.sleep(1.0)


def interactive_under_load(ctx: Context) -> Outcome:
    window = float(ctx.n(15, 5))
    env = cost_env("h200-7b")
    with patched_environ(env):
        params = CostParams.from_env()
    # A backlog the engine alone could not finish in warm-up + window (x1.5).
    sample = segments(2000, seed=ctx.seed, tag="sample")
    rate = float(direct_throughput(params, cost_requests(params, sample))["requests_per_s"])
    n_backlog = int(math.ceil(rate * (WARM_S + window) * 1.5 / 1000) * 1000)
    n_stream = int(RATE_PER_S * window * 3) + 10
    ctx.log(f"interactive: backlog {n_backlog} segments, windows of {window:.0f}s")
    with running_fleet(env) as fleet:
        warm_up(fleet.api_url)
        idle = asyncio.run(
            _phase(fleet, [], window, interactive_requests(n_stream, tag="ia"), ctx.seed)
        )
        ctx.log("interactive: bulk alone")
        alone = asyncio.run(
            _phase(fleet, segments(n_backlog, seed=ctx.seed, tag="ba"), window, None, ctx.seed)
        )
        ctx.log("interactive: bulk + interactive")
        loaded = asyncio.run(
            _phase(
                fleet,
                segments(n_backlog, seed=ctx.seed, tag="bb"),
                window,
                interactive_requests(n_stream, tag="ib"),
                ctx.seed,
            )
        )
    li, ll = idle["interactive"], loaded["interactive"]
    kept = loaded["bulk_segments_per_s"] / alone["bulk_segments_per_s"]
    for d in (li, ll):
        d.pop("latencies_s", None)
    return Outcome(
        figures={
            "idle p50/p95/p99 ms": f"{li['p50_ms']:.0f} / {li['p95_ms']:.0f} / {li['p99_ms']:.0f}",
            "load p50/p95/p99 ms": f"{ll['p50_ms']:.0f} / {ll['p95_ms']:.0f} / {ll['p99_ms']:.0f}",
            "interactive sent / timed out / failed": f"{li['sent'] + ll['sent']} / "
            f"{li['timed_out'] + ll['timed_out']} / {li['failed'] + ll['failed']}",
            "bulk alone seg/s": alone["bulk_segments_per_s"],
            "bulk + interactive seg/s": loaded["bulk_segments_per_s"],
        },
        checks=[
            Check("p95 load / p95 idle", ll["p95_ms"] / li["p95_ms"], "<=", 1.5),
            Check("bulk kept", kept, ">=", 0.9),
        ],
        raw={
            "engine_direct_segments_per_s": rate,
            "idle": idle,
            "bulk_alone": alone,
            "bulk_with_interactive": loaded,
        },
    )
