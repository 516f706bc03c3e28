"""Crowdin's Custom MT routes, under ``/crowdin`` (see the package docstring for Crowdin's
contract and where it is stated).

``POST /crowdin/{key}/translate`` is what an installed app is called at (its manifest,
``GET /crowdin/{key}/manifest.json``, names ``/crowdin/{key}`` as the app's ``baseUrl``);
``POST /crowdin/translate`` is the same route for a caller that sends the key itself
(``?key=`` or ``Authorization: Bearer``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse

from mtfleet.api import dropin
from mtfleet.api.auth import Caller, caller_for
from mtfleet.api.crowdin.errors import SURFACE, Route
from mtfleet.api.deps import ServicesDep
from mtfleet.core import languages
from mtfleet.core.errors import InvalidInput, UnsupportedLanguage
from mtfleet.formats.fragments import Cutting, Markup

router = APIRouter(prefix="/crowdin", tags=["crowdin"], route_class=Route)

LOGO = Path(__file__).resolve().parents[1] / "static" / "ui" / "favicon.svg"

#: Crowdin's language ids of locales that are not the language their code starts with.
NOT_LANGUAGES = {"en-pt": "Pirate English", "en-ud": "upside-down English", "lol": "LOLCAT"}

#: Strings the manifest lets Crowdin send in one request (one interactive job's worth of
#: short strings; Crowdin sends more as further requests).
BATCH_SIZE = 50


def to_fleet(code: str) -> str:
    """The fleet's code for a Crowdin language id (``es-ES`` is ``es``, ``zh-TW`` is
    ``zh-Hant``); UnsupportedLanguage (422) when the fleet knows none."""
    name = NOT_LANGUAGES.get(code.strip().lower())
    if name is not None:
        raise UnsupportedLanguage(f"{code} ({name}) is a Crowdin locale no engine translates")
    return languages.normalize(code)


async def caller_of(request: Request, path_key: str | None = None) -> Caller:
    """The caller behind the key in the path, else ``?key=``, else ``Authorization: Bearer``
    (Crowdin's installed app sends its own JWT as Bearer: the key in the URL comes first)."""
    key = path_key or request.query_params.get("key")
    if not key:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        key = token.strip() if scheme.lower() == "bearer" else None
    return await caller_for(request, key or None, SURFACE.missing_key)


def source_text(i: int, item: Any) -> str:
    """The text of Crowdin's string ``i``: a string, or (``withContext``) an object whose
    ``text`` is a string or a plural string's forms (the one ``pluralForm`` names)."""
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        text = item.get("text")
        if isinstance(text, dict):
            form = item.get("pluralForm")
            text = text.get(form) if isinstance(form, str) and form in text else text.get("other")
        if isinstance(text, str):
            return text
    raise InvalidInput(
        f"strings[{i}] is not a string, nor an object with a text (a string, or plural forms "
        "with the one pluralForm names)"
    )


async def strings_of(request: Request) -> list[str]:
    """The body's ``strings``, each as text."""
    try:
        body = json.loads(await request.body() or b"null")
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise InvalidInput('the body must be a JSON object: {"strings": ["...", ...]}')
    strings = body.get("strings")
    if strings is None and "stringsUrl" in body:
        raise InvalidInput(
            "stringsUrl is not fetched here (the fleet fetches no URL a request names): send "
            "the strings in the body (the manifest's batchSize keeps them there)"
        )
    if not isinstance(strings, list):
        raise InvalidInput('strings is required: a list, {"strings": ["...", ...]}')
    return [source_text(i, s) for i, s in enumerate(strings)]


def _required(request: Request, *names: str) -> list[str]:
    values = [request.query_params.get(n, "").strip() for n in names]
    missing = [n for n, v in zip(names, values, strict=True) if not v]
    if missing:
        many = len(missing) > 1
        raise InvalidInput(
            f"the query parameter{'s' if many else ''} {' and '.join(missing)} "
            f"{'are' if many else 'is'} required: /translate?source=en&target=de"
        )
    return values


async def _translate(request: Request, services: ServicesDep, caller: Caller) -> JSONResponse:
    source, target = _required(request, "source", "target")
    src, tgt = to_fleet(source), to_fleet(target)
    texts = await strings_of(request)
    if not texts:
        return JSONResponse({"data": {"translations": []}})
    # Crowdin masks what is not to be translated as <span class="notranslate">: read as HTML
    # those spans are kept as they are; a string without them is plain text (its "<" is text)
    markup: Markup = "html" if any("notranslate" in t for t in texts) else "text"
    done = await dropin.translate(
        services,
        caller,
        dropin.TextsRequest(texts, src, tgt, Cutting(markup=markup)),
        surface="crowdin",
        request={"strings": texts, "source": src, "target": tgt, "markup": markup},
        wait_s=services.settings.api.crowdin_wait_s,
    )
    return JSONResponse({"data": {"translations": [t.text for t in done]}})


@router.post("/translate")
async def translate(request: Request, services: ServicesDep) -> JSONResponse:
    """Crowdin's Custom MT request, the key in ``?key=`` or ``Authorization: Bearer``."""
    return await _translate(request, services, await caller_of(request))


@router.post("/{key}/translate", name="crowdin_translate")
async def translate_as_app(key: str, request: Request, services: ServicesDep) -> JSONResponse:
    """Crowdin's Custom MT request to the installed app (the key in its ``baseUrl``)."""
    return await _translate(request, services, await caller_of(request, key))


@router.get("/{key}/manifest.json")
async def manifest(key: str, request: Request) -> JSONResponse:
    """The Crowdin app descriptor to install (Install Private App, this URL): a ``custom-mt``
    module whose requests come back to :func:`translate_as_app` with the key in the path."""
    caller = await caller_of(request, key)
    base = str(request.url_for("crowdin_translate", key=quote(key, safe=""))).removesuffix(
        "/translate"
    )
    ident = f"mtfleet-{caller.owner.lower()}" if caller.owner else "mtfleet"
    return JSONResponse(
        {
            "identifier": ident,
            "name": "mtfleet",
            "description": f"Machine translation by the mtfleet at {request.base_url}",
            "logo": "/logo.svg",
            "baseUrl": base,
            "authentication": {"type": "none"},
            "scopes": [],
            "modules": {
                "custom-mt": [
                    {
                        "key": "mtfleet-mt",
                        "name": "mtfleet",
                        "logo": "/logo.svg",
                        "url": "/translate",
                        "withContext": False,
                        "batchSize": BATCH_SIZE,
                    }
                ]
            },
        }
    )


@router.get("/{key}/logo.svg")
async def logo(key: str) -> FileResponse:
    """The logo the manifest names (Crowdin shows it beside the engine's name)."""
    return FileResponse(LOGO, media_type="image/svg+xml")
