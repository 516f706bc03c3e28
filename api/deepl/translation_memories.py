"""DeepL's translation memories (``/v3/translation_memories``), as its official client
(``deepl`` >= 1.32) reads them: ``list_translation_memories``, ``get_translation_memory``,
``list_translation_memory_segments`` and ``delete_translation_memory``, answered from the
fleet's memories (:mod:`mtfleet.core.tm`; made with ``/v1/translation_memories`` or
``mtfleet tm import``). A request names one with ``translation_memory_id``, in DeepL's form
(a UUID) or the fleet's (32 hex digits): the same number.

Reading a memory's segments is one of its key's ``MT_TM_WORK_PER_KEY`` operations, done in a
document process, as an import (:mod:`mtfleet.api.routes.translation_memories`).

A memory belongs to the API key that made it: another key's answers exactly as a missing one
(404). On the wire a fleet memory (one language pair) is DeepL's memory of one source language
and one target language (``target_languages`` has one code; codes as DeepL writes a
glossary's: lower case, no variant). ``GET /v3/translation_memories`` pages as DeepL's style
rules do (``page`` from 0, ``page_size`` 1-25, default 10); ``.../segments`` as DeepL's
client asks (``page_size`` 1-100, default 50, an opaque ``page_cursor``, ``filter_text`` of at
least 2 characters across source and target, ``filter_case_sensitive``).

Not here: DeepL's import and export jobs (``/v3/translation_memories/import``, ``/export``,
``/jobs/{id}``, with their upload and download URLs); import with ``/v1/translation_memories``
and export with ``GET /v1/translation_memories/{id}/export``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from mtfleet.api.deepl import languages
from mtfleet.api.deepl.auth import DeepLCaller
from mtfleet.api.deepl.errors import Route
from mtfleet.api.deepl.glossaries import timestamp
from mtfleet.api.deepl.glossary_ids import to_deepl
from mtfleet.api.deepl.params import MAX_PAGE, bool_param, int_param
from mtfleet.api.deps import ServicesDep
from mtfleet.api.routes import translation_memories as fleet
from mtfleet.core.errors import InvalidInput
from mtfleet.core.tm import TMInfo

router = APIRouter(prefix="/v3/translation_memories", tags=["deepl"], route_class=Route)

DEFAULT_PAGE_SIZE = 10
MAX_PAGE_SIZE = 25
DEFAULT_SEGMENTS_PAGE = 50
MAX_SEGMENTS_PAGE = 100


def info(tm: TMInfo) -> dict[str, Any]:
    """A memory as DeepL's client reads it (``TranslationMemoryInfo.from_json``)."""
    return {
        "translation_memory_id": to_deepl(tm.id),
        "name": tm.name,
        "source_language": languages.glossary_code(tm.source_lang),
        "target_languages": [languages.glossary_code(tm.target_lang)],
        "segment_count": tm.entry_count,
        "creation_time": timestamp(tm.created_at),
        "updated_time": timestamp(tm.updated_at),
    }


def _segment_id(*parts: str) -> str:
    """A stable id for a segment (the same text has the same id)."""
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
    return to_deepl(digest[:32])


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode().rstrip("=")


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if text.startswith("o:") and text[2:].isdigit():
            return int(text[2:])
    except (binascii.Error, ValueError):
        pass
    raise InvalidInput("parameter 'page_cursor' is not a cursor this API gave")


@router.get("")
def list_translation_memories(
    request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    q = request.query_params
    page = int_param(q.get("page"), "page", 0, 0, MAX_PAGE)
    size = int_param(q.get("page_size"), "page_size", DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE)
    found = fleet.store(services, caller.owner).list_for(caller.owner)
    found = found[page * size : (page + 1) * size]
    return JSONResponse({"translation_memories": [info(tm) for tm in found]})


@router.get("/{tm_id}")
def get_translation_memory(tm_id: str, services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    return JSONResponse(info(fleet.store(services, caller.owner).visible(tm_id, caller.owner)))


@router.get("/{tm_id}/segments")
def list_translation_memory_segments(
    tm_id: str, request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    q = request.query_params
    size = int_param(q.get("page_size"), "page_size", DEFAULT_SEGMENTS_PAGE, 1, MAX_SEGMENTS_PAGE)
    offset = _offset(q.get("page_cursor"))
    needle = q.get("filter_text")
    case_sensitive = bool_param(q.get("filter_case_sensitive"), "filter_case_sensitive")
    if needle is not None and len(needle) < 2:
        raise InvalidInput("parameter 'filter_text' must have at least 2 characters")
    tms = fleet.store(services, caller.owner)
    with services.memory_work.hold(caller.owner):  # read and filtered in a document process
        tm = tms.visible(tm_id, caller.owner)
        page, more = tms.segments(tm.id, offset, size, needle, case_sensitive)
    target = languages.glossary_code(tm.target_lang)
    body: dict[str, Any] = {
        "segments": [
            {
                "source_segment_id": _segment_id(tm.id, s),
                "source_text": s,
                "targets": [
                    {
                        "target_segment_id": _segment_id(tm.id, s, tm.target_lang),
                        "target_language": target,
                        "target_text": t,
                    }
                ],
            }
            for s, t in page
        ],
        "segment_count": tm.entry_count,
    }
    if more:
        body["next_page_cursor"] = _cursor(offset + size)
    return JSONResponse(body)


@router.delete("/{tm_id}", status_code=204)
def delete_translation_memory(tm_id: str, services: ServicesDep, caller: DeepLCaller) -> Response:
    fleet.delete(services, caller, tm_id)
    return Response(status_code=204)
