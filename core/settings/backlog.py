"""Routing and the backlog: which pool takes a pair, how work is chunked, queued and released to the
broker.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from mtfleet.core.settings.base import (
    Component,
    parse_mapping,
    route_pattern,
)


class BacklogSettings(Component):
    """Routing and the backlog: which pool takes a pair, how work is chunked, queued and released to
    the broker.
    """

    routes: Annotated[dict[str, str], NoDecode] = Field(
        default_factory=dict,
        description="Which pool a pair goes to where several serve it, pattern=pool "
        "(comma-separated, or a JSON object): en-zh=hunyuan,en-*=nllb,*=apertium. The most "
        "specific pattern whose pool serves the pair wins (src-tgt, then src-*, then *-tgt, then "
        "*); without one, a pool with a live worker, then the first by name. A job that names "
        "its pool skips this.",
    )
    chunk_size: int = Field(
        128,
        ge=1,
        le=1024,
        description="Distinct texts per broker message. Each message costs the fleet about "
        "2.5 ms of CPU (publish, receive, task events, acks, three Redis scripts: measured with "
        "make bench), so larger chunks cost less per segment; a chunk that kills its worker "
        "every time is dead-lettered whole, so smaller ones lose less to a poison segment.",
    )
    interactive_max_segments: int = Field(
        50,
        ge=1,
        description="Jobs up to this many segments default to the interactive lane, and the "
        "most one interactive job may carry: a larger one runs on the bulk lane whatever lane "
        "it asks for (POST /v1/jobs, /v1/translate, /v1/documents and the drop-ins alike).",
    )
    max_queue_interactive: int = Field(
        2_000,
        ge=1,
        description="Chunks waiting in the interactive queue at which new interactive work "
        "gets 429 + Retry-After (backpressure; cached answers still pass).",
    )
    max_queue_bulk: int = Field(
        200_000,
        ge=1,
        description="Chunks waiting in the bulk queue at which new bulk work gets 429 + "
        "Retry-After.",
    )
    release_ahead: int = Field(
        32,
        ge=1,
        le=100_000,
        description="Chunks a pool lane's broker queue holds at most; the rest wait in the "
        "fleet's backlog, where API keys take turns (docs/reliability.md, fair shares). Enough "
        "to keep every worker's pull window fed between releases; more only delays a new "
        "key's turn.",
    )
    release_interval_s: float = Field(
        0.25,
        gt=0,
        le=60,
        description="Seconds between a worker's releases from the backlog when no chunk ends "
        "(one runs after every chunk anyway).",
    )

    @field_validator("routes", mode="before")
    @classmethod
    def _parse_routes(cls, v: object) -> object:
        from mtfleet.core import keys

        v = parse_mapping(v, "MT_ROUTES")
        if not isinstance(v, dict):
            return v
        out: dict[str, str] = {}
        for pattern, pool in v.items():
            if not isinstance(pool, str) or not keys.is_pool(pool):
                raise ValueError(f"route {pattern!r}: {pool!r} is not a pool name")
            out[route_pattern(str(pattern))] = pool
        return out
