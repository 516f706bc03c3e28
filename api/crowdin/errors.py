"""The Crowdin surface's error answers: Crowdin's body, ``{"error": {"message": "..."}}``,
with ``Retry-After`` on 429 and 503. Which status each error is (``/v1``'s, but 503 for a
translation still running past the wait) is the ``crowdin`` column of
:data:`mtfleet.api.errors.STATUS`.
"""

from __future__ import annotations

from typing import Any

from fastapi import Response
from fastapi.responses import JSONResponse

from mtfleet.api.surfaces import Surface, route_class


def render(code: int, type_: str, message: str, **extra: Any) -> Response:
    """An error as Crowdin reads it (``type_`` is not part of its body)."""
    headers = {}
    if code in (429, 503):
        headers["Retry-After"] = str(extra.get("retry_after", 1))
    return JSONResponse({"error": {"message": message}}, status_code=code, headers=headers)


SURFACE = Surface(
    "crowdin",
    ("/crowdin/",),
    (),  # the key travels in the URL (Crowdin's own Bearer is its JWT): read by the routes
    "an API key is required: install the app from /crowdin/<key>/manifest.json, or send "
    "?key=<key> or Authorization: Bearer <key>",
    render,
)

Route = route_class(SURFACE)
