"""Document jobs: a file goes in, the same file comes back translated.

Submission (:func:`prepare`): the format (:mod:`mtfleet.formats`) cuts the file into
units and the pipeline splits units into sentences (both in a document worker process, under a
deadline and a memory limit: :mod:`mtfleet.api.parsing`), which become an ordinary job's texts, so
documents share the lanes, the phrase cache, the workers and every guarantee of text jobs. The
original file is kept beside the job (:func:`mtfleet.core.keys.job_document`).

Result (:func:`render`): the file is cut again (extraction and planning are deterministic),
each sentence is replaced by its translation, or kept in the source language where it failed,
and the format renders the file, in a document worker too. :mod:`mtfleet.api.results` renders
a job once per state and keeps the file, so reading a result again costs no parsing.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass

from mtfleet import formats as documents
from mtfleet.api import detection
from mtfleet.api.parsing import DocumentPool
from mtfleet.core.errors import InvalidInput
from mtfleet.core.models import Finding, SegmentOutcome
from mtfleet.core.schemas import DocumentIn, DocumentOut, check_text
from mtfleet.core.store import JobRecord
from mtfleet.formats.base import DocumentFormat


@dataclass
class PreparedDocument:
    """A document cut into the texts of its job."""

    fmt: DocumentFormat
    content: bytes
    filename: str | None
    texts: list[str]
    unit_of: list[int]  # the unit each text comes from (its neighbours: the LLM's context)
    source: str  # the language its sentences were cut for (detected for "auto")
    detected: str | None = None  # set when source_lang was "auto"
    segment_langs: list[str | None] | None = None  # per text, where it differs (auto)
    confidence: float | None = None  # the detector's, in the detected language (auto)


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


def prepare(
    doc: DocumentIn,
    source_lang: str,
    pool: DocumentPool,
    detect: Callable[[list[str]], detection.Detected] | None = None,
    owner: str = "",
) -> PreparedDocument:
    """Decode, extract and cut a document (422 ``invalid_document`` when it does not parse,
    ``document_too_complex`` past the document limits). With ``source_lang: auto`` the
    sentences are first cut by the English rules to ``detect`` the language of each
    (:func:`mtfleet.api.detection.detect_each` as the service runs it), then by the detected
    language's rules (detected again only if those cut the text differently). ``owner``: the
    API key it is read for (its share of the document processes)."""
    fmt = documents.for_name(doc.format)
    content = decode(doc, fmt)
    detected: str | None = None
    langs: list[str | None] | None = None
    confidence: float | None = None
    if detection.is_auto(source_lang):
        assert detect is not None, "source_lang auto needs a detect"
        units, english = pool.cut_keeping_units(fmt.name, content, "en", owner)
        found = detect(english.segments)
        detected, clear, confidence = found.source, found.segment_langs, found.confidence
        cut = pool.replan(units, detected, owner) if detected != "en" else english
        if cut.segments != english.segments:
            clear = detect(cut.segments).segment_langs
        langs = [lang if lang != detected else None for lang in clear]
        source = detected
    else:
        cut = pool.cut(fmt.name, content, source_lang, owner)
        source = source_lang
    segments = cut.segments
    for i, text in enumerate(segments):
        try:
            check_text(text, i)
        except ValueError as exc:
            raise InvalidInput(f"document segment refused: {exc}") from exc
    return PreparedDocument(
        fmt, content, doc.filename, segments, cut.unit_of, source, detected, langs, confidence
    )


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def render(
    job: JobRecord, content: bytes, outcomes: list[SegmentOutcome | None], pool: DocumentPool
) -> DocumentOut:
    """The translated file (a sentence without a translation keeps its source text, or is
    marked untranslated where the format can say so) and what the format had to guess."""
    assert job.document_format is not None
    fmt = documents.for_name(job.document_format)
    translations = [o.translation if o is not None and o.ok else None for o in outcomes]
    review = [  # a low quality estimate: marked for review where the format can say so
        i
        for i, o in enumerate(outcomes)
        if o is not None and any(w.get("type") == Finding.low_quality for w in o.warnings)
    ]
    out = pool.render(
        fmt.name, content, job.source_lang, translations, job.target_lang, job.owner, review
    )
    rendered = out.content
    text = None if fmt.binary else _utf8(rendered)  # a UTF-16 .strings, a Latin-1 .properties
    return DocumentOut(
        format=fmt.name,
        filename=job.document_name,
        encoding="base64" if text is None else "text",
        content=base64.b64encode(rendered).decode() if text is None else text,
        warnings=[
            f"segment {i}: {w.get('message', '')}; repaired in the file"
            for i, o in enumerate(outcomes)
            if o is not None
            for w in o.warnings
            if w.get("type") == Finding.tag_mismatch
        ]
        + out.warnings,
    )
