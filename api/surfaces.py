"""The API's surfaces: mtfleet's own ``/v1`` and the drop-in ones for clients that already
speak another service's API (DeepL v2: :mod:`mtfleet.api.deepl`; LibreTranslate:
:mod:`mtfleet.api.libretranslate`).

A surface owns some paths and says two things the request guard (:mod:`mtfleet.api.guard`)
needs before any route runs: how its callers send their API key in the headers (checked before
a byte of the body is read; none when the key travels in the body, as LibreTranslate's does),
and how it words an error (each client parses its own shape and status codes). Every surface's
status for each error is in one table (:data:`mtfleet.api.errors.STATUS`); :func:`answer` turns
whatever a route raises into it, for a drop-in surface's routes through :func:`route_class`,
for ``/v1`` (and any path no route owns) through the app's handlers (:func:`install`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import redis
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

from mtfleet.api import errors
from mtfleet.core.errors import MTError, Unavailable

log = logging.getLogger(__name__)


class Render(Protocol):
    """An error answer: status, type, message and extra fields (``retry_after``...)."""

    def __call__(self, code: int, type_: str, message: str, **extra: Any) -> Response: ...


@dataclass(frozen=True)
class Surface:
    name: str
    prefixes: tuple[str, ...]
    #: ``Authorization`` schemes (lower case) the guard checks before the body; () : none
    schemes: tuple[str, ...]
    #: what a request without a key is told
    missing_key: str
    render: Render
    #: the status of a request whose parameters FastAPI refuses, and what it is told (None:
    #: each problem it found)
    invalid_status: int = 422
    invalid_message: str | None = None

    def owns(self, path: str) -> bool:
        return self.claim(path) > 0

    def claim(self, path: str) -> int:
        """The length of the longest of this surface's prefixes that ``path`` is under (0:
        none): a path two surfaces own is the more specific one's."""
        return max(
            (len(p) for p in self.prefixes if path.startswith(p) or path == p.rstrip("/")),
            default=0,
        )


V1 = Surface(
    "v1",
    ("/v1/",),
    ("bearer",),
    "an API key is required: send Authorization: Bearer <key>",
    errors.error_response,
)


def surface_for(surfaces: Sequence[Surface], path: str) -> Surface | None:
    """The surface owning ``path`` by its most specific prefix (DeepL's quality evaluations
    live under ``/v1/``, which is otherwise mtfleet's own)."""
    best = max(surfaces, key=lambda s: s.claim(path), default=None)
    return best if best is not None and best.claim(path) else None


def answer(surface: Surface, exc: Exception) -> Response:
    """Whatever a route of ``surface`` raised (the error tree, bad parameters, a body that did
    not parse, Redis down, anything unexpected), as that surface's clients expect it."""
    render = surface.render
    if isinstance(exc, MTError):
        code = errors.status_for(exc, surface.name)
        if code == 500:
            log.error("%s request failed: %s", surface.name, exc.message)
        return render(code, exc.code, exc.message, **exc.details)
    if isinstance(exc, RequestValidationError):
        why = surface.invalid_message or errors.problems(exc)
        return render(surface.invalid_status, "invalid_input", why)
    if isinstance(exc, StarletteHTTPException):
        type_ = errors.HTTP_TYPES.get(exc.status_code, "http_error")
        return render(exc.status_code, type_, errors.http_message(exc))
    if isinstance(exc, redis.RedisError):
        return answer(surface, Unavailable.because("the job store", exc))
    log.exception("unhandled error on the %s surface", surface.name, exc_info=exc)
    return render(500, "internal", "internal error; see the server log")


def install(app: FastAPI, surface: Surface) -> None:
    """``surface``'s answers as the app's handlers: ``/v1``'s, and any path no route owns (the
    drop-in surfaces answer on their own routes: :func:`route_class`)."""

    async def handle(_: Request, exc: Exception) -> Response:
        return answer(surface, exc)

    for kind in (MTError, RequestValidationError, StarletteHTTPException, redis.RedisError):
        app.add_exception_handler(kind, handle)
    app.add_exception_handler(Exception, handle)  # the server's own errors (500)


def route_class(surface: Surface, headers: Mapping[str, str] | None = None) -> type[APIRoute]:
    """An APIRoute whose every exception (the error tree, bad parameters, failed body parsing,
    anything unexpected) becomes ``surface``'s :func:`answer`,
    scoped to its router's routes (FastAPI's app-wide handlers are ``/v1``'s). ``headers``
    go on every answer of those routes (LibreTranslate's CORS headers)."""
    extra = dict(headers or {})

    class _Route(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def handle(request: Request) -> Response:
                try:
                    response = await handler(request)
                except Exception as exc:  # noqa: BLE001 - mapped to the surface's answer
                    response = answer(surface, exc)
                response.headers.update(extra)
                return response

            return handle

    return _Route
