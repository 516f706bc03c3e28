"""Jobs: their size limits, how long results, cached phrases and idempotency keys are kept."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mtfleet.core.settings.base import (
    Component,
)


class JobSettings(Component):
    """Jobs: their size limits, how long results, cached phrases and idempotency keys are kept."""

    max_segments_per_job: int = Field(10_000, ge=1, description="Segments one job may carry.")
    max_segment_chars: int = Field(5_000, ge=1, description="Characters one segment may carry.")
    result_ttl_s: int = Field(
        7 * 24 * 3600, ge=60, description="Seconds job state and results are kept."
    )
    cache_ttl_s: int = Field(30 * 24 * 3600, ge=60, description="Phrase-cache entry lifetime.")
    cache_scope: Literal["key", "shared"] = Field(
        "key",
        description="key: each API key has its own phrase-cache entries (no tenant learns what "
        "another translated); shared: keys share entries (more hits, and a fast answer tells a "
        "key that somebody translated exactly that text before). MT_AUTH=off: always shared.",
    )
    idempotency_ttl_s: int = Field(24 * 3600, ge=60, description="Idempotency-Key lifetime.")
