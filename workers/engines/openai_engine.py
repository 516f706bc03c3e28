"""openai: thin workers in front of an OpenAI-compatible server (vLLM's server, TGI, SGLang,
llama.cpp) that runs the model; the worker keeps no weights and needs no GPU.

A streaming engine: each segment is one ``POST /v1/chat/completions`` on the engine's event
loop (:mod:`mtfleet.workers.engines.aio`), at most ``MT_OPENAI_CONCURRENCY`` open at once and
interactive requests let in first (:class:`~mtfleet.workers.engines.openai_client.PriorityGate`).
The server batches continuously on its own, as the in-process vLLM engine does; the worker's
scheduler keeps it fed and its deadlines abort a request that outlives them (the HTTP request
is closed, and vLLM's server aborts the generation). Retries and what each failure becomes:
:mod:`mtfleet.workers.engines.openai_client`.

The same translation as the in-process vLLM engine: the prompt is the one user turn of
:mod:`mtfleet.workers.prompts` (Hunyuan-MT's templates, or the generic instruction), which the
server wraps in the model's chat template; the sampling settings (``MT_TEMPERATURE``,
``MT_TOP_P``, ``MT_TOP_K``, ``MT_REPETITION_PENALTY``, ``MT_SEED``) and ``max_tokens`` from the
source's length (``MT_MAX_TOKENS_RATIO``, ``MT_MAX_TOKENS_SLACK``) within the context the
server's ``/v1/models`` reports (vLLM and SGLang say ``max_model_len``; else
``MT_MAX_MODEL_LEN``). Token counts come from the served model's tokenizer where the worker can
read it (``MT_OPENAI_TOKENIZER``), else from word-based estimates.

A server that is down is a clear error at pre-flight (``mtfleet worker`` exits saying so), and
at run time makes the worker unhealthy until it answers again: its (re)start waits for
``GET /v1/models`` up to ``MT_OPENAI_WAIT_S``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from mtfleet.core.errors import EngineUnavailable
from mtfleet.core.settings import EngineSettings
from mtfleet.workers import prompts
from mtfleet.workers.engines.aio import LoopRequest, LoopThread
from mtfleet.workers.engines.base import (
    Done,
    EngineLimits,
    Translation,
    TranslationRequest,
    collect,
    estimate_tokens,
)
from mtfleet.workers.engines.hf_model import HFModelEngine
from mtfleet.workers.engines.openai_client import Completion, OpenAIServer

log = logging.getLogger(__name__)

#: Tokens a chat template adds around the user turn, when no tokenizer can count them.
TEMPLATE_TOKENS = 16


class OpenAIEngine(HFModelEngine):
    name = "openai"
    streaming = True

    def __init__(self, settings: EngineSettings) -> None:
        super().__init__(settings)
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        self.server = OpenAIServer(
            settings.openai_base_url or "",
            key,
            concurrency=settings.openai_concurrency,
            timeout_s=settings.openai_timeout_s,
            retries=settings.openai_retries,
        )
        self._context = settings.max_model_len or 0
        self._loop = LoopThread("openai-loop")
        self._estimates = lru_cache(maxsize=8192)(self._estimate)
        self._fingerprint = self._fingerprint_of(self._identity(root=None, context=self._context))

    # -- lifecycle -----------------------------------------------------------------------------
    def preflight(self) -> list[str]:
        try:
            models = self.server.models_now()
        except EngineUnavailable as exc:
            return [f"{exc.message}: start the server first, or correct MT_OPENAI_BASE_URL"]
        if self.settings.model not in models:
            return [self._not_served(models)]
        return []

    def load(self) -> None:
        self._loop.start()
        try:
            models = self._loop.run(self.server.wait_for_models(self.settings.openai_wait_s))
            entry = models.get(self.settings.model)
            if entry is None:
                raise EngineUnavailable(self._not_served(models))
            root = str(entry.get("root") or "")
            self._context = int(entry.get("max_model_len") or 0) or self._context
            self.style = prompts.resolve_style(
                self.settings.prompt_style, f"{self.settings.model} {root}"
            )
            self.tokenizer = self._tokenizer(root)
        except BaseException:
            self.close()
            raise
        self._fingerprint = self._fingerprint_of(
            self._identity(root=entry.get("root"), context=self._context)
        )
        log.info(
            "openai engine: %s at %s (context %s, tokens %s)",
            self.settings.model,
            self.server.base_url,
            self._context or "unknown",
            "from its tokenizer" if self.tokenizer is not None else "estimated",
        )

    def _not_served(self, models: dict[str, Any]) -> str:
        return (
            f"MT_MODEL={self.settings.model} is not served at {self.server.base_url}; it serves: "
            f"{', '.join(sorted(models)) or 'nothing'}"
        )

    def _tokenizer(self, root: str) -> Any:
        """The served model's tokenizer: MT_OPENAI_TOKENIZER (must load), else MT_MODEL or
        the server's model root when either is a folder here (may fail: estimates then)."""
        wanted = self.settings.openai_tokenizer
        candidates = [wanted] if wanted else [self.settings.model, root]
        for source in candidates:
            if not source or (not wanted and not Path(source).is_dir()):
                continue
            try:
                from transformers import AutoTokenizer

                return AutoTokenizer.from_pretrained(
                    source, trust_remote_code=self.settings.trust_remote_code
                )
            except Exception as exc:
                if wanted:
                    raise EngineUnavailable(
                        f"MT_OPENAI_TOKENIZER={wanted} cannot be loaded: {exc}"
                    ) from exc
                log.warning("no tokenizer from %s (%s): token counts are estimates", source, exc)
        return None

    def _weights(self) -> str:
        """The server holds the weights: the model's name there (and its root, the server's
        path or id of them, in the identity)."""
        return self.settings.model

    def close(self) -> None:
        if self._loop.running:
            try:
                self._loop.run(self.server.aclose(), timeout=10)
            except Exception as exc:  # noqa: BLE001 - best effort on the way out
                log.debug("openai client close: %s", exc)
        self._loop.stop()

    def alive(self) -> bool:
        return self._loop.running

    # -- contract ------------------------------------------------------------------------------
    @property
    def limits(self) -> EngineLimits:
        return EngineLimits(
            max_sequences=self.settings.openai_concurrency,
            max_batch_tokens=self.settings.openai_concurrency * (self._context or 4096),
            max_input_tokens=self._context // 2,
        )

    def _control(self) -> tuple[str, ...]:
        """The served model's control tokens where its tokenizer can be read, else the common
        ones (:data:`prompts.COMMON_CONTROL_TOKENS`)."""
        return super()._control() or prompts.COMMON_CONTROL_TOKENS

    def _sizes(self, req: TranslationRequest) -> tuple[int, int]:
        """(prompt tokens, source tokens): the tokenizer's, or estimates without one."""
        return super()._sizes(req) or self._estimates(req)

    def _estimate(self, req: TranslationRequest) -> tuple[int, int]:
        user = prompts.instruction(req.text, req.source, req.target, self.style, req.guidance)
        return estimate_tokens(user) + TEMPLATE_TOKENS, estimate_tokens(req.text)

    def body(self, request: TranslationRequest) -> dict[str, Any]:
        """The chat-completion request for one segment."""
        s = self.settings
        prompt, src = self._sizes(request)
        content = prompts.user_turn(
            request.text,
            request.source,
            request.target,
            self.style,
            self._control(),
            request.guidance,
        )
        body: dict[str, Any] = {
            "model": s.model,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": self._max_tokens(prompt, src),
            "temperature": s.temperature,
            "top_p": s.top_p,
            "top_k": s.top_k,
            "repetition_penalty": s.repetition_penalty,
            "n": 1,
            "stream": False,
        }
        if s.temperature > 0:
            body["seed"] = s.seed
        return body

    def submit(self, request: TranslationRequest, done: Done) -> LoopRequest:
        """One chat completion on the engine's loop; ``done`` gets its Translation there."""
        if not self._loop.running:
            raise EngineUnavailable("openai engine used before load() or after close()")
        body = self.body(request)
        priority = request.priority

        async def translate() -> Translation:
            out: Completion = await self.server.chat(body, priority)
            text = self._output(out.text)
            return Translation(text, truncated=out.truncated, tokens_out=out.tokens_out)

        return self._loop.submit(translate, done)

    def abort(self, handle: LoopRequest) -> None:
        self._loop.abort(handle)

    def translate(self, requests: Sequence[TranslationRequest]) -> list[Translation]:
        """A whole batch at once (every request in flight together); same order out."""
        return [
            r if isinstance(r, Translation) else Translation(r) for r in collect(self, requests)
        ]
