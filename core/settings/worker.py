"""A worker: the engine it runs, the pool and lanes it serves, its leases, deliveries and checks."""

from __future__ import annotations

import json
import math
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import NoDecode

from mtfleet.core.settings.base import (
    Component,
    default_pool,
    parse_pair,
)
from mtfleet.core.settings.engine import _PLUGIN, ENGINES

#: Share of MT_VISIBILITY_TIMEOUT_S a chunk may hold its broker lease (its time budget,
#: workers/chunk.py), and share one engine call may take (the deadlines' ceiling: half the
#: budget, so a segment past its deadline fails alone before its chunk's budget runs out).
CHUNK_BUDGET_SHARE = 0.5
ENGINE_DEADLINE_SHARE = CHUNK_BUDGET_SHARE / 2


class WorkerSettings(Component):
    """A worker: the engine it runs, the pool and lanes it serves, its leases, deliveries and
    checks.
    """

    engine: str = Field(
        "apertium",
        description="Engine a worker runs: vllm, openai (an OpenAI-compatible server), "
        "transformers, apertium, or a plugin as module:Class (a workers.engines.Engine subclass "
        "built with the settings). docs/engines.md says which for which model and machine.",
    )
    pool: str | None = Field(
        None,
        description="The pool a worker joins (mtfleet worker --pool): it consumes that pool's "
        "queues, and the API routes a pair to a pool that serves it (MT_ROUTES). Lowercase "
        "letters, digits, - and _. Default: the engine's name (vllm, apertium; a plugin's class "
        "name, lowercased).",
    )
    pairs: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Language pairs a worker offers, comma-separated (en-es,es-en); a pair its "
        "engine cannot translate is refused at start-up. Default: every pair the engine "
        "translates.",
    )
    lanes: Annotated[list[Literal["interactive", "bulk"]], NoDecode] = Field(
        default_factory=lambda: ["interactive", "bulk"],  # type: ignore[arg-type]
        description="Lanes a worker consumes.",
    )
    worker_concurrency: int = Field(
        32,
        ge=1,
        le=512,
        description="Most chunks a worker holds at once (threads); the adaptive pull window "
        "stays at or below it.",
    )
    process_per_lane: bool | Literal["auto"] = Field(
        "auto",
        description="mtfleet worker: run each lane in a Celery worker process of its own, the "
        "bulk one at the lowest CPU priority, so the interactive lane's Python never waits "
        "behind the bulk lane's (its own GIL, the CPU first). auto: on for a worker without "
        "--gpus serving both lanes whose engine can run once per lane on one host (apertium; a "
        "plugin whose class sets lane_processes), off otherwise. true is refused with --gpus, "
        "where each process would load the model again.",
    )
    worker_remote_control: bool = Field(
        True,
        description="Workers answer Celery remote control (ping, inspect: Flower's worker "
        "pages); false turns the pidbox off.",
    )
    heartbeat_s: float = Field(5.0, gt=0, description="Worker registry heartbeat period.")
    max_deliveries: int = Field(
        5, ge=1, description="Deliveries of one chunk before it goes to the dead-letter list."
    )
    dead_letter_max: int = Field(
        10_000,
        ge=1,
        description="Entries the dead-letter list keeps at most (the newest; `mtfleet "
        "dead-letters` lists, retries and purges them).",
    )
    dead_letter_ttl_s: int = Field(
        7 * 24 * 3600,
        ge=60,
        description="Seconds a dead-letter entry is kept after it was listed. A chunk can be "
        "retried only while its job is kept (MT_RESULT_TTL_S), so longer than that only "
        "keeps its reason.",
    )
    visibility_timeout_s: int = Field(
        3600, ge=10, description="Seconds before an unacked chunk is redelivered (broker)."
    )
    restore_interval_s: int = Field(
        10,
        ge=1,
        description="Seconds between a worker's sweeps of its own chunks whose visibility "
        "timeout passed (a live worker that held a chunk too long). A dead worker's chunks do "
        "not wait for the timeout: they are back once its heartbeat expires.",
    )
    reconcile_interval_s: int = Field(
        30,
        ge=1,
        description="Seconds between sweeps for chunks the broker lost (in neither a queue "
        "nor a worker); one is re-sent after missing for max(2 x this, 5 s).",
    )
    worker_metrics_port: int | None = Field(
        None, ge=1, le=65535, description="Serve worker Prometheus metrics on this port."
    )
    engine_deadline_factor: float = Field(
        10.0,
        ge=1,
        description="An engine call may take this many times what the engine should need (the "
        "cost model's estimate for batch engines, the measured seconds per token for streaming "
        "ones) before it is interrupted or aborted and its segment fails alone.",
    )
    engine_deadline_floor_s: float = Field(
        30.0,
        gt=0,
        description="Shortest engine deadline, whatever the estimate. At most a quarter of "
        "MT_VISIBILITY_TIMEOUT_S (a chunk's own budget is half of it): a larger value is "
        "refused at start-up, and the default is capped there.",
    )
    check_length_ratio: float = Field(
        3.0,
        gt=1,
        le=100,
        description="Output check: warn when a translation (source of 20+ characters) is more "
        "than this many times longer or shorter than expected.",
    )
    check_language: bool = Field(
        True,
        description="Output check: warn when a translation is confidently in another language "
        "than the target (lingua; false: workers never load the detector).",
    )

    @field_validator("engine")
    @classmethod
    def _engine_name(cls, v: str) -> str:
        if v not in ENGINES and not _PLUGIN.match(v):
            raise ValueError(f"must be one of {', '.join(sorted(ENGINES))} or module:Class")
        return v

    @field_validator("pool")
    @classmethod
    def _pool_name(cls, v: str | None) -> str | None:
        from mtfleet.core import keys

        if v is not None and not keys.is_pool(v):
            raise ValueError(
                "a pool name is 1-32 lowercase letters, digits, - or _, starting with a letter "
                "or digit"
            )
        return v

    @field_validator("pairs", mode="before")
    @classmethod
    def _split_pairs(cls, v: object) -> object:
        if isinstance(v, str):
            v = [p for p in v.split(",") if p.strip()]
        if isinstance(v, list):
            return ["{}:{}".format(*parse_pair(str(p))) for p in v]
        return v

    @field_validator("lanes", mode="before")
    @classmethod
    def _split_lanes(cls, v: object) -> object:
        if isinstance(v, str):
            if v.strip().startswith("["):
                return json.loads(v)
            return [p.strip() for p in v.split(",") if p.strip()]
        return v

    @model_validator(mode="after")
    def _check(self) -> WorkerSettings:
        if not self.lanes:
            raise ValueError("lanes must name at least one of: interactive, bulk")
        ceiling = self.visibility_timeout_s * ENGINE_DEADLINE_SHARE
        if (
            "engine_deadline_floor_s" in self.model_fields_set
            and self.engine_deadline_floor_s > ceiling
        ):
            floor = self.engine_deadline_floor_s
            raise ValueError(
                f"MT_ENGINE_DEADLINE_FLOOR_S={floor:g} does not fit "
                f"MT_VISIBILITY_TIMEOUT_S={self.visibility_timeout_s}: one engine call may take "
                f"at most a quarter of it ({ceiling:g}s; a chunk holds its lease for half), so no "
                f"call could be given that floor; set MT_VISIBILITY_TIMEOUT_S to at least "
                f"{math.ceil(floor / ENGINE_DEADLINE_SHARE)} or the floor to at most {ceiling:g}"
            )
        return self

    @property
    def offered_pairs(self) -> list[tuple[str, str]]:
        """MT_PAIRS as (source, target) pairs (empty: every pair the engine translates)."""
        return [(a, b) for a, _, b in (p.partition(":") for p in self.pairs)]

    @property
    def pool_name(self) -> str:
        """The pool this worker serves (``MT_POOL``, else the engine's name)."""
        return self.pool or default_pool(self.engine)
