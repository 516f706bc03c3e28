"""transformers: Hugging Face models that vLLM does not serve — above all encoder-decoder MT
models (Marian/OPUS-MT, NLLB-200, M2M100, MADLAD) — and decoder-only LLMs, with
``model.generate`` on one device (``MT_DEVICE``: ``cuda:N`` or ``cpu``).

A batch engine: the worker's scheduler forms each call within :attr:`limits` (a token budget
from its cost model, interactive work first) and a call runs to its end. Inside a call:

* segments are grouped by language pair (a pair's codes are set per ``generate``:
  :mod:`~mtfleet.workers.engines.hf_families`), sorted by length and cut into padded batches
  under ``MT_MAX_STEP_TOKENS`` padded tokens x beams and ``MT_MAX_SEQS`` segments
  (:func:`~mtfleet.workers.batching.split_by_length`), so little of a batch is padding;
* each batch is one ``generate`` under ``torch.inference_mode()`` with the KV cache on:
  encoder-decoder models with beam search (``MT_NUM_BEAMS``, else the model's own generation
  config), decoder-only ones with the prompts and sampling settings the vLLM engine uses
  (left padding);
* ``max_new_tokens`` follows the source's length as the vLLM engine's ``max_tokens`` does
  (``MT_MAX_TOKENS_RATIO``, ``MT_MAX_TOKENS_SLACK``); an output that reached it without
  ending is delivered ``truncated``.

Weights load in ``MT_DTYPE``: ``auto`` is float32 on the CPU and bfloat16 on GPUs that have it
(float16 otherwise). A call that outlives its deadline is ended by the scheduler's interrupt: a
stopping criterion ends ``generate`` at its next step and the call raises.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Sequence
from typing import Any

from mtfleet.core.errors import EngineError, EngineUnavailable
from mtfleet.core.settings import EngineSettings
from mtfleet.workers import prompts
from mtfleet.workers.batching import split_by_length
from mtfleet.workers.engines.base import EngineLimits, Translation, TranslationRequest
from mtfleet.workers.engines.hf_families import Family, family_of
from mtfleet.workers.engines.hf_model import HFModelEngine, model_problem

log = logging.getLogger(__name__)

DEFAULT_MAX_SEQS = 64
DEFAULT_BATCH_TOKENS = 8192
#: Positions assumed when neither the config nor the tokenizer says (T5's are relative).
DEFAULT_POSITIONS = 512
_DTYPES = {
    "float32": "float32",
    "float": "float32",
    "fp32": "float32",
    "float16": "float16",
    "half": "float16",
    "fp16": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
}


def resolve_device(setting: str, cuda_available: bool) -> str:
    """``MT_DEVICE``: auto is cuda:0 when a GPU is visible, else cpu."""
    if setting == "auto":
        return "cuda:0" if cuda_available else "cpu"
    if setting == "cuda":
        return "cuda:0"
    return setting


def resolve_dtype(setting: str, device: str, bf16_available: bool) -> str:
    """``MT_DTYPE``'s torch dtype name: auto is float32 on the CPU and bfloat16 on GPUs that
    have it, else float16."""
    if setting == "auto":
        if device == "cpu":
            return "float32"
        return "bfloat16" if bf16_available else "float16"
    if setting not in _DTYPES:
        raise EngineUnavailable(
            f"MT_DTYPE={setting} is not one the transformers engine takes: auto, "
            + ", ".join(sorted(set(_DTYPES.values())))
        )
    return _DTYPES[setting]


class TransformersEngine(HFModelEngine):
    name = "transformers"

    @property
    def follows_instructions(self) -> bool:
        """A decoder-only model is prompted (and follows instructions); a seq2seq one is not."""
        return self.family.name == "causal"

    def __init__(self, settings: EngineSettings) -> None:
        super().__init__(settings)
        self.model_obj: Any = None
        self.family = Family("unloaded", ())
        self.device = "cpu"
        self.dtype = ""
        self._interrupted = threading.Event()  # the call in progress must end
        self._call: Sequence[TranslationRequest] | None = None  # the call in progress
        self._call_lock = threading.Lock()
        self._context = DEFAULT_POSITIONS
        self._eos: set[int] = set()
        self._forced_eos = False
        self._ids: dict[str, int] = {}  # forced first tokens' ids
        self._stopping: Any = None

    # -- lifecycle -----------------------------------------------------------------------------
    def preflight(self) -> list[str]:
        problems = [
            f"{package} is not installed: pip install 'mtfleet[transformers]'"
            for package in ("torch", "transformers")
            if importlib.util.find_spec(package) is None
        ]
        problem = model_problem(self.settings.model)
        if problem:
            problems.append(problem)
        return problems

    def load(self) -> None:
        import torch
        from transformers import (
            AutoConfig,
            AutoModelForCausalLM,
            AutoModelForSeq2SeqLM,
            AutoTokenizer,
            StoppingCriteria,
            StoppingCriteriaList,
        )

        s = self.settings
        cuda = torch.cuda.is_available()
        self.device = resolve_device(s.device, cuda)
        if self.device.startswith("cuda") and not cuda:
            raise EngineUnavailable(f"MT_DEVICE={s.device}, but torch sees no GPU")
        bf16 = cuda and torch.cuda.is_bf16_supported()
        self.dtype = resolve_dtype(s.dtype, self.device, bf16)
        remote = s.trust_remote_code
        config = AutoConfig.from_pretrained(s.model, trust_remote_code=remote)
        tokenizer = AutoTokenizer.from_pretrained(s.model, trust_remote_code=remote)
        encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
        self.family = family_of(
            str(config.model_type),
            encoder_decoder,
            tokenizer.get_vocab(),
            source_lang=getattr(tokenizer, "source_lang", None),
            target_lang=getattr(tokenizer, "target_lang", None),
            name=s.model,
        )
        cls = AutoModelForSeq2SeqLM if encoder_decoder else AutoModelForCausalLM
        model: Any = cls.from_pretrained(
            s.model, dtype=getattr(torch, self.dtype), trust_remote_code=remote
        )
        model = model.to(self.device).eval()
        if not encoder_decoder:
            tokenizer.padding_side = "left"  # new tokens follow every prompt directly
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
        self._context = self._max_positions(config, tokenizer)
        # every call passes max_new_tokens; a max_length left in the model's generation config
        # (OPUS-MT's: 512) only makes generate warn about both on every call
        model.generation_config.max_length = None
        eos = model.generation_config.eos_token_id
        self._eos = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        forced = getattr(model.generation_config, "forced_eos_token_id", None)
        self._forced_eos = forced is not None
        ids: Any = tokenizer.convert_tokens_to_ids(list(self.family.forced_bos.values()))
        self._ids = dict(zip(self.family.forced_bos.values(), ids, strict=True))
        torch.manual_seed(s.seed)
        interrupted = self._interrupted

        class Interrupted(StoppingCriteria):  # ends generate at its next step
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                return torch.full(
                    (input_ids.shape[0],), interrupted.is_set(), device=input_ids.device
                )

        self._stopping = StoppingCriteriaList([Interrupted()])
        self.model_obj, self.tokenizer = model, tokenizer
        self._fingerprint = self._fingerprint_of(
            self._identity(family=self.family.name, dtype=self.dtype, beams=self._beams())
        )
        log.info(
            "transformers engine: %s (%s, %s on %s), %d pairs",
            s.model,
            self.family.name,
            self.dtype,
            self.device,
            len(self.family.pairs),
        )

    @staticmethod
    def _max_positions(config: Any, tokenizer: Any) -> int:
        for n in (getattr(config, "max_position_embeddings", None), tokenizer.model_max_length):
            if isinstance(n, int) and 0 < n < 1_000_000:
                return n
        return DEFAULT_POSITIONS

    def close(self) -> None:
        model, self.model_obj = self.model_obj, None
        if model is not None and self.device.startswith("cuda"):
            import torch

            del model
            torch.cuda.empty_cache()

    # -- contract ------------------------------------------------------------------------------
    @property
    def limits(self) -> EngineLimits:
        s = self.settings
        return EngineLimits(
            max_sequences=s.max_seqs or DEFAULT_MAX_SEQS,
            max_batch_tokens=s.max_step_tokens or DEFAULT_BATCH_TOKENS,
            max_input_tokens=self._context,
        )

    def pairs(self) -> list[tuple[str, str]]:
        return list(self.family.pairs)

    def _beams(self) -> int:
        if self.settings.num_beams:
            return self.settings.num_beams
        if self.family.name == "causal" or self.model_obj is None:
            return 1
        return int(getattr(self.model_obj.generation_config, "num_beams", 1) or 1)

    def _count(self, req: TranslationRequest) -> tuple[list[int], int]:
        """(input ids, source tokens) of one request: the prompt's for a decoder-only model,
        the source text's (its prefix and the tokenizer's special tokens included) else."""
        if self.follows_instructions:
            return super()._count(req)
        with self._tokenizer_lock:
            ids = self.tokenizer(self._source(req))["input_ids"]
        return list(ids), len(ids)

    def _source(self, req: TranslationRequest) -> str:
        """An encoder's input: the text with the tokenizer's control-token strings broken
        (a ``</s>`` in it is text, not the end of the input: :func:`prompts.as_data`) after
        the family's target prefix, if any."""
        return self.family.source_text(prompts.as_data(req.text, self._control()), req.target)

    def check(self, request: TranslationRequest) -> str | None:
        """A prompt needs room for its answer too; an encoder's input only has to fit."""
        if self.follows_instructions or self.tokenizer is None:
            return super().check(request)
        ids, _ = self._counts(request)
        if len(ids) > self._context:
            return f"segment too long for the model: {len(ids)} tokens, it takes {self._context}"
        return None

    # -- one call ------------------------------------------------------------------------------
    def translate(self, requests: Sequence[TranslationRequest]) -> list[Translation]:
        if self.model_obj is None:
            raise EngineUnavailable("transformers engine used before load() or after close()")
        with self._call_lock:
            self._call = requests
            self._interrupted.clear()
        try:
            return self._translate(requests)
        finally:
            with self._call_lock:
                self._call = None

    def _translate(self, requests: Sequence[TranslationRequest]) -> list[Translation]:
        out: list[Translation | None] = [None] * len(requests)
        by_pair: dict[tuple[str, str], list[int]] = {}
        for i, req in enumerate(requests):
            by_pair.setdefault((req.source, req.target), []).append(i)
        s, beams = self.settings, self._beams()
        served = set(self.family.pairs)
        for (source, target), idxs in by_pair.items():
            if (source, target) not in served:
                raise EngineError(f"{self.settings.model} does not translate {source}->{target}")
            lengths = [self.count_tokens(requests[i]) for i in idxs]
            for batch in split_by_length(
                lengths,
                max_tokens=max(1, (s.max_step_tokens or DEFAULT_BATCH_TOKENS) // beams),
                max_sequences=s.max_seqs or DEFAULT_MAX_SEQS,
            ):
                rows = [idxs[j] for j in batch]
                for i, t in zip(rows, self._generate([requests[i] for i in rows]), strict=True):
                    out[i] = t
        return [t if t is not None else Translation("") for t in out]

    def _generate(self, reqs: list[TranslationRequest]) -> list[Translation]:
        import torch

        s, tok, family = self.settings, self.tokenizer, self.family
        source, target = reqs[0].source, reqs[0].target
        counts = [self._counts(r) for r in reqs]
        with self._tokenizer_lock:
            if family.name == "causal":
                enc = tok.pad({"input_ids": [ids for ids, _ in counts]}, return_tensors="pt")
            else:
                if source in family.src_lang:
                    tok.src_lang = family.src_lang[source]
                texts = [self._source(r) for r in reqs]
                enc = tok(texts, padding=True, return_tensors="pt")
        causal = family.name == "causal"
        prompt_len = int(enc["input_ids"].shape[1]) if causal else 0
        # an encoder-decoder's output has the decoder's positions to itself
        limits = [self._max_tokens(len(ids) if causal else 0, src) for ids, src in counts]
        kwargs: dict[str, Any] = {
            "max_new_tokens": max(limits),
            "num_beams": self._beams(),
            "use_cache": True,
            "stopping_criteria": self._stopping,
        }
        if causal and s.temperature > 0:
            kwargs.update(
                do_sample=True,
                temperature=s.temperature,
                top_p=s.top_p,
                top_k=max(s.top_k, 0),
                repetition_penalty=s.repetition_penalty,
            )
        else:
            kwargs["do_sample"] = False
            if causal:
                kwargs["repetition_penalty"] = s.repetition_penalty
        if target in family.forced_bos:
            kwargs["forced_bos_token_id"] = self._ids[family.forced_bos[target]]
        with torch.inference_mode():
            seqs = self.model_obj.generate(**enc.to(self.device), **kwargs)
        if self._interrupted.is_set():
            raise EngineError("generate was interrupted: the call outlived its deadline")
        # decoder-only: the new tokens follow the (left-padded) prompt; encoder-decoder: the
        # decoder's start token comes first
        new = seqs[:, prompt_len:] if causal else seqs[:, 1:]
        # each row within its own limit: what a segment gets never depends on its batch
        rows = [row[:limit] for row, limit in zip(new.tolist(), limits, strict=True)]
        ended = [next((n for n, t in enumerate(row) if t in self._eos), None) for row in rows]
        pad = tok.pad_token_id
        generated = [
            row[:end] if end is not None else [t for t in row if t != pad]
            for row, end in zip(rows, ended, strict=True)
        ]
        with self._tokenizer_lock:
            texts = tok.batch_decode(generated, skip_special_tokens=True)
        return [
            Translation(self._output(text), truncated=self._cut(end, len(row)), tokens_out=len(ids))
            for text, end, row, ids in zip(texts, ended, rows, generated, strict=True)
        ]

    def _cut(self, ended: int | None, length: int) -> bool:
        """Whether generation stopped at its limit rather than at the model's end token (a
        model whose config forces the end token at the limit, as OPUS-MT's do, puts it last)."""
        return ended is None or (self._forced_eos and ended == length - 1)

    def interrupt(self, call: Sequence[TranslationRequest]) -> None:
        """End the call that was given ``call``, if it is the one in progress: its ``generate``
        stops at its next step and the call raises (a later call runs on)."""
        with self._call_lock:
            if self._call is call:
                self._interrupted.set()
