"""Interactive work gets its own consumer, so it never waits for a slot in the bulk window.

One Celery consumer with one prefetch count for both lanes would let a worker whose window is
full of bulk chunks take the next interactive chunk only after a bulk chunk finishes. Instead,
when a worker serves both lanes, Celery's own consumer takes only ``mt.bulk`` (its prefetch is
the adaptive pull window) and :class:`InteractiveConsumer` — a consumer bootstep on its own
channel with its own small prefetch (``MT_INTERACTIVE_PREFETCH``) — takes ``mt.interactive``
and hands messages to Celery's normal task handler: same task, same acks (late, on that
channel), same events in Flower. The worker gets that many extra threads, so an interactive
chunk never queues behind bulk ones for a thread either; inside the worker the scheduler puts
it ahead of buffered bulk work.
"""

from __future__ import annotations

from typing import Any

from celery import bootsteps
from kombu import Consumer, Queue

from mtfleet.core import keys


def consumer_plan(lanes: list[str], interactive_prefetch: int) -> tuple[list[str], int]:
    """(queues of Celery's own consumer, prefetch of the separate interactive consumer or 0)."""
    if "interactive" in lanes and "bulk" in lanes and interactive_prefetch > 0:
        return [keys.queue("bulk")], interactive_prefetch
    return [keys.queue(lane) for lane in lanes], 0


class InteractiveConsumer(bootsteps.ConsumerStep):
    """Consumes ``mt.interactive`` on its own channel and prefetch (see the module docs)."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        self.parent = parent
        super().__init__(parent, **kwargs)

    def get_consumers(self, channel: Any) -> list[Consumer]:
        from mtfleet.core.settings import get_settings

        settings = get_settings()
        _, prefetch = consumer_plan(list(settings.lanes), settings.interactive_prefetch)
        channel.basic_qos(0, prefetch, False)
        return [
            Consumer(
                channel,
                queues=[Queue(keys.queue("interactive"))],
                on_message=self.parent.create_task_handler(),
                accept=["json"],
            )
        ]
