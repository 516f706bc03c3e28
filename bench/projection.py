"""Scenario 6: requests/s for 128-in/128-out work through the fleet at H200 + 7B figures.

Segments of exactly 96 words (``estimate_tokens`` counts 128 tokens) with the cost model's
``out_ratio`` of 1 (128 out) go through a fleet running the cost-model engine; the fleet's
requests/s stand next to the cost model's steady-state ceiling and its direct run on the same
segments. A projection, not a measurement of a GPU.
"""

from __future__ import annotations

import math

from bench.costengine import CostParams, direct_throughput
from bench.efficiency import cost_requests
from bench.fleet import cost_env, patched_environ, run_bulk, running_fleet, warm_up
from bench.report import Outcome
from bench.run_context import Context
from bench.workload import fixed_length
from mtfleet.workers.engines.base import estimate_tokens

WORDS = 96  # estimate_tokens: 96 words -> 128 tokens


def projection(ctx: Context) -> Outcome:
    env = cost_env("h200-7b", out_ratio="1.0")
    with patched_environ(env):
        params = CostParams.from_env()
    ceiling = params.ceiling(128, 128)
    n = int(math.ceil(ceiling * ctx.n(12, 5) / 100) * 100)
    texts = fixed_length(n, WORDS, seed=ctx.seed, tag="p")
    assert {estimate_tokens(t) for t in texts} == {128}
    direct = direct_throughput(params, cost_requests(params, texts))
    ctx.log(f"projection: {n} segments of 128 tokens through the fleet")
    with running_fleet(env) as fleet:
        warm_up(fleet.api_url)
        through = run_bulk(fleet.api_url, texts, job_size=500)
    rps = through["segments_per_s"]
    return Outcome(
        figures={
            "segments (128 in / 128 out)": n,
            "cost-model ceiling req/s": ceiling,
            "engine direct req/s": direct["requests_per_s"],
            "fleet req/s (projected H200)": rps,
            "fleet / ceiling": rps / ceiling,
            "fleet / direct": rps / direct["requests_per_s"],
            "fleet output tokens/s": rps * 128,
        },
        raw={
            "params": params.__dict__,
            "direct": direct,
            "fleet": {k: v for k, v in through.items() if k != "translations"},
        },
    )
