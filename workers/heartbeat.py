"""The worker's heartbeat in the registry: that it is alive, what it serves, whether its engine
is healthy (:mod:`mtfleet.core.registry`)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from mtfleet.core.registry import Registry, WorkerInfo
from mtfleet.workers.hooks import Periodic

log = logging.getLogger(__name__)


#: The registry's pairs are rewritten every this many beats (and whenever the engine changes).
PAIRS_EVERY = 12


class Heartbeat(Periodic):
    name = "heartbeat"

    def __init__(self, registry: Registry, info: Callable[[], WorkerInfo], interval_s: float):
        """``info``: the worker's registration as it is now (health included)."""
        super().__init__()
        self.registry = registry
        self.info = info
        self.interval_s = interval_s
        self.ttl_s = interval_s * 3  # three missed beats and the worker counts as gone
        self._beats = 0
        self._fingerprint = ""

    def boot(self) -> None:
        self.tick()  # registered (and listed as a possible holder) before it consumes

    def tick(self) -> None:
        info = self.info()
        pairs = self._beats % PAIRS_EVERY == 0 or info.fingerprint != self._fingerprint
        self.registry.beat(info, ttl_s=self.ttl_s, pairs=pairs)
        self._beats += 1
        self._fingerprint = info.fingerprint

    def beat_now(self) -> None:
        """Out of turn (health changed): failures are logged, the loop tries again."""
        try:
            self.tick()
        except Exception as exc:  # noqa: BLE001 - Redis may be away
            log.warning("heartbeat failed: %s", exc)

    def shutdown(self) -> None:
        super().shutdown()  # no beat may land after we leave
        try:
            self.registry.leave(self.info().instance)
        except Exception as exc:  # noqa: BLE001 - Redis may be gone at shutdown
            log.warning("could not leave the registry: %s", exc)
