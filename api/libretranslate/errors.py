"""The LibreTranslate surface's error answers: LibreTranslate's body, ``{"error": "..."}``
(``Slowdown: ...`` for a 429). Which status each error is (400 for a bad request, a missing
API key included, as LibreTranslate answers it; 403 for a bad key; 429 for a rate or a quota;
404 for an unknown download; 503 while a translation is still running past the wait, the same
request sent again joining it, or a store is down; 500 when the translation failed) is the
``libretranslate`` column of :data:`mtfleet.api.errors.STATUS`.

Every answer of the surface carries LibreTranslate's CORS headers (browser clients call it
from other origins); :class:`Preflight` answers their CORS preflight requests.
"""

from __future__ import annotations

from typing import Any

from fastapi import Response
from fastapi.responses import JSONResponse
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from mtfleet.api.surfaces import Surface, route_class

CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Headers": "Authorization, Content-Type",
    "Access-Control-Allow-Methods": "GET, POST",
    "Access-Control-Allow-Credentials": "true",
    "Access-Control-Max-Age": "1728000",
}


def render(code: int, type_: str, message: str, **extra: Any) -> Response:
    """An error as LibreTranslate words it (``type_`` is not part of its body)."""
    headers = dict(CORS)
    if code in (429, 503):
        headers["Retry-After"] = str(extra.get("retry_after", 1))
    if code == 429:
        message = f"Slowdown: {message}"
    return JSONResponse({"error": message}, status_code=code, headers=headers)


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
    invalid_status=400,
    invalid_message="Invalid request",
)

Route = route_class(SURFACE, CORS)
