"""A worker's scheduler: how far it pulls ahead, how it keeps interactive work fast."""

from __future__ import annotations

from pydantic import Field

from mtfleet.core.settings.base import (
    Component,
)


class SchedulerSettings(Component):
    """A worker's scheduler: how much it pulls ahead and how it keeps interactive work fast beside
    bulk.
    """

    interactive_prefetch: int = Field(
        4,
        ge=0,
        le=64,
        description="Interactive chunks a worker serving both lanes takes beside its bulk "
        "window, on their own consumer and threads (0: both lanes share the window).",
    )
    interactive_slowdown: float = Field(
        1.3,
        ge=1.0,
        description="How much slower per generated token interactive requests may run in a "
        "streaming engine (vLLM) under bulk load; bulk in flight is cut to hold it.",
    )
    pull_ahead_s: float = Field(
        2.0, gt=0, description="Seconds of measured throughput a worker pulls ahead."
    )
    interactive_latency_s: float = Field(
        0.5,
        gt=0,
        description="Interactive latency target: a batch-engine call is sized to last at most "
        "half of it.",
    )
