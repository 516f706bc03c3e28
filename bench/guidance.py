"""The fleet's CPU per segment with a translation memory and a context, against without.

One fleet (private Redis, the API, one worker) on the zero-cost engine prompted as an LLM
(``MTBENCH_PROMPTED=1``: guidance reaches it and it builds every prompt with
:mod:`mtfleet.workers.prompts`), so what is measured is the fleet's own work: the API checking
the memory and the guidance, the worker looking each segment up in the memory (a match served,
the k most similar pairs as examples below the threshold), building the prompt, and the larger
cache key. Three passes over fresh texts of one kind (no phrase-cache hit in any): plain; with
a memory of ``pairs`` TMX units (default threshold 75, examples on); with the memory and a
500-character ``context``. Half of each pass's texts are stored sources with one to four
words changed, half new sentences (:class:`bench.tm.Text`), in every pass alike.

CPU per segment moves by a third on these shared machines from one minute to the next
(bench/overhead.py), so the passes run back to back in one fleet and are compared as ratios to
the plain one, with the machine's speed (a fixed loop) before and after.
"""

from __future__ import annotations

from typing import Any

import httpx

from bench.fleet import cost_env, run_bulk, running_fleet, warm_up
from bench.overhead import reference_ms
from bench.report import Check, Outcome
from bench.run_context import Context
from bench.tm import Text, tmx_file
from bench.workload import SOURCE, TARGET

CONTEXT = (
    "Product pages of an outdoor shop: hiking boots, tents, sleeping bags and stoves. The "
    "reader is a customer comparing items before buying; keep measurements and model names "
    "as they are, and write as the shop's other pages do: short, concrete, friendly. Prices "
    "are in euros and include tax; delivery takes two to four working days in the EU. "
    "Returns are free within thirty days. Sizes follow the EU system unless a page says "
    "otherwise, and colours are named as the maker names them."
)


def guidance_cpu(ctx: Context) -> Outcome:
    pairs = ctx.n(20_000, 5_000)
    n = ctx.n(6_000, 1_500)
    text = Text(ctx.seed)
    tmx, sources = tmx_file(text, pairs)
    plain_sources = [s for s in sources if "<" not in s]

    def texts() -> list[str]:
        out: list[str] = []
        seen: set[str] = set()
        while len(out) < n:
            t = text.changed(text.rng.choice(plain_sources)) if len(out) % 2 else text.sentence()
            if t not in seen:
                seen.add(t)
                out.append(t)
        return out

    ref_before = reference_ms()
    passes: dict[str, dict[str, Any]] = {}
    size = str(len(tmx) + 65_536)  # a three-language TMX: ~500 bytes a unit
    bigger = {"MT_TM_MAX_IMPORT_BYTES": size, "MT_MAX_REQUEST_BYTES": size}
    with running_fleet(cost_env("zero", prompted="1"), extra_env=bigger) as fleet:
        warm_up(fleet.api_url)
        resp = httpx.post(
            f"{fleet.api_url}/v1/translation_memories",
            files={"file": ("bench.tmx", tmx)},
            data={"name": "bench", "source_lang": SOURCE, "target_lang": TARGET},
            timeout=300,
        )
        resp.raise_for_status()
        memory = resp.json()["id"]
        # the worker builds its index of the memory at its first lookup: not part of a pass
        run_bulk(fleet.api_url, texts()[:20], job_size=20, extra={"translation_memory_id": memory})
        for name, extra in (
            ("plain", {}),
            ("memory", {"translation_memory_id": memory}),
            ("memory + context", {"translation_memory_id": memory, "context": CONTEXT}),
            ("memory again", {"translation_memory_id": memory}),
        ):
            batch = texts()
            ctx.log(f"guidance: {len(batch)} segments, {name}")
            c0 = fleet.cpu_seconds()
            through = run_bulk(fleet.api_url, batch, job_size=500, extra=extra)
            c1 = fleet.cpu_seconds()
            per = {k: (c1[k] - c0[k]) / len(batch) * 1e6 for k in c1}
            passes[name] = {
                "cpu_us_per_segment": per,
                "total_us": sum(per.values()),
                "segments_per_s": through["segments_per_s"],
                "failed": through["failed"],
            }
    reference = (ref_before + reference_ms()) / 2
    plain = passes["plain"]["total_us"]
    figures: dict[str, object] = {"memory pairs": pairs, "segments per pass": n}
    for name, p in passes.items():
        figures[f"{name}: CPU µs/segment"] = p["total_us"]
        figures[f"{name}: x plain"] = p["total_us"] / plain
        figures[f"{name}: worker µs/segment"] = p["cpu_us_per_segment"].get("worker", 0.0)
    figures["reference loop ms (machine speed)"] = reference
    return Outcome(
        figures=figures,
        checks=[
            Check("no segment failed", sum(p["failed"] for p in passes.values()), "<=", 0, ""),
        ],
        raw={"passes": passes, "reference_loop_ms": reference},
    )
