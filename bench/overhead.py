"""Scenario 4: CPU the fleet itself spends per segment, with an engine that costs nothing.

CPU seconds (user + system, children included) of redis-server, the API and the worker
(launcher and Celery worker) across one bulk run, per segment. The client is not counted.

CPU time per unit of work moves by a third on these shared machines from one minute to the
next (the same code measured 78 and 115 µs/segment within ten minutes). So the scenario also
times a fixed pure-Python loop around the run, as the machine's speed at that moment: compare
two runs' CPU figures only when their reference is alike.
"""

from __future__ import annotations

import time

from bench.fleet import cost_env, run_bulk, running_fleet, warm_up
from bench.report import Check, Outcome
from bench.run_context import Context
from bench.workload import segments

IDLE_S = 2.0


def reference_ms() -> float:
    """CPU milliseconds of a fixed pure-Python loop (the median of three): how fast this
    machine runs Python right now."""
    times = []
    for _ in range(3):
        t0 = time.process_time()
        sum(i * i for i in range(1_000_000))
        times.append((time.process_time() - t0) * 1000)
    return sorted(times)[1]


def overhead(ctx: Context) -> Outcome:
    texts = segments(ctx.n(20000, 5000), seed=ctx.seed, tag="o")
    ref_before = reference_ms()
    with running_fleet(cost_env("zero")) as fleet:
        warm_up(fleet.api_url)
        c0 = fleet.cpu_seconds()
        time.sleep(IDLE_S)
        c1 = fleet.cpu_seconds()
        ctx.log(f"overhead: {len(texts)} segments through the zero-cost engine")
        through = run_bulk(fleet.api_url, texts, job_size=1000)
        c2 = fleet.cpu_seconds()
    reference = (ref_before + reference_ms()) / 2
    per = {name: (c2[name] - c1[name]) / len(texts) * 1e6 for name in c2}
    total = sum(per.values())
    idle = {name: (c1[name] - c0[name]) / IDLE_S for name in c1}
    figures: dict[str, object] = {
        "segments": len(texts),
        "fleet seg/s (zero-cost engine)": through["segments_per_s"],
    }
    figures.update({f"{name} µs/segment": v for name, v in per.items()})
    figures["reference loop ms (machine speed)"] = reference
    return Outcome(
        figures=figures,
        checks=[Check("CPU µs / segment", total, "<=", 60, " µs")],
        raw={
            "fleet": {k: v for k, v in through.items() if k != "translations"},
            "cpu_us_per_segment": per,
            "idle_cpu_s_per_s": idle,
            "reference_loop_ms": reference,
        },
    )
