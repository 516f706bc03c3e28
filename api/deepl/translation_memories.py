"""DeepL's translation memories (``/v3/translation_memories``), as its official client
(``deepl`` >= 1.32) manages them: ``list_translation_memories``, ``get_translation_memory``,
``list_translation_memory_segments``, ``delete_translation_memory``, and the import and export
jobs (``import_translation_memory_from_filepath``, ``export_translation_memory_to_filepath``),
answered from the fleet's memories (:mod:`mtfleet.core.tm`, the same ones as
``/v1/translation_memories`` and ``mtfleet tm``). A request names one with
``translation_memory_id``, in DeepL's form (a UUID) or the fleet's (32 hex digits): the same
number.

Reading a memory's segments is one of its key's ``MT_TM_WORK_PER_KEY`` operations, done in a
document process, as an import (:mod:`mtfleet.api.routes.translation_memories`).

A memory belongs to the API key that made it: another key's answers exactly as a missing one
(404). On the wire a fleet memory (one language pair) is DeepL's memory of one source language
and one target language (``target_languages`` has one code; codes as DeepL writes a
glossary's: lower case, no variant). ``GET /v3/translation_memories`` pages as DeepL's style
rules do (``page`` from 0, ``page_size`` 1-25, default 10); ``.../segments`` as DeepL's
client asks (``page_size`` 1-100, default 50, an opaque ``page_cursor``, ``filter_text`` of at
least 2 characters across source and target, ``filter_case_sensitive``).

**Jobs** (records: :mod:`mtfleet.core.tm.jobs`). ``POST /v3/translation_memories/import``
declares a TMX file (``source_file``: ``file_name``, ``content_length``; ``parameters.
display_name``) and answers an ``upload_url``: a URL of this API carrying a token, which the
client PUTs the file to without its key, as to DeepL's pre-signed storage (the path is outside
``/v3``, so the request guard does not ask for a key there). The upload holds one of the key's
``MT_TM_WORK_PER_KEY`` (429 past them, which the client retries) and is read by the same
import as ``/v1``'s (:meth:`~mtfleet.core.tm.TranslationMemoryStore.import_file`, in a
document process), in a thread that records the outcome on the job; the PUT waits for it up to
``MT_DEEPL_STATUS_WAIT_S``, so a small file is ``completed`` at the client's first check (it
sleeps 5 s between checks). The file's pair is the TMX's own (the header's ``srclang`` and the
one other language: :func:`mtfleet.core.tm.formats.tmx_pair`). A file that cannot be read makes
the job ``failed`` with the reason, which the client raises. ``POST .../{id}/export`` answers
a job ``completed`` at once whose ``download_url`` (a URL with a token, as the upload's)
streams the memory's TMX as ``/v1``'s export writes it, when it is downloaded.
``GET .../jobs/{id}`` is a job's status, for its own key only.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse

from mtfleet.api.auth import Caller
from mtfleet.api.deepl import languages
from mtfleet.api.deepl.auth import DeepLCaller
from mtfleet.api.deepl.errors import Route
from mtfleet.api.deepl.glossaries import timestamp
from mtfleet.api.deepl.glossary_ids import to_deepl
from mtfleet.api.deepl.params import MAX_PAGE, bool_param, int_param
from mtfleet.api.deps import Services, ServicesDep
from mtfleet.api.routes import translation_memories as fleet
from mtfleet.api.shares import Release
from mtfleet.core.errors import InvalidInput, JobNotFound, MTError
from mtfleet.core.tm import TMInfo
from mtfleet.core.tm.jobs import TMJob, TMJobs
from mtfleet.core.tm.text import check_name

log = logging.getLogger(__name__)

#: Every route spells its whole path: the jobs' upload and download URLs live outside
#: ``/v3`` (:data:`FILES`).
router = APIRouter(tags=["deepl"], route_class=Route)
PREFIX = "/v3/translation_memories"
#: Where an import's file is PUT and an export's file read, with the job's token in the path.
FILES = "/deepl-files/translation_memories/{job_id}/{token}"

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


@router.get(PREFIX)
def list_translation_memories(
    request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    q = request.query_params
    page = int_param(q.get("page"), "page", 0, 0, MAX_PAGE)
    size = int_param(q.get("page_size"), "page_size", DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE)
    found = fleet.store(services, caller.owner).list_for(caller.owner)
    found = found[page * size : (page + 1) * size]
    return JSONResponse({"translation_memories": [info(tm) for tm in found]})


@router.get(PREFIX + "/{tm_id}")
def get_translation_memory(tm_id: str, services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    return JSONResponse(info(fleet.store(services, caller.owner).visible(tm_id, caller.owner)))


@router.get(PREFIX + "/{tm_id}/segments")
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


@router.delete(PREFIX + "/{tm_id}", status_code=204)
def delete_translation_memory(tm_id: str, services: ServicesDep, caller: DeepLCaller) -> Response:
    fleet.delete(services, caller, tm_id)
    return Response(status_code=204)


# --- import and export jobs -------------------------------------------------------------------


def _job_not_found(job_id: str) -> JobNotFound:
    return JobNotFound(f"translation memory job {job_id} not found")


def _file_url(request: Request, job: TMJob) -> str:
    return str(request.url_for("deepl_tm_file", job_id=to_deepl(job.id), token=job.token))


def job_body(request: Request, job: TMJob) -> dict[str, Any]:
    """A job as DeepL's client reads it (``TranslationMemoryJob.from_json``: one result)."""
    result: dict[str, Any] = {"status": job.status}
    body: dict[str, Any] = {
        "job_id": to_deepl(job.id),
        "operation": job.operation,
        "product": "translation_memory",
        "creation_time": timestamp(job.created_at),
        "updated_time": timestamp(job.updated_at),
    }
    if job.operation == "import":
        body["parameters"] = {"display_name": job.display_name}
        body["source_file"] = {
            "file_name": job.file_name,
            "content_type": job.content_type,
            "content_length": job.content_length,
        }
        if job.status == "awaiting_input":
            result["status_metadata"] = {"required_action": "upload the file to upload_url"}
            result["expires_at"] = timestamp(job.expires_at)
        elif job.status == "completed":
            result["translation_memory_id"] = to_deepl(job.tm_id)
            result["skipped_segment_count"] = job.skipped
    else:
        body["parameters"] = {"translation_memory_id": to_deepl(job.tm_id)}
        if job.status == "completed":
            result["download_url"] = _file_url(request, job)
            result["expires_at"] = timestamp(job.expires_at)
    if job.error:
        result["error"] = {"message": job.error}
    body["results"] = [result]
    return body


def _import_request(content: bytes) -> tuple[str, int, str, str | None]:
    """``file_name``, ``content_length``, ``content_type`` and ``display_name`` of an import
    request's JSON body."""
    try:
        body = json.loads(content or b"null")
    except ValueError:
        raise InvalidInput("the request body is not JSON") from None
    source = body.get("source_file") if isinstance(body, dict) else None
    if not isinstance(source, dict):
        raise InvalidInput("parameter 'source_file' not specified")
    name, length = source.get("file_name"), source.get("content_length")
    ctype = source.get("content_type", "application/xml")
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("parameter 'source_file.file_name' not specified")
    if isinstance(length, bool) or not isinstance(length, int) or length <= 0:
        raise InvalidInput("parameter 'source_file.content_length' must be a positive integer")
    if not isinstance(ctype, str):
        raise InvalidInput("parameter 'source_file.content_type' must be a string")
    params = body.get("parameters") or {}
    display = params.get("display_name") if isinstance(params, dict) else None
    if display is not None and not isinstance(display, str):
        raise InvalidInput("parameter 'parameters.display_name' must be a string")
    return name, length, ctype, display


@router.post(PREFIX + "/import", status_code=201)
async def create_translation_memory_import(
    request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    name, length, ctype, display = _import_request(await request.body())
    limit = min(
        fleet.store(services, caller.owner).limits.max_import_bytes,
        services.settings.api.max_request_bytes,
    )
    if length > limit:
        raise InvalidInput(
            f"the file has {length:,} bytes; an import may have {limit:,} "
            "(MT_TM_MAX_IMPORT_BYTES, and a request's MT_MAX_REQUEST_BYTES)"
        )
    display = check_name(display if display is not None else name[:100])
    jobs = TMJobs(services.store.r)
    job = await run_in_threadpool(jobs.new_import, caller.owner, name, length, ctype, display)
    return JSONResponse(
        {
            "job_id": to_deepl(job.id),
            "upload_url": _file_url(request, job),
            "expires_at": timestamp(job.expires_at),
        },
        status_code=201,
    )


@router.post(PREFIX + "/{tm_id}/export", status_code=202)
def create_translation_memory_export(
    tm_id: str, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    tm = fleet.store(services, caller.owner).visible(tm_id, caller.owner)
    job = TMJobs(services.store.r).new_export(caller.owner, tm.id)
    body = {
        "job_id": to_deepl(job.id),
        "operation": "export",
        "parameters": {"translation_memory_id": to_deepl(tm.id)},
    }
    return JSONResponse(body, status_code=202)


@router.get(PREFIX + "/jobs/{job_id}")
def get_translation_memory_job(
    job_id: str, request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    job = TMJobs(services.store.r).get(job_id)
    if job is None or (caller.owner and job.owner != caller.owner):
        raise _job_not_found(job_id)
    return JSONResponse(job_body(request, job))


def _owner_caller(services: Services, owner: str) -> Caller | None:
    """The caller a job's URL stands for: its key, while it is valid (None: revoked or gone;
    an empty owner is the API without keys)."""
    if not owner:
        return Caller(None)
    key = services.apikeys.get(owner)
    return None if key is None or key.revoked else Caller(key)


def _run_import(
    services: Services, job: TMJob, caller: Caller, path: Path, release: Release
) -> None:
    """The uploaded file read by the store's import (as ``/v1``'s), the outcome recorded."""
    jobs = TMJobs(services.store.r)
    try:
        info = fleet.store(services, job.owner).import_file(
            job.owner,
            job.display_name,
            None,
            None,
            path,
            job.file_name,
            storage=fleet.storage(services, caller),
        )
        jobs.finish(job.id, tm_id=info.id, skipped=info.skipped)
    except MTError as exc:
        jobs.finish(job.id, error=exc.message)
    except Exception:  # recorded on the job, which the client reads
        log.exception("translation memory import %s failed", job.id)
        jobs.finish(job.id, error="internal error; see the server log")
    finally:
        release()
        path.unlink(missing_ok=True)


@router.put(FILES, name="deepl_tm_file")
async def upload_translation_memory_file(
    job_id: str, token: str, request: Request, services: ServicesDep
) -> Response:
    """An import's file, PUT to its upload URL (the token is its credential)."""
    jobs = TMJobs(services.store.r)
    job = await run_in_threadpool(jobs.with_token, job_id, token)
    if job is None or job.operation != "import":
        raise JobNotFound("no translation memory import has this upload URL")
    if job.status == "expired":
        raise JobNotFound("this upload URL has expired; create a new import")
    if job.status != "awaiting_input":
        return Response(status_code=200)  # a resent upload: the first one is being read
    caller = await run_in_threadpool(_owner_caller, services, job.owner)
    if caller is None:
        raise JobNotFound("the API key that made this import is no longer valid")
    release = services.memory_work.acquire(job.owner)  # 429 past the key's share: retried
    claimed = False
    try:
        claimed = await run_in_threadpool(jobs.claim, job.id)
        if not claimed:
            release()
            return Response(status_code=200)
        content = await request.body()
        if len(content) != job.content_length:
            raise InvalidInput(
                f"the upload has {len(content):,} bytes; the import declared "
                f"content_length {job.content_length:,}"
            )
        fd, spooled = tempfile.mkstemp(prefix="mtfleet-tm-", suffix=".upload")
        with os.fdopen(fd, "wb") as out:
            out.write(content)
    except BaseException as exc:
        release()
        if claimed:  # the job says why (the client reads it from the job's status)
            why = exc.message if isinstance(exc, MTError) else "the upload was not received"
            await run_in_threadpool(jobs.finish, job.id, error=why)
            if isinstance(exc, Exception):
                return Response(status_code=200)
        raise
    worker = threading.Thread(
        target=_run_import,
        args=(services, job, caller, Path(spooled), release),
        name=f"tm-import-{job.id}",
        daemon=True,
    )
    worker.start()
    await run_in_threadpool(worker.join, services.settings.api.deepl_status_wait_s)
    return Response(status_code=200)


@router.get(FILES)
def download_translation_memory_export(
    job_id: str, token: str, services: ServicesDep
) -> StreamingResponse:
    """An export's file, from its download URL: the memory's TMX as it is now."""
    job = TMJobs(services.store.r).with_token(job_id, token)
    if job is None or job.operation != "export":
        raise JobNotFound("no translation memory export has this download URL")
    if _owner_caller(services, job.owner) is None:
        raise JobNotFound("the API key that made this export is no longer valid")
    return fleet.export_response(services, job.owner, job.tm_id)
