"""/v1/jobs: submit, inspect, fetch results, cancel."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Response

from api.deps import Services, ServicesDep
from api.schemas import (
    ErrorPublic,
    JobCreate,
    JobPublic,
    JobResultPublic,
    SegmentError,
    SegmentWarning,
)
from core.errors import JobNotFinished
from core.models import JobRecord, JobStatus, SegmentOutcome

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorPublic},
    409: {"model": ErrorPublic},
    422: {"model": ErrorPublic},
    503: {"model": ErrorPublic},
}


def public(job: JobRecord) -> JobPublic:
    return JobPublic(**job.model_dump(include=set(JobPublic.model_fields)))


def job_result(
    services: Services, job: JobRecord, known: dict[int, SegmentOutcome] | None = None
) -> JobResultPublic:
    """The public result; ``known`` holds every outcome already (skips the Redis read)."""
    outcomes: list[SegmentOutcome | None]
    if known is not None and len(known) == job.progress.total:
        outcomes = [known[i] for i in range(job.progress.total)]
    else:
        outcomes = services.store.results(job.id, job.progress.total)
    translations: list[str | None] = []
    errs: list[SegmentError] = []
    warns: list[SegmentWarning] = []
    for i, o in enumerate(outcomes):
        translations.append(o.translation if o is not None and o.ok else None)
        if o is None:
            continue
        if o.error:
            errs.append(
                SegmentError(
                    index=i,
                    type=str(o.error.get("type", "error")),
                    message=str(o.error.get("message", "")),
                )
            )
        warns += [
            SegmentWarning(
                index=i, type=str(w.get("type", "warning")), message=str(w.get("message", ""))
            )
            for w in o.warnings
        ]
    return JobResultPublic(
        id=job.id, status=job.status, translations=translations, errors=errs, warnings=warns
    )


@router.post(
    "", status_code=202, response_model=JobPublic, responses={200: {"model": JobPublic}, **ERRORS}
)
def create_job(
    body: JobCreate,
    services: ServicesDep,
    response: Response,
    idempotency_key: Annotated[str | None, Header(max_length=256)] = None,
) -> JobPublic:
    """Submit segments. 202 while queued; 200 when every segment came from the phrase cache.

    An ``Idempotency-Key`` header returns the same job for the same key (409 if the body differs).
    """
    submitted = services.jobs.submit(body, idempotency_key)
    job = submitted.job
    response.headers["Location"] = f"/v1/jobs/{job.id}"
    if job.status is JobStatus.succeeded:
        response.status_code = 200
    return public(job)


@router.get("/{job_id}", response_model=JobPublic, responses=ERRORS)
def get_job(
    job_id: str,
    services: ServicesDep,
    wait: Annotated[float, Query(ge=0, le=60, description="Seconds to wait for a final state")] = 0,
) -> JobPublic:
    """Status and progress. ``?wait=S`` blocks (no polling) until the job is final or S passes."""
    job = services.store.get(job_id)
    if wait and not job.status.final:
        services.waiter.wait(
            job_id, lambda: (s := services.store.status(job_id)) is None or s.final, wait
        )
        job = services.store.get(job_id)
    return public(job)


@router.get("/{job_id}/result", response_model=JobResultPublic, responses=ERRORS)
def get_result(
    job_id: str,
    services: ServicesDep,
    partial: Annotated[bool, Query(description="Return what is done so far")] = False,
) -> JobResultPublic:
    """Translations aligned with the submitted texts (409 until the job is final, unless
    ``?partial=true``)."""
    job = services.store.get(job_id)
    if not job.status.final and not partial:
        raise JobNotFinished(
            f"job {job_id} is {job.status.value} ({job.progress.done + job.progress.failed}/"
            f"{job.progress.total} done); ask again later or pass ?partial=true",
            status=job.status.value,
        )
    return job_result(services, job)


@router.delete("/{job_id}", response_model=JobPublic, responses=ERRORS)
def cancel_job(job_id: str, services: ServicesDep) -> JobPublic:
    """Cancel: chunks not yet started are skipped; finished results are kept."""
    services.store.cancel(job_id)
    return public(services.store.get(job_id))
