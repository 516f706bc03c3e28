"""Scenario 3: interactive latency while a bulk backlog saturates the fleet, on two engines.

For each engine — the cost-model engine at H200 + 7B figures (a continuous-batching GPU,
simulated: ``bench/costengine.py``) and Apertium (a real batch engine on this machine's CPU) —
one fleet, and ``runs`` loaded blocks, each between two idle windows (idle, block, idle, block,
…, idle), every window with its own segments (the phrase cache never helps):

* *idle*: a Poisson stream of interactive requests (1-5 short strings, ``POST /v1/translate``)
  on an otherwise idle fleet, in slices of ``SLICE_S``;
* *loaded block*: a bulk backlog larger than the fleet can finish in the block, and after a
  warm-up slices of ``SLICE_S`` with the same interactive stream off, on, off, …, off. Bulk
  throughput is read from the jobs' progress at every slice's end, so *bulk kept* compares the
  slices with the stream against those without it, of one backlog.

Why this shape: these machines are shared VMs whose hypervisor takes 0-20 % of the CPU in
bursts of seconds (``vmstat``'s steal column), so two phases measured half a minute apart
differ by as much as the effect measured. Idle windows on both sides of every block, and
alternating slices within one backlog, make that drift cancel instead of landing on one side.

The check figures are pooled: the p95 of every loaded-slice request over the p95 of every idle
request (a run's p95 of ~100 requests is its 5th-slowest one: a single burst of steal moves it),
and bulk throughput over all on slices over that of all off slices. Beside them: every run's own
ratio (the spread) and a bootstrap interval over runs (resampling whole runs, 90 %).
"""

from __future__ import annotations

import asyncio
import math
import random
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
from bench.loadgen import latency_summary, percentile, poisson_stream
from bench.report import Check, Outcome
from bench.run_context import Context
from bench.workload import SOURCE, TARGET, interactive_requests, segments
from mtfleet.core.settings import EngineSettings, Settings

RATE_PER_S = 8.0
WARM_S = 3.0
SLICE_S = 4.0
ENGINES = ("costmodel", "apertium")


async def _done(http: httpx.AsyncClient, job_ids: list[str]) -> int:
    jobs = await asyncio.gather(*(http.get(f"/v1/jobs/{j}") for j in job_ids))
    return sum(int(r.raise_for_status().json()["progress"]["done"]) for r in jobs)


async def _window(
    fleet: BenchFleet,
    backlog: list[str],
    pattern: list[bool],
    stream: list[list[str]],
    seed: int,
) -> dict[str, Any]:
    """Slices of ``SLICE_S``, the interactive stream on in those ``pattern`` marks, over a bulk
    ``backlog`` (none: an idle window). A slice with the stream ends when its last request is
    answered, so the next one starts without it."""
    limits = httpx.Limits(max_connections=200)
    latencies: list[float] = []
    sent = timed_out = failed = 0
    first_failure: str | None = None
    bulk = {True: [0, 0.0], False: [0, 0.0]}  # stream on? -> [segments done, seconds]
    cpu: dict[bool, dict[str, float]] = {True: {}, False: {}}  # stream on? -> part -> CPU s
    answered_on = 0
    slices: list[dict[str, Any]] = []
    async with httpx.AsyncClient(base_url=fleet.api_url, timeout=60, limits=limits) as http:
        job_ids: list[str] = []
        if backlog:
            job_ids = list(
                await asyncio.gather(*(submit_job(http, p, "bulk") for p in split(backlog, 1000)))
            )
            await asyncio.sleep(WARM_S)
        done0, t0 = await _done(http, job_ids), time.monotonic()
        cpu0 = fleet.cpu_by_part()
        for i, on in enumerate(pattern):
            task = None
            if on:
                task = asyncio.create_task(
                    poisson_stream(
                        fleet.api_url,
                        stream[sent:],
                        rate_per_s=RATE_PER_S,
                        duration_s=SLICE_S,
                        seed=seed * 1000 + i,
                    )
                )
            await asyncio.sleep(SLICE_S)
            if task is not None:
                s = await task
                latencies += s["latencies_s"]
                answered_on += len(s["latencies_s"])
                sent += s["sent"]
                timed_out += s["timed_out"]
                failed += s["failed"]
                first_failure = first_failure or s["first_failure"]
            done1, t1 = await _done(http, job_ids), time.monotonic()
            cpu1 = fleet.cpu_by_part()
            bulk[on][0] += done1 - done0
            bulk[on][1] += t1 - t0
            for part, seconds in cpu1.items():
                cpu[on][part] = cpu[on].get(part, 0.0) + seconds - cpu0.get(part, seconds)
            slices.append({"stream": on, "s": t1 - t0, "bulk_done": done1 - done0})
            done0, t0, cpu0 = done1, t1, cpu1
        queued = _queue_len(fleet)
        if job_ids:
            await asyncio.gather(*(http.delete(f"/v1/jobs/{j}") for j in job_ids))
    await asyncio.to_thread(_drain, fleet)
    out: dict[str, Any] = {
        "slices": slices,
        "cpu_on": cpu[True],  # CPU seconds by part (BenchFleet.cpu_by_part), all on slices
        "cpu_off": cpu[False],
        "answered_on": answered_on,
        "latencies_s": latencies,
        "interactive": {
            "sent": sent,
            "answered": len(latencies),
            "timed_out": timed_out,
            "failed": failed,
            "first_failure": first_failure,
            **latency_summary(latencies),
        },
    }
    if job_ids:
        (on_n, on_s), (off_n, off_s) = bulk[True], bulk[False]
        out |= {
            "backlog": len(backlog),
            "backlog_left": len(backlog) - done0,
            "bulk_queue_len_at_end": queued,
            "bulk_alone_segments_per_s": off_n / off_s if off_s else math.nan,
            "bulk_with_interactive_segments_per_s": on_n / on_s if on_s else math.nan,
            "bulk_on": [on_n, on_s],
            "bulk_off": [off_n, off_s],
        }
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
    budget = preset.step_budget(Settings().scheduler.interactive_slowdown)
    env = {**cost_env("h200-7b"), **budget}
    with patched_environ(env):
        params = CostModelEngine(EngineSettings()).params
    sample = segments(2000, seed=seed, tag="sample")
    rate = float(direct_throughput(params, cost_requests(params, sample))["requests_per_s"])
    return env, rate


def apertium_rate(seed: int) -> tuple[dict[str, str], float]:
    """Apertium's environment and its direct rate here: 600 segments in calls of 200 (the
    pipeline's best batching on this machine; larger calls gain nothing)."""
    from mtfleet.workers.engines.apertium import ApertiumEngine
    from mtfleet.workers.engines.base import TranslationRequest

    engine = ApertiumEngine(EngineSettings())
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
    # default settings: the worker runs a process per lane by itself (MT_PROCESS_PER_LANE=auto,
    # docs/operations.md), so the interactive lane's Python never waits for the bulk lane's GIL
    return {"MT_ENGINE": "apertium"}, rate


RATES: dict[str, Callable[[int], tuple[dict[str, str], float]]] = {
    "costmodel": costmodel_rate,
    "apertium": apertium_rate,
}


def _pattern(on_slices: int) -> list[bool]:
    """off, on, off, …, on, off: ``on_slices`` slices with the stream, one more without."""
    return [i % 2 == 1 for i in range(2 * on_slices + 1)]


def latency_runs(ctx: Context, engine: str, runs: int, on_slices: int) -> dict[str, Any]:
    """``runs`` loaded blocks on one fleet, each between two idle windows."""
    env, rate = RATES[engine](ctx.seed)
    pattern = _pattern(on_slices)
    # A backlog the engine alone could not finish in warm-up + block (x1.5).
    block_s = WARM_S + len(pattern) * SLICE_S
    n_backlog = int(math.ceil(rate * block_s * 1.5 / 1000) * 1000)
    n_stream = int(RATE_PER_S * on_slices * SLICE_S * 3) + 10
    ctx.log(
        f"{engine}: backlog {n_backlog} segments, {runs} blocks of {len(pattern)} "
        f"{SLICE_S:.0f}s slices between idle windows of {on_slices}"
    )
    idle: list[dict[str, Any]] = []
    blocks: list[dict[str, Any]] = []
    with running_fleet(env) as fleet:
        warm_up(fleet.api_url)

        def idle_window(k: int) -> None:
            stream = interactive_requests(n_stream, tag=f"{engine[:2]}{k}i")
            idle.append(asyncio.run(_window(fleet, [], [True] * on_slices, stream, 2 * k)))

        idle_window(0)
        for k in range(runs):
            tag = f"{engine[:2]}{k}"
            backlog = segments(n_backlog, seed=ctx.seed, tag=f"{tag}b")
            stream = interactive_requests(n_stream, tag=f"{tag}l")
            blocks.append(asyncio.run(_window(fleet, backlog, pattern, stream, 2 * k + 1)))
            idle_window(k + 1)
            run = _run_figures(idle[k], blocks[k], idle[k + 1])
            ctx.log(
                f"{engine} run {k + 1}: p95 idle {run['idle_p95_ms']:.0f} ms, load "
                f"{run['load_p95_ms']:.0f} ms ({run['p95_ratio']:.2f}x); bulk kept "
                f"{run['bulk_kept']:.2f} ({run['bulk_alone_segments_per_s']:.0f} seg/s alone)"
            )
    out = {
        "engine_direct_segments_per_s": rate,
        "backlog": n_backlog,
        "slice_s": SLICE_S,
        "pattern": pattern,
        "runs": [_run_figures(idle[k], blocks[k], idle[k + 1]) for k in range(runs)],
        "pooled": _pooled(idle, blocks, range(runs)),
        "interval_90": _bootstrap(idle, blocks, runs, seed=ctx.seed),
        "cpu": _cpu_budget(blocks),
        "idle_windows": idle,
        "loaded_blocks": blocks,
    }
    for w in (*idle, *blocks):  # kept, in ms, so the figures can be recomputed from the file
        w["latencies_ms"] = [round(x * 1000, 2) for x in w.pop("latencies_s")]
    return out


def _run_figures(before: dict[str, Any], block: dict[str, Any], after: dict[str, Any]) -> dict:
    """One run: its block against the idle windows on either side of it."""
    idle = before["latencies_s"] + after["latencies_s"]
    idle_p95 = percentile(idle, 95) * 1000
    load_p95 = percentile(block["latencies_s"], 95) * 1000
    return {
        "idle_p50_ms": percentile(idle, 50) * 1000,
        "idle_p95_ms": idle_p95,
        "load_p50_ms": percentile(block["latencies_s"], 50) * 1000,
        "load_p95_ms": load_p95,
        "p95_ratio": load_p95 / idle_p95,
        "bulk_alone_segments_per_s": block["bulk_alone_segments_per_s"],
        "bulk_with_interactive_segments_per_s": block["bulk_with_interactive_segments_per_s"],
        "bulk_kept": block["bulk_with_interactive_segments_per_s"]
        / block["bulk_alone_segments_per_s"],
    }


def _pooled(idle: list[dict[str, Any]], blocks: list[dict[str, Any]], ks: Any) -> dict[str, float]:
    """Runs ``ks`` (repeats allowed) as one sample: every loaded request against every idle one
    of the windows flanking those blocks, and all on slices' bulk against all off slices'."""
    ks = list(ks)
    idle_l = [x for k in ks for x in idle[k]["latencies_s"] + idle[k + 1]["latencies_s"]]
    load_l = [x for k in ks for x in blocks[k]["latencies_s"]]
    on_n = sum(blocks[k]["bulk_on"][0] for k in ks)
    on_s = sum(blocks[k]["bulk_on"][1] for k in ks)
    off_n = sum(blocks[k]["bulk_off"][0] for k in ks)
    off_s = sum(blocks[k]["bulk_off"][1] for k in ks)
    return {
        "idle_p50_ms": percentile(idle_l, 50) * 1000,
        "idle_p95_ms": percentile(idle_l, 95) * 1000,
        "load_p50_ms": percentile(load_l, 50) * 1000,
        "load_p95_ms": percentile(load_l, 95) * 1000,
        "p95_ratio": percentile(load_l, 95) / percentile(idle_l, 95),
        "bulk_alone_segments_per_s": off_n / off_s,
        "bulk_kept": (on_n / on_s) / (off_n / off_s),
    }


def _cpu_budget(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the CPU went in the loaded blocks, pooled: each part's cores with the stream off
    and on, and what the stream cost each part per request (its cores' rise over the on
    slices, per answered request). Bulk keeps what the stream leaves it: on these cores, bulk
    kept ~ 1 - (the stream's cores - the idle it filled) / bulk's cores with the stream off.
    Only where the lanes are processes of their own (Apertium's, by default) is
    the stream's cost in the worker its own; one process serving both lanes (the cost model)
    shows in ``worker`` the sum of the stream's cost and bulk's change, and the other parts
    serve both lanes' traffic too (Redis carries bulk's results)."""
    on_s = sum(b["bulk_on"][1] for b in blocks)
    off_s = sum(b["bulk_off"][1] for b in blocks)
    answered = sum(b["answered_on"] for b in blocks)
    parts = sorted({p for b in blocks for p in (*b["cpu_on"], *b["cpu_off"])})
    on = {p: sum(b["cpu_on"].get(p, 0.0) for b in blocks) / on_s for p in parts}
    off = {p: sum(b["cpu_off"].get(p, 0.0) for b in blocks) / off_s for p in parts}
    per_request = {
        p: (on[p] - off[p]) * on_s / answered * 1000
        for p in parts
        if p not in ("idle", "steal", "worker:bulk")
    }
    return {"cores_off": off, "cores_on": on, "ms_per_request": per_request}


def _bootstrap(
    idle: list[dict[str, Any]], blocks: list[dict[str, Any]], runs: int, seed: int, n: int = 2000
) -> dict[str, list[float]]:
    """5th and 95th percentiles of the pooled ratios over ``n`` resamplings of whole runs (a
    run's requests share its moment's noise, so they are resampled together)."""
    rng = random.Random(seed)
    p95s, kept = [], []
    for _ in range(n):
        p = _pooled(idle, blocks, rng.choices(range(runs), k=runs))
        p95s.append(p["p95_ratio"])
        kept.append(p["bulk_kept"])
    return {
        "p95_ratio": [percentile(p95s, 5), percentile(p95s, 95)],
        "bulk_kept": [percentile(kept, 5), percentile(kept, 95)],
    }


def interactive_under_load(ctx: Context) -> Outcome:
    on_slices = ctx.n(3, 1)
    runs = ctx.n(5, 1)
    figures: dict[str, Any] = {}
    checks: list[Check] = []
    raw: dict[str, Any] = {"rate_per_s": RATE_PER_S, "slice_s": SLICE_S, "runs": runs}
    errors: list[str] = []
    for engine in ENGINES:
        try:
            res = latency_runs(ctx, engine, runs, on_slices)
        except Exception as exc:  # noqa: BLE001 - one engine's failure must not hide the other
            errors.append(f"{engine}: {exc!r}")
            continue
        raw[engine] = res
        rs, pooled, ci = res["runs"], res["pooled"], res["interval_90"]
        label = "cost model (H200 projection)" if engine == "costmodel" else "apertium (this CPU)"
        figures[f"{label}: idle p50/p95 ms"] = (
            f"{pooled['idle_p50_ms']:.0f} / {pooled['idle_p95_ms']:.0f}"
        )
        figures[f"{label}: load p50/p95 ms"] = (
            f"{pooled['load_p50_ms']:.0f} / {pooled['load_p95_ms']:.0f}"
        )
        figures[f"{label}: p95 ratio per run (median)"] = (
            " ".join(f"{r['p95_ratio']:.2f}" for r in rs)
            + f" ({statistics.median(r['p95_ratio'] for r in rs):.2f})"
        )
        figures[f"{label}: bulk kept per run (median)"] = (
            " ".join(f"{r['bulk_kept']:.2f}" for r in rs)
            + f" ({statistics.median(r['bulk_kept'] for r in rs):.2f})"
        )
        figures[f"{label}: 90 % interval over runs, p95 ratio / bulk kept"] = (
            f"{ci['p95_ratio'][0]:.2f}-{ci['p95_ratio'][1]:.2f} / "
            f"{ci['bulk_kept'][0]:.2f}-{ci['bulk_kept'][1]:.2f}"
        )
        figures[f"{label}: bulk alone seg/s"] = pooled["bulk_alone_segments_per_s"]
        cpu = res["cpu"]
        figures[f"{label}: CPU per interactive request under load, ms"] = (
            ", ".join(f"{p} {ms:.1f}" for p, ms in cpu["ms_per_request"].items())
            + f" ({sum(cpu['ms_per_request'].values()):.1f} in all)"
        )
        bulk_part = "worker:bulk" if "worker:bulk" in cpu["cores_off"] else "worker"
        figures[f"{label}: cores with the stream off / on"] = ", ".join(
            f"{p} {cpu['cores_off'][p]:.2f} / {cpu['cores_on'][p]:.2f}" for p in (bulk_part, "idle")
        )
        windows = [*res["idle_windows"], *res["loaded_blocks"]]
        sent = sum(w["interactive"]["sent"] for w in windows)
        bad = sum(w["interactive"]["timed_out"] + w["interactive"]["failed"] for w in windows)
        figures[f"{label}: interactive sent / timed out or failed"] = f"{sent} / {bad}"
        checks.append(Check(f"{label}: p95 load / idle (pooled)", pooled["p95_ratio"], "<=", 1.5))
        checks.append(Check(f"{label}: bulk kept (pooled)", pooled["bulk_kept"], ">=", 0.9))
    return Outcome(figures=figures, checks=checks, raw=raw, errors=errors)
