"""Worker registry: which workers are alive, which pools they form and which language pairs each
pool serves.

Each worker *process* has an ``instance`` id of its own (a restarted worker is a new instance,
with the same Celery ``name``). It refreshes its key every ``MT_HEARTBEAT_S`` (the key expires
after three missed beats), its pool's entry in :data:`mtfleet.core.keys.POOLS` (engine, model,
phrase-cache fingerprints, until when a worker of it was seen alive) and, now and then, the
pool's pairs (:func:`mtfleet.core.keys.pool_pairs`). Pools and their pairs do not expire: a pool
scaled to zero overnight still accepts jobs for the pairs it served, and they wait in its
queues, until an operator forgets the pool (:meth:`Registry.forget_pool`).

:data:`mtfleet.core.keys.WORKERS` lists every instance that may still hold broker messages: a
worker joins it before it consumes, and only the reconciler takes it out, once the instance is
dead and every message it held is back on its queue (:mod:`mtfleet.workers.reconciler`).
A worker's first beat happens before it consumes.
"""

from __future__ import annotations

import json
import time
from typing import Any

import redis
import redis.asyncio
from pydantic import BaseModel, Field

from mtfleet.core import keys
from mtfleet.core.models import PoolModelType


class GpuReading(BaseModel):
    """One GPU as NVML saw it at the worker's last heartbeat (:mod:`mtfleet.workers.gpustats`)."""

    index: int  # NVML's index (the host's numbering, as in --gpus)
    name: str
    memory_used_mib: float
    memory_total_mib: float
    utilization_pct: float | None = None  # GPU busy share over NVML's last sample period


class WorkerStats(BaseModel):
    """What a worker's own Prometheus metrics said at its last heartbeat, for the ops panel
    (:mod:`mtfleet.workers.stats`): rates over the time since the beat before, the job-latency
    histogram's buckets over the last minute, cumulative cache lookups."""

    window_s: float = 0.0  # what the rates cover (0 at the first beat: no rates yet)
    segments_per_s: dict[str, float] = Field(default_factory=dict)  # per lane, finished
    busy_share: float = 0.0  # engine busy seconds per wall second, 0..1
    pull_window: int | None = None  # chunks the worker may hold now (its prefetch count)
    latency_window_s: float = 0.0
    # per lane: [(bucket upper bound as Prometheus writes it, "0.25" ... "+Inf"; jobs finished
    # within it)] over latency_window_s: cumulative, as histogram_quantile reads them
    latency_buckets: dict[str, list[tuple[str, int]]] = Field(default_factory=dict)
    cache_hits: int = 0  # phrase-cache lookups by the worker since it started
    cache_lookups: int = 0


class WorkerInfo(BaseModel):
    name: str  # Celery's hostname (gpu0@host); shared by the instances a launcher restarts
    instance: str = ""  # this process (the registry key; its own unacked hash on the broker)
    pool: str = ""  # the pool it serves ('' : the engine's name)
    adapters: dict[str, str] = Field(default_factory=dict)  # LoRA adapter -> its fingerprint
    healthy: bool = True  # False while its engine is down or restarting
    unhealthy_reason: str | None = None
    engine: str
    model: str
    fingerprint: str
    # its engine follows instructions (an LLM): requests with custom_instructions, a style
    # rule or a formality may go to its pool (core/guidance.py)
    instructions: bool = False
    # its quality-estimation model (MT_QE_MODEL): requests with quality_estimation may go to
    # its pool (mtfleet.workers.quality)
    quality_model: str | None = None
    model_type: PoolModelType | None = None  # what its pool is marked for (MT_MODEL_TYPE)
    pairs: list[tuple[str, str]]
    lanes: list[str]
    gpus: list[int] = Field(default_factory=list)
    cuda_visible_devices: str | None = None  # as the worker process itself sees it
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    host: str = ""
    pid: int = 0
    started_at: float = 0.0
    beat_at: float = 0.0
    stats: WorkerStats | None = None
    # None: no readings (a CPU worker, or NVML is not there); see mtfleet.workers.gpustats
    gpu_readings: list[GpuReading] | None = None

    @property
    def pool_name(self) -> str:
        return self.pool or self.engine


class PoolInfo(BaseModel):
    """A pool as its workers last described it (:data:`mtfleet.core.keys.POOLS`)."""

    name: str
    engine: str
    model: str
    fingerprint: str  # the phrase cache's model component for the pool's base model
    instructions: bool = False  # its engine follows instructions (an LLM)
    quality_model: str | None = None  # its quality-estimation model (MT_QE_MODEL), if any
    # what it is marked for (MT_MODEL_TYPE): a request's model_type goes to it (api/routing.py)
    model_type: PoolModelType | None = None
    adapters: dict[str, str] = Field(default_factory=dict)  # LoRA adapter -> its fingerprint
    lanes: list[str] = Field(default_factory=list)
    updated: float = 0.0  # the last heartbeat of one of its workers
    live_until: float = 0.0  # when that heartbeat expires

    def live(self, now: float | None = None) -> bool:
        """A worker of the pool beat recently enough to be alive."""
        return self.live_until > (time.time() if now is None else now)

    def fingerprint_for(self, adapter: str | None) -> str | None:
        """The phrase-cache fingerprint of the base model or one of its adapters (None: the
        pool does not serve that adapter)."""
        return self.fingerprint if adapter is None else self.adapters.get(adapter)


def pair_field(source: str, target: str) -> str:
    return f"{source}:{target}"


def parse_pair_field(field: str) -> tuple[str, str]:
    src, _, tgt = field.partition(":")
    return src, tgt


class Registry:
    def __init__(self, client: redis.Redis, aclient: redis.asyncio.Redis | None = None) -> None:
        """``aclient``: the same Redis for an event loop (:meth:`apair`; the API's)."""
        self.r = client
        self.ar = aclient

    def beat(self, info: WorkerInfo, *, ttl_s: float, pairs: bool = True) -> None:
        """Refresh the worker's registration and its pool's entry; with ``pairs``, also add
        the pairs it serves to its pool's (they do not expire, so a worker writes them when it
        starts, after its engine changed, and now and then, not at every beat: an LLM engine
        serves ~1,400 pairs)."""
        info.beat_at = time.time()
        pool = PoolInfo(
            name=info.pool_name,
            engine=info.engine,
            model=info.model,
            fingerprint=info.fingerprint,
            instructions=info.instructions,
            quality_model=info.quality_model,
            model_type=info.model_type,
            adapters=info.adapters,
            lanes=info.lanes,
            updated=info.beat_at,
            live_until=info.beat_at + ttl_s,
        )
        pipe = self.r.pipeline(transaction=True)
        pipe.set(keys.worker(info.instance), info.model_dump_json(), px=int(ttl_s * 1000))
        pipe.sadd(keys.WORKERS, info.instance)
        pipe.hset(keys.POOLS, pool.name, pool.model_dump_json())
        if pairs and info.pairs:
            pipe.sadd(keys.pool_pairs(pool.name), *(pair_field(a, b) for a, b in info.pairs))
        pipe.execute()

    def leave(self, instance: str) -> None:
        """Graceful shutdown: the instance is no longer live (its pairs stay known; it stays
        in :data:`~mtfleet.core.keys.WORKERS` until the reconciler has seen its held
        messages back on their queues)."""
        self.r.delete(keys.worker(instance))

    def instances(self) -> tuple[list[WorkerInfo], list[str]]:
        """(live workers, instances that are gone but may still hold messages)."""
        names = sorted(str(n) for n in self.r.smembers(keys.WORKERS))
        if not names:
            return [], []
        raws = self.r.mget([keys.worker(n) for n in names])
        live: list[WorkerInfo] = []
        gone: list[str] = []
        for name, raw in zip(names, raws, strict=True):
            if raw is None:
                gone.append(name)
            else:
                live.append(WorkerInfo.model_validate_json(raw))
        return live, gone

    def live_workers(self) -> list[WorkerInfo]:
        return self.instances()[0]

    def held_by_queue(self, now: float | None = None) -> dict[str, tuple[int, float]]:
        """Per broker queue: (chunks fetched by workers and not finished, seconds the
        longest-held has been held). Read from every instance's unacked hash and its fetch-time
        index (kombu's), dead instances' included until the reconciler puts their chunks
        back."""
        now = time.time() if now is None else now
        names = sorted(str(n) for n in self.r.smembers(keys.WORKERS))
        pipe = self.r.pipeline(transaction=False)
        for name in names:
            pipe.hgetall(keys.unacked(name))
            pipe.zrange(keys.unacked_index(name), 0, -1, withscores=True)
        replies = pipe.execute() if names else []
        out: dict[str, tuple[int, float]] = {}
        for messages, index in zip(replies[::2], replies[1::2], strict=True):
            fetched = {str(tag): float(t) for tag, t in index}
            for tag, raw in messages.items():
                try:
                    # kombu keeps [message, exchange, routing key]; the routing key is the queue
                    queue = str(json.loads(raw)[-1])
                except (ValueError, IndexError, TypeError):
                    continue
                count, oldest = out.get(queue, (0, 0.0))
                age = max(0.0, now - fetched.get(str(tag), now))
                out[queue] = (count + 1, max(oldest, age))
        return out

    def forget(self, instance: str) -> None:
        """A dead instance holds nothing any more."""
        self.r.srem(keys.WORKERS, instance)

    # -- pools -------------------------------------------------------------------------------
    def pools(self) -> dict[str, PoolInfo]:
        """Every pool a worker has served, by name."""
        return _pools(self.r.hgetall(keys.POOLS))

    async def apools(self) -> dict[str, PoolInfo]:
        """:meth:`pools` on the event loop (``aclient``)."""
        assert self.ar is not None, "Registry built without an asyncio client"
        return _pools(await self.ar.hgetall(keys.POOLS))

    async def serving(self, pools: list[str], source: str, target: str) -> list[str]:
        """Those of ``pools`` that serve the pair (one round trip, on the event loop: the
        API's routing)."""
        assert self.ar is not None, "Registry built without an asyncio client"
        if not pools:
            return []
        pipe = self.ar.pipeline(transaction=False)
        for name in pools:
            pipe.sismember(keys.pool_pairs(name), pair_field(source, target))
        return [name for name, hit in zip(pools, await pipe.execute(), strict=True) if hit]

    def pairs(self, pools: list[str] | None = None) -> dict[str, set[tuple[str, str]]]:
        """The pairs each pool serves (every known pool's, or those of ``pools``)."""
        names = sorted(self.pools()) if pools is None else pools
        return _pairs(names, _pairs_pipe(self.r, names).execute() if names else [])

    async def apairs(self, pools: list[str] | None = None) -> dict[str, set[tuple[str, str]]]:
        """:meth:`pairs` on the event loop (``aclient``)."""
        assert self.ar is not None, "Registry built without an asyncio client"
        names = sorted(await self.apools()) if pools is None else pools
        return _pairs(names, await _pairs_pipe(self.ar, names).execute() if names else [])

    async def aserved_pairs(self) -> set[tuple[str, str]]:
        """Every pair some pool serves (whichever pool), on the event loop (``aclient``)."""
        return {pair for pairs in (await self.apairs()).values() for pair in pairs}

    def forget_pool(self, name: str) -> bool:
        """An operator's: the pool is no longer part of the fleet (no job is routed to it any
        more). Whatever waits in its queues stays there. True if it was known."""
        pipe = self.r.pipeline(transaction=True)
        pipe.hdel(keys.POOLS, name)
        pipe.delete(keys.pool_pairs(name))
        return bool(pipe.execute()[0])


def _text(value: Any) -> str:
    """A Redis reply as text (clients made without ``decode_responses`` answer bytes)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def _pairs_pipe(client: Any, names: list[str]) -> Any:
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.smembers(keys.pool_pairs(name))
    return pipe


def _pairs(names: list[str], replies: list[Any]) -> dict[str, set[tuple[str, str]]]:
    return {
        name: {parse_pair_field(_text(f)) for f in members}
        for name, members in zip(names, replies, strict=True)
    }


def _pools(raw: Any) -> dict[str, PoolInfo]:
    return {_text(name): PoolInfo.model_validate_json(v) for name, v in raw.items()}
