"""Document jobs: a file goes in, the same file comes back translated.

Submission: the format (core/documents) cuts the file into units, the pipeline protects spans
and splits units into sentences, and the sentences become an ordinary job's texts, so
documents share the lanes, the phrase cache, the workers and every guarantee of text jobs. The
original file is kept beside the job (``core.keys.job_document``).

Result: the file is cut again (extraction and planning are deterministic), each sentence is
replaced by its translation, or kept in the source language where it failed, and the format
renders the file. Nothing is stored twice and nothing of the document can be lost.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from api.schemas import DocumentIn, DocumentOut, JobCreate
from core import documents
from core.documents.base import TAG, DocumentError, DocumentFormat
from core.documents.pipeline import Plan, assemble, plan
from core.errors import InvalidInput
from core.models import JobRecord, SegmentOutcome

AUTO = "auto"


@dataclass
class PreparedDocument:
    fmt: DocumentFormat
    content: bytes
    filename: str | None
    plan: Plan


def decode(doc: DocumentIn, fmt: DocumentFormat) -> bytes:
    encoding = doc.encoding or ("base64" if fmt.binary else "text")
    if encoding == "base64":
        try:
            return base64.b64decode(doc.content, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidInput(f"document.content is not valid base64: {exc}") from exc
    if fmt.binary:
        raise InvalidInput(f"a {fmt.name} document must be sent base64-encoded")
    return doc.content.encode("utf-8")


#: A segment's own detection counts (mixed content) from this many letters and this confidence
#: (lingua's relative confidence among ~35 candidates; a clear sentence scores well above it).
SEGMENT_MIN_LETTERS = 20
SEGMENT_MIN_CONFIDENCE = 0.5


def detect_source(sample: str) -> str:
    """The language of ``sample`` (source_lang "auto"); 422 when it cannot be told. Short
    samples use lingua's full models (better on a few words; +465 MiB once per process), long
    ones its light trigram models."""
    from core import langdetect

    found = langdetect.detect(sample, accuracy="high" if len(sample) < 200 else "low")
    if found is None:
        raise InvalidInput(
            "could not detect the source language (too little text, or a language the "
            "detector does not know); give source_lang"
        )
    return found[0]


def detect_languages(segments: list[str]) -> tuple[str, list[str | None]]:
    """For ``source_lang: auto``: the job's language and each segment's own where it is clear
    and differs (mixed content; None elsewhere).

    Each segment is detected on its own; the job's language is the one with the most letters
    among the clear detections (a job mixing languages is not judged by a blend of them), or
    the whole text's when no segment is clear. 422 when nothing can be told."""
    from core import langdetect

    plain = [TAG.sub(" ", s) for s in segments]
    total = sum(len(t) for t in plain)
    # lingua's full models are better on a few words (+465 MiB once per process); long
    # documents use its light trigram models
    found = langdetect.detect_many(plain, accuracy="high" if total < 5000 else "low")
    clear: list[str | None] = []
    letters: dict[str, int] = {}
    for text, hit in zip(plain, found, strict=True):
        n = sum(ch.isalpha() for ch in text)
        if hit is not None and hit[1] >= SEGMENT_MIN_CONFIDENCE and n >= SEGMENT_MIN_LETTERS:
            clear.append(hit[0])
            letters[hit[0]] = letters.get(hit[0], 0) + n
        else:
            clear.append(None)
    job = max(letters, key=lambda k: letters[k]) if letters else detect_source(" ".join(plain))
    return job, clear


def others(langs: list[str | None], source: str) -> list[str | None]:
    """Per segment: its language where it differs from ``source``, else None."""
    return [lang if lang != source else None for lang in langs]


Prepared = tuple[JobCreate, "PreparedDocument | None", str | None, list[str | None] | None]


def prepare(req: JobCreate) -> Prepared:
    """Turn a request into a texts request: (request, the document or None, the detected
    source language or None, the languages detected per segment or None). With
    ``source_lang: auto`` the job's language is detected on all its text, then each segment's
    own (mixed content)."""
    detected: str | None = None
    if req.document is None:
        if req.source_lang.lower() != AUTO:
            return req, None, None, None
        detected, clear = detect_languages(req.texts or [])
        req = req.model_copy(update={"source_lang": detected})
        return req, None, detected, others(clear, detected)
    fmt = documents.for_name(req.document.format)
    content = decode(req.document, fmt)
    try:
        units = fmt.extract(content)
    except DocumentError:
        raise
    except Exception as exc:
        raise DocumentError(f"cannot read the {fmt.name} document: {exc}") from exc
    source = req.source_lang
    langs: list[str | None] | None = None
    if source.lower() == AUTO:
        # detect on the sentences as the English rules cut them; then cut with the right ones
        # (detected again only if those rules cut the text differently)
        english = plan(units, "en")
        detected, clear = detect_languages(english.segments)
        source = detected
        p = plan(units, source) if source != "en" else english
        if p.segments != english.segments:
            clear = detect_languages(p.segments)[1]
        langs = others(clear, source)
    else:
        p = plan(units, source)
    fields: dict[str, Any] = {
        "texts": p.segments,
        "source_lang": source,
        "target_lang": req.target_lang,
        "lane": req.lane,
        "glossary_id": req.glossary_id,
    }
    if p.segments:
        try:
            texts_req = JobCreate.model_validate(fields)
        except ValidationError as exc:
            msg = "; ".join(
                str(e.get("msg", "")).removeprefix("Value error, ") for e in exc.errors()
            )
            raise InvalidInput(f"document segment refused: {msg}") from exc
    else:  # nothing to translate: the job succeeds at once with the file as it is
        texts_req = JobCreate.model_construct(**fields)
    return texts_req, PreparedDocument(fmt, content, req.document.filename, p), detected, langs


def render(job: JobRecord, content: bytes, outcomes: list[SegmentOutcome | None]) -> DocumentOut:
    """The translated file (sentences without a translation keep their source text)."""
    assert job.document_format is not None
    fmt = documents.for_name(job.document_format)
    p = plan(fmt.extract(content), job.source_lang)
    translations = [o.translation if o is not None and o.ok else None for o in outcomes]
    if len(translations) != len(p.segments):  # cannot happen unless the format changed
        raise DocumentError(
            f"the document now has {len(p.segments)} segments, the job {len(translations)}"
        )
    assembled = assemble(p, translations)
    rendered = fmt.render(content, assembled.texts, target_lang=job.target_lang)
    return DocumentOut(
        format=fmt.name,
        filename=job.document_name,
        encoding="base64" if fmt.binary else "text",
        content=base64.b64encode(rendered).decode() if fmt.binary else rendered.decode("utf-8"),
        warnings=[f"unit {u}: {w}" for u, w in assembled.warnings],
    )
