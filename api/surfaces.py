"""The API's surfaces: mtfleet's own ``/v1`` and the drop-in ones for clients that already
speak another service's API (DeepL v2: :mod:`mtfleet.api.deepl`; LibreTranslate:
:mod:`mtfleet.api.libretranslate`).

A surface owns some paths and says two things the request guard (:mod:`mtfleet.api.guard`)
needs before any route runs: how its callers send their API key in the headers (checked before
a byte of the body is read; none when the key travels in the body, as LibreTranslate's does),
and how it words an error (each client parses its own shape and status codes). Inside the
routes, each drop-in surface maps the error tree in one place of its own
(:class:`SurfaceRoute`); ``/v1`` keeps the app's handlers (:mod:`mtfleet.api.errors`).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fastapi import Request, Response
from fastapi.routing import APIRoute

from mtfleet.api import errors


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

    def owns(self, path: str) -> bool:
        return any(path.startswith(p) or path == p.rstrip("/") for p in self.prefixes)


V1 = Surface(
    "mtfleet",
    ("/v1/",),
    ("bearer",),
    "an API key is required: send Authorization: Bearer <key>",
    errors.error_response,
)


def surface_for(surfaces: Sequence[Surface], path: str) -> Surface | None:
    return next((s for s in surfaces if s.owns(path)), None)


def route_class(
    answer: Callable[[Request, Exception], Response], headers: Mapping[str, str] | None = None
) -> type[APIRoute]:
    """An APIRoute whose every exception (the error tree, bad parameters, failed body parsing,
    anything unexpected) becomes ``answer(request, exc)``: a surface's one error mapping,
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
                    response = answer(request, exc)
                response.headers.update(extra)
                return response

            return handle

    return _Route
