"""DeepL's document translation: upload, status, download (``/v2/document``).

An upload is a document job (:func:`mtfleet.api.dropin.submit_document`; every format the fleet
reads, told by the file's name or, for a nameless upload, its first bytes; a file of a format it
does not read is a 400: :func:`mtfleet.formats.for_upload`). ``document_id`` is
the job's id and ``document_key`` the secret that reads it, with the caller's API key: both are
needed, as on DeepL. The client resends an upload after a timeout or a 5xx; the resend joins
the job and gets the same id and key. The translated file stays downloadable, any number of
times, as long as the job is kept (``MT_RESULT_TTL_S``; DeepL deletes it after one download).
"""

from __future__ import annotations

import math
import time
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from starlette.datastructures import UploadFile

from mtfleet import formats as file_formats
from mtfleet.api import dropin
from mtfleet.api.deepl import glossary_ids, languages
from mtfleet.api.deepl.auth import DeepLCaller
from mtfleet.api.deepl.errors import Route
from mtfleet.api.deepl.params import (
    DocumentUpload,
    fields,
    glossaries,
    guidance,
    parse,
)
from mtfleet.api.deps import Services, ServicesDep
from mtfleet.api.routes.jobs import content_disposition
from mtfleet.core import keys
from mtfleet.core.errors import InvalidInput, JobNotFinished, JobNotFound
from mtfleet.core.models import JobStatus
from mtfleet.core.store import JobRecord

router = APIRouter(prefix="/v2/document", tags=["deepl"], route_class=Route)

#: The fleet's job states as DeepL's document states (a partial job is done: the sentences
#: that failed keep their source text in the file).
STATES = {
    JobStatus.queued: "queued",
    JobStatus.running: "translating",
    JobStatus.cancelling: "translating",
    JobStatus.succeeded: "done",
    JobStatus.partial: "done",
    JobStatus.failed: "error",
    JobStatus.cancelled: "error",
}


@router.post("")
async def upload(request: Request, services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    """Upload a document (multipart: ``file`` and the form fields); ``document_id`` and
    ``document_key`` come back."""
    form = await request.form()
    file = form.get("file")
    if not isinstance(file, UploadFile):
        raise InvalidInput("parameter 'file' not specified (a multipart file field)")
    req = parse(DocumentUpload, {k: v for k, v in form.multi_items() if k != "file"})
    content = await file.read()
    if not content:
        raise InvalidInput("the file is empty")
    fmt = file_formats.for_upload(content, file.filename)
    if req.output_format and req.output_format.lower().lstrip(".") not in {
        e.lstrip(".") for e in fmt.extensions
    }:
        raise InvalidInput(
            f"output_format {req.output_format!r}: this server returns a document in its own "
            f"format ({fmt.name}); it does not convert"
        )
    target = languages.to_fleet(req.target_lang)
    source = languages.to_fleet(req.source_lang) if req.source_lang else None
    glossary = await run_in_threadpool(
        glossary_ids.for_pair,
        services,
        caller,
        glossaries(req.glossary_id, req.glossary_ids),
        source,
        target,
    )
    job, token = await dropin.submit_document(
        services,
        caller,
        content=content,
        filename=file.filename,
        fmt=fmt,
        source=source,
        target=target,
        glossary_ids=glossary,
        callback_url=req.callback_url,
        guidance=guidance(req),
        model_type=req.model_type,
        surface="deepl",
        request={**req.model_dump(mode="json"), "filename": file.filename},
    )
    return JSONResponse({"document_id": job.id, "document_key": token})


async def _document_key(request: Request) -> str:
    key = (await fields(request)).get("document_key")
    if not isinstance(key, str) or not key:
        raise InvalidInput("parameter 'document_key' not specified")
    return key


@router.post("/{document_id}")
async def status(
    document_id: str, request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    """A document's state: ``queued``, ``translating``, ``done`` or ``error``."""
    job, chars = await dropin.document_job(
        services, document_id, await _document_key(request), caller
    )
    remaining = await run_in_threadpool(_seconds_remaining, services, job)
    cap = services.settings.api.deepl_status_wait_s
    if not job.status.final and cap > 0 and (remaining is None or remaining <= cap):
        # expected done within the wait: answer when it is (the client would sleep 5 s)
        with services.waits.hold(caller.owner):
            job = await services.results.wait_final(job, cap)
        if not job.status.final:
            remaining = await run_in_threadpool(_seconds_remaining, services, job)
    state = STATES[job.status]
    body: dict[str, Any] = {"document_id": job.id, "status": state}
    if remaining is not None and not job.status.final:
        body["seconds_remaining"] = remaining
    if state == "done":
        body["billed_characters"] = chars
    if state == "error":
        error = job.error or {}
        body["error_message"] = str(error.get("message") or f"the job was {job.status.value}")
    return JSONResponse(body)


def _seconds_remaining(services: Services, job: JobRecord) -> int | None:
    """An estimate of when the document is done: its sentences not done yet (and, while it
    is queued, the chunks queued before it in its lane) at the rate its pool's live workers
    finished sentences over their last heartbeat, else at the job's own pace so far; None
    when nothing tells (no worker has reported a rate, nothing is done yet)."""
    if job.status.final:
        return None
    p = job.progress
    left = p.total - p.done - p.failed
    rate = sum(
        w.stats.segments_per_s.get(job.lane.value, 0.0)
        for w in services.registry.live_workers()
        if w.pool_name == job.pool and w.stats is not None
    )
    if rate > 0:
        if job.status is JobStatus.queued and job.pool:
            ahead = services.store.r.llen(keys.queue(job.pool, job.lane.value))
            left += int(ahead) * services.settings.backlog.chunk_size
        return max(1, math.ceil(left / rate))
    settled = p.done + p.failed
    if settled and job.started_at is not None:
        elapsed = max(0.0, time.time() - job.started_at)
        return max(1, math.ceil(elapsed / settled * left))
    return None


@router.post("/{document_id}/result")
async def result(
    document_id: str, request: Request, services: ServicesDep, caller: DeepLCaller
) -> Response:
    """The translated file, once the document is done (503 before: the client retries)."""
    job, _ = await dropin.document_job(services, document_id, await _document_key(request), caller)
    state = STATES[job.status]
    if state == "error":
        raise JobNotFound(f"document {document_id} failed; there is no translation to download")
    if state != "done":
        raise JobNotFinished(f"document {document_id} is still {state}", status=state)
    out = await run_in_threadpool(services.results.document, job)
    fmt = file_formats.for_name(out.format)
    return Response(
        out.data(),
        media_type=fmt.media_type,
        headers={
            "Content-Disposition": content_disposition(
                out.filename or f"{job.id}{fmt.extensions[0]}"
            )
        },
    )
