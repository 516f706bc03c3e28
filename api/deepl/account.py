"""What a DeepL client asks about its account and the service: ``/v2/usage``,
``/v2/languages``, ``/v2/glossary-language-pairs``.

Languages come from what the fleet serves (the registry's language pairs, kept while no worker
runs); usage from the calling key's character quota, which here counts per UTC day (DeepL's
per billing period).
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from mtfleet.api.deepl import languages
from mtfleet.api.deepl.auth import DeepLCaller
from mtfleet.api.deepl.errors import Route
from mtfleet.api.deepl.params import fields
from mtfleet.api.deps import ServicesDep
from mtfleet.core.errors import InvalidInput

router = APIRouter(prefix="/v2", tags=["deepl"], route_class=Route)

#: What ``character_limit`` says for a key without a quota (DeepL's own figure for an
#: unlimited plan).
NO_LIMIT = 1_000_000_000_000


@router.get("/usage")
async def usage(services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    """Characters the key used today (UTC) and its daily quota."""
    key = caller.key
    used = 0
    if key is not None:
        used = (await run_in_threadpool(services.apikeys.used_today, [key.id]))[key.id]
    limit = key.chars_per_day if key is not None and key.chars_per_day is not None else NO_LIMIT
    now = time.time()
    start = dt.datetime.fromtimestamp(now - now % 86_400, dt.UTC)
    return JSONResponse(
        {
            "character_count": used,
            "character_limit": limit,
            "api_key_character_count": used,
            "api_key_character_limit": limit,
            "start_time": start.isoformat().replace("+00:00", "Z"),
            "end_time": (start + dt.timedelta(days=1)).isoformat().replace("+00:00", "Z"),
        }
    )


@router.get("/languages")
async def list_languages(
    request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    """The fleet's source or target languages (``type``, in the query or, as the official
    client sends it, in a form body on the GET)."""
    kind = (await fields(request)).get("type") or "source"
    if kind not in ("source", "target"):
        raise InvalidInput("parameter 'type' must be 'source' or 'target'")
    pairs = await services.registry.aserved_pairs()
    out: dict[str, dict[str, Any]] = {}
    if kind == "source":
        for fleet in sorted({s for s, _ in pairs}):
            code = languages.source_code(fleet)
            out.setdefault(code, {"language": code, "name": languages.name(fleet)})
    else:
        for fleet in sorted({t for _, t in pairs}):
            for code, name in languages.targets(fleet):
                out[code] = {"language": code, "name": name, "supports_formality": False}
    return JSONResponse(list(out.values()))


@router.get("/glossary-language-pairs")
async def glossary_pairs(services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    """The pairs a glossary can be made for: every pair the fleet serves."""
    pairs = await services.registry.aserved_pairs()
    seen = sorted({(languages.glossary_code(s), languages.glossary_code(t)) for s, t in pairs})
    return JSONResponse(
        {"supported_languages": [{"source_lang": s, "target_lang": t} for s, t in seen]}
    )
