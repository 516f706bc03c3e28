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


def plain_text(p: Plan) -> str:
    """The document's translatable text, tags removed (for language detection)."""
    return " ".join(TAG.sub(" ", s) for s in p.segments)


def detect_source(sample: str) -> str:
    """The language of ``sample`` (source_lang "auto"); 422 when it cannot be told."""
    from core import langdetect

    found = langdetect.detect(sample)
    if found is None:
        raise InvalidInput(
            "could not detect the source language (too little text, or a language the "
            "detector does not know); give source_lang"
        )
    return found[0]


def prepare(req: JobCreate) -> tuple[JobCreate, PreparedDocument | None, str | None]:
    """Turn a request into a texts request: (request, the document or None, the detected
    source language or None)."""
    detected: str | None = None
    if req.document is None:
        if req.source_lang.lower() == AUTO:
            detected = detect_source(" ".join(req.texts or ()))
            req = req.model_copy(update={"source_lang": detected})
        return req, None, detected
    fmt = documents.for_name(req.document.format)
    content = decode(req.document, fmt)
    try:
        units = fmt.extract(content)
    except DocumentError:
        raise
    except Exception as exc:
        raise DocumentError(f"cannot read the {fmt.name} document: {exc}") from exc
    source = req.source_lang
    if source.lower() == AUTO:
        # detect on the sentences as the English rules cut them; then cut with the right ones
        detected = source = detect_source(plain_text(plan(units, "en")))
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
    return texts_req, PreparedDocument(fmt, content, req.document.filename, p), detected


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
