"""The public HTTP contract: request bodies (``XCreate``) and responses (``XPublic``).

One definition of each, shared by the API (:mod:`mtfleet.api`, which validates requests with
them and answers with them) and the SDK (:mod:`mtfleet.producer.client`, which parses answers
with them). This contract is public: extend it, never break it.
"""

from __future__ import annotations

import base64
import re
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from mtfleet.core import patterns
from mtfleet.core.guidance import (
    MAX_CONTEXT_CHARS,
    MAX_INSTRUCTIONS,
    Formality,
    Guidance,
    Writing,
)
from mtfleet.core.models import (
    JobStatus,
    Lane,
    ModelType,
    PoolModelType,
    Progress,
    UseCache,
)

#: The glossaries one request may name (DeepL's limit on ``glossary_ids``).
MAX_GLOSSARIES = 5

LangCode = Annotated[str, StringConstraints(min_length=2, max_length=16)]
PoolName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")]
AdapterName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][\w.-]{0,63}$")]

# Characters that never belong in text to translate (422 naming the text and the code point):
# NUL and the C0/C1 controls (Unicode category Cc) other than tab, newline and carriage return;
# lone surrogates (Cs: they cannot be encoded, so they could never be stored or sent); and the
# bidi embedding/override/isolate controls U+202A-U+202E and U+2066-U+2069, which reorder how
# text is displayed (the "Trojan Source" trick) and which no engine can carry through
# faithfully. The left-to-right and right-to-left marks U+200E/U+200F stay allowed: they are
# ordinary punctuation of Arabic and Hebrew text. One compiled character class: a job may carry
# thousands of texts.
_FORBIDDEN = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]"
)


def _kind(ch: str) -> str:
    if "\ud800" <= ch <= "\udfff":
        return "a lone surrogate"
    if "\u202a" <= ch <= "\u202e" or "\u2066" <= ch <= "\u2069":
        return "bidi control"
    return "control character"


def check_texts(texts: list[str]) -> list[str]:
    """:func:`check_text` for a whole list: one search over all of them first (a job carries
    thousands of texts), the per-text look only to name the one that is refused."""
    if _FORBIDDEN.search("\n".join(texts)) is None and all(t.strip() for t in texts):
        return texts
    return [check_text(t, i) for i, t in enumerate(texts)]


def check_text(text: str, index: int) -> str:
    if not text.strip():
        raise ValueError(f"texts[{index}] is empty or whitespace only")
    bad = _FORBIDDEN.search(text)
    if bad:
        ch = bad.group()
        raise ValueError(
            f"texts[{index}] contains {_kind(ch)} U+{ord(ch):04X} at character {bad.start()}"
        )
    return text


def check_patterns(found: list[str]) -> list[str]:
    """Protected patterns RE2 reads, within their bounds (:func:`mtfleet.core.patterns.check`):
    a bad one is a 422 naming it."""
    try:
        return patterns.check(found, "pattern")
    except patterns.BadPattern as exc:
        raise ValueError(exc.message) from None


def check_callback_url(url: str | None) -> str | None:
    """A ``callback_url`` must be an absolute http(s) URL with a host (where it points is
    checked by the API: :mod:`mtfleet.api.webhooks.targets`)."""
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("callback_url must be an absolute http:// or https:// URL with a host")
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number in range
    except ValueError as exc:
        raise ValueError(f"callback_url has a bad port: {exc}") from None
    if any(c.isspace() or ord(c) < 0x20 for c in url):
        raise ValueError("callback_url must not contain whitespace or control characters")
    return url


def check_cache_use(no_trace: bool, use_cache: str) -> None:
    """A no-trace request writes nothing to the phrase cache: asking it to overwrite entries
    is a contradiction, refused (422) rather than settled silently either way."""
    if no_trace and use_cache == "overwrite":
        raise ValueError(
            "use_cache=overwrite writes to the phrase cache, which a no_trace request never "
            "does: give one or the other (use_cache=no reads nothing and writes nothing)"
        )


CallbackUrl = Annotated[
    str | None,
    Field(
        max_length=2048,
        description="An http(s) URL that gets one signed POST when the job is final (Standard "
        "Webhooks: job.succeeded, job.partial, job.failed or job.cancelled; see "
        "docs/webhooks.md). Private and loopback addresses are refused unless the operator "
        "allows them (MT_WEBHOOK_ALLOW_PRIVATE).",
        examples=["https://shop.example.com/hooks/mtfleet"],
    ),
]


class TextsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    texts: list[str] = Field(
        min_length=1,
        description="Segments to translate; the result is aligned with this list. Each must "
        "have a character that is not whitespace, and none may contain NUL, a C0/C1 control "
        "other than tab, LF and CR, a lone surrogate, or a bidi override/isolate control "
        "(U+202A-U+202E, U+2066-U+2069).",
        examples=[["Add to cart", "Free shipping on orders over $50"]],
    )
    source_lang: LangCode = Field(
        "auto",
        description="Source language code, e.g. 'en', or 'auto' (the default) to detect it "
        "among the languages the fleet translates into the target.",
        examples=["en"],
    )
    target_lang: LangCode = Field(description="Target language code, e.g. 'es'.", examples=["es"])
    glossary_id: str | None = Field(
        None,
        max_length=64,
        description="A glossary (/v1/glossaries) for this language pair: its terms come out as "
        "the glossary says and its protected terms untranslated, in their canonical casing.",
    )
    glossary_ids: list[Annotated[str, StringConstraints(max_length=64)]] = Field(
        default_factory=list,
        max_length=MAX_GLOSSARIES,
        description=f"Up to {MAX_GLOSSARIES} glossaries for this language pair, applied "
        "together, instead of `glossary_id`: where two hold the same source term (or one "
        "translates a term another protects), the one listed first wins.",
    )
    protected_patterns: list[str] = Field(
        default_factory=list,
        max_length=patterns.MAX_PATTERNS,
        description="Regular expressions (RE2 syntax: Python's without backreferences and "
        f"lookaround; at most {patterns.MAX_PATTERNS} of {patterns.MAX_PATTERN_CHARS} "
        "characters) whose matches are never translated and come back byte for byte: a "
        "game's colour codes, a shop's [NAME] tokens. A glossary can carry them too "
        "(docs/glossaries.md).",
        examples=[["§[0-9a-fk-or]", r"\[[A-Z_]+\]"]],
    )
    pool: PoolName | None = Field(
        None,
        description="The pool (a group of workers running one engine and model) to translate "
        "with; it must serve the pair. Default: the fleet's route for the pair (MT_ROUTES).",
        examples=["apertium"],
    )
    adapter: AdapterName | None = Field(
        None,
        description="A LoRA adapter the pool's vLLM workers serve (MT_LORA_ADAPTERS) to "
        "translate with instead of the base model.",
    )
    context: str | None = Field(
        None,
        max_length=MAX_CONTEXT_CHARS,
        description=Guidance.model_fields["context"].description,
        examples=["Product page of a running shoe; the reader is a customer."],
    )
    custom_instructions: list[str] = Field(
        default_factory=list,
        max_length=MAX_INSTRUCTIONS,
        description=Guidance.model_fields["custom_instructions"].description,
        examples=[["Use British spelling", "Keep product names in English"]],
    )
    formality: Formality = Field(
        "default", description=Guidance.model_fields["formality"].description
    )
    translation_memory_id: str | None = Field(
        None,
        max_length=64,
        description="A translation memory of this API key for the pair (/v1/translation_memories"
        "): a segment scoring at least translation_memory_threshold against a stored source "
        "gets its stored target (any engine); below it, the most similar pairs go to an LLM "
        "engine's prompt as examples.",
    )
    translation_memory_threshold: int = Field(
        75,
        ge=0,
        le=100,
        description="The score (0-100, docs/llm.md) at which a memory's pair is served as the "
        "translation; 100: the same text only.",
    )
    style_id: str | None = Field(
        None,
        max_length=64,
        description="A style rule of this API key (DeepL's /v3/style_rules) for the target "
        "language: its rules and custom instructions go to an LLM engine as instructions "
        "(another engine refuses it, 400).",
    )
    quality_estimation: bool = Field(
        False,
        description="Score each translation with the pool's quality-estimation model (a "
        "MetricX-24 regressor: 0 best, 25 worst; docs/quality.md): the result's `quality` "
        "has a score per translated segment, and one above the pool's MT_QE_THRESHOLD a "
        "low_quality warning (in a PO file #, fuzzy; in XLIFF state needs-review-translation). "
        "Refused (422) for a pool without such a model. Its pool's worker, not the API, "
        "reads the phrase cache for it, and scores what it finds there too.",
    )
    translations: list[str] | None = Field(
        None,
        min_length=1,
        description="Translations of the texts (aligned with them) to score instead of "
        "translating the texts: a quality evaluation, with quality_estimation (its pool "
        "scores them and translates nothing; they come back as the job's translations, never "
        "cached).",
    )
    model_type: ModelType | None = Field(
        None,
        description="latency_optimized, quality_optimized or prefer_quality_optimized "
        "(DeepL's): the job goes to a pool marked for it (the workers' MT_MODEL_TYPE; "
        "prefer_quality_optimized: quality_optimized) among those serving the pair, else to "
        "the usual pool: never refused. model_type_used says which. A job that names its "
        "pool goes there.",
    )

    no_trace: bool = Field(
        False,
        description="Nothing of the request outlives its delivery: no phrase-cache write, and "
        "its texts and results are deleted from the fleet right after the first read of its "
        "final result (the synchronous answer, GET /v1/jobs/{id}/result or /document) or its "
        "webhook's delivery (which then carries the result); a second read is 410. No text "
        "goes to logs or metrics. An API key made with --no-trace makes every request "
        "no-trace, whatever this says (docs/security.md#no-trace-requests).",
    )
    use_cache: UseCache = Field(
        "yes",
        description="The phrase cache for this request: yes (read it and keep new "
        "translations), no (neither read nor write it) or overwrite (do not read it; "
        "write the fresh translations over what it held). no_trace writes nothing, so "
        "overwrite with no_trace is refused.",
    )

    @field_validator("texts")
    @classmethod
    def _texts(cls, v: list[str]) -> list[str]:
        return check_texts(v)

    @model_validator(mode="after")
    def _trace(self) -> Self:
        check_cache_use(self.no_trace, self.use_cache)
        return self

    @field_validator("protected_patterns")
    @classmethod
    def _patterns(cls, v: list[str]) -> list[str]:
        return check_patterns(v)

    @model_validator(mode="after")
    def _guidance(self) -> Self:
        self.guidance()  # the limits, checked as the request is read (422)
        return self

    @model_validator(mode="after")
    def _evaluated(self) -> Self:
        if self.translations is None:
            return self
        if not self.quality_estimation:
            raise ValueError("translations are given to be scored: set quality_estimation")
        if self.texts is None or len(self.translations) != len(self.texts):
            raise ValueError(
                f"{len(self.translations)} translations for "
                f"{len(self.texts or [])} texts: give one per text"
            )
        check_texts(self.translations)
        return self

    @model_validator(mode="after")
    def _one_glossary_field(self) -> Self:
        if self.glossary_id and self.glossary_ids:
            raise ValueError("give glossary_id or glossary_ids, not both")
        return self

    def glossaries(self) -> list[str]:
        """The glossaries the request names, in order (the first listed wins a term)."""
        return [self.glossary_id] if self.glossary_id else list(dict.fromkeys(self.glossary_ids))

    def guidance(self) -> Guidance | None:
        """The request's context, instructions and formality (None: none of them)."""
        got = Guidance(
            context=self.context,
            custom_instructions=tuple(self.custom_instructions),
            formality=self.formality,
        )
        return None if got.empty else got


class DocumentIn(BaseModel):
    """A file to translate, returned in its own format by ``GET /v1/jobs/{id}/result``."""

    model_config = ConfigDict(extra="forbid")

    format: str = Field(
        max_length=16,
        description="text, markdown, html, json, arb, yaml, srt, webvtt, po, properties, "
        "android, strings, stringsdict, xcstrings, xliff, docx, xlsx or pptx "
        "(docs/documents.md).",
        examples=["html"],
    )
    content: str = Field(
        description="The file: text formats as text (UTF-8), binary formats (docx, xlsx, "
        "pptx) and files in another encoding (UTF-16, ISO-8859-1) base64.",
        examples=["<p>Free shipping on orders over $50.</p>"],
    )
    encoding: Literal["text", "base64"] | None = Field(
        None,
        description="How `content` is given. Default: base64 for docx, xlsx and pptx, text "
        "otherwise.",
    )
    filename: str | None = Field(
        None, max_length=255, description="Kept for the download's file name."
    )


class DocumentOut(BaseModel):
    format: str
    filename: str | None = None
    encoding: Literal["text", "base64"] = Field(
        description="How `content` is given: text for a UTF-8 file, base64 for a binary one "
        "(docx, xlsx, pptx) and for one in another encoding (a UTF-16 .strings, an ISO-8859-1 "
        ".properties)."
    )
    content: str = Field(
        description=(
            "The translated file; segments that failed or were withheld keep their source text "
            "(a gettext catalogue leaves such an entry's msgstr empty: untranslated)."
        )
    )
    warnings: list[str] = Field(
        default_factory=list,
        description=(
            "Markup the translation lost, moved or repeated, and how it was repaired; what the "
            "format had to guess (a menu accelerator put on a letter the translation lacks)."
        ),
    )

    def data(self) -> bytes:
        """The translated file's bytes."""
        return (
            base64.b64decode(self.content) if self.encoding == "base64" else self.content.encode()
        )


class JobCreate(TextsIn):
    texts: list[str] | None = Field(  # type: ignore[assignment]
        None,
        min_length=1,
        description="Segments to translate (or a `document`); the result is aligned with this "
        "list. Each must have a character that is not whitespace, and none may contain NUL, a "
        "C0/C1 control other than tab, LF and CR, a lone surrogate, or a bidi override/isolate "
        "control (U+202A-U+202E, U+2066-U+2069).",
        examples=[["Add to cart", "Free shipping on orders over $50"]],
    )
    document: DocumentIn | None = Field(
        None, description="A file to translate instead of `texts`; the result is the file."
    )
    lane: Lane | None = Field(
        None,
        description="interactive (latency first) or bulk (throughput first). Default: "
        "interactive for small jobs, bulk for large ones.",
    )
    callback_url: CallbackUrl = None
    writing: Writing | None = Field(
        None,
        description="Improve the texts in their own language instead of translating them "
        "(DeepL Write: task rephrase, in a writing_style or a tone, or correct; docs/llm.md): "
        "source_lang is the target's (auto: the target). Only a pool whose engine follows "
        "instructions (an LLM) takes it.",
        examples=[{"task": "rephrase", "tone": "friendly"}],
    )

    _callback = field_validator("callback_url")(check_callback_url)

    @field_validator("texts")
    @classmethod
    def _texts(cls, v: list[str] | None) -> list[str] | None:  # type: ignore[override]
        return None if v is None else check_texts(v)

    @model_validator(mode="after")
    def _one_input(self) -> JobCreate:
        if (self.texts is None) == (self.document is None):
            raise ValueError("give either texts or a document")
        if self.writing is not None:
            if self.document is not None:
                raise ValueError("writing improves texts, not a document")
            if self.source_lang.lower() == "auto":
                self.source_lang = self.target_lang  # a text is improved in its language
        return self

    def guidance(self) -> Guidance | None:
        """The request's context, instructions, formality and ``writing`` (None: none)."""
        got = super().guidance()
        if self.writing is None:
            return got
        return (got or Guidance()).model_copy(update={"writing": self.writing})


class TranslateCreate(TextsIn):
    timeout: float | None = Field(
        None, gt=0, le=300, description="Seconds to wait before answering 202 with the job id."
    )
    callback_url: str | None = Field(
        None,
        max_length=2048,
        description="Like a job's: a request with a callback_url always makes a job (even when "
        "the phrase cache answers every text), whose final state is POSTed there, whether the "
        "answer was 200 or 202.",
    )

    _callback = field_validator("callback_url")(check_callback_url)


class ChunksPublic(BaseModel):
    """Where an unfinished job's work is: chunks waiting for a worker and chunks a worker holds.
    A chunk in flight far longer than its peers is stuck (its worker hangs or died: a dead
    worker's chunks go back to the queue within about 20 s and start again elsewhere)."""

    queued: int = Field(description="Chunks no worker has started.")
    in_flight: int = Field(description="Chunks a worker started and has not finished.")
    oldest_in_flight_s: float | None = Field(
        None, description="Seconds since the longest-running chunk in flight was started."
    )


WebhookState = Literal["waiting", "pending", "delivered", "gone", "failed"]


class WebhookPublic(BaseModel):
    """Where a job's webhook stands: ``waiting`` (the job is not final), ``pending`` (being
    sent, or waiting for its next attempt), ``delivered`` (a 2xx), ``gone`` (the receiver
    answered 410: no more attempts) or ``failed`` (given up: MT_WEBHOOK_RETRY_FOR_S passed)."""

    url: str
    state: WebhookState
    id: str | None = Field(None, description="The webhook-id header, the same on every attempt.")
    type: str | None = Field(None, description="The event: job.succeeded, job.partial, ...")
    attempts: int = 0
    last_attempt_at: float | None = None
    last_status: int | None = Field(None, description="The HTTP status of the last attempt.")
    last_error: str | None = Field(None, description="What went wrong with the last attempt.")
    next_attempt_at: float | None = None
    delivered_at: float | None = None


class JobPublic(BaseModel):
    id: str
    status: JobStatus
    lane: Lane
    source_lang: str
    target_lang: str
    pool: str | None = Field(None, description="The pool whose workers translate the job.")
    adapter: str | None = Field(None, description="The LoRA adapter the job named.")
    progress: Progress
    cached: int = Field(description="Segments answered from the phrase cache at submission.")
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    error: dict[str, Any] | None = None
    document_format: str | None = Field(
        None, description="Set for a document job; its segments are the document's sentences."
    )
    detected_source_lang: str | None = Field(
        None,
        description="The language detected when source_lang was 'auto', among those the fleet "
        "translates into the target (a short or ambiguous text goes to the one the detector "
        "rates highest).",
    )
    detected_confidence: float | None = Field(
        None,
        ge=0,
        le=1,
        description="The detector's confidence in detected_source_lang (0-1, among every "
        "language it knows; a few words score low).",
    )
    model_type_used: PoolModelType | None = Field(
        None,
        description="When the request gave model_type: the marking of the pool that "
        "translates it, else latency_optimized when that was asked and quality_optimized "
        "otherwise (the pair's one model; docs/llm.md).",
    )
    work: ChunksPublic | None = Field(
        None, description="Unfinished jobs (GET /v1/jobs/{id}): where their chunks are."
    )
    callback_url: str | None = Field(None, description="Where the job's final state is POSTed.")
    webhook: WebhookPublic | None = Field(
        None, description="A job with a callback_url (GET /v1/jobs/{id}): its webhook's attempts."
    )
    no_trace: bool = Field(
        False,
        description="The job's texts and results are deleted once its final result is "
        "delivered (asked for, or its API key's default: docs/security.md#no-trace-requests).",
    )
    delivered_at: float | None = Field(
        None,
        description="A no-trace job: when its final result was delivered and deleted with its "
        "texts (reading it again is 410).",
    )

    @property
    def final(self) -> bool:
        """The job will not change any more (succeeded, partial, failed or cancelled)."""
        return self.status.final


class JobSummaryPublic(JobPublic):
    """A job in a list of jobs (``GET /v1/jobs``)."""

    document_name: str | None = Field(None, description="A document job's file name.")


class JobListPublic(BaseModel):
    jobs: list[JobSummaryPublic] = Field(description="Newest first.")


class JobLinks(BaseModel):
    """Where to read more about a job, relative to the API's base URL."""

    job: str
    result: str
    events: str
    document: str | None = None

    @classmethod
    def of(cls, job_id: str, document: bool) -> JobLinks:
        base = f"/v1/jobs/{job_id}"
        return cls(
            job=base,
            result=f"{base}/result",
            events=f"{base}/events",
            document=f"{base}/document" if document else None,
        )


class JobEventData(JobPublic):
    """A job in an event (a webhook's ``data``, an event stream's ``data``): its public fields
    and links."""

    links: JobLinks


WebhookEventType = Literal["job.succeeded", "job.partial", "job.failed", "job.cancelled"]


class WebhookEvent(BaseModel):
    """The body of a webhook POST (the Standard Webhooks payload shape)."""

    type: WebhookEventType
    timestamp: str = Field(description="When the job became final (ISO 8601, UTC).")
    data: JobEventData
    result: JobResultPublic | None = Field(
        None,
        description="A no-trace job's result (texts jobs only): the webhook delivers it, and "
        "the fleet deletes it once the receiver answered 2xx. Absent when a read of "
        "GET /v1/jobs/{id}/result delivered it first.",
    )


class SegmentError(BaseModel):
    index: int
    type: str
    message: str


class SegmentWarning(SegmentError):
    """A translation delivered but flagged by an output check (same shape as an error)."""


class MemoryMatch(BaseModel):
    """A segment translated from the job's translation memory: the stored target, served as
    it was stored, and the match's score (0-100; 100: the same text)."""

    index: int
    score: float


class QualityScore(BaseModel):
    """A translated segment's quality estimate (MetricX: 0 best, 25 worst) and whether it is
    above the pool's review threshold (then it also has a low_quality warning)."""

    index: int
    score: float
    low_quality: bool = False


class JobResultPublic(BaseModel):
    id: str
    status: JobStatus
    translations: list[str | None] = Field(
        description="Aligned with the submitted texts; null where a segment failed or is not done. "
        "For a document job: its sentences as translated, the file's inline markup as numbered "
        "tags (<gN>...</gN> around formatted text, <xN/> for a code kept in place); the file "
        "itself is in `document`."
    )
    errors: list[SegmentError] = Field(default_factory=list)
    warnings: list[SegmentWarning] = Field(
        default_factory=list,
        description="Translations delivered but flagged (e.g. truncated); never cached.",
    )
    memory: list[MemoryMatch] = Field(
        default_factory=list,
        description="Segments whose translation is the translation memory's (its score).",
    )
    quality: list[QualityScore] = Field(
        default_factory=list,
        description="With quality_estimation: each translated segment's score (MetricX: 0 "
        "best, 25 worst).",
    )
    document: DocumentOut | None = Field(
        None, description="A document job's translated file, in its own format."
    )
    detected_langs: list[str | None] | None = Field(
        None,
        description="With source_lang 'auto': the language detected for each segment (null: "
        "too short to tell; it was translated from the job's detected language).",
    )


class TranslatePublic(BaseModel):
    id: str | None = Field(
        description="The job made for this request; null when the phrase cache answered every "
        "text (nothing was queued, no job is kept)."
    )
    status: JobStatus
    translations: list[str | None]
    warnings: list[SegmentWarning] = Field(default_factory=list)
    memory: list[MemoryMatch] = Field(
        default_factory=list,
        description="Segments whose translation is the translation memory's (its score).",
    )
    quality: list[QualityScore] = Field(
        default_factory=list,
        description="With quality_estimation: each translated segment's score (MetricX: 0 "
        "best, 25 worst).",
    )
    cached: int = Field(0, description="Segments answered from the phrase cache.")
    errors: list[SegmentError] = Field(default_factory=list)
    detected_source_lang: str | None = Field(
        None, description="As a job's: the language detected when source_lang was 'auto'."
    )
    detected_confidence: float | None = Field(
        None, description="As a job's: the detector's confidence in it (0-1)."
    )
    model_type_used: PoolModelType | None = Field(
        None, description="As a job's: what translated it, when the request gave model_type."
    )


class PairPublic(BaseModel):
    source: str
    target: str
    pool: str = Field(description="The pool that serves the pair (a pair may have several).")
    engine: str
    model: str
    live: bool = Field(description="A live worker of the pool serves this pair right now.")
    routed: bool = Field(
        description="The pool a job for this pair goes to when it names none (MT_ROUTES)."
    )


class PoolPublic(BaseModel):
    name: str
    engine: str
    model: str
    pairs: int = Field(description="Language pairs the pool serves.")
    live_workers: int = Field(description="Workers of the pool with a fresh heartbeat.")
    lanes: list[str] = Field(description="Lanes its live workers consume.")
    adapters: list[str] = Field(default_factory=list, description="LoRA adapters it serves.")
    model_type: PoolModelType | None = Field(
        None, description="What its workers mark it for (MT_MODEL_TYPE; null: unmarked)."
    )
    quality_model: str | None = Field(
        None,
        description="Its workers' quality-estimation model (MT_QE_MODEL): requests with "
        "quality_estimation may go to it (null: none).",
    )


class LanguagePublic(BaseModel):
    code: str
    name: str


class LanguagesPublic(BaseModel):
    pairs: list[PairPublic]
    languages: list[LanguagePublic]
    pools: list[PoolPublic] = Field(default_factory=list)


class LimitsPublic(BaseModel):
    """What one request or job may carry on this fleet (its MT_* settings), so a client can
    split its work before it is refused."""

    max_segments_per_job: int = Field(description="Texts (or document sentences) in one job.")
    max_segment_chars: int = Field(description="Characters in one text.")
    max_request_bytes: int = Field(description="Bytes in one request body.")
    interactive_max_segments: int | None = Field(
        None,
        description="Texts in one interactive job: a larger one runs on the bulk lane, "
        "whatever lane it asks for.",
    )
    key_interactive_segments: int | None = Field(
        None, description="Interactive segments one API key may have queued or running at once."
    )
    key_interactive_jobs: int | None = Field(
        None, description="Interactive jobs one API key may have queued or running at once."
    )


class ErrorBody(BaseModel):
    type: str
    message: str


class ErrorPublic(BaseModel):
    error: ErrorBody


# --- glossaries --------------------------------------------------------------------------------
Term = Annotated[str, Field(max_length=1_000)]


class GlossaryCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=100, examples=["shop terms"])
    source_lang: LangCode = Field(examples=["en"])
    target_lang: LangCode = Field(examples=["es"])
    entries: dict[Term, Term] = Field(
        default_factory=dict,
        description="Source term -> target term (matched case-insensitively on word "
        "boundaries; the target term is put in as written).",
        examples=[{"case": "funda"}],
    )
    entries_tsv: str | None = Field(
        None,
        description="More entries as 'source<TAB>target' lines (blank lines skipped).",
        examples=["free shipping\tenvío gratis\n"],
    )
    protected: list[Term] = Field(
        default_factory=list,
        description="Terms never translated (brands, product names); they come out in the "
        "casing given here.",
        examples=[["iPhone", "PlayStation"]],
    )
    protected_patterns: list[str] = Field(
        default_factory=list,
        max_length=patterns.MAX_PATTERNS,
        description="Regular expressions (RE2 syntax) whose matches are never translated, "
        "in every job that names the glossary (beside the request's own).",
        examples=[["§[0-9a-fk-or]"]],
    )

    @field_validator("protected_patterns")
    @classmethod
    def _patterns(cls, v: list[str]) -> list[str]:
        return check_patterns(v)


class GlossaryPublic(BaseModel):
    id: str
    name: str
    source_lang: str
    target_lang: str
    version: str = Field(description="Hash of the content; part of the phrase-cache key.")
    entry_count: int
    protected_count: int
    pattern_count: int = 0
    created_at: float


class GlossaryDetail(GlossaryPublic):
    entries: dict[str, str]
    protected: list[str]
    protected_patterns: list[str] = Field(default_factory=list)


class GlossaryList(BaseModel):
    glossaries: list[GlossaryPublic]
