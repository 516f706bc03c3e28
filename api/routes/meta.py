"""Languages, health, readiness and metrics."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from mtfleet.api import metrics
from mtfleet.api.auth import authenticate, operator, sees_internals
from mtfleet.api.deps import ServicesDep
from mtfleet.api.errors import documented
from mtfleet.api.routing import choose_pool
from mtfleet.core import keys, languages
from mtfleet.core.errors import UnknownPool
from mtfleet.core.schemas import (
    ErrorPublic,
    LanguagePublic,
    LanguagesPublic,
    LimitsPublic,
    PairPublic,
    PoolPublic,
)

router = APIRouter(tags=["meta"])


@router.get(
    "/v1/languages",
    response_model=LanguagesPublic,
    dependencies=[Depends(authenticate)],
    responses={401: {"model": ErrorPublic}, 429: {"model": ErrorPublic}},
)
def list_languages(services: ServicesDep) -> LanguagesPublic:
    """Language pairs the fleet serves, one entry per pool that serves it (remembered after
    workers stop; ``live`` says whether a worker of that pool serves the pair right now,
    ``routed`` which pool a job that names none goes to), the pools, and the language codes
    mtfleet knows."""
    registry = services.registry
    pools = registry.pools()
    served = registry.pairs(sorted(pools))
    live = registry.live_workers()
    live_pairs = {(w.pool_name, a, b) for w in live for a, b in w.pairs}
    by_pair: dict[tuple[str, str], list[str]] = {}
    for name, pairs in served.items():
        for pair in pairs:
            by_pair.setdefault(pair, []).append(name)
    routes = services.settings.backlog.routes
    out = []
    for (src, tgt), names in sorted(by_pair.items()):
        routed = choose_pool(routes, src, tgt, names, pools)
        out += [
            PairPublic(
                source=src,
                target=tgt,
                pool=name,
                engine=pools[name].engine,
                model=pools[name].model,
                live=(name, src, tgt) in live_pairs,
                routed=name == routed,
            )
            for name in sorted(names)
        ]
    pool_list = [
        PoolPublic(
            name=name,
            engine=p.engine,
            model=p.model,
            pairs=len(served.get(name, ())),
            live_workers=sum(1 for w in live if w.pool_name == name),
            lanes=sorted({lane for w in live if w.pool_name == name for lane in w.lanes}),
            adapters=sorted(p.adapters),
            model_type=p.model_type,
            quality_model=p.quality_model,
        )
        for name, p in sorted(pools.items())
    ]
    langs = [
        LanguagePublic(code=lang.code, name=lang.english) for lang in languages.LANGUAGES.values()
    ]
    return LanguagesPublic(pairs=out, languages=langs, pools=pool_list)


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
        max_segments_per_job=s.jobs.max_segments_per_job,
        max_segment_chars=s.jobs.max_segment_chars,
        max_request_bytes=s.api.max_request_bytes,
        interactive_max_segments=s.backlog.interactive_max_segments,
        key_interactive_segments=s.keys.key_interactive_segments,
        key_interactive_jobs=s.keys.key_interactive_jobs,
    )


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is up (no dependency checked)."""
    return {"status": "ok"}


@router.get("/readyz", responses=documented(422))
def readyz(
    services: ServicesDep,
    details: Annotated[bool, Depends(sees_internals)],
    pool: Annotated[
        str | None,
        Query(max_length=32, description="Whether this pool is ready (default: the fleet)."),
    ] = None,
) -> JSONResponse:
    """Ready when Redis answers and every lane has a live, healthy worker (503 otherwise, with
    an ``error`` saying which lanes lack one); with ``?pool=NAME``, a worker of that pool (422
    for a pool the fleet has never had). Anyone gets the status (probes send no key); only an
    operator key (or anyone with ``MT_AUTH=off``) the details: ``pools`` shows each pool's lanes
    and the workers that serve them, ``lanes`` the workers per lane, ``unhealthy`` the live
    workers whose engine is down or restarting, with the reason."""
    try:
        services.store.r.ping()
        workers = services.registry.live_workers()
        known = sorted(services.registry.pools())
    except Exception as exc:  # noqa: BLE001 - report, never raise
        error = {"type": "unavailable", "message": "Redis cannot be read"}
        if not details:  # the cause names Redis's address
            return JSONResponse({"status": "unavailable", "error": error}, status_code=503)
        return JSONResponse(
            {
                "status": "unavailable",
                "redis": f"error: {exc}",
                "error": {**error, "message": f"{error['message']}: {exc}"},
            },
            status_code=503,
        )
    healthy = [w for w in workers if w.healthy]
    pools = {
        name: {
            lane: sorted(w.name for w in healthy if w.pool_name == name and lane in w.lanes)
            for lane in keys.LANES
        }
        for name in sorted({*known, *(w.pool_name for w in workers)})
    }
    if pool is None:
        lanes = {lane: sorted(w.name for w in healthy if lane in w.lanes) for lane in keys.LANES}
    elif pool in pools:
        lanes = pools[pool]
    elif details:
        raise UnknownPool(
            f"the fleet has no pool {pool!r}; pools: " + (", ".join(pools) or "none yet"),
            pools=list(pools),
        )
    else:
        raise UnknownPool(f"the fleet has no pool {pool!r}")
    unhealthy = [
        {"name": w.name, "pool": w.pool_name, "reason": w.unhealthy_reason}
        for w in workers
        if not w.healthy
    ]
    ready = all(lanes.values())
    body: dict[str, object] = {
        "status": "ready" if ready else "not_ready",
        "redis": "ok",
        "lanes": lanes,
        "pools": pools,
        "unhealthy": unhealthy,
    }
    if not ready:
        idle = ", ".join(lane for lane, names in lanes.items() if not names)
        where = f" of pool {pool}" if pool is not None else ""
        body["error"] = {
            "type": "not_ready",
            "message": f"no live, healthy worker{where} for lane(s) {idle}",
        }
    if not details:
        body = {k: v for k, v in body.items() if k in ("status", "error")}
    return JSONResponse(body, status_code=200 if ready else 503)


@router.get(
    "/metrics",
    dependencies=[Depends(operator)],
    responses=documented(401, 403, 429),
)
def prometheus_metrics() -> Response:
    """Prometheus metrics: this process's requests and the fleet's queues, workers and dead
    letters. Needs an operator key (with ``MT_AUTH=required``); scrapers on a private network
    read the same without a key on ``MT_API_METRICS_PORT``."""
    return Response(generate_latest(metrics.REGISTRY), media_type=CONTENT_TYPE_LATEST)
