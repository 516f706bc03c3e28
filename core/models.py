"""Plain data shared by the API, the workers and the SDK: job states, lanes, the chunk message.

The chunk message is the only contract between the API and the workers (JSON on the broker);
``CHUNK_VERSION`` changes when its shape does.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from mtfleet.core.guidance import Guidance, MemoryRef

#: What a pool is marked for (its workers' ``MT_MODEL_TYPE``): a request's ``model_type`` goes
#: to a pool marked for it where one serves the pair (:func:`mtfleet.api.routing.choose_pool`).
PoolModelType = Literal["latency_optimized", "quality_optimized"]
#: What a request may ask for (DeepL's ``model_type``): ``prefer_quality_optimized`` is
#: ``quality_optimized`` here, since neither is ever refused.
ModelType = Literal["latency_optimized", "quality_optimized", "prefer_quality_optimized"]
#: How a request uses the phrase cache (its ``use_cache``): ``yes`` reads and writes it, ``no``
#: does neither, ``overwrite`` does not read it and writes its fresh translations over what it
#: held.
UseCache = Literal["yes", "no", "overwrite"]


class Lane(StrEnum):
    interactive = "interactive"
    bulk = "bulk"


class JobStatus(StrEnum):
    queued = "queued"
    running = "running"
    #: cancelled; chunks that were in flight are finishing (their results are kept)
    cancelling = "cancelling"
    succeeded = "succeeded"
    partial = "partial"
    failed = "failed"
    cancelled = "cancelled"

    @property
    def final(self) -> bool:
        return self in FINAL_STATUSES


FINAL_STATUSES = frozenset(
    {JobStatus.succeeded, JobStatus.partial, JobStatus.failed, JobStatus.cancelled}
)

CHUNK_VERSION = 1


class ChunkSegment(BaseModel):
    """One distinct text of a chunk and every job index it fills (duplicates translate once).

    ``text`` is normalised (:func:`mtfleet.core.cache.normalize`: NFC, no outer whitespace), as
    the engine gets it and the phrase cache keys it; ``wraps`` holds, for the indices whose
    submitted text had outer whitespace, that whitespace (leading, trailing), which goes back
    around the translation. Texts with different ``context`` are distinct segments."""

    indices: list[int]
    text: str
    wraps: dict[int, tuple[str, str]] | None = None
    # the neighbouring sentences of a document segment, for an LLM's prompt (the API's
    # MT_DOCUMENT_CONTEXT_TOKENS); part of its phrase-cache key (core.cache.keyed)
    context: str | None = None
    # a translation given to be scored, not made (a quality evaluation: the request's
    # translations): delivered as it is, never from the engine or the cache
    translation: str | None = None


class ChunkMessage(BaseModel):
    """What one Celery task carries: a slice of one job's segments."""

    v: int = Field(CHUNK_VERSION, le=CHUNK_VERSION, description="message format version")
    job_id: str
    chunk: int = Field(ge=0)
    lane: Lane
    source: str
    target: str
    segments: list[ChunkSegment]
    enqueued_at: float
    # a glossary (core.glossary) applied to every segment; its version keys the phrase cache.
    # Several applied together are one stack: ids and versions joined in order (STACK).
    # Optional fields: messages without them are still version 1.
    glossary_id: str | None = None
    glossary_version: str | None = None
    # whose phrase-cache entries the chunk reads and writes (the API key; None: shared)
    cache_scope: str | None = None
    # the pool whose queues carry the chunk (the API routed the job's pair to it), and the
    # LoRA adapter the job named (vLLM pools), if any
    pool: str | None = None
    adapter: str | None = None
    # the API key whose job it is ('' : MT_AUTH=off): whose backlog it goes back to when a
    # worker cannot finish it (core/backlog.py)
    owner: str = ""
    # context, instructions and formality for an LLM engine (core/guidance.py); its digest
    # is part of the phrase-cache key
    guidance: Guidance | None = None
    # the translation memory the job names (core/tm): matches served from it, examples below
    # its threshold for an engine that follows instructions
    memory: MemoryRef | None = None
    # the request's protected patterns (core/patterns.py), beside its glossary's; their
    # digest is part of the phrase-cache key
    protected_patterns: list[str] | None = None
    # whether the chunk reads the phrase cache (a chunk that waited looks itself up again) and
    # writes its translations to it: the request's use_cache and no_trace, decided by the API
    # (core.schemas.TextsIn)
    cache_read: bool = True
    cache_write: bool = True
    # score each translation with the pool's quality-estimation model (workers/quality.py)
    quality_estimation: bool = False

    def summary(self) -> str:
        """Short description shown in Flower instead of customer text."""
        n = sum(len(s.indices) for s in self.segments)
        return (
            f"job={self.job_id} chunk={self.chunk} {self.source}->{self.target} "
            f"pool={self.pool} segments={n}"
        )


class Finding(StrEnum):
    """What a segment outcome's warnings (and some errors) say about it: the ``type`` of each.
    The worker's output checks (:mod:`mtfleet.workers.checks`) set most of them."""

    empty_output = "empty_output"
    tag_mismatch = "tag_mismatch"
    placeholder_mismatch = "placeholder_mismatch"
    protected_term = "protected_term"
    glossary_term = "glossary_term"
    length_ratio = "length_ratio"
    wrong_language = "wrong_language"
    markup_mismatch = "markup_mismatch"
    truncated = "truncated"
    already_in_target_language = "already_in_target_language"
    memory_fuzzy_match = "memory_fuzzy_match"
    # quality estimation (mtfleet.workers.quality): scored above MT_QE_THRESHOLD, or not scored
    low_quality = "low_quality"
    quality_unscored = "quality_unscored"


class SegmentOutcome(BaseModel):
    """Result of one segment: a translation or an error ({type, message}), plus warnings
    ({type, message}) about a translation that was delivered but failed a soft check (it is
    never cached)."""

    translation: str | None = None
    error: dict[str, Any] | None = None
    warnings: list[dict[str, Any]] = Field(default_factory=list)
    cached: bool = False
    # the translation memory's stored target, scoring this against its source (0-100)
    memory_score: float | None = None
    # the quality-estimation model's score of the translation (MetricX: 0 best, 25 worst),
    # when its job asked for one (mtfleet.workers.quality)
    quality: float | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.translation is not None


class Progress(BaseModel):
    done: int
    failed: int
    total: int
