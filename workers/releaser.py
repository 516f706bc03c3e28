"""The worker's side of the backlog (:mod:`mtfleet.core.backlog`): it keeps its pool's broker
queues topped up, for its lanes, from a thread of its own.

A release runs after every chunk this worker finishes or puts back (:meth:`Releaser.nudge`:
the chunk's thread only sets a flag) and every ``MT_RELEASE_INTERVAL_S`` otherwise (work
submitted while the API could not release it, a failure's backoff that is over). Every worker
of a pool does this; the release script is one atomic step, so any number of them may.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from mtfleet.core.backlog import Backlog
from mtfleet.core.broker import release
from mtfleet.core.settings.backlog import BacklogSettings
from mtfleet.core.settings.worker import WorkerSettings
from mtfleet.core.store import JobStore
from mtfleet.workers import metrics
from mtfleet.workers.hooks import Hook

log = logging.getLogger(__name__)


class Releaser(Hook):
    name = "releaser"

    def __init__(
        self,
        worker: WorkerSettings,
        releasing: BacklogSettings,
        backlog: Backlog,
        store: JobStore,
    ) -> None:
        """``worker``: the pool and lanes released for; ``releasing``: how far ahead
        (``MT_RELEASE_AHEAD``) and how often (``MT_RELEASE_INTERVAL_S``)."""
        self.pool = worker.pool_name
        self.lanes = list(worker.lanes)
        self.ahead = releasing.release_ahead
        self.interval_s = releasing.release_interval_s
        self.backlog = backlog
        self.store = store
        self.app: Any = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def ready(self, consumer: Any) -> None:
        self.app = consumer.app
        self._thread = threading.Thread(target=self._loop, name="mt-releaser", daemon=True)
        self._thread.start()

    def nudge(self) -> None:
        """A chunk ended here: release soon (from the releaser's thread)."""
        self._wake.set()

    def shutdown(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def tick(self) -> int:
        """Release for each lane this worker serves; how many chunks were sent."""
        sent = 0
        for lane in self.lanes:
            n = release(self.app, self.backlog, self.store, self.pool, lane, self.ahead)
            metrics.RELEASED.labels(lane).inc(n)
            sent += n
        return sent

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval_s)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.tick()
            except Exception as exc:  # noqa: BLE001 - Redis or the broker away: next time
                log.warning("releasing chunks failed: %s", exc)
