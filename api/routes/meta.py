"""Languages, health, readiness and metrics."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from mtfleet.api import metrics
from mtfleet.api.auth import authenticate
from mtfleet.api.deps import ServicesDep
from mtfleet.core import keys, languages
from mtfleet.core.schemas import (
    ErrorPublic,
    LanguagePublic,
    LanguagesPublic,
    LimitsPublic,
    PairPublic,
)

router = APIRouter(tags=["meta"])


@router.get(
    "/v1/languages",
    response_model=LanguagesPublic,
    dependencies=[Depends(authenticate)],
    responses={401: {"model": ErrorPublic}, 429: {"model": ErrorPublic}},
)
def list_languages(services: ServicesDep) -> LanguagesPublic:
    """Language pairs the fleet serves (remembered after workers stop; ``live`` says whether a
    worker serves the pair right now) and the language codes mtfleet knows."""
    live_pairs = {(a, b) for w in services.registry.live_workers() for a, b in w.pairs}
    pairs = [
        PairPublic(
            source=p.source,
            target=p.target,
            engine=p.engine,
            model=p.model,
            live=(p.source, p.target) in live_pairs,
        )
        for p in sorted(services.registry.pairs().values(), key=lambda p: (p.source, p.target))
    ]
    langs = [
        LanguagePublic(code=lang.code, name=lang.english) for lang in languages.LANGUAGES.values()
    ]
    return LanguagesPublic(pairs=pairs, languages=langs)


@router.get(
    "/v1/limits",
    response_model=LimitsPublic,
    dependencies=[Depends(authenticate)],
    responses={401: {"model": ErrorPublic}, 429: {"model": ErrorPublic}},
)
def limits(services: ServicesDep) -> LimitsPublic:
    """What one job or request may carry here (``mtfleet submit`` splits larger files by it)."""
    s = services.settings
    return LimitsPublic(
        max_segments_per_job=s.max_segments_per_job,
        max_segment_chars=s.max_segment_chars,
        max_request_bytes=s.max_request_bytes,
    )


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is up (no dependency checked)."""
    return {"status": "ok"}


@router.get("/readyz")
def readyz(services: ServicesDep) -> JSONResponse:
    """Ready when Redis answers and every lane has a live, healthy worker (503 otherwise).
    ``unhealthy`` lists live workers whose engine is down or restarting, with the reason."""
    try:
        services.store.r.ping()
        workers = services.registry.live_workers()
    except Exception as exc:  # noqa: BLE001 - report, never raise
        return JSONResponse({"status": "unavailable", "redis": f"error: {exc}"}, status_code=503)
    healthy = [w for w in workers if w.healthy]
    lanes = {lane: sorted(w.name for w in healthy if lane in w.lanes) for lane in keys.LANES}
    unhealthy = [{"name": w.name, "reason": w.unhealthy_reason} for w in workers if not w.healthy]
    ready = all(lanes.values())
    return JSONResponse(
        {
            "status": "ready" if ready else "not_ready",
            "redis": "ok",
            "lanes": lanes,
            "unhealthy": unhealthy,
        },
        status_code=200 if ready else 503,
    )


@router.get("/metrics")
def prometheus_metrics() -> Response:
    return Response(generate_latest(metrics.REGISTRY), media_type=CONTENT_TYPE_LATEST)
