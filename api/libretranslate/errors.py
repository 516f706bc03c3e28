"""The LibreTranslate surface's error answers, in one place: LibreTranslate's body,
``{"error": "..."}``, and its statuses: 400 for a bad request (a missing API key included, as
LibreTranslate answers it), 403 for a bad key, 429 for a rate or a quota (``Slowdown: ...``),
404 for an unknown download; 503 while a translation is still running past the wait (the same
request sent again joins it) or a store is down; 500 when the translation failed.

Every answer of the surface carries LibreTranslate's CORS headers (browser clients call it
from other origins); :class:`Preflight` answers their CORS preflight requests.
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from mtfleet.api.surfaces import Surface, route_class
from mtfleet.core.errors import (
    InvalidInput,
    JobNotFinished,
    JobNotFound,
    JobPurged,
    MTError,
    RateLimited,
    Unauthorized,
    Unavailable,
)

log = logging.getLogger(__name__)

STATUS: list[tuple[type[MTError], int]] = [
    (RateLimited, 429),
    (JobNotFinished, 503),  # StillTranslating: the same request sent again joins the job
    (Unauthorized, 403),
    (JobNotFound, 404),
    (JobPurged, 404),
    (InvalidInput, 400),
    (Unavailable, 503),
]

CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Headers": "Authorization, Content-Type",
    "Access-Control-Allow-Methods": "GET, POST",
    "Access-Control-Allow-Credentials": "true",
    "Access-Control-Max-Age": "1728000",
}


def render(code: int, type_: str, message: str, **extra: Any) -> Response:
    """An error as LibreTranslate words it (``type_`` is not part of its body)."""
    if code == 401:
        code = 403
    headers = dict(CORS)
    if code in (429, 503):
        headers["Retry-After"] = str(extra.get("retry_after", 1))
    if code == 429:
        message = f"Slowdown: {message}"
    return JSONResponse({"error": message}, status_code=code, headers=headers)


def answer(_: Request, exc: Exception) -> Response:
    """Any exception a LibreTranslate route raises, as LibreTranslate's clients expect it."""
    if isinstance(exc, MTError):
        code = next((c for cls, c in STATUS if isinstance(exc, cls)), 500)
        if code == 500:
            log.error("LibreTranslate request failed: %s", exc.message)
        return render(code, exc.code, exc.message, **exc.details)
    if isinstance(exc, RequestValidationError):
        return render(400, "invalid_input", "Invalid request")
    if isinstance(exc, HTTPException):
        return render(exc.status_code, "http_error", str(exc.detail))
    if isinstance(exc, redis.RedisError):
        err = Unavailable.because("the job store", exc)
        return render(503, err.code, err.message)
    log.exception("unhandled error on the LibreTranslate surface", exc_info=exc)
    return render(500, "internal", "internal error; see the server log")


Route = route_class(answer, CORS)


class Preflight:
    """Starlette's CORS middleware, LibreTranslate's settings, for the surface's paths only
    (it answers browsers' preflight requests; /v1 and DeepL's routes are not for browsers on
    other origins)."""

    def __init__(self, app: ASGIApp, prefix: str) -> None:
        self.app = app
        self.prefix = prefix
        self.cors = CORSMiddleware(
            app,
            allow_origins=["*"],
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
            max_age=1728000,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(self.prefix):
            await self.cors(scope, receive, send)
        else:
            await self.app(scope, receive, send)


SURFACE = Surface(
    "libretranslate",
    ("/libretranslate/",),
    (),  # the key travels in the body or the query: read by the routes
    "Please contact the server operator to get an API key",
    render,
)
