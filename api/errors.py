"""The error tree as HTTP statuses, for every surface, in one place: :data:`STATUS` gives each
error class its status on each surface (``/v1``, DeepL, LibreTranslate, Crowdin);
:func:`mtfleet.api.surfaces.answer` turns whatever a route raises into that status, worded by
the surface's renderer (``/v1``'s :func:`error_response` here: ``{"error": {"type",
"message", ...}}``; DeepL's and LibreTranslate's beside their routes). Nothing a client sends
can produce a 5xx."""

from __future__ import annotations

from typing import Any, NamedTuple

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from mtfleet.core.errors import (
    Forbidden,
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
from mtfleet.core.schemas import ErrorPublic
from mtfleet.core.tm import UnknownTranslationMemory
from mtfleet.formats.sniffing import UnsupportedFormat

#: DeepL's status for "the quota of this billing period is spent" (its clients do not retry it).
QUOTA_EXCEEDED = 456


class Status(NamedTuple):
    """An error class's status on each surface (the fields are the surfaces' names)."""

    v1: int
    #: DeepL's clients: 403 for a key (never 401: the official client reads it as unexpected),
    #: 429 is retried (a still-running translation too: the resend joins its job), 503 is
    #: retried by the document download, 456 is not
    deepl: int
    #: LibreTranslate's: 400 for any bad request, 403 for a key, 503 while still translating
    libretranslate: int
    #: Crowdin's Custom MT (it reads the error's message, whatever the status): ``/v1``'s
    #: (``None``), but 503 while still translating (its resend joins the job)
    crowdin: int | None = None


#: The first class an error is an instance of gives its status (subclasses first); an error
#: of none of them is the server's (500).
STATUS: list[tuple[type[MTError], Status]] = [
    (UnsupportedFormat, Status(415, 400, 400)),
    (UnknownGlossary, Status(422, 404, 400)),
    (UnknownTranslationMemory, Status(422, 404, 400)),
    (TooLarge, Status(422, 413, 400)),
    (InvalidInput, Status(422, 400, 400)),
    (IdempotencyConflict, Status(409, 400, 400)),
    (JobNotFound, Status(404, 404, 404)),
    (JobPurged, Status(410, 404, 404)),
    (StillTranslating, Status(409, 429, 503, 503)),
    (JobNotFinished, Status(409, 503, 503, 503)),
    (Unavailable, Status(503, 503, 503)),
    (Unauthorized, Status(401, 403, 403)),
    (Forbidden, Status(403, 403, 403)),
    (QuotaExceeded, Status(429, QUOTA_EXCEEDED, 429)),
    (StorageQuotaExceeded, Status(429, QUOTA_EXCEEDED, 429)),
    (RateLimited, Status(429, 429, 429)),
]

#: The error type of an HTTP status FastAPI or Starlette raises (unknown path, bad body...).
HTTP_TYPES = {
    400: "invalid_input",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def documented(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of a route's OpenAPI entry: these error statuses, each the error body."""
    return {code: {"model": ErrorPublic} for code in codes}


def status_for(exc: MTError, surface: str) -> int:
    """``exc``'s status on the surface named ``surface`` (a :class:`Status` field)."""
    for cls, status in STATUS:
        if isinstance(exc, cls):
            code = getattr(status, surface)
            return status.v1 if code is None else int(code)
    return 500


def error_response(code: int, type_: str, message: str, **extra: object) -> JSONResponse:
    """An error as ``/v1`` words it."""
    headers: dict[str, str] | None = None
    if code in (429, 503):
        headers = {"Retry-After": str(extra.get("retry_after", 1))}
    elif code == 401:
        headers = {"WWW-Authenticate": 'Bearer realm="mtfleet"'}
    return JSONResponse(
        {"error": {"type": type_, "message": message, **extra}},
        status_code=code,
        headers=headers,
    )


def problems(exc: RequestValidationError) -> str:
    """What FastAPI found wrong with a request's parameters, one ``where: what`` each."""
    found = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body", "query"))
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        found.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(found) or "invalid request"


def http_message(exc: StarletteHTTPException) -> str:
    """What went wrong, for an HTTP error FastAPI or Starlette raised."""
    cause = exc.__cause__  # FastAPI's "error parsing the body" wraps what went wrong
    if isinstance(cause, UnicodeDecodeError):
        bad = cause.object[cause.start : cause.start + 1].hex()
        return f"the request body is not valid UTF-8 (byte 0x{bad} at offset {cause.start})"
    return str(exc.detail)
