"""The pull window: once a second, how many chunks this worker may hold (Celery's prefetch).

Scheduler figures are folded into metrics and
:func:`~mtfleet.workers.batching.pull_window` sizes the window from the engine's measured
throughput; the consumer's ``qos`` is read at every tick because Celery builds a new one when
it reconnects, and the consumer's loop applies a changed value before its next fetch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mtfleet.core.settings.scheduler import SchedulerSettings
from mtfleet.core.settings.worker import WorkerSettings
from mtfleet.workers import metrics
from mtfleet.workers.batching import pull_window
from mtfleet.workers.hooks import Periodic
from mtfleet.workers.scheduler import Scheduler


class WindowControl(Periodic):
    name = "window"
    interval_s = 1.0

    def __init__(
        self,
        worker: WorkerSettings,
        scheduling: SchedulerSettings,
        scheduler: Callable[[], Scheduler],
        chunk_segments: Callable[[], float],
    ) -> None:
        """``worker``: its threads (``MT_WORKER_CONCURRENCY``) and lease
        (``MT_VISIBILITY_TIMEOUT_S``); ``scheduling``: how far ahead it pulls
        (``MT_PULL_AHEAD_S``)."""
        super().__init__()
        self.max_chunks = worker.worker_concurrency
        self.visibility_timeout_s = worker.visibility_timeout_s
        self.pull_ahead_s = scheduling.pull_ahead_s
        self.scheduler = scheduler
        self.chunk_segments = chunk_segments
        self.consumer: Any = None

    def ready(self, consumer: Any) -> None:
        # the first window now, before the consumer's loop makes its first fetch (Celery's
        # initial prefetch counts every thread, the interactive ones included)
        self.consumer = consumer
        self.tick()
        super().ready(consumer)

    def tick(self) -> None:
        self.adjust(getattr(self.consumer, "qos", None))

    def adjust(self, qos: Any = None) -> int:
        sched = self.scheduler()
        rate = sched.tick()
        window = pull_window(
            chunk_size=max(1, round(self.chunk_segments())),
            max_chunks=self.max_chunks,
            keep_full_segments=sched.keep_full_segments(),
            rate=rate,
            pull_ahead_s=self.pull_ahead_s,
            visibility_timeout_s=self.visibility_timeout_s,
        )
        metrics.WINDOW.set(window)
        metrics.THROUGHPUT.set(rate or 0.0)
        metrics.COST_FIXED.set(sched.cost.fixed_s)
        metrics.COST_PER_TOKEN.set(sched.cost.per_token_s)
        if qos is not None and qos.value != window:
            if window > qos.value:
                qos.increment_eventually(window - qos.value)
            else:
                qos.decrement_eventually(qos.value - window)
        return window
