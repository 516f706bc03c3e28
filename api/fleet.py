"""The fleet as Redis records it, read in one place for ``/metrics`` and ``/v1/ops``.

Figures are kept per (pool, lane): each has its backlog and its broker queue
(:func:`mtfleet.core.queues.read_queues`).
Every pool the registry knows has its rows, a pool whose workers are gone included (its work
waits there and nobody takes it: ``workers`` 0).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import redis

from mtfleet.core import keys
from mtfleet.core.queues import QueueReading, read_queues
from mtfleet.core.registry import Registry, WorkerInfo

#: Dead-letter entries /v1/ops shows (the newest first; the list keeps them all).
DEAD_LETTERS_SHOWN = 20


@dataclass
class LaneRow:
    pool: str
    lane: str
    queue: str
    queued: int
    oldest_queued_s: float | None
    in_flight: int
    oldest_in_flight_s: float | None
    workers: int  # live, healthy workers of the pool that consume the lane
    segments_per_s: float  # what those workers finished, per their last heartbeats
    waiting_by_key: dict[str, int] = field(default_factory=dict)  # backlog chunks per API key


@dataclass
class FleetReading:
    at: float
    workers: list[WorkerInfo]
    queues: dict[str, QueueReading]
    held: dict[str, tuple[int, float]]  # queue -> (chunks held by workers, oldest's age)
    dead_letters: int
    pools: list[str] = field(default_factory=list)  # every pool the registry knows
    lanes: list[LaneRow] = field(default_factory=list)
    latest_dead: list[dict[str, Any]] = field(default_factory=list)


def lane_rows(
    pools: list[str],
    workers: list[WorkerInfo],
    queues: dict[str, QueueReading],
    held: dict[str, tuple[int, float]],
) -> list[LaneRow]:
    """One row per (pool, lane) of ``pools``."""
    rows = []
    for pool in pools:
        for lane in keys.LANES:
            members = [w for w in workers if lane in w.lanes and w.pool_name == pool]
            q = keys.queue(pool, lane)
            reading = queues.get(q) or QueueReading(q, 0, None)
            n_held, oldest_held = held.get(q, (0, 0.0))
            rows.append(
                LaneRow(
                    pool=pool,
                    lane=lane,
                    queue=q,
                    queued=reading.queued,
                    oldest_queued_s=reading.oldest_queued_s,
                    in_flight=n_held,
                    oldest_in_flight_s=round(oldest_held, 3) if n_held else None,
                    workers=sum(1 for w in members if w.healthy),
                    segments_per_s=round(
                        sum(w.stats.segments_per_s.get(lane, 0.0) for w in members if w.stats), 3
                    ),
                    waiting_by_key=dict(reading.by_key),
                )
            )
    return rows


def read_fleet(r: redis.Redis, *, dead_letters: int = 0, now: float | None = None) -> FleetReading:
    """Workers, queues, held chunks and the dead-letter list (its length, and its newest
    ``dead_letters`` entries) as they are now."""
    now = time.time() if now is None else now
    registry = Registry(r)
    workers = registry.live_workers()
    pools = sorted(set(registry.pools()) | {w.pool_name for w in workers})
    queues = read_queues(r, [(p, lane) for p in pools for lane in keys.LANES], now)
    held = registry.held_by_queue(now)
    pipe = r.pipeline(transaction=False)
    pipe.llen(keys.DEAD_LETTER)
    if dead_letters:
        pipe.lrange(keys.DEAD_LETTER, 0, dead_letters - 1)  # LPUSH: the newest first
    n_dead, *more = pipe.execute()
    latest = more[0] if more else []
    entries = []
    for raw in latest:
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return FleetReading(
        at=now,
        workers=workers,
        queues=queues,
        held=held,
        dead_letters=int(n_dead),
        pools=pools,
        lanes=lane_rows(pools, workers, queues, held),
        latest_dead=entries,
    )
