"""/v1/translate: synchronous translation for small interactive requests."""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Header
from fastapi.responses import JSONResponse, Response

from mtfleet.api import metrics
from mtfleet.api.auth import CallerDep
from mtfleet.api.deps import ServicesDep
from mtfleet.api.routes.jobs import ERRORS, public
from mtfleet.core.models import JobStatus, Lane
from mtfleet.core.schemas import JobCreate, JobPublic, TranslateCreate, TranslatePublic

router = APIRouter(prefix="/v1", tags=["translate"])


@router.post(
    "/translate",
    response_model=TranslatePublic,
    responses={202: {"model": JobPublic}, **ERRORS},
)
async def translate(
    body: TranslateCreate,
    services: ServicesDep,
    caller: CallerDep,
    idempotency_key: Annotated[str | None, Header(max_length=256)] = None,
) -> TranslatePublic:
    """Translate on the interactive lane and answer with the translations (200). A request of
    more texts than ``MT_INTERACTIVE_MAX_SEGMENTS`` is served on the bulk lane (its job's
    ``lane`` says so); a key whose interactive work queued or running is at its share
    (``MT_KEY_INTERACTIVE_SEGMENTS``, ``MT_KEY_INTERACTIVE_JOBS``) gets 429 with Retry-After.

    Texts the phrase cache holds every one of answer at once, from the event loop (one Redis
    round trip; no job is made, ``id`` is null). Otherwise a job is queued and the request
    waits for it without polling (a Redis pub/sub wake-up) up to ``timeout`` (default
    ``MT_TRANSLATE_TIMEOUT_S``); past it the answer is 202 with the job, to be fetched from
    ``/v1/jobs/{id}/result``. A waiting request holds no thread (submission runs in the thread
    pool, the wait itself on the event loop).
    """
    t0 = time.monotonic()
    # the same request as a job: every field of the body but the wait (one list, no copy of
    # each field to forget when a field is added), not validated again: the body was, by the
    # same validators (texts, guidance, callback_url)
    req = JobCreate.model_construct(**body.model_dump(exclude={"timeout"}), lane=Lane.interactive)
    found = None
    if idempotency_key is None:  # a replay must find its job: the whole way
        found = await services.jobs.answer_from_cache(req, owner=caller.owner, key=caller.key)
        if found.translations is not None:
            metrics.JOB_LATENCY.labels("interactive").observe(time.monotonic() - t0)
            answer = TranslatePublic(
                id=None,
                status=JobStatus.succeeded,
                translations=list(found.translations),
                cached=len(found.translations),
                model_type_used=found.model_type_used,
            )
            return Response(answer.model_dump_json(), media_type="application/json")  # type: ignore[return-value]
    submitted = await services.jobs.submit(
        req,
        owner=caller.owner,
        key=caller.key,
        idempotency_key=idempotency_key,
        found=found,
    )
    timeout = body.timeout or services.settings.api.translate_timeout_s
    known = submitted.cached if submitted.created else None
    job, result = await services.results.settled(submitted.job, timeout, known)
    if result is None:
        return JSONResponse(  # type: ignore[return-value]
            public(job).model_dump(mode="json"),
            status_code=202,
            headers={"Location": f"/v1/jobs/{job.id}"},
        )
    metrics.JOB_LATENCY.labels("interactive").observe(time.monotonic() - t0)
    return TranslatePublic(
        id=job.id,
        status=job.status,
        translations=result.translations,
        errors=result.errors,
        warnings=result.warnings,
        memory=result.memory,
        quality=result.quality,
        cached=job.cached,
        detected_source_lang=job.detected_source_lang,
        detected_confidence=job.detected_confidence,
        model_type_used=job.model_type_used,
    )
