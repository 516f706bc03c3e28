"""Which engine a job's pair goes to, and whether its lane takes more work.

* :meth:`Routing.route`: the registry's entry for a pair (remembered for a second when it
  exists; a pair nobody serves is asked again each time, so a worker that just registered is
  seen at once), or 422 listing the pairs the fleet serves;
* :meth:`Routing.admit`: backpressure: 429 with ``Retry-After`` for a lane whose queue is past
  its limit.
"""

from __future__ import annotations

import time

import redis

from mtfleet.api import metrics
from mtfleet.core import keys
from mtfleet.core.errors import Overloaded, Unavailable, UnsupportedLanguage
from mtfleet.core.models import Lane
from mtfleet.core.registry import PairInfo, Registry
from mtfleet.core.settings import Settings


class Routing:
    def __init__(self, settings: Settings, client: redis.Redis, registry: Registry) -> None:
        self.settings = settings
        self.r = client
        self.registry = registry
        self._pairs: dict[tuple[str, str], tuple[float, PairInfo]] = {}
        self._depths: dict[Lane, tuple[float, int]] = {}

    def route(self, source: str, target: str) -> PairInfo:
        """The registry's entry for the pair; 422 listing the served pairs when none serves it."""
        try:
            pair = self.pair(source, target)
            if pair is not None:
                return pair
            served = sorted(f"{a}->{b}" for a, b in self.registry.pairs())
        except redis.RedisError as exc:
            raise Unavailable.because("the job store", exc) from exc
        raise UnsupportedLanguage(
            f"no engine serves {source}->{target}; served pairs: "
            + (", ".join(served) if served else "none yet (no worker has registered)"),
            served=served,
        )

    def admit(self, lane: Lane) -> None:
        """Backpressure: refuse new work for a lane whose queue is past its limit (429). The
        depth is read at most every 0.2 s per process, so the queue may overshoot the limit by
        what the API processes accept in that time."""
        limit = (
            self.settings.max_queue_interactive
            if lane is Lane.interactive
            else self.settings.max_queue_bulk
        )
        now = time.monotonic()
        seen = self._depths.get(lane)
        if seen is None or seen[0] < now:
            try:
                depth = int(self.r.llen(keys.queue(lane.value)))
            except redis.RedisError as exc:
                raise Unavailable.because("the job store", exc) from exc
            seen = self._depths[lane] = (now + 0.2, depth)
        depth = seen[1]
        if depth >= limit:
            metrics.REJECTED.labels(lane.value).inc()
            raise Overloaded(
                f"the {lane.value} lane has {depth} chunks waiting (limit "
                f"MT_MAX_QUEUE_{lane.value.upper()}={limit}); retry later",
                retry_after=1 if lane is Lane.interactive else 10,
                lane=lane.value,
            )

    async def apair(self, source: str, target: str) -> PairInfo | None:
        """:meth:`pair` on the event loop (the registry's asyncio client), remembered alike."""
        now = time.monotonic()
        hit = self._pairs.get((source, target))
        if hit is not None and hit[0] > now:
            return hit[1]
        pair = await self.registry.apair(source, target)
        if pair is not None:
            self._pairs[(source, target)] = (now + 1.0, pair)
        return pair

    def pair(self, source: str, target: str) -> PairInfo | None:
        """The registry's entry for a pair, remembered for a second when it exists (it is asked
        on every request; a pair nobody serves is asked again each time, so a worker that just
        registered is seen at once)."""
        now = time.monotonic()
        hit = self._pairs.get((source, target))
        if hit is not None and hit[0] > now:
            return hit[1]
        pair = self.registry.pair(source, target)
        if pair is not None:
            self._pairs[(source, target)] = (now + 1.0, pair)
        return pair
