"""The DeepL surface's error answers: DeepL's body, ``{"message": ...}``, with ``Retry-After``
on the statuses its clients retry. Which status each error is (403 for a missing or bad key,
456 for a spent quota, 429 for a rate, a full queue or a translation still running past the
wait, 413 for too many texts, 404 for an unknown glossary or document, 503 for a document not
ready or a store that is down, 400 for any other bad parameter) is the ``deepl`` column of
:data:`mtfleet.api.errors.STATUS`.
"""

from __future__ import annotations

from typing import Any

from fastapi import Response
from fastapi.responses import JSONResponse

from mtfleet.api.surfaces import Surface, route_class


def render(code: int, type_: str, message: str, **extra: Any) -> Response:
    """An error as DeepL words it (``type_`` is not part of DeepL's body)."""
    headers = {}
    if code in (429, 503):
        headers["Retry-After"] = str(extra.get("retry_after", 1))
    return JSONResponse({"message": message}, status_code=code, headers=headers)


SURFACE = Surface(
    "deepl",
    # (DeepL's quality-evaluation alpha is under /v1: api/deepl/quality.py)
    ("/v2/", "/v3/", "/v1/quality-evaluations/"),
    ("deepl-auth-key", "bearer"),
    "an API key is required: send Authorization: DeepL-Auth-Key <key>",
    render,
    invalid_status=400,
)

Route = route_class(SURFACE)
