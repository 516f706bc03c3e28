"""/v1/jobs: submit, inspect, fetch results, cancel, purge.

Every route needs an API key (:mod:`api.auth`); a job is visible only to the key that made it:
another key's job answers exactly as a missing one (404).
"""

from __future__ import annotations

import base64
from functools import partial
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, File, Form, Header, Query, Response, UploadFile
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ValidationError

from mtfleet import formats as file_formats
from mtfleet.api.auth import Caller, CallerDep
from mtfleet.api.deps import Services, ServicesDep
from mtfleet.api.errors import documented
from mtfleet.core import scopes
from mtfleet.core.errors import InvalidInput, JobNotFinished, JobNotFound
from mtfleet.core.models import JobStatus, Lane
from mtfleet.core.schemas import (
    DocumentIn,
    JobCreate,
    JobListPublic,
    JobPublic,
    JobResultPublic,
    JobSummaryPublic,
)
from mtfleet.core.scopes import Family
from mtfleet.core.store import JobRecord

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

ERRORS = documented(401, 404, 409, 422, 429, 503)


def content_disposition(name: str) -> str:
    """An attachment header for any file name (RFC 6266): an ASCII ``filename`` for old
    clients and, when the name is not plain ASCII, ``filename*`` with its UTF-8 (RFC 8187)."""
    ascii_name = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in name)
    header = f'attachment; filename="{ascii_name}"'
    if ascii_name != name:
        header += f"; filename*=UTF-8''{quote(name, safe='')}"
    return header


def public(job: JobRecord) -> JobPublic:
    return JobPublic(**job.model_dump(include=set(JobPublic.model_fields)))


def job_view(services: Services, job_id: str, caller: Caller | None = None) -> JobPublic:
    """The job as its owner sees it (``caller``: JobNotFound for another key's job); an
    unfinished one with where its chunks are (read with the job, one snapshot), one with a
    callback_url with its webhook's attempts."""
    job, work = services.store.get_with_chunks(job_id)
    if caller is not None and not caller.may_see(job):
        raise JobNotFound(f"job {job_id} not found (it may have expired)")
    out = public(job)
    out.work = work
    out.webhook = services.outbox.public(job)
    return out


def serialized(model: BaseModel) -> Response:
    """A response model as JSON straight from pydantic: a job's result carries thousands of
    texts, and FastAPI would validate the model again and encode it twice."""
    return Response(model.model_dump_json(), media_type="application/json")


def visible_job(services: Services, caller: Caller, job_id: str) -> JobRecord:
    """The job, if this caller may see it; another key's job is JobNotFound, word for word
    what a missing job says (nothing tells that the id exists)."""
    job = services.store.get(job_id)
    if not caller.may_see(job):
        raise JobNotFound(f"job {job_id} not found (it may have expired)")
    return job


@router.post(
    "", status_code=202, response_model=JobPublic, responses={200: {"model": JobPublic}, **ERRORS}
)
async def create_job(
    body: JobCreate,
    services: ServicesDep,
    caller: CallerDep,
    response: Response,
    idempotency_key: Annotated[str | None, Header(max_length=256)] = None,
) -> JobPublic:
    """Submit segments, or a document. 202 while queued; 200 when every segment came from the
    phrase cache. ``source_lang: "auto"`` detects the source language.

    A document (``{"document": {"format", "content"}}``) is cut into sentences that become the
    job's segments; ``GET /v1/jobs/{id}/result`` then carries the translated file, and
    ``GET /v1/jobs/{id}/document`` downloads it.

    A ``callback_url`` gets one signed POST (Standard Webhooks) when the job is final; its
    attempts show in ``GET /v1/jobs/{id}`` (docs/webhooks.md). ``GET /v1/jobs/{id}/events``
    streams its progress.

    An ``Idempotency-Key`` header returns the same job for the same key (409 if the body differs);
    it is scoped to the API key. The texts' characters count against the key's daily quota
    (429 when over it). A key limited to some route families needs ``documents`` for a
    document, ``translate`` for texts (403 otherwise).
    """
    kind: Family = "documents" if body.document is not None else "translate"
    scopes.require(caller.key.scopes if caller.key else None, (kind,), "POST /v1/jobs")
    return await _create(services, caller, response, body, idempotency_key)


async def _create(
    services: Services,
    caller: Caller,
    response: Response,
    body: JobCreate,
    idempotency_key: str | None,
) -> JobPublic:
    submitted = await services.jobs.submit(
        body, owner=caller.owner, key=caller.key, idempotency_key=idempotency_key
    )
    job = submitted.job
    response.headers["Location"] = f"/v1/jobs/{job.id}"
    if job.status is JobStatus.succeeded:
        response.status_code = 200
    return public(job)


@router.get("", response_model=JobListPublic, responses=ERRORS)
def list_jobs(
    services: ServicesDep,
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=100, description="At most this many jobs")] = 20,
) -> JobListPublic:
    """The caller's recent jobs, newest first: those whose data has not expired or been
    purged (the web translator's list). With ``MT_AUTH=off`` jobs have no owner and the list
    is empty."""
    if caller.key is None:
        return JobListPublic(jobs=[])
    ids = services.apikeys.storage(caller.key, 0).recent_jobs(limit)
    fields = set(JobSummaryPublic.model_fields)
    return JobListPublic(
        jobs=[
            JobSummaryPublic(**job.model_dump(include=fields))
            for job in services.store.many(ids)
            if caller.may_see(job)
        ]
    )


@router.get("/{job_id}", response_model=JobPublic, responses=ERRORS)
async def get_job(
    job_id: str,
    services: ServicesDep,
    caller: CallerDep,
    wait: Annotated[float, Query(ge=0, le=60, description="Seconds to wait for a final state")] = 0,
) -> JobPublic:
    """Status and progress. ``?wait=S`` blocks (no polling) until the job is final or S passes;
    a waiting request holds no thread (one API key holds at most ``MT_MAX_WAITS_PER_KEY``
    streams and waiting requests at once: 429 past it). An unfinished job says where its chunks are
    (``work``: chunks queued, in flight and the age of the oldest in flight)."""
    view = await run_in_threadpool(job_view, services, job_id, caller)
    if not wait or view.final:
        return view
    with services.waits.hold(caller.owner):  # 429 past the key's share of waiting requests
        await services.waiter.wait_async(job_id, partial(services.store.afinal, job_id), wait)
    return await run_in_threadpool(job_view, services, job_id)


@router.get("/{job_id}/result", response_model=JobResultPublic, responses=ERRORS)
def get_result(
    job_id: str,
    services: ServicesDep,
    caller: CallerDep,
    partial: Annotated[bool, Query(description="Return what is done so far")] = False,
) -> Response:
    """Translations aligned with the submitted texts (409 until the job is final, unless
    ``?partial=true``)."""
    job = visible_job(services, caller, job_id)
    if not job.status.final and not partial:
        raise JobNotFinished(
            f"job {job_id} is {job.status.value} ({job.progress.done + job.progress.failed}/"
            f"{job.progress.total} done); ask again later or pass ?partial=true",
            status=job.status.value,
        )
    return serialized(services.results.result(job))


@router.get(
    "/{job_id}/document",
    response_class=Response,
    responses={200: {"content": {"application/octet-stream": {}}}, **ERRORS},
)
def get_document(
    job_id: str,
    services: ServicesDep,
    caller: CallerDep,
    partial: Annotated[bool, Query(description="Render what is done so far")] = False,
) -> Response:
    """A document job's translated file, as a download in its own format (409 until the job
    is final unless ``?partial=true``; 404 for a job that is not a document job)."""
    job = visible_job(services, caller, job_id)
    if job.document_format is None:
        raise JobNotFound(f"job {job_id} is not a document job; see /v1/jobs/{job_id}/result")
    if not job.status.final and not partial:
        raise JobNotFinished(
            f"job {job_id} is {job.status.value}; ask again later or pass ?partial=true",
            status=job.status.value,
        )
    out = services.results.document(job)
    fmt = file_formats.for_name(out.format)
    body = out.data()
    name = out.filename or f"{job_id}{fmt.extensions[0]}"
    return Response(
        body,
        media_type=fmt.media_type,
        headers={"Content-Disposition": content_disposition(name)},
    )


@router.delete("/{job_id}", response_model=JobPublic, responses=ERRORS)
def cancel_job(
    job_id: str,
    services: ServicesDep,
    caller: CallerDep,
    purge: Annotated[
        bool, Query(description="Also delete everything stored for the job (texts, results)")
    ] = False,
) -> JobPublic:
    """Cancel: no chunk of the job starts from now on; chunks a worker is running finish and
    their results are kept. The job is ``cancelling`` until they have (``work.in_flight``
    says how many; their engine work is aborted where the engine can), then ``cancelled``, its
    counters final. ``?wait=`` on ``GET /v1/jobs/{id}`` returns when it is.

    ``?purge=true`` cancels the job if it is running, then deletes everything stored for it,
    the phrase-cache entries its translations made included; the answer is the job as it was
    when purged, and afterwards the job is 404.
    """
    job = visible_job(services, caller, job_id)
    if purge:
        services.jobs.purge(job)
        if not job.status.final:
            job = job.model_copy(update={"status": JobStatus.cancelled})
        return public(job)
    services.store.cancel(job_id)
    return job_view(services, job_id)


uploads = APIRouter(prefix="/v1", tags=["jobs"])


@uploads.post(
    "/documents",
    status_code=202,
    response_model=JobPublic,
    responses={200: {"model": JobPublic}, **ERRORS, **documented(415)},
)
async def upload_document(
    services: ServicesDep,
    caller: CallerDep,
    response: Response,
    file: Annotated[UploadFile, File(description="The document (any supported format).")],
    target_lang: Annotated[str, Form(min_length=2, max_length=16)],
    source_lang: Annotated[str, Form(min_length=2, max_length=16)] = "auto",
    format: Annotated[
        str | None,
        Form(
            max_length=16,
            description="Default: from the file name's extension (a file without one: from "
            "its first bytes).",
        ),
    ] = None,
    glossary_id: Annotated[str | None, Form(max_length=64)] = None,
    lane: Annotated[Lane | None, Form()] = None,
    callback_url: Annotated[
        str | None, Form(max_length=2048, description="Gets the job's final state (webhook).")
    ] = None,
    pool: Annotated[str | None, Form(max_length=32)] = None,
    adapter: Annotated[str | None, Form(max_length=64)] = None,
    context: Annotated[
        str | None, Form(description="Informs an LLM engine; not translated (as for texts).")
    ] = None,
    custom_instructions: Annotated[
        list[str] | None, Form(description="Repeat the field for each instruction.")
    ] = None,
    formality: Annotated[str, Form()] = "default",
    protected_patterns: Annotated[
        list[str] | None,
        Form(
            description="A regular expression whose matches are kept as they are (RE2); "
            "repeat the field for each."
        ),
    ] = None,
    model_type: Annotated[
        str | None,
        Form(description="latency_optimized, quality_optimized or prefer_quality_optimized."),
    ] = None,
    no_trace: Annotated[
        bool,
        Form(description="Nothing of the job outlives the download of its file (as for texts)."),
    ] = False,
    use_cache: Annotated[str, Form(description="yes, no or overwrite (as for texts).")] = "yes",
    quality_estimation: Annotated[
        bool,
        Form(description="Score each sentence; low-scored ones marked for review in the file."),
    ] = False,
    idempotency_key: Annotated[str | None, Header(max_length=256)] = None,
) -> JobPublic:
    """Submit a document as a multipart upload (``file`` plus form fields); the same job as
    ``POST /v1/jobs`` with ``{"document": ...}``, for clients that send files as they are."""
    name = file.filename or ""
    content = await file.read()
    fmt = file_formats.for_upload(content, name, format).name
    try:
        body = JobCreate(
            document=DocumentIn(
                format=fmt,
                content=base64.b64encode(content).decode(),
                encoding="base64",
                filename=name[:255] or None,
            ),
            source_lang=source_lang,
            target_lang=target_lang,
            glossary_id=glossary_id,
            lane=lane,
            callback_url=callback_url,
            pool=pool,
            adapter=adapter,
            context=context,
            custom_instructions=custom_instructions or [],
            formality=formality,
            protected_patterns=protected_patterns or [],
            model_type=model_type,
            no_trace=no_trace,
            use_cache=use_cache,
            quality_estimation=quality_estimation,
        )
    except ValidationError as exc:
        msg = "; ".join(str(e.get("msg", "")).removeprefix("Value error, ") for e in exc.errors())
        raise InvalidInput(msg) from exc
    return await _create(services, caller, response, body, idempotency_key)
