"""/v1/translate: synchronous translation for small interactive requests."""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Header
from fastapi.responses import JSONResponse

from api import documents, metrics
from api.auth import CallerDep
from api.deps import ServicesDep
from api.routes.jobs import ERRORS, job_result, submit_for
from api.schemas import JobCreate, JobPublic, TranslateCreate, TranslatePublic
from core.models import Lane

router = APIRouter(prefix="/v1", tags=["translate"])


@router.post(
    "/translate",
    response_model=TranslatePublic,
    responses={202: {"model": JobPublic}, **ERRORS},
)
def translate(
    body: TranslateCreate,
    services: ServicesDep,
    caller: CallerDep,
    idempotency_key: Annotated[str | None, Header(max_length=256)] = None,
) -> TranslatePublic:
    """Translate on the interactive lane and answer with the translations (200).

    Cached phrases answer at once. Otherwise the request waits for the job without polling (a
    Redis pub/sub wake-up) up to ``timeout`` (default ``MT_TRANSLATE_TIMEOUT_S``); past it the
    answer is 202 with the job, to be fetched from ``/v1/jobs/{id}/result``.
    """
    t0 = time.monotonic()
    job_req = JobCreate(
        texts=body.texts,
        source_lang=body.source_lang,
        target_lang=body.target_lang,
        lane=Lane.interactive,
        glossary_id=body.glossary_id,
    )
    job_req, _, detected, langs = documents.prepare(job_req)  # source_lang "auto"
    submitted = submit_for(
        services, caller, job_req, idempotency_key, detected=detected, segment_langs=langs
    )
    job = submitted.job
    timeout = body.timeout or services.settings.translate_timeout_s
    if not job.status.final:
        services.waiter.wait(
            job.id, lambda: (s := services.store.status(job.id)) is None or s.final, timeout
        )
        job = services.store.get(job.id)
    if not job.status.final:
        pending = JobPublic(**job.model_dump(include=set(JobPublic.model_fields)))
        return JSONResponse(  # type: ignore[return-value]
            pending.model_dump(mode="json"),
            status_code=202,
            headers={"Location": f"/v1/jobs/{job.id}"},
        )
    metrics.JOB_LATENCY.labels("interactive").observe(time.monotonic() - t0)
    result = job_result(services, job, submitted.cached if job.status.final else None)
    return TranslatePublic(
        id=job.id,
        status=job.status,
        translations=result.translations,
        errors=result.errors,
        warnings=result.warnings,
        cached=job.cached,
    )
