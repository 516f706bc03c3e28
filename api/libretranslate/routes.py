"""LibreTranslate's routes, under ``/libretranslate`` (see the package docstring).

LibreTranslate reads a JSON object body, or else form fields and the query string (the first
value of each: a list ``q`` needs JSON), and the API key from the same place (``api_key``;
LibreTranslate has no key header). ``/languages``, ``/frontend/settings`` and the download
links need no key, as on LibreTranslate; a download link carries the document's own secret.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from starlette.datastructures import UploadFile

from mtfleet import formats as file_formats
from mtfleet.api import dropin
from mtfleet.api.auth import Caller, caller_for
from mtfleet.api.deps import Services, ServicesDep
from mtfleet.api.libretranslate.errors import SURFACE, Route, render
from mtfleet.api.routes.jobs import content_disposition
from mtfleet.core import langdetect, languages
from mtfleet.core.errors import EngineError, InvalidInput, StillTranslating, UnsupportedLanguage
from mtfleet.core.models import JobStatus
from mtfleet.core.store import JobRecord
from mtfleet.formats.fragments import Cutting

router = APIRouter(prefix="/libretranslate", tags=["libretranslate"], route_class=Route)

#: LibreTranslate's codes that the fleet spells otherwise (read case-insensitively) ...
CODES_IN = {"pb": "pt", "zt": "zh-Hant"}
#: ... and the fleet's codes LibreTranslate spells otherwise.
CODES_OUT = {"zh": "zh-Hans"}


def to_fleet(code: str) -> str:
    low = code.strip().lower()
    try:
        return languages.normalize(CODES_IN.get(low, low))
    except UnsupportedLanguage:
        raise InvalidInput(f"{code} is not supported") from None


def lt_code(fleet: str) -> str:
    return CODES_OUT.get(fleet, fleet)


def is_json(request: Request) -> bool:
    return request.headers.get("content-type", "").split(";")[0].strip().lower() == (
        "application/json"
    )


async def values(request: Request) -> dict[str, Any]:
    """The request's parameters as LibreTranslate reads them."""
    if is_json(request):
        try:
            body = json.loads(await request.body() or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise InvalidInput("Invalid JSON format")
        return body
    out: dict[str, Any] = {}
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype in ("application/x-www-form-urlencoded", "multipart/form-data"):
        for key, value in (await request.form()).multi_items():
            out.setdefault(key, value)
    for key, value in request.query_params.multi_items():
        out.setdefault(key, value)
    return out


#: What a request with ``?api_key=`` is told while MT_LIBRETRANSLATE_KEY_IN_QUERY is off.
KEY_IN_QUERY = (
    "Invalid request: send api_key in the request body (a JSON field or a form field), not in "
    "the URL, where proxy logs and Referer headers keep it (MT_LIBRETRANSLATE_KEY_IN_QUERY)"
)


async def caller_of(request: Request, services: Services, fields: dict[str, Any]) -> Caller:
    """The caller behind ``api_key`` (the body; the query too with
    ``MT_LIBRETRANSLATE_KEY_IN_QUERY``, else a key there is 400); a missing one is 400, a bad
    one 403 (429 past the client address's bad-key limit)."""
    in_query = "api_key" in request.query_params
    if in_query and not services.settings.keys.libretranslate_key_in_query:
        raise InvalidInput(KEY_IN_QUERY)
    key = fields.get("api_key") or request.query_params.get("api_key")
    if services.settings.keys.auth == "required" and not key:
        raise InvalidInput(SURFACE.missing_key)
    return await caller_for(request, str(key) if key else None, SURFACE.missing_key)


def _required(fields: dict[str, Any], *names: str) -> None:
    for name in names:
        if not fields.get(name):
            raise InvalidInput(f"Invalid request: missing {name} parameter")


@router.post("/translate")
async def translate(request: Request, services: ServicesDep) -> JSONResponse:
    """LibreTranslate's ``/translate``."""
    f = await values(request)
    caller = await caller_of(request, services, f)
    _required(f, "q", "source", "target")
    fmt = f.get("format") or "text"
    if fmt not in ("text", "html"):
        raise InvalidInput(f"{fmt} format is not supported")
    try:
        alternatives = int(f.get("alternatives") or 0)
    except (TypeError, ValueError):
        raise InvalidInput("Invalid request: alternatives parameter is not a number") from None
    q = f["q"]
    batch = isinstance(q, list)
    texts = q if batch else [q]
    if not all(isinstance(t, str) for t in texts):
        raise InvalidInput("Invalid request: q must be a string or a list of strings")
    if not is_json(request):
        texts = ["\n".join(q.splitlines())]  # a form's line endings, as LibreTranslate does
    source, target = str(f["source"]), str(f["target"])
    auto = source.lower() == "auto"
    done = await dropin.translate(
        services,
        caller,
        dropin.TextsRequest(
            texts,
            None if auto else to_fleet(source),
            to_fleet(target),
            Cutting(markup="html" if fmt == "html" else "text"),
        ),
        surface="libretranslate",
        request={"q": texts, "source": source.lower(), "target": target.lower(), "format": fmt},
        wait_s=services.settings.api.libretranslate_wait_s,
    )
    out: dict[str, Any] = {"translatedText": [t.text for t in done] if batch else done[0].text}
    if auto:
        found = await run_in_threadpool(_detected, texts, done)
        out["detectedLanguage"] = found if batch else found[0]
    if alternatives > 0:
        out["alternatives"] = [[] for _ in texts] if batch else []
    return JSONResponse(out)


def _detected(texts: list[str], done: list[dropin.Translated]) -> list[dict[str, Any]]:
    """LibreTranslate's ``detectedLanguage`` per text: the language it was translated from,
    and the detector's confidence in it (0-100)."""
    out = []
    for text, t in zip(texts, done, strict=True):
        if t.source is None:
            out.append({"confidence": 0.0, "language": "en"})
            continue
        conf = (
            langdetect.confidence_many([text], t.source)[0] if langdetect.supports(t.source) else 0
        )
        out.append({"confidence": round(100 * conf, 1), "language": lt_code(t.source)})
    return out


@router.post("/detect")
async def detect(request: Request, services: ServicesDep) -> JSONResponse:
    """LibreTranslate's ``/detect``: the most likely language, with the detector's
    confidence (0-100)."""
    f = await values(request)
    await caller_of(request, services, f)
    _required(f, "q")
    q = f["q"]
    sample = " ".join(q) if isinstance(q, list) else str(q)
    found = await run_in_threadpool(langdetect.detect, sample)
    if found is None:
        return JSONResponse([{"confidence": 0.0, "language": "en"}])
    return JSONResponse([{"confidence": round(100 * found[1], 1), "language": lt_code(found[0])}])


@router.get("/languages")
async def list_languages(services: ServicesDep) -> JSONResponse:
    """Every language of a pair the fleet serves, with the languages it translates into."""
    pairs = await services.registry.aserved_pairs()
    targets: dict[str, set[str]] = {}
    for source, target in pairs:
        targets.setdefault(source, set()).add(target)
        targets.setdefault(target, set())
    return JSONResponse(
        [
            {
                "code": lt_code(code),
                "name": languages.LANGUAGES[code].english if code in languages.LANGUAGES else code,
                "targets": sorted(lt_code(t) for t in targets[code]),
            }
            for code in sorted(targets)
        ]
    )


@router.post("/translate_file")
async def translate_file(request: Request, services: ServicesDep) -> JSONResponse:
    """LibreTranslate's ``/translate_file`` (multipart): a document job, waited for up to
    ``MT_LIBRETRANSLATE_WAIT_S``; the answer's ``translatedFileUrl`` downloads the file."""
    form = await request.form()
    f = await values(request)
    caller = await caller_of(request, services, f)
    file = form.get("file")
    if not isinstance(file, UploadFile):
        raise InvalidInput("Invalid request: missing file parameter")
    _required(f, "source", "target")
    if not file.filename:
        raise InvalidInput("Invalid request: empty file")
    source, target = str(f["source"]), str(f["target"])
    content = await file.read()
    job, token = await dropin.submit_document(
        services,
        caller,
        content=content,
        filename=file.filename,
        fmt=file_formats.for_upload(content, file.filename),
        source=None if source.lower() == "auto" else to_fleet(source),
        target=to_fleet(target),
        surface="libretranslate",
        request={"source": source.lower(), "target": target.lower(), "filename": file.filename},
    )
    job = await services.results.wait_final(job, services.settings.api.libretranslate_wait_s)
    _check_not_failed(job)
    url = request.url_for(
        "libretranslate_download",
        job_id=job.id,
        token=token,
        filename=quote(_link_name(file.filename, job), safe=""),
    )
    return JSONResponse({"translatedFileUrl": str(url)})


def _link_name(filename: str, job: JobRecord) -> str:
    """The last part of an uploaded file's name (a client may send ``a/b/report.html``, and a
    ``/`` in the link, even quoted, is a path the download route does not match); the job's
    id and its format's extension when nothing usable is left."""
    name = re.split(r"[/\\]", filename)[-1]
    if name.strip() and name not in (".", ".."):
        return name
    return f"{job.id}{file_formats.for_name(job.document_format or 'text').extensions[0]}"


def _check_not_failed(job: JobRecord) -> None:
    if job.status in (JobStatus.failed, JobStatus.cancelled):
        error = job.error or {}
        raise EngineError(
            f"Cannot translate file: {error.get('message') or f'the job was {job.status.value}'}"
        )


@router.get("/download_file/{job_id}/{token}/{filename}", name="libretranslate_download")
async def download_file(job_id: str, token: str, filename: str, services: ServicesDep) -> Response:
    """A translated file (the link ``/translate_file`` answered with; it waits for the job as
    long as ``/translate_file`` does)."""
    job, _ = await dropin.document_job(services, job_id, token)
    job = await services.results.wait_final(job, services.settings.api.libretranslate_wait_s)
    if not job.status.final:
        raise StillTranslating("the file is still being translated; try again", retry_after=5)
    _check_not_failed(job)
    out = await run_in_threadpool(services.results.document, job)
    fmt = file_formats.for_name(out.format)
    return Response(
        out.data(),
        media_type=fmt.media_type,
        headers={"Content-Disposition": content_disposition(out.filename or filename)},
    )


@router.get("/frontend/settings")
async def frontend_settings(services: ServicesDep) -> JSONResponse:
    """What LibreTranslate's web front end reads to set itself up."""
    formats = sorted({e for fmt in file_formats.formats() for e in fmt.extensions})
    pairs = await services.registry.aserved_pairs()
    target = sorted({t for _, t in pairs})[0] if pairs else "en"
    return JSONResponse(
        {
            "charLimit": -1,
            "frontendTimeout": 500,
            "apiKeys": True,
            "keyRequired": services.settings.keys.auth == "required",
            "suggestions": False,
            "filesTranslation": True,
            "supportedFilesFormat": formats,
            "language": {
                "source": {"code": "auto", "name": "Auto Detect"},
                "target": {"code": lt_code(target), "name": languages.get(target).english},
            },
        }
    )


@router.post("/suggest")
async def suggest() -> Response:
    """Suggestions are not collected here (as on a LibreTranslate with them disabled)."""
    return render(403, "forbidden", "Suggestions are disabled on this server.")


@router.get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}
