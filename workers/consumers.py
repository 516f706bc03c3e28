"""The worker's consumers: Celery's own, with task events sent in batches, and a separate one for
interactive work.

**Task events in batches.** Celery buffers task events (received, started, succeeded: what
Flower shows) and publishes the buffer at the next turn of its event loop, which at a few
hundred chunks a second is one Redis PUBLISH per event or two: about a third of the consumer
thread's CPU (measured with py-spy on ``make bench``'s overhead run). :class:`TaskConsumer`
publishes them at most every ``EVENTS_FLUSH_S`` (or when Celery's buffer of 24 fills): Flower
sees a task up to a quarter of a second later, the worker spends a fraction on it.

**Interactive work gets its own consumer, so it never waits for a slot in the bulk window.**

One Celery consumer with one prefetch count for both lanes would let a worker whose window is
full of bulk chunks take the next interactive chunk only after a bulk chunk finishes. Instead,
when a worker serves both lanes, Celery's own consumer takes only its pool's bulk queue
(``mt.<pool>.bulk``; its prefetch is the adaptive pull window) and :class:`InteractiveConsumer`
— a consumer bootstep on its own channel with its own small prefetch
(``MT_INTERACTIVE_PREFETCH``) — takes ``mt.<pool>.interactive``
and hands messages to Celery's normal task handler: same task, same acks (late, on that
channel), same events in Flower. The worker gets that many extra threads, so an interactive
chunk never queues behind bulk ones for a thread either; inside the worker the scheduler puts
it ahead of buffered bulk work.
"""

from __future__ import annotations

from typing import Any

from celery import bootsteps
from celery.worker.consumer import Consumer as CeleryConsumer
from kombu import Consumer

from mtfleet.core.broker import lane_queue

#: Task events are published at most this often (or when Celery's buffer of 24 fills).
EVENTS_FLUSH_S = 0.25


class TaskConsumer(CeleryConsumer):
    """Celery's consumer (``worker_consumer``), task events flushed every EVENTS_FLUSH_S."""

    _flush_scheduled = False

    def on_send_event_buffered(self) -> None:
        if self.hub:
            # from any thread: the timer is the loop's own, so it is set from the loop
            self.hub.call_soon(self._schedule_event_flush)

    def _schedule_event_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.hub.call_later(EVENTS_FLUSH_S, self._flush_buffered_events)

    def _flush_buffered_events(self) -> None:
        self._flush_scheduled = False
        self._flush_events()


class InteractiveConsumer(bootsteps.ConsumerStep):
    """Consumes the pool's interactive queue on its own channel and prefetch (see the module
    docs). Celery makes its steps from their class: :func:`interactive_consumer` gives it one
    that carries the worker's pool and prefetch."""

    requires = ("celery.worker.consumer.tasks:Tasks",)
    pool: str
    prefetch: int

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        self.parent = parent
        super().__init__(parent, **kwargs)

    def get_consumers(self, channel: Any) -> list[Consumer]:
        channel.basic_qos(0, self.prefetch, False)
        return [
            Consumer(
                channel,
                queues=[lane_queue(self.pool, "interactive")],
                on_message=self.parent.create_task_handler(),
                accept=["json"],
            )
        ]


def interactive_consumer(pool: str, prefetch: int) -> type[InteractiveConsumer]:
    """The step to add to a worker that consumes ``pool``'s interactive queue with ``prefetch``
    (:func:`mtfleet.workers.gpus.consumer_plan`, from the worker's settings). It keeps the
    step's name, which the worker's health checks look it up by
    (``workers.health.INTERACTIVE_STEP``)."""
    return type(
        InteractiveConsumer.__name__,
        (InteractiveConsumer,),
        {
            "__module__": __name__,
            "name": InteractiveConsumer.name,
            "pool": pool,
            "prefetch": prefetch,
        },
    )
