"""Request and response bodies of the public HTTP API (``XCreate`` in, ``XPublic`` out).

This contract is public: extend it, never break it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from core.models import JobStatus, Lane, Progress

LangCode = Annotated[str, StringConstraints(min_length=2, max_length=16)]

# Characters that never belong in text to translate: NUL and the C0/C1 controls (Unicode
# category Cc) other than tab, newline and carriage return, and lone surrogates (Cs). One
# compiled character class: a job may carry thousands of texts.
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def check_text(text: str, index: int) -> str:
    if not text.strip():
        raise ValueError(f"texts[{index}] is empty or whitespace only")
    bad = _FORBIDDEN.search(text)
    if bad:
        ch = bad.group()
        kind = "a lone surrogate" if "\ud800" <= ch <= "\udfff" else "control character"
        raise ValueError(f"texts[{index}] contains {kind} U+{ord(ch):04X}")
    return text


class TextsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    texts: list[str] = Field(
        min_length=1, description="Segments to translate; the result is aligned with this list."
    )
    source_lang: LangCode = Field(description="Source language code, e.g. 'en'.")
    target_lang: LangCode = Field(description="Target language code, e.g. 'es'.")

    @field_validator("texts")
    @classmethod
    def _texts(cls, v: list[str]) -> list[str]:
        return [check_text(t, i) for i, t in enumerate(v)]


class JobCreate(TextsIn):
    lane: Lane | None = Field(
        None,
        description="interactive (latency first) or bulk (throughput first). Default: "
        "interactive for small jobs, bulk for large ones.",
    )


class TranslateCreate(TextsIn):
    timeout: float | None = Field(
        None, gt=0, le=300, description="Seconds to wait before answering 202 with the job id."
    )


class JobPublic(BaseModel):
    id: str
    status: JobStatus
    lane: Lane
    source_lang: str
    target_lang: str
    progress: Progress
    cached: int = Field(description="Segments answered from the phrase cache at submission.")
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    error: dict[str, Any] | None = None


class SegmentError(BaseModel):
    index: int
    type: str
    message: str


class SegmentWarning(BaseModel):
    index: int
    type: str
    message: str


class JobResultPublic(BaseModel):
    id: str
    status: JobStatus
    translations: list[str | None] = Field(
        description="Aligned with the submitted texts; null where a segment failed or is not done."
    )
    errors: list[SegmentError] = Field(default_factory=list)
    warnings: list[SegmentWarning] = Field(
        default_factory=list,
        description="Translations delivered but flagged (e.g. truncated); never cached.",
    )


class TranslatePublic(BaseModel):
    id: str
    status: JobStatus
    translations: list[str | None]
    warnings: list[SegmentWarning] = Field(default_factory=list)
    cached: int = Field(0, description="Segments answered from the phrase cache.")
    errors: list[SegmentError] = Field(default_factory=list)


class PairPublic(BaseModel):
    source: str
    target: str
    engine: str
    model: str
    live: bool = Field(description="A live worker serves this pair right now.")


class LanguagePublic(BaseModel):
    code: str
    name: str


class LanguagesPublic(BaseModel):
    pairs: list[PairPublic]
    languages: list[LanguagePublic]


class ErrorBody(BaseModel):
    type: str
    message: str


class ErrorPublic(BaseModel):
    error: ErrorBody
