"""DeepL's quality evaluations (a closed alpha): ``POST /v1/quality-evaluations`` with source
texts and their translations, then ``GET /v1/quality-evaluations/{job_id}`` until ``done``.

DeepL publishes the poll's answer: ``job_id``, ``status`` and per segment ``segment_index``,
``segment_score`` (0-100, higher is better), ``source``, ``target`` and typed ``errors``. Its
request is not public; this one takes ``source_lang`` (optional: detected), ``target_lang``
and ``segments``, each ``{"source", "target"}``, as the poll answers them. The evaluation is a
job of the fleet (:meth:`mtfleet.api.service.JobService.submit` with ``translations`` and
``quality_estimation``): its pool's quality-estimation model (MetricX-24, 0 best, 25 worst;
docs/quality.md) scores each pair, and ``segment_score`` is that score on DeepL's scale,
``100 - 4 x MetricX`` (``metricx_score`` keeps the model's own). MetricX gives no error spans:
``errors`` is empty; ``source`` is not echoed (the fleet keeps a job's results, not its
texts); a segment that could not be scored has a null ``segment_score`` and ``not_scored``
saying why. A fleet whose pool for the pair has no quality-estimation model refuses the
request (400, naming ``MT_QE_MODEL``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mtfleet.api.deepl import languages
from mtfleet.api.deepl.auth import DeepLCaller
from mtfleet.api.deepl.errors import Route
from mtfleet.api.deepl.params import MAX_TEXTS, fields, parse
from mtfleet.api.deps import ServicesDep
from mtfleet.core.errors import InvalidInput, JobNotFound
from mtfleet.core.models import JobStatus, SegmentOutcome
from mtfleet.core.schemas import JobCreate

router = APIRouter(prefix="/v1/quality-evaluations", tags=["deepl"], route_class=Route)

STATES = {
    JobStatus.queued: "queued",
    JobStatus.running: "running",
    JobStatus.cancelling: "running",
    JobStatus.succeeded: "done",
    JobStatus.partial: "done",
    JobStatus.failed: "error",
    JobStatus.cancelled: "error",
}


class Pair(BaseModel):
    model_config = ConfigDict(extra="ignore")

    source: str = Field(min_length=1)
    target: str = Field(min_length=1)


class EvaluationIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    source_lang: str | None = Field(None, min_length=2, max_length=16)
    target_lang: str = Field(min_length=2, max_length=16)
    segments: list[Pair] = Field(min_length=1, max_length=MAX_TEXTS)


def deepl_score(metricx: float) -> float:
    """A MetricX score (0 best, 25 worst) on DeepL's scale (0-100, higher is better)."""
    return round(100.0 - 4.0 * metricx, 1)


@router.post("")
async def create(request: Request, services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    """Start an evaluation of ``segments`` (source and target each); ``job_id`` comes back."""
    req = parse(EvaluationIn, await fields(request))
    try:
        job = JobCreate(
            texts=[p.source for p in req.segments],
            translations=[p.target for p in req.segments],
            source_lang=languages.to_fleet(req.source_lang) if req.source_lang else "auto",
            target_lang=languages.to_fleet(req.target_lang),
            quality_estimation=True,
        )
    except ValidationError as exc:
        reasons = (str(e.get("msg", "")).removeprefix("Value error, ") for e in exc.errors())
        raise InvalidInput("; ".join(reasons)) from exc
    submitted = await services.jobs.submit(job, owner=caller.owner, key=caller.key)
    return JSONResponse(
        {"job_id": submitted.job.id, "status": STATES[submitted.job.status]}, status_code=201
    )


@router.get("/{job_id}")
async def poll(job_id: str, services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    """The evaluation's state and, once ``done``, each segment's score."""

    def read() -> tuple[Any, list[Any]]:
        missing = JobNotFound(f"quality evaluation {job_id} not found (or not with this key)")
        try:
            job = services.store.get(job_id.lower())
        except JobNotFound:
            raise missing from None
        if not caller.may_see(job):
            raise missing
        return job, services.store.results(job.id, job.progress.total)

    job, outcomes = await run_in_threadpool(read)
    state = STATES[job.status]
    body: dict[str, Any] = {"job_id": job.id, "status": state}
    if state == "done":
        body["segments"] = [_segment(i, o) for i, o in enumerate(outcomes)]
    if state == "error":
        error = job.error or {}
        body["error_message"] = str(error.get("message") or f"the job was {job.status.value}")
    return JSONResponse(body)


def _segment(index: int, outcome: SegmentOutcome | None) -> dict[str, Any]:
    """One segment of a done evaluation; one that could not be scored has a null score and
    the reason (``not_scored``)."""
    out: dict[str, Any] = {"segment_index": index}
    if outcome is not None and outcome.quality is not None:
        return out | {
            "segment_score": deepl_score(outcome.quality),
            "metricx_score": outcome.quality,
            "target": outcome.translation,
            "errors": [],
        }
    found = (outcome.warnings + ([outcome.error] if outcome.error else [])) if outcome else []
    why = "; ".join(str(w.get("message", "")) for w in found) or "it was not scored"
    return out | {"segment_score": None, "not_scored": why, "errors": []}
