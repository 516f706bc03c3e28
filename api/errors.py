"""Map the error tree to HTTP answers, in one place. Every error body is
``{"error": {"type", "message", ...}}``; nothing a client sends can produce a 5xx."""

from __future__ import annotations

import logging
from typing import Any

import redis
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from mtfleet.core.documents.sniffing import UnsupportedFormat
from mtfleet.core.errors import (
    Forbidden,
    IdempotencyConflict,
    InvalidInput,
    JobNotFinished,
    JobNotFound,
    JobPurged,
    MTError,
    RateLimited,
    Unauthorized,
    Unavailable,
)
from mtfleet.core.schemas import ErrorPublic

log = logging.getLogger(__name__)

STATUS: list[tuple[type[MTError], int]] = [
    (UnsupportedFormat, 415),
    (InvalidInput, 422),
    (IdempotencyConflict, 409),
    (JobNotFound, 404),
    (JobPurged, 410),
    (JobNotFinished, 409),
    (Unavailable, 503),
    (Unauthorized, 401),
    (Forbidden, 403),
    (RateLimited, 429),
]


def documented(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of a route's OpenAPI entry: these error statuses, each the error body."""
    return {code: {"model": ErrorPublic} for code in codes}


def status_for(exc: MTError) -> int:
    for cls, code in STATUS:
        if isinstance(exc, cls):
            return code
    return 500


HTTP_TYPES = {
    400: "invalid_input",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def error_response(code: int, type_: str, message: str, **extra: object) -> JSONResponse:
    headers: dict[str, str] | None = None
    if code == 503:
        headers = {"Retry-After": "1"}
    elif code == 429:
        headers = {"Retry-After": str(extra.get("retry_after", 1))}
    elif code == 401:
        headers = {"WWW-Authenticate": 'Bearer realm="mtfleet"'}
    return JSONResponse(
        {"error": {"type": type_, "message": message, **extra}},
        status_code=code,
        headers=headers,
    )


def install(app: FastAPI) -> None:
    @app.exception_handler(MTError)
    async def _mt(_: Request, exc: MTError) -> JSONResponse:
        body = exc.as_dict()
        return error_response(status_for(exc), body.pop("type"), body.pop("message"), **body)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
            problems.append(f"{loc}: {msg}" if loc else msg)
        return error_response(422, "invalid_input", "; ".join(problems) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        type_ = HTTP_TYPES.get(exc.status_code, "http_error")
        cause = exc.__cause__  # FastAPI's "error parsing the body" wraps what went wrong
        if isinstance(cause, UnicodeDecodeError):
            bad = cause.object[cause.start : cause.start + 1].hex()
            message = f"the request body is not valid UTF-8 (byte 0x{bad} at offset {cause.start})"
            return error_response(exc.status_code, type_, message)
        return error_response(exc.status_code, type_, str(exc.detail))

    @app.exception_handler(redis.RedisError)
    async def _redis(_: Request, exc: redis.RedisError) -> JSONResponse:
        err = Unavailable.because("the job store", exc)
        return error_response(503, err.code, err.message)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return error_response(500, "internal", "internal error; see the server log")
