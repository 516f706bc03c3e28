"""Scenario: the designs this project grew from, side by side with the fleet, on one engine and
one set of segments.

The deployment notes the fleet replaces served translation in one process, in front of the
model, in one of three ways; each is run here exactly as described, in-process (no HTTP, no
Redis: they pay none of the fleet's overhead), on the cost-model engine at H200 + 7B figures
with the fleet's own step budget (so the engine is the same), each batch one
``engine.translate`` call that returns when its slowest request is done:

* **one at a time**: each request alone, in arrival order;
* **fixed window** (the WebUI notes' ``BatchProcessor``): a batch opens at the first request
  waiting and closes 50 ms later or at 4 requests, whichever comes first;
* **adaptive window** (the notes' variant): the same, with the window between 10 and 100 ms,
  longer as batches fill (``10 ms + 90 ms × last batch size / 32``) and up to 32 requests.

The fleet (API, Redis, one worker; the same engine in the worker) gets the same requests
through ``POST /v1/translate`` and bulk jobs. Two figures per design, both from one run:

* **throughput**: a backlog of segments all waiting at once, segments per second;
* **latency**: single-segment requests arriving as a Poisson process (``RATE_PER_S``), p50 and
  p95 from arrival to answer.

Ratios: fleet throughput over each design's, and each design's p95 over the fleet's. Absolute
figures are a simulated H200 (the cost model's), not this machine.
"""

from __future__ import annotations

import asyncio
import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.costengine import CostModelEngine, CostParams
from bench.fleet import cost_env, patched_environ, run_bulk, running_fleet, warm_up
from bench.loadgen import latency_summary, poisson_stream
from bench.report import Check, Outcome
from bench.run_context import Context
from bench.workload import SOURCE, TARGET, segments
from mtfleet.core.settings import EngineSettings, Settings
from mtfleet.workers.engines.base import TranslationRequest

RATE_PER_S = 5.0


@dataclass(frozen=True)
class Design:
    name: str
    max_batch: int
    window_s: Callable[[int], float]  # the next window, from the last batch's size


DESIGNS = (
    Design("one at a time", 1, lambda _last: 0.0),
    Design("fixed window 50 ms x 4", 4, lambda _last: 0.05),
    Design("adaptive window 10-100 ms", 32, lambda last: 0.01 + 0.09 * min(1.0, last / 32)),
)


def serve(
    design: Design, engine: CostModelEngine, arrivals: list[tuple[float, str]]
) -> list[float]:
    """Run ``design`` over requests arriving at the given offsets (seconds from now); the
    latency of each, from its arrival to the end of its batch."""
    inbox: queue.Queue[tuple[float, str]] = queue.Queue()
    start = time.monotonic()

    def feed() -> None:
        for offset, text in arrivals:
            delay = start + offset - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            inbox.put((time.monotonic(), text))

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    latencies: list[float] = []
    last = 0
    while len(latencies) < len(arrivals):
        batch = [inbox.get()]  # a batch opens at the first request waiting
        closes = time.monotonic() + design.window_s(last)
        while len(batch) < design.max_batch:
            left = closes - time.monotonic()
            try:
                batch.append(inbox.get(timeout=left) if left > 0 else inbox.get_nowait())
            except queue.Empty:
                break
        engine.translate([TranslationRequest(t, SOURCE, TARGET) for _, t in batch])
        done = time.monotonic()
        latencies += [done - arrived for arrived, _ in batch]
        last = len(batch)
    feeder.join()
    return latencies


def poisson(texts: list[str], rate: float, seed: int) -> list[tuple[float, str]]:
    rng = random.Random(seed)
    at, out = 0.0, []
    for t in texts:
        at += rng.expovariate(rate)
        out.append((at, t))
    return out


def baselines(ctx: Context) -> Outcome:
    duration = float(ctx.n(12, 5))
    n_stream = int(RATE_PER_S * duration)
    with patched_environ(cost_env("h200-7b")):
        preset = CostParams.from_env()
    env = {**cost_env("h200-7b"), **preset.step_budget(Settings().scheduler.interactive_slowdown)}
    with patched_environ(env):
        engine = CostModelEngine(EngineSettings())
    engine.load()
    rows: dict[str, dict[str, Any]] = {}
    try:
        for k, design in enumerate(DESIGNS):
            # a backlog that keeps this design busy for a few seconds
            n = ctx.n(60, 20) * design.max_batch
            backlog = segments(n, seed=ctx.seed, tag=f"bl{k}")
            t0 = time.monotonic()
            serve(design, engine, [(0.0, t) for t in backlog])
            throughput = n / (time.monotonic() - t0)
            stream = segments(n_stream, seed=ctx.seed, tag="blstream")
            lat = serve(design, engine, poisson(stream, RATE_PER_S, ctx.seed))
            rows[design.name] = {
                "backlog": n,
                "segments_per_s": throughput,
                **latency_summary(lat),
            }
            ctx.log(
                f"baselines: {design.name}: {throughput:.1f} seg/s, "
                f"p95 {rows[design.name]['p95_ms']:.0f} ms"
            )
    finally:
        engine.close()
    fleet = _fleet(ctx, env, n_stream)
    rows["fleet"] = fleet
    figures: dict[str, Any] = {}
    checks: list[Check] = []
    figures["engine"] = "cost model, H200 + 7B (simulated: a projection, not this CPU)"
    for name, row in rows.items():
        figures[f"{name}: seg/s; p50 / p95 ms"] = (
            f"{row['segments_per_s']:,.1f}; {row['p50_ms']:.0f} / {row['p95_ms']:.0f}"
        )
    for design in DESIGNS:
        row = rows[design.name]
        figures[f"fleet / {design.name}: throughput x, p95 x"] = (
            f"{fleet['segments_per_s'] / row['segments_per_s']:.1f}x, "
            f"{row['p95_ms'] / fleet['p95_ms']:.2f}x"
        )
    checks.append(
        Check(
            "fleet / fixed window throughput",
            fleet["segments_per_s"] / rows[DESIGNS[1].name]["segments_per_s"],
            ">=",
            10,
        )
    )
    return Outcome(
        figures=figures,
        checks=checks,
        raw={"rate_per_s": RATE_PER_S, "step_budget": env, "designs": rows},
        notes=[
            "baselines run in-process on the cost-model engine (simulated H200 + 7B, the "
            "fleet's step budget); the fleet runs the same engine behind HTTP and Redis"
        ],
    )


def _fleet(ctx: Context, env: dict[str, str], n_stream: int) -> dict[str, Any]:
    """The fleet on the same engine: a bulk backlog's throughput, then the same Poisson stream
    of single segments through ``POST /v1/translate``."""
    with running_fleet(env) as fleet:
        warm_up(fleet.api_url)
        backlog = segments(ctx.n(8000, 3000), seed=ctx.seed, tag="blfleet")
        bulk = run_bulk(fleet.api_url, backlog)
        stream = segments(n_stream, seed=ctx.seed, tag="blstream")

        lat = asyncio.run(
            poisson_stream(
                fleet.api_url,
                [[t] for t in stream],
                rate_per_s=RATE_PER_S,
                duration_s=n_stream / RATE_PER_S * 3,
                seed=ctx.seed,
            )
        )
    ctx.log(f"baselines: fleet: {bulk['segments_per_s']:.0f} seg/s, p95 {lat['p95_ms']:.0f} ms")
    return {
        "backlog": len(backlog),
        "segments_per_s": bulk["segments_per_s"],
        "failed": bulk["failed"] + lat["failed"],
        **{k: lat[k] for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms", "sent", "timed_out")},
    }
