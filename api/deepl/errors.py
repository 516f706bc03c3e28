"""The DeepL surface's error answers, in one place: the statuses DeepL's clients map to their
exceptions, and DeepL's body, ``{"message": ...}``.

403 for a missing or bad key (never 401: the official client reads 401 as an unexpected
status), 456 for a spent quota (not retried), 429 with ``Retry-After`` for a rate or a full
queue and for a translation still running past the wait (retried: the resend joins the job),
413 for too many texts, 404 for an unknown glossary or document, 503 for a document not ready
(the client retries its download) or a store that is down, 400 for any other bad parameter.
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from mtfleet.api.surfaces import Surface, route_class
from mtfleet.core.errors import (
    IdempotencyConflict,
    InvalidInput,
    JobNotFinished,
    JobNotFound,
    JobPurged,
    MTError,
    QuotaExceeded,
    RateLimited,
    StillTranslating,
    StorageQuotaExceeded,
    TooLarge,
    Unauthorized,
    Unavailable,
)
from mtfleet.core.glossary import UnknownGlossary
from mtfleet.core.tm import UnknownTranslationMemory

log = logging.getLogger(__name__)

#: DeepL's status for "the quota of this billing period is spent".
QUOTA_EXCEEDED = 456

STATUS: list[tuple[type[MTError], int]] = [
    (QuotaExceeded, QUOTA_EXCEEDED),
    (StorageQuotaExceeded, QUOTA_EXCEEDED),
    (RateLimited, 429),
    (StillTranslating, 429),
    (Unauthorized, 403),
    (UnknownGlossary, 404),
    (UnknownTranslationMemory, 404),
    (JobNotFound, 404),
    (JobPurged, 404),
    (JobNotFinished, 503),
    (TooLarge, 413),
    (InvalidInput, 400),
    (IdempotencyConflict, 400),
    (Unavailable, 503),
]


def render(code: int, type_: str, message: str, **extra: Any) -> Response:
    """An error as DeepL words it (``type_`` is not part of DeepL's body)."""
    if code == 401:
        code = 403
    headers = {}
    if code in (429, 503):
        headers["Retry-After"] = str(extra.get("retry_after", 1))
    return JSONResponse({"message": message}, status_code=code, headers=headers)


def answer(_: Request, exc: Exception) -> Response:
    """Any exception a DeepL route raises, as DeepL's client expects it."""
    if isinstance(exc, MTError):
        code = next((c for cls, c in STATUS if isinstance(exc, cls)), 500)
        if code == 500:
            log.error("DeepL request failed: %s", exc.message)
        return render(code, exc.code, exc.message, **exc.details)
    if isinstance(exc, RequestValidationError):
        problems = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body", "query"))
            problems.append(f"{loc}: {err.get('msg', 'invalid')}" if loc else str(err.get("msg")))
        return render(400, "invalid_input", "; ".join(problems) or "invalid request")
    if isinstance(exc, HTTPException):
        return render(exc.status_code, "http_error", str(exc.detail))
    if isinstance(exc, redis.RedisError):
        err = Unavailable.because("the job store", exc)
        return render(503, err.code, err.message)
    log.exception("unhandled error on the DeepL surface", exc_info=exc)
    return render(500, "internal", "internal error; see the server log")


Route = route_class(answer)

SURFACE = Surface(
    "deepl",
    ("/v2/", "/v3/"),
    ("deepl-auth-key", "bearer"),
    "an API key is required: send Authorization: DeepL-Auth-Key <key>",
    render,
)
