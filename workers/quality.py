"""Quality estimation: a score per translated segment, from a MetricX-style model.

MetricX-24 (``google/metricx-24-hybrid-{large,xl,xxl}-v2p6``, Apache-2.0; tokenizer
``google/mt5-xl``) is an mT5 encoder-decoder trained as a regressor. Without a reference (QE)
its input is ``source: {source} candidate: {translation}`` (the tokenizer's end-of-sequence
token left off, as MetricX feeds it); one decoder step from the start token, and the logit
of vocabulary id 250089 is the score, clipped to 0-25: **lower is better** (0: no error
found, 25: as bad as it gets; MQM-like error points). It is read here with transformers'
``AutoModelForSeq2SeqLM``: nothing of MetricX's own code is needed.

:class:`QualityEstimator` is the model (loaded once per worker, beside its engine, on the
worker's GPU where it has one); :class:`QualityStep` is the chunk path's step after
translation (:meth:`mtfleet.workers.chunk.ChunkProcessor.process`): every delivered
translation of a chunk whose job asked for ``quality_estimation`` gets its ``quality`` score,
and one scoring above ``MT_QE_THRESHOLD`` a ``low_quality`` warning. A translation it could not
score says so (a ``quality_unscored`` warning): a job that asked for scores never gets a
translation silently without one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from mtfleet.core.models import Finding, SegmentOutcome
from mtfleet.core.settings.quality import QualitySettings

log = logging.getLogger(__name__)

#: MetricX-24's score: the logit of this vocabulary id at the first decoder step.
SCORE_TOKEN_ID = 250089
#: MetricX's scale: scores are clipped to it; lower is better.
SCORE_MIN, SCORE_MAX = 0.0, 25.0
#: The longest input, in tokens, as MetricX-24 was trained (longer ones are cut at the end).
MAX_INPUT_TOKENS = 1536


def qe_input(source: str, translation: str) -> str:
    """MetricX-24's QE input (no reference)."""
    return f"source: {source} candidate: {translation}"


def clip(score: float) -> float:
    """A raw logit on MetricX's scale (0 best, 25 worst)."""
    return min(SCORE_MAX, max(SCORE_MIN, score))


def flagged(score: float, threshold: float) -> bool:
    """Whether a segment scoring ``score`` is marked for review: above the threshold (lower
    is better)."""
    return score > threshold


class QualityEstimator:
    """A MetricX-style model: :meth:`score` (source, translation) pairs, batched."""

    def __init__(
        self,
        model: str,
        *,
        tokenizer: str | None = None,
        batch_size: int = 16,
        device: str | None = None,
    ) -> None:
        self.model_name = model
        self.tokenizer_name = tokenizer or model
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()  # one forward pass at a time (chunks run on threads)

    def load(self) -> None:
        """Load the tokenizer and the model (on the worker's GPU when it has one, in bf16;
        else on the CPU in fp32). Raises with what is wrong: a model whose vocabulary lacks
        the score's id is not a MetricX-style model."""
        import torch
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        self._tokenizer = AutoTokenizer.from_pretrained(self.tokenizer_name)
        model = AutoModelForSeq2SeqLM.from_pretrained(self.model_name, dtype=dtype)
        vocab = model.config.vocab_size
        if vocab <= SCORE_TOKEN_ID:
            raise ValueError(
                f"{self.model_name} has {vocab} vocabulary ids, not MetricX's score id "
                f"{SCORE_TOKEN_ID}: not a MetricX-style quality-estimation model"
            )
        self._model = model.to(device).eval()
        self.device = device

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Each (source, translation)'s score (0 best, 25 worst), in order; batches of
        ``batch_size``, sorted by length so padding stays small."""
        import torch

        if self._model is None:
            raise RuntimeError("the quality-estimation model is not loaded")
        texts = [qe_input(s, t) for s, t in pairs]
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = [0.0] * len(texts)
        with self._lock, torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                batch = order[start : start + self.batch_size]
                enc = self._tokenizer(
                    [texts[i] for i in batch],
                    add_special_tokens=False,  # MetricX drops the end-of-sequence token
                    truncation=True,
                    max_length=MAX_INPUT_TOKENS,
                    padding=True,
                    return_tensors="pt",
                ).to(self.device)
                start_ids = torch.full(
                    (len(batch), 1),
                    self._model.config.decoder_start_token_id,
                    dtype=torch.long,
                    device=self.device,
                )
                logits = self._model(
                    input_ids=enc["input_ids"],
                    attention_mask=enc["attention_mask"],
                    decoder_input_ids=start_ids,
                ).logits[:, 0, SCORE_TOKEN_ID]
                for i, raw in zip(batch, logits.float().tolist(), strict=True):
                    out[i] = clip(raw)
        return out

    def close(self) -> None:
        self._model = None


class QualityStep:
    """The chunk path's quality-estimation step: scores for the outcomes of a chunk that asks
    for them, a ``low_quality`` warning above the threshold."""

    def __init__(
        self, quality: QualitySettings, pool: str, estimator: QualityEstimator | None = None
    ) -> None:
        """``pool``: the worker's (named in the warning of a chunk its pool cannot score)."""
        self.threshold = quality.qe_threshold
        self.pool = pool
        self.estimator = estimator

    @classmethod
    def from_settings(cls, quality: QualitySettings, pool: str) -> QualityStep:
        """The step of a worker of ``pool``: with its model when MT_QE_MODEL names one (loaded
        by :meth:`load`)."""
        if not quality.qe_model:
            return cls(quality, pool)
        estimator = QualityEstimator(
            quality.qe_model, tokenizer=quality.qe_tokenizer, batch_size=quality.qe_batch_size
        )
        return cls(quality, pool, estimator)

    @property
    def model(self) -> str | None:
        """The model's name (the registry's ``quality_model``), None without one."""
        return self.estimator.model_name if self.estimator is not None else None

    def load(self) -> None:
        if self.estimator is not None:
            self.estimator.load()

    def close(self) -> None:
        if self.estimator is not None:
            self.estimator.close()

    def apply(
        self, outcomes: list[tuple[int, SegmentOutcome]], sources: dict[int, str]
    ) -> list[tuple[int, SegmentOutcome]]:
        """``outcomes`` with each translation's score (``sources``: each index's source
        text); unscored, with a ``quality_unscored`` warning saying why, when this worker
        has no model or scoring failed."""
        todo = [n for n, (_i, o) in enumerate(outcomes) if o.ok and o.translation is not None]
        if not todo:
            return outcomes
        why = None
        scores: list[float] = []
        if self.estimator is None:
            why = f"this worker of pool {self.pool} has no quality-estimation model (MT_QE_MODEL)"
        else:
            try:
                scores = self.estimator.score(
                    [(sources[outcomes[n][0]], outcomes[n][1].translation or "") for n in todo]
                )
            except Exception as exc:  # the translations stand; each says why it is unscored
                log.exception("quality estimation failed")
                why = f"quality estimation failed: {exc}"
        done = list(outcomes)
        for k, n in enumerate(todo):
            i, o = done[n]
            if why is not None:
                warning = {"type": Finding.quality_unscored.value, "message": why}
                done[n] = (i, o.model_copy(update={"warnings": [*o.warnings, warning]}))
                continue
            score = round(scores[k], 4)
            update: dict[str, Any] = {"quality": score}
            if flagged(score, self.threshold):
                update["warnings"] = [
                    *o.warnings,
                    {
                        "type": Finding.low_quality.value,
                        "message": f"quality estimate {score:.2f} is above the review "
                        f"threshold {self.threshold:g} (MetricX: 0 best, 25 worst)",
                    },
                ]
            done[n] = (i, o.model_copy(update=update))
        return done
