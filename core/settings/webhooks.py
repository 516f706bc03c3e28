"""Webhooks and event streams: delivery retries, concurrency and stream lifetimes."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from mtfleet.core.settings.base import (
    Component,
)


class WebhookSettings(Component):
    """Webhooks and event streams: delivery retries, concurrency and stream lifetimes."""

    webhook_retry_for_s: int = Field(
        3 * 24 * 3600,
        ge=60,
        description="Seconds a job's webhook is retried after the job became final (at least 24 h "
        "in production: 86400); then it is given up (state failed).",
    )
    webhook_backoff_first_s: float = Field(
        5.0,
        gt=0,
        description="Webhook retries back off with full jitter: the n-th waits a random time up "
        "to this x 2^(n-1) seconds, capped by MT_WEBHOOK_BACKOFF_MAX_S (a longer Retry-After "
        "is honoured).",
    )
    webhook_backoff_max_s: float = Field(
        3600.0, gt=0, description="The longest wait between two attempts of a webhook."
    )
    webhook_timeout_s: float = Field(
        15.0,
        gt=0,
        le=120,
        description="Seconds one webhook attempt may take (connect, send, answer); past it the "
        "attempt failed and is retried.",
    )
    webhook_concurrency: int = Field(
        16, ge=1, le=1024, description="Webhook attempts an API process makes at once."
    )
    webhook_key_concurrency: int = Field(
        4,
        ge=1,
        le=1024,
        description="Webhook attempts of one API key an API process makes at once (at most "
        "MT_WEBHOOK_CONCURRENCY): a key whose receiver is slow holds no more of the slots, and "
        "the keys with events due take turns for the others.",
    )
    webhook_poll_s: float = Field(
        1.0,
        gt=0,
        le=60,
        description="Seconds between an API process's looks at the webhook outbox for events "
        "that are due.",
    )
    webhook_allow_private: bool = Field(
        False,
        description="Allow callback URLs that resolve to private, loopback, link-local or other "
        "non-public addresses (checked at submission and again at each attempt). Tests and "
        "single-network deployments only.",
    )
    webhook_secret: SecretStr | None = Field(
        None,
        description="The whsec_ secret that signs webhooks of jobs made with MT_AUTH=off (with "
        "API keys, each key has its own: mtfleet keys create). Unset: callback_url is refused "
        "with MT_AUTH=off.",
    )
    sse_ping_s: float = Field(
        15.0,
        gt=0,
        le=300,
        description="Seconds between keep-alive comments on GET /v1/jobs/{id}/events.",
    )
    sse_progress_s: float = Field(
        0.5,
        ge=0.05,
        le=60,
        description="Shortest time between two progress events of a job's event stream (the "
        "final event is sent at once).",
    )
    sse_max_s: float = Field(
        3600.0,
        gt=0,
        description="Seconds an event stream stays open; then it ends and a client reconnects "
        "with Last-Event-ID.",
    )
    max_waits_per_key: int = Field(
        100,
        ge=1,
        le=100_000,
        description="Event streams (GET /v1/jobs/{id}/events) and ?wait= requests one API key "
        "may hold open at once per API process; past it 429 with Retry-After, so one tenant's "
        "streams never take the connections another's requests need.",
    )

    @field_validator("webhook_secret")
    @classmethod
    def _whsec(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None:
            from mtfleet.core.apikeys import check_webhook_secret

            check_webhook_secret(v.get_secret_value())
        return v
