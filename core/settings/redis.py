"""Redis: job state, the broker and the phrase cache."""

from __future__ import annotations

from pydantic import Field, field_validator

from mtfleet.core.redis_urls import check_url
from mtfleet.core.settings.base import (
    Component,
)


class RedisSettings(Component):
    """Redis: job state, the broker and the phrase cache.

    TLS options live in a rediss:// (or sentinels://) URL's query (ssl_ca_certs, ssl_certfile,
    ssl_keyfile, ssl_cert_reqs, ssl_check_hostname), Sentinel ones in a sentinel:// URL's:
    checked here, applied by :mod:`mtfleet.core.redis_conn`.
    """

    redis_url: str = Field(
        "redis://127.0.0.1:6379/0",
        description="Job state and Celery broker (durable: AOF, noeviction). With Redis "
        "Sentinel: sentinel://[USER:PASSWORD@]HOST:26379,HOST2:26379/0?master=NAME (add "
        "sentinel_password=... when the Sentinels require one; sentinels:// for TLS, with the "
        "ssl_* options of rediss://).",
    )
    cache_url: str | None = Field(
        None, description="Phrase cache (may be an allkeys-lru instance). Default: MT_REDIS_URL."
    )
    redis_min_replicas: int = Field(
        0,
        ge=0,
        le=16,
        description="Replicas that must hold a new job before the API accepts it: the job is "
        "written, then WAIT-ed for (Redis WAIT); a job fewer replicas confirm within "
        "MT_REDIS_REPLICA_TIMEOUT_MS is refused with 503 not_replicated. With Sentinel, 1 "
        "means a failover to a replica cannot lose an accepted job (docs/reliability.md). 0: "
        "no wait (asynchronous replication).",
    )
    redis_replica_timeout_ms: int = Field(
        1000,
        ge=1,
        le=60_000,
        description="Milliseconds the API waits for MT_REDIS_MIN_REPLICAS to confirm a new job.",
    )

    @field_validator("redis_url", "cache_url")
    @classmethod
    def _redis_tls(cls, v: str | None) -> str | None:
        if v is not None:
            check_url(v)  # raises ValueError on a bad TLS or Sentinel option
        return v

    @field_validator("redis_url", "cache_url")
    @classmethod
    def _redis_scheme(cls, v: str | None) -> str | None:
        schemes = ("redis://", "rediss://", "unix://", "sentinel://", "sentinels://")
        if v is not None and not v.startswith(schemes):
            raise ValueError(
                "must be a redis://, rediss://, unix://, sentinel:// or sentinels:// URL"
            )
        return v

    @property
    def effective_cache_url(self) -> str:
        """The phrase cache's Redis (``MT_CACHE_URL``, else ``MT_REDIS_URL``)."""
        return self.cache_url or self.redis_url
