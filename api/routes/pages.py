"""The pages for people: the web translator at ``/`` and the operations panel at ``/ops``.

Plain HTML, a little vanilla JavaScript and one stylesheet, shipped in the package
(``api/static/ui/``): no build step, no framework, nothing from a CDN, so they work on a
machine without internet. The pages are public; what they show comes from the ``/v1`` API,
called from the browser with the API key the person signs in with (kept in
``sessionStorage``, sent as ``Authorization: Bearer``; no cookie, so no CSRF to defend).

Every page is served with a strict Content-Security-Policy: scripts, styles and requests only
from this origin, no inline script or style, no frames, no plugins.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.responses import Response

from mtfleet import formats as documents
from mtfleet.core.settings import Settings

ASSETS = Path(__file__).resolve().parents[1] / "static" / "ui"
PREFIX = "/static/ui"

CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}

#: The pages: path -> file in ASSETS.
PAGES = {"/": "translator.html", "/ops": "ops.html"}


class Assets(StaticFiles):
    """The pages' scripts and stylesheet, with the same headers as the pages."""

    def file_response(self, *args: object, **kwargs: object) -> Response:
        response = super().file_response(*args, **kwargs)  # type: ignore[arg-type]
        response.headers.update(HEADERS)
        return response


def render(name: str, settings: Settings) -> str:
    """A page's HTML, told whether the API asks for keys (``MT_AUTH``): with ``off`` the
    pages skip their sign-in; and the formats an upload may be in, from the format registry."""
    html = (ASSETS / name).read_text(encoding="utf-8")
    formats = ", ".join(f"{f.name} ({', '.join(f.extensions)})" for f in documents.formats())
    return html.replace("{{auth}}", settings.keys.auth).replace("{{formats}}", formats)


def install(app: FastAPI, settings: Settings) -> None:
    """Serve the pages and their assets."""
    app.mount(PREFIX, Assets(directory=ASSETS), name="ui")
    for path, name in PAGES.items():
        app.add_api_route(
            path, _page(render(name, settings)), methods=["GET"], include_in_schema=False
        )


def _page(html: str) -> Callable[[], HTMLResponse]:
    def page() -> HTMLResponse:
        return HTMLResponse(html, headers=HEADERS)

    return page
