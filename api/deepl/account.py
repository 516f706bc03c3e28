"""What a DeepL client asks about its account and the service: ``/v2/usage``,
``/v2/languages``, ``/v2/glossary-language-pairs``, and v3's ``/v3/languages`` (one list per
DeepL resource, each language with what it is usable as and its features).

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
v3 = APIRouter(prefix="/v3", tags=["deepl"], route_class=Route)

#: What ``character_limit`` says for a key without a quota (DeepL's own figure for an
#: unlimited plan).
NO_LIMIT = 1_000_000_000_000


@router.get("/usage")
async def usage(services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    """Characters the key used today (UTC) and its daily quota, and ``reporting_tags``: its
    characters today per reporting tag (``X-DeepL-Reporting-Tag``; DeepL's clients read the
    fields they know and leave this one)."""
    key = caller.key
    used = 0
    tags: dict[str, int] = {}
    if key is not None:
        used = (await run_in_threadpool(services.apikeys.used_today, [key.id]))[key.id]
        tags = await run_in_threadpool(services.apikeys.tags_today, key.id)
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
            "reporting_tags": tags,
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


#: DeepL's ``resource`` values -> the features a language of a served pair has here, each
#: with whether the source, the target or both must have it (``/v3/languages/resources``).
#: ``write``: the languages a pool whose engine follows instructions writes (DeepL Write,
#: :mod:`mtfleet.api.deepl.write`), each as source and target, a writing style or tone taken
#: in any of them. ``voice`` is a DeepL product the fleet does not serve: no language.
#: ``formality`` is left out, as ``/v2/languages`` says ``supports_formality: false``: only a
#: pool whose engine follows instructions can honour it (docs/llm.md).
RESOURCES: dict[str, dict[str, tuple[bool, bool]]] = {
    "translate_text": {
        "tag_handling": (True, True),
        "glossary": (True, True),
        "auto_detection": (True, False),
    },
    "translate_document": {"glossary": (True, True), "auto_detection": (True, False)},
    "glossary": {},
    "translation_memory": {},
    "style_rules": {},
    "write": {"writing_style": (False, True), "tone": (False, True)},
    "voice": {},
}
#: ``include``'s values: the fleet has no beta language or feature, and none from a third
#: party, so either adds nothing.
INCLUDE = ("beta", "external")


def bcp47(deepl_code: str) -> str:
    """A DeepL code as v3 writes it: ``EN-US`` -> ``en-US``, ``ZH-HANT`` -> ``zh-Hant``."""
    first, *rest = deepl_code.split("-")
    return "-".join([first.lower(), *(p.title() if len(p) == 4 else p.upper() for p in rest)])


def v3_languages(resource: str, pairs: set[tuple[str, str]]) -> list[dict[str, Any]]:
    """``GET /v3/languages?resource=``'s list for the pairs the fleet serves (for ``write``,
    the pairs of the pools whose engine follows instructions)."""
    if resource == "voice":
        return []
    out: dict[str, dict[str, Any]] = {}

    def add(code: str, name: str, *, source: bool) -> None:
        entry = out.setdefault(
            code,
            {"lang": code, "name": name, "usable_as_source": False, "usable_as_target": False},
        )
        entry["usable_as_source" if source else "usable_as_target"] = True

    if resource in ("glossary", "translation_memory"):  # languages without a variant
        for s, t in pairs:
            for fleet, source in ((s, True), (t, False)):
                add(languages.glossary_code(fleet), languages.name(fleet), source=source)
    elif resource == "write":  # a text is improved in the language it is written in
        for _, t in pairs:
            for source in (True, False):
                add(languages.glossary_code(t), languages.name(t), source=source)
    elif resource == "style_rules":  # a rule is written for the language it translates into
        for _, t in pairs:
            add(languages.glossary_code(t), languages.name(t), source=False)
    else:
        for s, t in pairs:
            add(bcp47(languages.source_code(s)), languages.name(s), source=True)
            for code, name in languages.targets(t):
                add(bcp47(code), name, source=False)
    features = RESOURCES[resource]
    for entry in out.values():
        entry["status"] = "stable"
        entry["features"] = {
            f: {"status": "stable"}
            for f, (on_source, on_target) in features.items()
            if (on_source and entry["usable_as_source"])
            or (on_target and entry["usable_as_target"])
        }
    return [out[code] for code in sorted(out)]


@v3.get("/languages")
async def list_v3_languages(
    request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    """DeepL's v3 languages for one ``resource`` (required), ``include`` repeatable."""
    resource = request.query_params.get("resource")
    if not resource:
        raise InvalidInput("parameter 'resource' is required: one of " + ", ".join(RESOURCES))
    if resource not in RESOURCES:
        raise InvalidInput(
            f"parameter 'resource' must be one of {', '.join(RESOURCES)}, not {resource!r}"
        )
    for value in request.query_params.getlist("include"):
        if value not in INCLUDE:
            raise InvalidInput(f"parameter 'include' must be {' or '.join(INCLUDE)}, not {value!r}")
    if resource == "write":
        pools = await services.registry.apools()
        llms = sorted(name for name, pool in pools.items() if pool.instructions)
        pairs = {p for found in (await services.registry.apairs(llms)).values() for p in found}
    else:
        pairs = await services.registry.aserved_pairs()
    return JSONResponse(v3_languages(resource, pairs))


@v3.get("/languages/resources")
async def list_v3_resources(caller: DeepLCaller) -> JSONResponse:
    """Each resource with its features and where a language must have each."""
    out = []
    for name, features in RESOURCES.items():
        listed = []
        for feature, (on_source, on_target) in features.items():
            item: dict[str, Any] = {"name": feature}
            if on_source:
                item["needs_source_support"] = True
            if on_target:
                item["needs_target_support"] = True
            listed.append(item)
        out.append({"name": name, "features": listed})
    return JSONResponse(out)
