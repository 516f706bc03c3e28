"""``/docs``: Swagger UI for the API, served from the package itself.

FastAPI's default page loads Swagger UI from a CDN, which a self-hosted install without internet
shows as a blank page. The assets (``swagger-ui-dist`` from npm, Apache-2.0; its version in
``api/static/swagger-ui/VERSION``) ship in the package under ``/static/swagger-ui``. ReDoc, which
would need another bundle, is not served.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = Path(__file__).resolve().parents[1] / "static" / "swagger-ui"
PREFIX = "/static/swagger-ui"


def install(app: FastAPI) -> None:
    """Serve ``/docs`` and its assets (the app is made with ``docs_url=None``)."""
    app.mount(PREFIX, StaticFiles(directory=ASSETS), name="swagger-ui")

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=f"{PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{PREFIX}/swagger-ui.css",
            swagger_favicon_url=f"{PREFIX}/favicon-32x32.png",
        )
