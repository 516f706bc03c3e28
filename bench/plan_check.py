"""Scenario 8: ``mtfleet plan``'s predictions next to what a fleet of the planned size measures.

The planner (:mod:`mtfleet.fleet.capacity`) is given the cost-model engine's step figures (the
``cpu-small`` preset: 20 ms steps, 0.5 ms per token, 16 sequences) and a small workload: an
interactive rate of 4-segment requests and a nightly volume of 16-token segments. A fleet is
deployed as the plan says (its step budget) on one worker, and measures

* the nightly rate: the volume sent as bulk jobs, segments per second while it runs (from 10 %
  to 90 % done: the rate a long nightly run keeps; the plan's bulk segments/s of one group);
* the interactive p95: ``POST /v1/translate`` at the planned rate (Poisson arrivals) on the
  otherwise idle fleet (the plan's interactive p95);
* the interactive p95 while a bulk backlog runs (the plan's p95 during the nightly run).

Each figure is reported beside its prediction as measured / predicted, checked within 15 %;
``tests/integration/test_capacity_plan.py`` (``make soak``) asserts the same. The third is the
noisiest on two shared cores: a 30 s window holds ~120 requests, so its p95 is their sixth
slowest, and any other load on the machine competes with the fleet's own CPU work.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import httpx

from bench.fleet import cost_env, running_fleet, split, submit_job, wait_job, warm_up
from bench.loadgen import poisson_stream
from bench.report import Check, Outcome
from bench.run_context import Context
from bench.workload import fixed_length
from mtfleet.fleet.capacity import Plan, Workload, plan
from mtfleet.fleet.gpucost import PRESETS
from mtfleet.workers.engines.base import estimate_tokens

PRESET = "cpu-small"
WORDS = 12  # estimate_tokens: 12 words -> 16 tokens
RATE_PER_S = 4.0
SEGMENTS_PER_REQUEST = 4


def workload(nightly_segments: int) -> Workload:
    tokens = estimate_tokens(" ".join(["w"] * WORDS))
    return Workload(
        interactive_rps=RATE_PER_S,
        segments_per_request=SEGMENTS_PER_REQUEST,
        interactive_tokens=tokens,
        nightly_segments=nightly_segments,
        nightly_tokens=tokens,
        window_s=3600,
        p95_target_s=2.0,
    )


def predicted(nightly_segments: int) -> Plan:
    """The plan for the check's workload on one group of the cost-model engine."""
    return plan(workload(nightly_segments), tp=1, measured=PRESETS[PRESET])


@dataclass
class Measured:
    nightly_segments_per_s: float
    interactive: dict[str, Any]
    interactive_under_bulk: dict[str, Any] | None


async def _steady_rate(api_url: str, texts: list[str]) -> float:
    """Bulk segments per second between 10 % and 90 % of the volume done (the rate a long
    nightly run keeps, without the first chunks' start and the last ones' tail)."""
    async with httpx.AsyncClient(base_url=api_url, timeout=60) as http:
        jobs = await asyncio.gather(*(submit_job(http, p, "bulk") for p in split(texts, 250)))
        marks: list[tuple[float, int]] = []
        for share in (0.1, 0.9):
            while True:
                done = await _done(http, jobs)
                if done >= share * len(texts):
                    marks.append((time.monotonic(), done))
                    break
                await asyncio.sleep(0.05)
        await asyncio.gather(*(wait_job(http, j, 300) for j in jobs))
    (t0, d0), (t1, d1) = marks
    return (d1 - d0) / (t1 - t0)


async def _done(http: httpx.AsyncClient, jobs: list[str]) -> int:
    replies = await asyncio.gather(*(http.get(f"/v1/jobs/{j}") for j in jobs))
    return sum(int(r.raise_for_status().json()["progress"]["done"]) for r in replies)


async def _under_bulk(api_url: str, backlog: list[str], requests: list[list[str]], s: float) -> Any:
    async with httpx.AsyncClient(base_url=api_url, timeout=60) as http:
        jobs = await asyncio.gather(*(submit_job(http, p, "bulk") for p in split(backlog, 250)))
        await asyncio.sleep(2.0)  # the backlog fills the engine first
        out = await poisson_stream(api_url, requests, rate_per_s=RATE_PER_S, duration_s=s, seed=2)
        await asyncio.gather(*(http.delete(f"/v1/jobs/{j}") for j in jobs))
    return out


def measure(
    settings: dict[str, str], nightly_segments: int, window_s: float, *, under_bulk: bool = True
) -> Measured:
    """A one-worker cost-model fleet deployed with ``settings`` (the plan's), measured (the
    interactive p95 under a bulk backlog too, with ``under_bulk``)."""
    env = {**cost_env(PRESET), **settings}
    texts = fixed_length(nightly_segments, WORDS, tag="n")
    asks = fixed_length(int(RATE_PER_S * window_s * 3) * SEGMENTS_PER_REQUEST, WORDS, tag="i")
    requests = split(asks, SEGMENTS_PER_REQUEST)
    half = len(requests) // 2
    with running_fleet(env) as fleet:
        warm_up(fleet.api_url)
        rate = asyncio.run(_steady_rate(fleet.api_url, texts))
        idle = asyncio.run(
            poisson_stream(
                fleet.api_url, requests[:half], rate_per_s=RATE_PER_S, duration_s=window_s, seed=1
            )
        )
        busy = None
        if under_bulk:
            backlog = fixed_length(int(rate * (window_s + 5)), WORDS, tag="b")
            busy = asyncio.run(_under_bulk(fleet.api_url, backlog, requests[half:], window_s))
    for run in (idle, busy):
        if run is not None:
            run.pop("latencies_s", None)
            assert run["failed"] == 0, run
    return Measured(rate, idle, busy)


def plan_check(ctx: Context) -> Outcome:
    nightly = ctx.n(1500, 600)
    window_s = float(ctx.n(30, 12))
    result = predicted(nightly)
    best = result.chosen
    assert best is not None and best.groups == 1, result.options
    ctx.log(f"plan_check: {nightly} nightly segments, {RATE_PER_S:g} req/s for {window_s:.0f}s")
    got = measure(result.settings(), nightly, window_s)
    assert got.interactive_under_bulk is not None
    rate = got.nightly_segments_per_s / best.nightly_segments_per_s
    p95 = got.interactive["p95_ms"] / 1000 / best.interactive_p95_s
    p95_bulk = got.interactive_under_bulk["p95_ms"] / 1000 / best.interactive_p95_nightly_s
    return Outcome(
        figures={
            "nightly seg/s: planned": best.nightly_segments_per_s,
            "nightly seg/s: measured": got.nightly_segments_per_s,
            "interactive p95 ms: planned": best.interactive_p95_s * 1000,
            "interactive p95 ms: measured": got.interactive["p95_ms"],
            "p95 under bulk ms: planned": best.interactive_p95_nightly_s * 1000,
            "p95 under bulk ms: measured": got.interactive_under_bulk["p95_ms"],
        },
        checks=[
            Check("nightly rate measured / planned", rate, ">=", 0.85),
            Check("nightly rate measured / planned", rate, "<=", 1.15),
            Check("interactive p95 measured / planned", p95, ">=", 0.85),
            Check("interactive p95 measured / planned", p95, "<=", 1.15),
            Check("p95 under bulk measured / planned", p95_bulk, ">=", 0.85),
            Check("p95 under bulk measured / planned", p95_bulk, "<=", 1.15),
        ],
        raw={
            "settings": result.settings(),
            "interactive": got.interactive,
            "interactive_under_bulk": got.interactive_under_bulk,
        },
    )
