"""The API process: request limits and deadlines, its metrics, the drop-in surfaces' waits (DeepL,
LibreTranslate, Crowdin).
"""

from __future__ import annotations

from pydantic import Field

from mtfleet.core.settings.base import (
    Component,
)


class ApiSettings(Component):
    """The API process: request limits and deadlines, its metrics, the drop-in surfaces' waits
    (DeepL, LibreTranslate, Crowdin).
    """

    max_request_bytes: int = Field(
        8 * 1024 * 1024, ge=1024, description="Largest request body the API reads."
    )
    body_timeout_s: float = Field(
        60.0,
        gt=0,
        le=3600,
        description="Seconds a client has to send a request's whole body (408 past it).",
    )
    header_timeout_s: float = Field(
        10.0,
        gt=0,
        le=600,
        description="Seconds a client has to send a request's headers once it starts one (or "
        "once it connects); the connection is closed past it.",
    )
    translate_timeout_s: float = Field(
        10.0, gt=0, le=300, description="/v1/translate waits this long before answering 202."
    )
    api_metrics_port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="Also serve the API's Prometheus metrics on this port, without a key, for "
        "scrapers on a private network (the API's own /metrics wants an operator key when "
        "MT_AUTH=required). One API process per port: mtfleet api --workers N>1 refuses it.",
    )
    api_metrics_host: str = Field(
        "127.0.0.1",
        min_length=1,
        description="Address MT_API_METRICS_PORT listens on. Loopback by default, so that "
        "setting the port alone never opens the fleet's internals to every network the host is "
        "on; 0.0.0.0 in a container whose scraper is another container or pod (the metrics "
        "port unpublished).",
    )
    deepl_wait_s: float = Field(
        8.0,
        gt=0,
        le=60,
        description="Seconds POST /v2/translate waits for its job before answering 429 with "
        "Retry-After. The official DeepL clients give an attempt 10 s, then send the same "
        "request again, which joins the same job: keep this under 10.",
    )
    deepl_status_wait_s: float = Field(
        2.0,
        ge=0,
        le=8,
        description="Seconds a DeepL document status check waits for a document expected to be "
        "done by then (the official client sleeps 5 s between checks: a small document is "
        "done at its first). 0: answer at once.",
    )
    libretranslate_wait_s: float = Field(
        60.0,
        gt=0,
        le=600,
        description="Seconds LibreTranslate's /translate and /translate_file wait for their job "
        "(LibreTranslate answers synchronously). Past it /translate is 503 (the same request "
        "sent again joins the job) and /translate_file answers with its download link, which "
        "waits as long again.",
    )
    crowdin_wait_s: float = Field(
        60.0,
        gt=0,
        le=600,
        description="Seconds Crowdin's Custom MT route (POST /crowdin/translate) waits for its "
        "job (Crowdin waits for the translations in the request it sends). Past it the answer "
        "is 503 with Retry-After; the same request sent again joins the job.",
    )
    dropin_retry_window_s: int = Field(
        600,
        ge=10,
        le=7 * 24 * 3600,
        description="Seconds an identical DeepL, LibreTranslate or Crowdin request (the same API "
        "key and the same body) joins the job the first one made instead of making another: "
        "those clients resend a request after a timeout, a 429 or a 5xx without an "
        "Idempotency-Key.",
    )
