"""Which pool a job's pair goes to, and whether that pool's lane takes more work.

* :meth:`Routing.route`: the pool for a pair: the one the job names (422 ``unknown_pool`` when
  the fleet has no such pool, or it does not serve the pair or the adapter), else the route
  :func:`choose_pool` picks among the pools that serve the pair (those marked for the job's
  ``model_type`` first, then ``MT_ROUTES``), else 422 ``unsupported_language`` listing the pairs
  the fleet serves. What the registry says is remembered for a second when a pool serves the
  pair; a pair nobody serves is asked again each time, so a worker that just registered is seen
  at once.
* :meth:`Routing.route_writing`: the pool for a text to improve in its own language (DeepL
  Write): one whose engine follows instructions and translates into that language; on a fleet
  without such a pool, a 400 saying so.
* :meth:`Routing.admit`: backpressure: 429 with ``Retry-After`` for a pool's lane whose queue
  is past its limit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import redis

from mtfleet.api import metrics
from mtfleet.core.backlog import Backlog
from mtfleet.core.errors import (
    InvalidInput,
    Overloaded,
    Unavailable,
    UnknownPool,
    UnsupportedLanguage,
)
from mtfleet.core.models import Lane, ModelType, PoolModelType
from mtfleet.core.registry import PoolInfo, Registry
from mtfleet.core.settings.backlog import BacklogSettings

#: Seconds a registry answer (the pools, who serves a pair) is trusted by an API process.
REMEMBER_S = 1.0
#: Pairs a refusal lists at most (an LLM pool serves ~1,400).
LISTED = 60


@dataclass(frozen=True)
class Route:
    """Where a job goes: its pool, and the phrase-cache fingerprint of the model (or LoRA
    adapter) that translates it there; ``model_type``: what the job asked for."""

    pool: PoolInfo
    fingerprint: str
    adapter: str | None = None
    model_type: ModelType | None = None

    @property
    def name(self) -> str:
        return self.pool.name

    @property
    def model_type_used(self) -> PoolModelType | None:
        """What the answer says translated the job (None: the job asked nothing): the pool's
        marking, else what was asked for, as DeepL answers on a pair with one model
        (``latency_optimized`` when that was asked, ``quality_optimized`` otherwise)."""
        if self.model_type is None:
            return None
        return self.pool.model_type or marking(self.model_type)


def marking(model_type: ModelType) -> PoolModelType:
    """The pool marking a requested ``model_type`` goes to (``prefer_quality_optimized``:
    ``quality_optimized``; neither is refused where no pool has it)."""
    return "latency_optimized" if model_type == "latency_optimized" else "quality_optimized"


def patterns(source: str, target: str) -> tuple[str, ...]:
    """MT_ROUTES patterns that match a pair, most specific first."""
    return (f"{source}:{target}", f"{source}:*", f"*:{target}", "*")


def choose_pool(
    routes: dict[str, str],
    source: str,
    target: str,
    serving: list[str],
    pools: dict[str, PoolInfo],
    now: float | None = None,
    model_type: ModelType | None = None,
) -> str:
    """The pool a pair goes to among those that serve it (``serving``, not empty): with a
    ``model_type``, among those marked for it where there are some (else among all: the usual
    pool); then the most specific route whose pool serves the pair, else a pool with a live
    worker, else the first by name."""
    if model_type is not None:
        wanted = marking(model_type)
        marked = [p for p in serving if p in pools and pools[p].model_type == wanted]
        serving = marked or serving
    for pattern in patterns(source, target):
        pool = routes.get(pattern)
        if pool in serving:
            return pool
    ranked = sorted(serving)
    live = [p for p in ranked if p in pools and pools[p].live(now)]
    return (live or ranked)[0]


class Routing:
    def __init__(self, settings: BacklogSettings, registry: Registry, backlog: Backlog) -> None:
        """``settings``: the routes (``MT_ROUTES``) and each lane's queue bound
        (``MT_MAX_QUEUE_*``). Every read on the event loop, through the registry's asyncio
        client."""
        assert registry.ar is not None, "Routing needs a Registry with an asyncio client"
        self.settings = settings
        self.registry = registry
        self._aclient = registry.ar
        self.backlog = backlog
        self._pools: tuple[float, dict[str, PoolInfo]] = (0.0, {})
        self._serving: dict[tuple[str, str], tuple[float, list[str]]] = {}
        self._depths: dict[tuple[str, Lane], tuple[float, int]] = {}
        self._pairs: tuple[float, frozenset[tuple[str, str]]] = (0.0, frozenset())
        self._writers: tuple[float, dict[str, list[str]]] = (0.0, {})

    # -- routing -----------------------------------------------------------------------------
    async def route(
        self,
        source: str,
        target: str,
        pool: str | None = None,
        adapter: str | None = None,
        model_type: ModelType | None = None,
    ) -> Route:
        """The pool a job of this pair goes to (see the module docs); 422 when there is none,
        503 when Redis cannot be read. A job that names its ``pool`` goes there, whatever its
        ``model_type``. On the event loop: with the registry remembered, no round trip."""
        try:
            if pool is not None:
                return await self._named(pool, source, target, adapter, model_type)
            serving = await self.serving(source, target)  # may refresh the pools: read after
            found = self._pick(await self.pools(), serving, source, target, adapter, model_type)
            if found is not None:
                return found
            served = sorted(f"{a}->{b}" for a, b in await self.registry.aserved_pairs())
        except redis.RedisError as exc:
            raise Unavailable.because("the job store", exc) from exc
        raise UnsupportedLanguage(
            f"no pool serves {source}->{target}; served pairs: "
            + (_listed(served) if served else "none yet (no worker has registered)"),
            served=served[:LISTED],
        )

    def _pick(
        self,
        pools: dict[str, PoolInfo],
        serving: list[str],
        source: str,
        target: str,
        adapter: str | None,
        model_type: ModelType | None,
    ) -> Route | None:
        """The route among the known pools that serve the pair (:func:`choose_pool`; with an
        ``adapter``, among those that have it: 422 when none has); None when no known pool
        serves it."""
        serving = [p for p in serving if p in pools]
        if not serving:
            return None
        if adapter is not None:
            serving = self._with_adapter_named(pools, serving, adapter, source, target)
        name = choose_pool(
            self.settings.routes, source, target, serving, pools, model_type=model_type
        )
        return self._with_adapter(pools[name], adapter, model_type)

    async def pools(self, *, fresh: bool = False) -> dict[str, PoolInfo]:
        """Every pool the registry knows (remembered for a second unless ``fresh``)."""
        now = time.monotonic()
        expires, pools = self._pools
        if fresh or expires <= now:
            pools = await self.registry.apools()
            self._pools = (now + REMEMBER_S, pools)
        return pools

    async def serving(self, source: str, target: str) -> list[str]:
        """The pools that serve a pair (remembered for a second when there are some)."""
        now = time.monotonic()
        hit = self._serving.get((source, target))
        if hit is not None and hit[0] > now:
            return hit[1]
        serving = await self.registry.serving(sorted(await self.pools()), source, target)
        if not serving:  # a pool that registered this second is seen at once
            pools = await self.pools(fresh=True)
            serving = await self.registry.serving(sorted(pools), source, target)
        if serving:
            self._serving[(source, target)] = (now + REMEMBER_S, serving)
        return serving

    async def sources_into(self, target: str) -> frozenset[str]:
        """The languages some pool translates into ``target`` (what ``auto`` detects among;
        every pool's pairs are read at most once a second)."""
        now = time.monotonic()
        expires, pairs = self._pairs
        if expires <= now:
            try:
                pairs = frozenset(await self.registry.aserved_pairs())
            except redis.RedisError as exc:
                raise Unavailable.because("the job store", exc) from exc
            self._pairs = (now + REMEMBER_S, pairs)
        return frozenset(source for source, into in pairs if into == target)

    async def _named(
        self,
        pool: str,
        source: str,
        target: str,
        adapter: str | None,
        model_type: ModelType | None,
    ) -> Route:
        pools = await self.pools()
        if pool not in pools:
            pools = await self.pools(fresh=True)
        if pool not in pools:
            raise UnknownPool(
                f"the fleet has no pool {pool!r}; pools: "
                + (", ".join(sorted(pools)) or "none yet (no worker has registered)"),
                pools=sorted(pools),
            )
        if pool not in await self.serving(source, target):
            served = sorted(f"{a}->{b}" for a, b in (await self.registry.apairs([pool]))[pool])
            raise UnknownPool(
                f"pool {pool!r} does not serve {source}->{target}; it serves: "
                + (_listed(served) or "no pair"),
                served=served[:LISTED],
            )
        return self._with_adapter(pools[pool], adapter, model_type)

    @staticmethod
    def _with_adapter_named(
        pools: dict[str, PoolInfo], serving: list[str], adapter: str, source: str, target: str
    ) -> list[str]:
        """Those of ``serving`` whose workers serve the LoRA adapter; 422 when none does."""
        having = [p for p in serving if adapter in pools[p].adapters]
        if having:
            return having
        known = sorted({a for p in serving for a in pools[p].adapters})
        raise UnknownPool(
            f"no pool serving {source}->{target} has a LoRA adapter {adapter!r}; their "
            "adapters: " + (", ".join(known) or "none (MT_LORA_ADAPTERS on their workers)"),
            adapters=known,
        )

    @staticmethod
    def _with_adapter(pool: PoolInfo, adapter: str | None, model_type: ModelType | None) -> Route:
        fingerprint = pool.fingerprint_for(adapter)
        if fingerprint is None:
            raise UnknownPool(
                f"pool {pool.name!r} has no LoRA adapter {adapter!r}; its adapters: "
                + (", ".join(sorted(pool.adapters)) or "none (MT_LORA_ADAPTERS on its workers)"),
                adapters=sorted(pool.adapters),
            )
        return Route(pool, fingerprint, adapter, model_type)

    # -- texts to improve (DeepL Write) -------------------------------------------------------
    async def writers(self) -> dict[str, list[str]]:
        """The pools whose engine follows instructions (an LLM), by the language each writes
        (one it translates into: it can improve a text in it); 400 naming what is missing
        when the fleet has no such pool. Every pool's pairs are read at most once a second."""
        try:
            pools = await self.pools()
            now = time.monotonic()
            expires, found = self._writers
            if expires <= now:
                llms = sorted(name for name, p in pools.items() if p.instructions)
                found = {}
                for name, pairs in (await self.registry.apairs(llms)).items():
                    for lang in sorted({target for _, target in pairs}):
                        found.setdefault(lang, []).append(name)
                self._writers = (now + REMEMBER_S, found) if found else (0.0, {})
        except redis.RedisError as exc:
            raise Unavailable.because("the job store", exc) from exc
        if not found:
            engines = ", ".join(f"{n} ({p.engine})" for n, p in sorted(pools.items()))
            raise InvalidInput(
                "Improving a text (rephrase, correct) needs a pool whose engine follows "
                "instructions, an LLM (the vllm or openai engine, or a causal transformers "
                "model), and this fleet has none: "
                + (f"its pools run {engines}." if engines else "no worker has registered.")
            )
        return found

    async def route_writing(
        self, lang: str, pool: str | None = None, model_type: ModelType | None = None
    ) -> Route:
        """The pool that improves a text in ``lang`` (:meth:`writers`; the one named, which
        must be one of them), chosen among them as a pair's pool is (:func:`choose_pool`)."""
        writers = await self.writers()
        serving = writers.get(lang, [])
        if pool is not None and pool not in serving:
            raise UnknownPool(
                f"pool {pool!r} does not improve text in {lang}: that takes a pool whose "
                f"engine follows instructions and writes {lang}; those are: "
                + (", ".join(serving) or "none"),
                pools=serving,
            )
        if not serving:
            raise UnsupportedLanguage(
                f"no pool whose engine follows instructions writes {lang}; they write: "
                + _listed(sorted(writers)),
                served=sorted(writers)[:LISTED],
            )
        pools = await self.pools()
        name = pool or choose_pool(
            self.settings.routes, lang, lang, serving, pools, model_type=model_type
        )
        return self._with_adapter(pools[name], None, model_type)

    # -- backpressure ------------------------------------------------------------------------
    async def admit(self, pool: str, lane: Lane) -> None:
        """Backpressure: refuse new work for a pool's lane with more chunks waiting (its
        backlog and its broker queue) than its limit (429). The depth is read at most every
        0.2 s per process, so it may overshoot the limit by what the API processes accept in
        that time."""
        limit = (
            self.settings.max_queue_interactive
            if lane is Lane.interactive
            else self.settings.max_queue_bulk
        )
        now = time.monotonic()
        seen = self._depths.get((pool, lane))
        if seen is None or seen[0] < now:
            try:
                depth = (await self.backlog.awaiting(self._aclient, pool, lane.value)).total
            except redis.RedisError as exc:
                raise Unavailable.because("the job store", exc) from exc
            if seen is None:  # the pool lane's first job here: its refusals count from 0
                metrics.REJECTED.labels(pool, lane.value)
            seen = self._depths[(pool, lane)] = (now + 0.2, depth)
        depth = seen[1]
        if depth >= limit:
            metrics.REJECTED.labels(pool, lane.value).inc()
            raise Overloaded(
                f"pool {pool}'s {lane.value} lane has {depth} chunks waiting (limit "
                f"MT_MAX_QUEUE_{lane.value.upper()}={limit}); retry later",
                retry_after=1 if lane is Lane.interactive else 10,
                lane=lane.value,
                pool=pool,
            )


def _listed(pairs: list[str]) -> str:
    shown = ", ".join(pairs[:LISTED])
    return shown + (f" and {len(pairs) - LISTED} more" if len(pairs) > LISTED else "")
