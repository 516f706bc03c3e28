"""What the engines for one Hugging Face model share (vLLM's, transformers', an
OpenAI-compatible server's): the model and what identifies its weights, the prompt, token
counts in the model's own tokenizer, and the phrase-cache fingerprint built from them.

The fingerprint is what keeps the phrase cache honest: it must change whenever the output
can, and be the same on every host that holds the same weights (a pool's workers share one).
A folder is identified by its files (:func:`model_revision`); a Hugging Face id by the commit
of the snapshot the engine loads from the local cache (:func:`snapshot_commit`), so new weights
pushed to the Hub, or two hosts holding different snapshots, never share cached translations.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from mtfleet.core.settings import EngineSettings
from mtfleet.workers import prompts
from mtfleet.workers.engines.base import Engine, TranslationRequest

#: Weights up to this size are hashed whole by :func:`model_revision` with ``content``.
CONTENT_HASH_MAX_BYTES = 2 * 1024**3
WEIGHT_SUFFIXES = {".safetensors", ".bin"}
CONFIG_SUFFIXES = {".json", ".model", ".jinja"}


def snapshot_commit(model: str, revision: str | None = None) -> str | None:
    """The commit of the snapshot of Hub model ``model`` that a load of ``revision`` (a branch,
    tag or commit; default ``main``) takes from the local Hugging Face cache, as
    ``huggingface_hub`` resolves it offline (``refs/<revision>``); None when the cache has no
    such snapshot, ``model`` is no Hub id, or huggingface_hub is not installed. Reads the cache
    only, never the network."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        config = try_to_load_from_cache(model, "config.json", revision=revision)
    except ValueError:  # HFValidationError: not a Hub id
        return None
    # <cache>/models--org--name/snapshots/<commit>/config.json
    return Path(config).parent.name if isinstance(config, str) else None


def model_revision(model: str, *, content: bool = False, revision: str | None = None) -> str:
    """What identifies the weights: config + weight file sizes for a local dir, the snapshot's
    commit for a Hugging Face id in the local cache (:func:`snapshot_commit`), else the name.

    The same on every host that holds the same files (no times, no paths), so a pool's
    workers share one phrase-cache fingerprint. Sizes do not change when a model is retrained
    in place; with ``content`` (LoRA adapters: megabytes) the weight files are hashed whole
    when they total at most :data:`CONTENT_HASH_MAX_BYTES`, so a retrained adapter gets a new
    fingerprint and never the old one's cached translations."""
    path = Path(model)
    if not path.is_dir():
        commit = snapshot_commit(model, revision)
        return f"{model}@{commit}" if commit else model
    files = [f for f in sorted(path.iterdir()) if f.suffix in WEIGHT_SUFFIXES | CONFIG_SUFFIXES]
    weights = sum(f.stat().st_size for f in files if f.suffix in WEIGHT_SUFFIXES)
    whole = content and weights <= CONTENT_HASH_MAX_BYTES
    digest = hashlib.sha256()
    for f in files:
        digest.update(f"{f.name}:{f.stat().st_size}".encode())
        if (f.suffix == ".json" and f.stat().st_size < 1_000_000) or (
            whole and f.suffix in WEIGHT_SUFFIXES
        ):
            with f.open("rb") as fh:
                while block := fh.read(1 << 20):
                    digest.update(block)
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
        return None  # the engine downloads it at load
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


class HFModelEngine(Engine):
    """An engine for one Hugging Face model (``MT_MODEL``: an id or a folder), prompted with
    :mod:`mtfleet.workers.prompts` and measured in the model's tokenizer.

    A subclass sets :attr:`tokenizer` and ``_context`` (the positions a prompt and its answer
    share; 0: unknown, nothing capped) when it loads, and its fingerprint from
    :meth:`_identity` with what only it has. Each request's prompt is encoded once
    (``_counts``): its check, its count for the budgets and its call all read it.
    """

    def __init__(self, settings: EngineSettings) -> None:
        self.settings = settings
        self.style = prompts.resolve_style(settings.prompt_style, settings.model)
        self.tokenizer: Any = None
        self._context = 0
        # HF fast tokenizers can raise "Already borrowed" when shared across threads (and a
        # seq2seq tokenizer's src_lang is state): one thread at a time
        self._tokenizer_lock = threading.Lock()
        self._counts = lru_cache(maxsize=8192)(self._count)
        self._fingerprint = ""

    @property
    def follows_instructions(self) -> bool:
        return True

    @property
    def terms_in_prompt(self) -> bool:
        return self.follows_instructions and prompts.terms_in_prompt(
            self.settings.glossary_in_prompt, self.style
        )

    @property
    def model(self) -> str:
        return self.settings.model

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def pairs(self) -> list[tuple[str, str]]:
        return prompts.llm_pairs()

    # -- what identifies the output ------------------------------------------------------------
    def _weights(self) -> str:
        """What identifies the weights this engine translates with."""
        return model_revision(self.settings.model)

    def _identity(self, **own: Any) -> str:
        """Everything that shapes this engine's translations, as canonical JSON: the weights,
        the output's length limit and, for a prompted model, the prompt and the sampling;
        ``own`` adds what only this engine has (how the model is run, not where: TP and PP
        sizes or prefix caching do not change the output)."""
        s = self.settings
        ident: dict[str, Any] = {
            "model": self._weights(),
            "max_tokens": [s.max_tokens_ratio, s.max_tokens_slack],
            **own,
        }
        if self.follows_instructions:
            ident["prompt"] = [prompts.version(self.terms_in_prompt), self.style]
            ident["sampling"] = [
                s.temperature,
                s.top_p,
                s.top_k,
                s.repetition_penalty,
                s.seed,
            ]
        return json.dumps(ident, sort_keys=True, default=str)

    def _fingerprint_of(self, identity: str, kind: str = "") -> str:
        """The phrase-cache fingerprint of an :meth:`_identity` (``vllm-…``, ``vllm-lora-…``)."""
        return f"{self.name}{kind}-" + hashlib.sha256(identity.encode()).hexdigest()[:16]

    # -- tokens --------------------------------------------------------------------------------
    def _count(self, req: TranslationRequest) -> tuple[list[int], int]:
        """(input ids, source tokens) of one request: its prompt as the model gets it."""
        with self._tokenizer_lock:
            return prompts.encode(
                req.text, req.source, req.target, self.style, self.tokenizer, req.guidance
            )

    def _control(self) -> tuple[str, ...]:
        """What the prompt format reserves: the strings the model's tokenizer turns into its
        control tokens (broken in a source text, :func:`prompts.as_data`)."""
        return prompts.control_tokens(self.tokenizer) if self.tokenizer is not None else ()

    def _output(self, generated: str) -> str:
        """A generated text as the translation (:func:`prompts.from_data`)."""
        return prompts.from_data(generated, self._control())

    def _sizes(self, req: TranslationRequest) -> tuple[int, int] | None:
        """(prompt tokens, source tokens) of one request; None before there is a tokenizer."""
        if self.tokenizer is None:
            return None
        ids, src = self._counts(req)
        return len(ids), src

    def count_tokens(self, request: TranslationRequest) -> int:
        sizes = self._sizes(request)
        return super().count_tokens(request) if sizes is None else sizes[0]

    def check(self, request: TranslationRequest) -> str | None:
        sizes = self._sizes(request)
        if sizes is None:
            return None
        prompt, src = sizes
        return prompts.too_long(src, prompt, self._context, self.settings.max_tokens_slack)

    def _max_tokens(self, prompt_tokens: int, source_tokens: int) -> int:
        """Tokens one translation may take within the context (``MT_MAX_TOKENS_*``)."""
        s = self.settings
        return prompts.max_tokens(
            source_tokens,
            prompt_tokens,
            self._context,
            ratio=s.max_tokens_ratio,
            slack=s.max_tokens_slack,
        )
