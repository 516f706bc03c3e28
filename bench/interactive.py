"""Scenario 3: interactive latency while a bulk backlog saturates the fleet, on two engines.

For each engine — the cost-model engine at H200 + 7B figures (a continuous-batching GPU,
simulated: ``bench/costengine.py``) and Apertium (a real batch engine on this machine's CPU) —
one fleet, and ``runs`` repetitions of three phases, each with its own segments (the phrase
cache never helps):

1. *idle*: a Poisson stream of interactive requests (1-5 short strings, ``POST /v1/translate``)
   on an otherwise idle fleet;
2. *bulk alone*: a bulk backlog larger than the fleet can finish in the window; throughput is
   the segments finished during the window (read from the jobs' progress), after a warm-up;
3. *bulk + interactive*: a fresh backlog, and the same interactive stream during the window.

Backlogs are cancelled after their window and the queue is left to drain before the next phase.
The figures are the median over the runs, with every run's ratio beside it (the spread).
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx
import redis

from bench.costengine import CostModelEngine, CostParams, direct_throughput
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
from bench.workload import SOURCE, TARGET, interactive_requests, segments
from mtfleet.core.settings import Settings

RATE_PER_S = 8.0
WARM_S = 3.0
ENGINES = ("costmodel", "apertium")


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
                poisson_stream(
                    fleet.api_url, stream, rate_per_s=RATE_PER_S, duration_s=window_s, seed=seed
                )
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
        latency.pop("latencies_s", None)
        out["interactive"] = latency
    return out


def _queue_len(fleet: BenchFleet) -> int:
    """Chunks waiting in the broker's bulk queue."""
    r = redis.Redis.from_url(fleet.fleet.redis_url or "")
    try:
        return int(r.llen(fleet.bulk_queue))
    finally:
        r.close()


def _drain(fleet: BenchFleet, timeout: float = 60) -> None:
    """Until the bulk queue is empty and the worker has let go of its last chunks."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _queue_len(fleet) > 0:
        time.sleep(0.2)
    time.sleep(1.0)


def costmodel_rate(seed: int) -> tuple[dict[str, str], float]:
    """The cost-model fleet's environment and its engine's direct rate (segments/s)."""
    with patched_environ(cost_env("h200-7b")):
        preset = CostParams.from_env()
    # deployed as docs/operations.md says (sizing the step): budget at the knee x slowdown
    budget = preset.step_budget(Settings().interactive_slowdown)
    env = {**cost_env("h200-7b"), **budget}
    with patched_environ(env):
        params = CostModelEngine(Settings()).params
    sample = segments(2000, seed=seed, tag="sample")
    rate = float(direct_throughput(params, cost_requests(params, sample))["requests_per_s"])
    return env, rate


def apertium_rate(seed: int) -> tuple[dict[str, str], float]:
    """Apertium's environment and its direct rate here: 600 segments in calls of 200 (the
    pipeline's best batching on this machine; larger calls gain nothing)."""
    from mtfleet.workers.engines.apertium import ApertiumEngine
    from mtfleet.workers.engines.base import TranslationRequest

    engine = ApertiumEngine(Settings())
    engine.load()
    try:
        sample = [
            TranslationRequest(text=t, source=SOURCE, target=TARGET)
            for t in segments(600, seed=seed, tag="sample")
        ]
        engine.translate(sample[:20])  # the pipeline starts
        t0 = time.monotonic()
        for i in range(0, len(sample), 200):
            engine.translate(sample[i : i + 200])
        rate = len(sample) / (time.monotonic() - t0)
    finally:
        engine.close()
    # a worker process per lane (the bulk one niced): the interactive lane's Python never
    # waits for the bulk lane's GIL (MT_PROCESS_PER_LANE, docs/operations.md)
    return {"MT_ENGINE": "apertium", "MT_PROCESS_PER_LANE": "true"}, rate


RATES: dict[str, Callable[[int], tuple[dict[str, str], float]]] = {
    "costmodel": costmodel_rate,
    "apertium": apertium_rate,
}


def latency_runs(ctx: Context, engine: str, runs: int, window: float) -> dict[str, Any]:
    """``runs`` repetitions of idle / bulk alone / bulk + interactive on one fleet."""
    env, rate = RATES[engine](ctx.seed)
    # A backlog the engine alone could not finish in warm-up + window (x1.5).
    n_backlog = int(math.ceil(rate * (WARM_S + window) * 1.5 / 1000) * 1000)
    n_stream = int(RATE_PER_S * window * 3) + 10
    ctx.log(f"{engine}: backlog {n_backlog} segments, {runs} runs of {window:.0f}s windows")
    out: list[dict[str, Any]] = []
    with running_fleet(env) as fleet:
        warm_up(fleet.api_url)
        for k in range(runs):
            tag = f"{engine[:2]}{k}"
            idle = asyncio.run(
                _phase(fleet, [], window, interactive_requests(n_stream, tag=f"{tag}ia"), k)
            )
            alone = asyncio.run(
                _phase(fleet, segments(n_backlog, seed=ctx.seed, tag=f"{tag}ba"), window, None, k)
            )
            loaded = asyncio.run(
                _phase(
                    fleet,
                    segments(n_backlog, seed=ctx.seed, tag=f"{tag}bb"),
                    window,
                    interactive_requests(n_stream, tag=f"{tag}ib"),
                    k,
                )
            )
            li, ll = idle["interactive"], loaded["interactive"]
            run = {
                "idle": idle,
                "bulk_alone": alone,
                "bulk_with_interactive": loaded,
                "p95_ratio": ll["p95_ms"] / li["p95_ms"],
                "bulk_kept": loaded["bulk_segments_per_s"] / alone["bulk_segments_per_s"],
            }
            ctx.log(
                f"{engine} run {k + 1}: p95 idle {li['p95_ms']:.0f} ms, load {ll['p95_ms']:.0f} "
                f"ms ({run['p95_ratio']:.2f}x); bulk kept {run['bulk_kept']:.2f}"
            )
            out.append(run)
    return {"engine_direct_segments_per_s": rate, "backlog": n_backlog, "runs": out}


def _median(runs: list[dict[str, Any]], pick: Callable[[dict[str, Any]], float]) -> float:
    return float(statistics.median(pick(r) for r in runs))


def interactive_under_load(ctx: Context) -> Outcome:
    window = float(ctx.n(12, 5))
    runs = ctx.n(5, 1)  # the median of five: phase-to-phase noise on shared cores is ~5 %
    figures: dict[str, Any] = {}
    checks: list[Check] = []
    raw: dict[str, Any] = {"rate_per_s": RATE_PER_S, "window_s": window}
    errors: list[str] = []
    for engine in ENGINES:
        try:
            res = latency_runs(ctx, engine, runs, window)
        except Exception as exc:  # noqa: BLE001 - one engine's failure must not hide the other
            errors.append(f"{engine}: {exc!r}")
            continue
        raw[engine] = res
        rs = res["runs"]
        label = "cost model (H200 projection)" if engine == "costmodel" else "apertium (this CPU)"

        def ms(phase: str, p: str, rs: list[dict[str, Any]] = rs) -> float:
            return _median(rs, lambda x: x[phase]["interactive"][p])

        figures[f"{label}: idle p50/p95 ms"] = (
            f"{ms('idle', 'p50_ms'):.0f} / {ms('idle', 'p95_ms'):.0f}"
        )
        figures[f"{label}: load p50/p95 ms"] = (
            f"{ms('bulk_with_interactive', 'p50_ms'):.0f} / "
            f"{ms('bulk_with_interactive', 'p95_ms'):.0f}"
        )
        figures[f"{label}: p95 ratio per run"] = " ".join(f"{r['p95_ratio']:.2f}" for r in rs)
        figures[f"{label}: bulk kept per run"] = " ".join(f"{r['bulk_kept']:.2f}" for r in rs)
        figures[f"{label}: bulk alone seg/s"] = _median(
            rs, lambda r: r["bulk_alone"]["bulk_segments_per_s"]
        )
        sent = sum(
            r[p]["interactive"][f]
            for r in rs
            for p in ("idle", "bulk_with_interactive")
            for f in ("sent",)
        )
        bad = sum(
            r[p]["interactive"][f]
            for r in rs
            for p in ("idle", "bulk_with_interactive")
            for f in ("timed_out", "failed")
        )
        figures[f"{label}: interactive sent / timed out or failed"] = f"{sent} / {bad}"
        checks.append(
            Check(
                f"{label}: p95 load / idle (median)",
                _median(rs, lambda r: r["p95_ratio"]),
                "<=",
                1.5,
            )
        )
        checks.append(
            Check(f"{label}: bulk kept (median)", _median(rs, lambda r: r["bulk_kept"]), ">=", 0.9)
        )
    return Outcome(figures=figures, checks=checks, raw=raw, errors=errors)
