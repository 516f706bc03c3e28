"""Scenario ``openai_engine``: workers in front of vLLM's OpenAI server (the ``openai``
engine) next to vLLM in the worker itself (the ``vllm`` engine), on the same tiny model, the
same settings and the same segments.

Two fleets, one after the other (private Redis, API, one worker each):

1. the worker runs vLLM in-process (``MT_ENGINE=vllm``);
2. the worker runs the ``openai`` engine in front of ``python -m
   vllm.entrypoints.openai.api_server`` started with the same engine arguments (dtype, eager,
   KV cache, the step budget and sequence limit), ``MT_OPENAI_CONCURRENCY`` at the server's
   ``--max-num-seqs``.

Reported: each fleet's throughput (first submit to last result read), their ratio, and how many
outputs differ: greedy decoding of the same prompt ids with the same ``max_tokens``, so none
should. Not part of ``make test``; ``python -m bench --only openai_engine``.
"""

from __future__ import annotations

import shutil
from typing import Any

from bench.fleet import run_bulk, running_fleet, tiny_model, vllm_env, warm_up
from bench.report import Check, Outcome
from bench.run_context import Context
from bench.workload import segments
from mtfleet.fleet.localfleet import LocalFleet

MAX_SEQS = 256  # vLLM's default on the CPU, set on both sides so they match by construction
STEP_TOKENS = 4096


def openai_engine(ctx: Context) -> Outcome:
    if not (tiny_model() / "config.json").exists():
        raise RuntimeError(f"tiny model missing at {tiny_model()}: run `make test-deps`")
    texts = segments(ctx.n(1500, 300), seed=ctx.seed, tag="o")
    limits = {
        "MT_MAX_SEQS": str(MAX_SEQS),
        "MT_MAX_STEP_TOKENS": str(STEP_TOKENS),
        # throughput, not deadlines: a cold streaming scheduler gives its first 2 x max_seqs
        # requests the deadline floor, and on a busy 2-core machine they can all queue past it
        "MT_ENGINE_DEADLINE_FLOOR_S": "300",
    }
    in_process = {**vllm_env(), **limits}
    ctx.log(f"openai_engine: in-process vLLM fleet ({len(texts)} segments)")
    with running_fleet(in_process, ready_timeout=600) as fleet:
        warm_up(fleet.api_url)
        direct = run_bulk(fleet.api_url, texts, job_size=len(texts) // 4, timeout=600)

    ctx.log("openai_engine: vLLM's OpenAI server, then a fleet in front of it")
    server = LocalFleet(redis_url=None)
    try:
        url = server.start_vllm_server(
            str(tiny_model()),
            served_name="tiny",
            args=(
                "--dtype",
                "float32",
                "--enforce-eager",
                "--max-num-seqs",
                str(MAX_SEQS),
                "--max-num-batched-tokens",
                str(STEP_TOKENS),
            ),
            env={"VLLM_CPU_KVCACHE_SPACE": in_process["VLLM_CPU_KVCACHE_SPACE"]},
        )
        served = {
            **{k: v for k, v in in_process.items() if k not in ("MT_ENGINE", "MT_MODEL")},
            "MT_ENGINE": "openai",
            "MT_MODEL": "tiny",
            "MT_OPENAI_BASE_URL": url,
            "MT_OPENAI_CONCURRENCY": str(MAX_SEQS),
        }
        with running_fleet(served, ready_timeout=600) as fleet:
            warm_up(fleet.api_url)
            remote = run_bulk(fleet.api_url, texts, job_size=len(texts) // 4, timeout=600)
    finally:
        server.stop()
        shutil.rmtree(server.workdir, ignore_errors=True)

    ratio = remote["segments_per_s"] / direct["segments_per_s"]
    differ = sum(
        1 for a, b in zip(direct["translations"], remote["translations"], strict=True) if a != b
    )
    return Outcome(
        figures={
            "segments": len(texts),
            "in-process vllm seg/s": direct["segments_per_s"],
            "openai engine seg/s": remote["segments_per_s"],
            "outputs that differ": differ,
            "failed (in-process, openai)": f"{direct['failed']}, {remote['failed']}",
        },
        checks=[Check("openai engine / in-process vllm", ratio, ">=", 0.8)],
        raw={"in_process": _summary(direct), "openai": _summary(remote), "ratio": ratio},
        notes=[
            "Both on this machine's CPUs: the server's processes share the cores with the "
            "worker, the API and Redis, as the in-process engine's do."
        ],
    )


def _summary(run: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in run.items() if k != "translations"}
