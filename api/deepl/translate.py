"""``POST /v2/translate``: DeepL's text translation, over the drop-in path
(:func:`mtfleet.api.dropin.translate`).

One request is one job on the interactive lane (or none, when the phrase cache holds every
sentence); it waits ``MT_DEEPL_WAIT_S`` for the job and answers 429 past it, which the client
retries: its resend joins the same job. ``billed_characters`` is what the request charged
the key: the characters of the sentences it sent to translation (markup and the whitespace
between sentences are not billed).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from mtfleet.api import dropin
from mtfleet.api.deepl import glossary_ids, languages
from mtfleet.api.deepl.auth import DeepLCaller
from mtfleet.api.deepl.errors import Route
from mtfleet.api.deepl.params import (
    TranslateIn,
    fields,
    glossaries,
    guidance,
    parse,
)
from mtfleet.api.deps import ServicesDep
from mtfleet.formats.fragments import Cutting, check_xml

router = APIRouter(prefix="/v2", tags=["deepl"], route_class=Route)


@router.post("/translate")
async def translate(request: Request, services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    """DeepL's ``/v2/translate`` (JSON or form): see docs/deepl.md for what each parameter
    does here."""
    req = parse(TranslateIn, await fields(request))
    target = languages.to_fleet(req.target_lang)
    source = languages.to_fleet(req.source_lang) if req.source_lang else None
    if req.tag_handling == "xml" and req.tag_handling_version == "v2":
        check_xml(req.text)  # strict XML: a malformed text is a 400 naming its problem
    glossary = await run_in_threadpool(
        glossary_ids.for_pair,
        services,
        caller,
        glossaries(req.glossary_id, req.glossary_ids),
        source,
        target,
    )
    cutting = Cutting(
        markup=req.tag_handling or "text",
        split=req.split_sentences or ("nonewlines" if req.tag_handling else "1"),
        ignore_tags=tuple(req.ignore_tags),
        non_splitting_tags=tuple(req.non_splitting_tags),
        splitting_tags=tuple(req.splitting_tags),
        outline_detection=req.outline_detection,
    )
    done = await dropin.translate(
        services,
        caller,
        dropin.TextsRequest(
            req.text, source, target, cutting, glossary, guidance(req), req.model_type
        ),
        surface="deepl",
        request=req.model_dump(mode="json"),
        wait_s=services.settings.api.deepl_wait_s,
    )
    detected = next((t.source for t in done if t.source), source)
    out = []
    for t in done:
        lang = t.source or detected
        item: dict[str, Any] = {
            "detected_source_language": languages.source_code(lang) if lang else "",
            "text": t.text,
            "billed_characters": t.chars,
        }
        if t.model_type_used is not None:  # the request gave model_type (api/routing.py)
            item["model_type_used"] = t.model_type_used
        if req.tag_handling:  # the version applied, as DeepL says it (v1 its default)
            item["tag_handling_version"] = req.tag_handling_version or "v1"
        out.append(item)
    return JSONResponse({"translations": out})
