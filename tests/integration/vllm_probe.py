"""Load the vLLM engine from MT_* settings in a fresh process and translate stdin's texts.

vLLM starts engine processes with spawn, so it runs here behind a ``__main__`` guard rather
than inside pytest. The texts go through the scheduler a worker builds for the engine
(:func:`~mtfleet.workers.scheduler.make_scheduler`), exactly as a chunk's do. With
``"cancel": N`` it then submits N requests for a job, cancels the job as the worker does when
it hears of the cancellation (``Scheduler.cancel_job``) and reports what vLLM still holds. With
``"adapter": NAME`` the texts are translated again with that LoRA adapter (MT_LORA_ADAPTERS),
then once more, plain and adapted requests interleaved in one submission;
with ``"configs": [{setting: value}, ...]`` vLLM's config is first built (not loaded) from the
engine's arguments of the settings with those changes. With ``"vanish": true`` one request of
a submission ends without output (:func:`vanish_probe`). With ``"guidance": {...}`` one request
carries it, and the prompt vLLM got is reported (:func:`guided_probe`).
Prints one JSON object: limits, fingerprint(s), load time, the engine arguments as vLLM's own
config holds them, and one outcome per text.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def cancel_probe(engine: Any, scheduler: Any, n: int) -> dict[str, Any]:
    """N requests of one job, cancelled while they run: how many were aborted inside vLLM,
    how long their waiter waited, and whether vLLM is left with unfinished requests."""
    from mtfleet.workers.engines import TranslationRequest

    reqs = [TranslationRequest(f"cancel me {i} " + "word " * 40, "en", "es", 1) for i in range(n)]
    ticket = scheduler.submit(reqs, job_id="cancelled-job")
    time.sleep(0.3)  # some running inside vLLM, the rest waiting in it or in the scheduler
    t0 = time.monotonic()
    dropped = scheduler.cancel_job("cancelled-job")
    outcomes = ticket.result(timeout=60)
    resolved_s = time.monotonic() - t0
    time.sleep(1.0)  # vLLM frees aborted requests at its next step
    unfinished = engine.llm.output_processor.get_num_unfinished_requests()
    after = scheduler.submit([TranslationRequest("Red shoes", "en", "es")], job_id="next")
    return {
        "dropped": dropped,
        "cancelled": sum(1 for o in outcomes if (o.error or {}).get("type") == "cancelled"),
        "translated": sum(1 for o in outcomes if o.ok),
        "resolved_s": resolved_s,
        "unfinished_in_vllm": unfinished,
        "next_ok": after.result(timeout=60)[0].ok,
    }


#: The source texts of the ``"vanish"`` probe: the middle one's request ends without output.
VANISH = ["Red running shoes", "This request ends without any output.", "A blue wool hat"]


def vanish_probe(engine: Any, scheduler: Any, downs: list[str]) -> dict[str, Any]:
    """One submission of three requests whose middle one vLLM finishes without an output (its
    ``generate`` stream ends having yielded nothing: vLLM's request-level outcome, not a dead
    engine): the outcome of each, whether the engine was reported down, and whether the same
    engine then serves a new request."""
    from mtfleet.workers.engines import TranslationRequest

    reqs = [TranslationRequest(t, "en", "es") for t in VANISH]
    empty = engine._counts(reqs[1])[0]
    llm = engine.llm
    real = llm.generate

    async def generate(prompt: Any, params: Any, **kwargs: Any) -> Any:
        stream = real(prompt, params, **kwargs)
        if prompt["prompt_token_ids"] != empty:
            async for out in stream:
                yield out
            return
        async for _ in stream:  # it runs in vLLM; no output reaches the caller
            pass

    llm.generate = generate
    try:
        try:
            outcomes = [o.model_dump(exclude_none=True) for o in scheduler.submit(reqs).result(60)]
        except Exception as exc:  # noqa: BLE001 - what the probe reports
            outcomes = [{"raised": f"{type(exc).__name__}: {exc}"}]
    finally:
        del llm.generate  # vLLM's own again
    try:
        after = scheduler.submit([TranslationRequest("Red shoes", "en", "es")]).result(60)
        next_ok = after[0].ok
    except Exception:  # noqa: BLE001
        next_ok = False
    return {
        "outcomes": outcomes,
        "engine_down": list(downs),
        "same_engine": engine.llm is llm and engine.alive(),
        "next_ok": next_ok,
    }


def guided_probe(engine: Any, scheduler: Any, guidance: dict[str, Any]) -> dict[str, Any]:
    """One request with ``guidance`` (a :class:`~mtfleet.core.guidance.Guidance` as JSON)
    through the scheduler: the prompt vLLM was given, decoded from the token ids it got, and
    the outcome."""
    from mtfleet.core.guidance import Guidance
    from mtfleet.workers.engines import TranslationRequest

    seen: list[list[int]] = []
    llm = engine.llm
    real = llm.generate

    def generate(prompt: Any, params: Any, **kwargs: Any) -> Any:
        seen.append(list(prompt["prompt_token_ids"]))
        return real(prompt, params, **kwargs)

    llm.generate = generate
    try:
        req = TranslationRequest(
            "She wore them.", "en", "de", guidance=Guidance.model_validate(guidance)
        )
        outcome = scheduler.submit([req]).result(60)[0]
    finally:
        del llm.generate
    return {
        "prompts": [engine.tokenizer.decode(ids) for ids in seen],
        "outcome": outcome.model_dump(exclude_none=True),
    }


def vllm_config(cfg: Any) -> dict[str, Any]:
    """The settings this fleet passes to vLLM, read back from vLLM's own config."""
    lora = cfg.lora_config
    return {
        "quantization": cfg.model_config.quantization,
        "kv_cache_dtype": cfg.cache_config.cache_dtype,
        "enable_prefix_caching": cfg.cache_config.enable_prefix_caching,
        "block_size": cfg.cache_config.block_size,
        "pipeline_parallel_size": cfg.parallel_config.pipeline_parallel_size,
        "max_loras": lora.max_loras if lora else None,
        "max_lora_rank": lora.max_lora_rank if lora else None,
        "max_num_seqs": cfg.scheduler_config.max_num_seqs,
        "max_num_batched_tokens": cfg.scheduler_config.max_num_batched_tokens,
        "scheduling_policy": str(cfg.scheduler_config.policy),
    }


def built_config(settings: Any) -> dict[str, Any]:
    from vllm.engine.arg_utils import EngineArgs

    from mtfleet.workers.engines.vllm_engine import engine_kwargs

    return vllm_config(EngineArgs(**engine_kwargs(settings)).create_engine_config())


def main() -> None:
    from mtfleet.core.settings import Settings
    from mtfleet.workers.engines import TranslationRequest, create_engine
    from mtfleet.workers.scheduler import Deadlines, make_scheduler

    job = json.load(sys.stdin)
    # first, vLLM's config as it builds it from the engine's arguments of other settings
    # (without loading weights: what needs a GPU to run, such as FP8, is checked this far)
    configs = [built_config(Settings(**overrides).engine) for overrides in job.get("configs", [])]
    engine = create_engine(Settings())
    t0 = time.monotonic()
    engine.load()
    load_s = time.monotonic() - t0
    settings = Settings()
    # the worker's deadlines (workers/runtime.py), so the probe's env sets them as it does a
    # worker's: MT_ENGINE_DEADLINE_FLOOR_S above all, for two ranks on two shared cores
    deadlines = Deadlines(
        factor=settings.worker.engine_deadline_factor,
        floor_s=settings.worker.engine_deadline_floor_s,
    )
    downs: list[str] = []  # what the worker's EngineHealth would be told (it restarts)
    scheduler = make_scheduler(
        engine, latency_target_s=None, deadlines=deadlines, on_engine_down=downs.append
    )
    reqs = [TranslationRequest(t, job["source"], job["target"]) for t in job["texts"]]
    t0 = time.monotonic()
    outcomes = scheduler.submit(reqs).result(timeout=300)
    gen_s = time.monotonic() - t0
    limits = engine.limits
    result: dict[str, Any] = {
        "load_s": load_s,
        "generate_s": gen_s,
        "fingerprint": engine.fingerprint,
        "limits": [limits.max_sequences, limits.max_batch_tokens, limits.max_input_tokens],
        "n_pairs": len(engine.pairs()),
        "outcomes": [o.model_dump(exclude_none=True) for o in outcomes],
        "adapters": engine.adapters(),
        "config": vllm_config(engine.llm.vllm_config),
        "configs": configs,
    }
    if job.get("adapter"):
        adapted = [
            TranslationRequest(t, job["source"], job["target"], 0, job["adapter"])
            for t in job["texts"]
        ]
        result["adapter_outcomes"] = [
            o.model_dump(exclude_none=True) for o in scheduler.submit(adapted).result(timeout=300)
        ]
        # the same requests again, plain and adapted interleaved in one submission: one step
        result["mixed_outcomes"] = [
            o.model_dump(exclude_none=True)
            for o in scheduler.submit(
                [r for pair in zip(reqs, adapted, strict=True) for r in pair]
            ).result(timeout=300)
        ]
    if job.get("cancel"):
        result["cancel"] = cancel_probe(engine, scheduler, int(job["cancel"]))
    if job.get("vanish"):
        result["vanish"] = vanish_probe(engine, scheduler, downs)
    if job.get("guidance"):
        result["guided"] = guided_probe(engine, scheduler, job["guidance"])
    print("PROBE_RESULT " + json.dumps(result), flush=True)
    scheduler.close()
    engine.close()


if __name__ == "__main__":
    main()
