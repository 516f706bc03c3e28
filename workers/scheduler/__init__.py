"""The worker's scheduler: between the Celery task threads and the engine, keeping it full.

Task threads (one per held chunk) hand their segments to :meth:`Scheduler.submit` and wait on
a :class:`Ticket`; one dispatcher thread owns the engine side. Two kinds of engine, two
classes: :class:`BatchScheduler` forms calls for batch engines, :class:`StreamingScheduler`
feeds streaming engines request by request. What they share, and the steps every segment goes
through, is in :mod:`mtfleet.workers.scheduler.base`.
"""

from __future__ import annotations

from collections.abc import Callable

from mtfleet.workers.engines.base import Engine
from mtfleet.workers.scheduler.base import Deadlines, Scheduler, Ticket
from mtfleet.workers.scheduler.batch import BatchScheduler
from mtfleet.workers.scheduler.streaming import StreamingScheduler


def make_scheduler(
    engine: Engine,
    *,
    latency_target_s: float | None,
    slowdown: float = 1.3,
    deadlines: Deadlines | None = None,
    on_engine_down: Callable[[str], None] | None = None,
) -> Scheduler:
    """The scheduler for ``engine``'s kind (a loaded engine)."""
    if engine.streaming:
        return StreamingScheduler(
            engine,
            latency_target_s=latency_target_s,
            deadlines=deadlines,
            on_engine_down=on_engine_down,
            slowdown=slowdown,
        )
    return BatchScheduler(
        engine,
        latency_target_s=latency_target_s,
        deadlines=deadlines,
        on_engine_down=on_engine_down,
    )


__all__ = [
    "BatchScheduler",
    "Deadlines",
    "Scheduler",
    "StreamingScheduler",
    "Ticket",
    "make_scheduler",
]
