"""API keys: authentication and each key's default share of the fleet."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from mtfleet.core.settings.base import (
    Component,
)


class KeySettings(Component):
    """API keys: authentication and each key's default share of the fleet."""

    auth: Literal["required", "off"] = Field(
        "required",
        description="required: every /v1 request needs an API key (Bearer); off: anything is "
        "allowed and jobs have no owner (local development only).",
    )
    auth_failures_per_minute: int = Field(
        30,
        ge=1,
        description="Requests with an invalid API key one client address may send per minute "
        "(per API process, on every surface); past it that address's requests with a bad key "
        "are 429 with Retry-After for the rest of the minute. A valid key is served whatever "
        "its address sent. Behind a proxy, set MT_TRUSTED_PROXIES so the address is the "
        "client's, not the proxy's.",
    )
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Addresses or networks of the reverse proxies in front of the API, "
        "comma-separated (127.0.0.1,10.0.0.0/8; mtfleet api --trusted-proxies): from them, and "
        "only them, X-Forwarded-For names the client (for the bad-key throttle) and "
        "X-Forwarded-Proto the scheme (in links the API answers with). Default: none, so "
        "X-Forwarded-* from anyone is ignored.",
    )
    libretranslate_key_in_query: bool = Field(
        False,
        description="Take LibreTranslate's api_key from the query string too (?api_key=, where "
        "proxy logs and Referer headers keep it). Default: only from the body (JSON or form); a "
        "key in the query is 400, saying where to put it.",
    )
    auth_cache_s: float = Field(
        5.0,
        ge=0,
        le=300,
        description="Seconds an API process trusts an API key it has read from Redis; a revoke "
        "takes effect within this (0: read Redis on every request).",
    )
    key_rate: float = Field(
        10.0,
        gt=0,
        le=1_000_000,
        description="Requests per second (bursts of a second's worth) of an API key made "
        "without --rate, keys made before this setting included; past it 429 with Retry-After. "
        "mtfleet keys create --rate N gives a key its own, --rate none no limit.",
    )
    key_interactive_segments: int = Field(
        200,
        ge=1,
        description="Interactive segments one API key may have queued or being translated at "
        "once, fleet-wide (its interactive jobs' segments not yet done); past it an "
        "interactive request is 429 with Retry-After, so one tenant cannot take the "
        "interactive lane from the others. A key holding none may always send one job.",
    )
    key_interactive_jobs: int = Field(
        16,
        ge=1,
        description="Interactive jobs one API key may have queued or being translated at once, "
        "fleet-wide; past it an interactive request is 429 with Retry-After (send large work "
        "as a bulk job).",
    )
    key_detections: int = Field(
        1,
        ge=1,
        le=64,
        description="Language detections (source_lang auto) one API key may have running at "
        "once per API process (one of 10,000 texts takes seconds of the API's CPU); four times "
        "as many more of its requests wait for them, the next are 429 with Retry-After, so one "
        "tenant's detections never slow another's requests. A key whose daily quota is spent "
        "is refused before its texts are detected.",
    )
    key_storage_mb: int = Field(
        1024,
        ge=1,
        description="MiB an API key may keep in Redis (its jobs' texts, results and documents, "
        "and its glossaries) unless the key sets its own (mtfleet keys create --storage-mb); "
        "past it a request that stores more is 429 storage_quota_exceeded.",
    )

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _parse_proxies(cls, v: object) -> object:
        if isinstance(v, str):
            v = [p.strip() for p in v.split(",") if p.strip()]
        if isinstance(v, list):
            out = []
            for p in v:
                try:
                    out.append(str(ipaddress.ip_network(str(p).strip(), strict=False)))
                except ValueError:
                    raise ValueError(
                        f"trusted proxy {p!r}: an IP address or network (10.0.0.0/8) is needed"
                    ) from None
            return out
        return v
