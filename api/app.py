"""FastAPI application factory (``uvicorn --factory mtfleet.api.app:create_app``)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import Depends, FastAPI, Request
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mtfleet.api import crowdin, deepl, libretranslate, metrics
from mtfleet.api.deps import Services
from mtfleet.api.guard import AuthFailures, RequestGuard
from mtfleet.api.parsing import DocumentPool
from mtfleet.api.results import Results
from mtfleet.api.routes import (
    docs,
    events,
    glossaries,
    jobs,
    meta,
    ops,
    pages,
    translate,
    translation_memories,
)
from mtfleet.api.service import JobService
from mtfleet.api.shares import KeyShares
from mtfleet.api.surfaces import V1, install
from mtfleet.api.webhooks.deliverer import WebhookDeliverer
from mtfleet.core import langdetect
from mtfleet.core.apikeys import KeyStore
from mtfleet.core.broker import make_celery
from mtfleet.core.cache import PhraseCache
from mtfleet.core.events import CompletionWaiter
from mtfleet.core.heap import freeze_startup_heap
from mtfleet.core.outbox import WebhookOutbox
from mtfleet.core.redis_conn import connect, connect_async
from mtfleet.core.registry import Registry
from mtfleet.core.settings import Settings, get_settings
from mtfleet.core.store import JobStore


async def utf8_json(request: Request) -> None:
    """A request body must be UTF-8 JSON (RFC 8259 section 8.1): a UTF-16 or UTF-32 body is 415.

    FastAPI parses bodies with ``json.loads``, which would accept them silently; a body that is
    not valid UTF-8 at all is already a 400 from that parsing. Only the first bytes are read.
    """
    ctype = request.headers.get("content-type", "")
    if request.method in ("POST", "PUT", "PATCH") and not ctype.startswith("multipart/"):
        # (a multipart upload is parsed by its route; its file may be any bytes)
        body = await request.body()
        encoding = json.detect_encoding(body) if body else "utf-8"
        if encoding not in ("utf-8", "utf-8-sig"):
            raise HTTPException(
                415, f"the request body must be UTF-8 JSON; this one is {encoding.upper()}"
            )


class Timing:
    """Request latency per route, method and status (``mt_api_request_seconds``).

    A plain ASGI middleware: Starlette's ``BaseHTTPMiddleware`` (``@app.middleware``) runs
    every request through an extra task and memory streams, which cost more than a cached
    translation itself.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = scope.get("route")
            metrics.REQUESTS.labels(
                getattr(route, "path", "unmatched"), scope["method"], str(status)
            ).observe(time.perf_counter() - t0)


def build_services(settings: Settings) -> Services:
    """Every service of an API process; call it on the event loop that will serve (its
    asyncio Redis clients belong to that loop; :func:`close_services` closes them)."""
    r = connect(settings.redis.redis_url)
    ar = connect_async(settings.redis.redis_url)
    store = JobStore(
        r,
        result_ttl_s=settings.jobs.result_ttl_s,
        aclient=ar,
        min_replicas=settings.redis.redis_min_replicas,
        replica_timeout_ms=settings.redis.redis_replica_timeout_ms,
    )
    registry = Registry(r, ar)
    apikeys = KeyStore(
        r, cache_s=settings.keys.auth_cache_s, aclient=ar, default_rate=settings.keys.key_rate
    )
    same = settings.redis.effective_cache_url == settings.redis.redis_url
    cache = PhraseCache(
        connect(settings.redis.effective_cache_url),
        ttl_s=settings.jobs.cache_ttl_s,
        job_ttl_s=settings.jobs.result_ttl_s,
        aclient=ar if same else connect_async(settings.redis.effective_cache_url),
    )
    celery = make_celery(settings, name="mtfleet-api")
    pool = DocumentPool(settings.documents, settings.jobs.max_segments_per_job)
    jobs = JobService(settings, store, cache, registry, celery, apikeys, pool)
    waiter = CompletionWaiter(r)
    return Services(
        settings,
        store,
        registry,
        apikeys,
        jobs,
        Results(store, pool, waiter),
        waiter,
        WebhookOutbox(r, ar, kept_s=settings.jobs.result_ttl_s),
        KeyShares(
            settings.webhooks.max_waits_per_key,
            "event streams and waiting requests",
            "MT_MAX_WAITS_PER_KEY",
        ),
        AuthFailures(settings.keys.auth_failures_per_minute),
        KeyShares(
            settings.glossaries.tm_work_per_key,
            "translation-memory operations (imports, exports, corrections, segment pages)",
            "MT_TM_WORK_PER_KEY",
        ),
    )


async def close_services(services: Services) -> None:
    """Close the asyncio Redis clients :func:`build_services` made."""
    clients = {id(c): c for c in (services.apikeys.ar, services.jobs.cache.ar) if c is not None}
    for client in clients.values():
        await client.aclose()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Settings]]:
        # Sync routes run in a thread pool; /v1/translate waits in it, so give it room.
        anyio.to_thread.current_default_thread_limiter().total_tokens = 256
        # first: a metrics port this process cannot have stops it before anything loads
        stop_metrics = metrics.serve(settings.api.api_metrics_host, settings.api.api_metrics_port)
        services = build_services(settings)
        # what the first auto-detected request and the first document would otherwise wait
        # seconds for (lingua's models, the document processes): loaded before serving
        if settings.documents.preload:
            await asyncio.gather(
                anyio.to_thread.run_sync(langdetect.preload),
                anyio.to_thread.run_sync(services.jobs.documents.start),
            )
        services.waiter.start()
        deliverer = WebhookDeliverer(
            settings.webhooks, services.outbox, services.apikeys, services.store
        )
        deliverer.start()  # every API process sends the fleet's webhooks (docs/webhooks.md)
        app.state.services = services
        metrics.FLEET.r = services.store.r
        freeze_startup_heap()
        # the lifespan state, which uvicorn hands each connection: the header deadline's
        # settings (api/guard.py:HeaderTimeoutProtocol)
        yield {"settings": settings}
        await deliverer.stop()
        services.waiter.stop()
        services.jobs.documents.close()
        await close_services(services)
        stop_metrics()

    app = FastAPI(
        title="mtfleet",
        version="1",
        summary="Asynchronous machine-translation jobs on a GPU fleet.",
        lifespan=lifespan,
        dependencies=[Depends(utf8_json)],
        docs_url=None,  # served from the package: api/routes/docs.py
        redoc_url=None,
    )
    install(app, V1)
    docs.install(app)
    pages.install(app, settings)
    app.include_router(jobs.router)
    app.include_router(jobs.uploads)
    app.include_router(events.router)
    app.include_router(translate.router)
    app.include_router(glossaries.router)
    app.include_router(translation_memories.router)
    app.include_router(meta.router)
    # the drop-in surfaces: other services' contracts, documented in docs/deepl.md,
    # docs/libretranslate.md and docs/localization-platforms.md, not in mtfleet's own OpenAPI
    # schema
    app.include_router(deepl.router, include_in_schema=False)
    app.include_router(libretranslate.router, include_in_schema=False)
    app.include_router(crowdin.router, include_in_schema=False)
    app.include_router(ops.router)

    app.add_middleware(Timing)
    app.add_middleware(
        RequestGuard,
        settings=settings.api,
        auth_required=settings.keys.auth == "required",
        surfaces=(V1, deepl.SURFACE, libretranslate.SURFACE, crowdin.SURFACE),
    )
    app.add_middleware(libretranslate.Preflight, prefix=libretranslate.PREFIX)
    return app
