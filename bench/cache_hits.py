"""Scenario 5: fully cached ``POST /v1/translate`` against ``GET /healthz`` on the same API.

The phrase cache is warmed with a set of phrases (one job, waited for); then ``concurrency``
keep-alive connections send requests of 1-5 of those phrases back to back, and afterwards the
same load of ``/healthz``. Every translate answer must say all its phrases were cached. The
targets are read at that load; a short run on one connection shows the unloaded latency.
"""

from __future__ import annotations

import json
import random
from urllib.parse import urlsplit

from bench.fleet import cost_env, run_bulk, running_fleet, warm_up
from bench.loadgen import hammer, request_bytes
from bench.report import Check, Outcome
from bench.run_context import Context
from bench.workload import SOURCE, TARGET, phrases

CONCURRENCY = 8


def cache(ctx: Context) -> Outcome:
    duration = float(ctx.n(10, 4))
    warm = phrases(500, seed=ctx.seed)
    rng = random.Random(ctx.seed)
    bodies = [rng.sample(warm, rng.randint(1, 5)) for _ in range(1000)]
    with running_fleet(cost_env("zero")) as fleet:
        warm_up(fleet.api_url)
        filled = run_bulk(fleet.api_url, warm, job_size=len(warm))
        host = urlsplit(fleet.api_url).netloc
        translate_reqs = [
            request_bytes(
                host,
                "POST",
                "/v1/translate",
                {"texts": b, "source_lang": SOURCE, "target_lang": TARGET},
            )
            for b in bodies
        ]
        health_req = request_bytes(host, "GET", "/healthz")

        def check_translate(n: int, body: bytes, status: int) -> str | None:
            if status != 200:
                return f"{status} {body[:200]!r}"
            cached = json.loads(body)["cached"]
            want = len(bodies[n % len(bodies)])
            return None if cached == want else f"cached {cached} of {want}"

        def check_health(_n: int, body: bytes, status: int) -> str | None:
            return None if status == 200 else f"{status} {body[:200]!r}"

        ctx.log(f"cache: {CONCURRENCY} connections x {duration:.0f}s of /v1/translate, /healthz")
        hits = hammer(
            fleet.api_url,
            lambda n: translate_reqs[n % len(translate_reqs)],
            check_translate,
            concurrency=CONCURRENCY,
            duration_s=duration,
        ).summary()
        single = hammer(
            fleet.api_url,
            lambda n: translate_reqs[n % len(translate_reqs)],
            check_translate,
            concurrency=1,
            duration_s=duration / 3,
        ).summary()
        health = hammer(
            fleet.api_url,
            lambda _n: health_req,
            check_health,
            concurrency=CONCURRENCY,
            duration_s=duration,
        ).summary()
    return Outcome(
        figures={
            "cache-hit req/s": hits["requests_per_s"],
            "healthz req/s": health["requests_per_s"],
            "healthz p95 ms": health["p95_ms"],
            "cache-hit p50 ms": hits["p50_ms"],
            "cache-hit p95 ms, 1 connection": single["p95_ms"],
            "errors (hit / healthz)": f"{hits['errors']} / {health['errors']}",
        },
        checks=[
            Check("cache-hit p95", hits["p95_ms"], "<=", 10, " ms"),
            Check(
                "cache-hit rps / healthz rps",
                hits["requests_per_s"] / health["requests_per_s"],
                ">=",
                0.3,
            ),
        ],
        raw={
            "concurrency": CONCURRENCY,
            "phrases": len(warm),
            "warm_job": {k: v for k, v in filled.items() if k != "translations"},
            "cache_hit": hits,
            "cache_hit_one_connection": single,
            "healthz": health,
        },
    )
