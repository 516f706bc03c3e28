"""The worker-side Celery app (``celery -A workers.celery_app worker``).

The engine loads in ``worker_init``, before the consumer takes any message, in this process:
only the ``threads`` (default) and ``solo`` pools are accepted (see ``workers.lifecycle``).
"""

from __future__ import annotations

from typing import Any

from celery.worker.request import Request

from core.broker import make_celery
from core.settings import get_settings
from workers.consumers import InteractiveConsumer, consumer_plan


class RedactedRequest(Request):
    """A task request that describes itself by its ``argsrepr`` (the chunk's summary), never its
    arguments. Celery's remote-control answers (``inspect active/reserved/scheduled``,
    ``query_task``: Flower's worker pages) otherwise carry a chunk's full arguments, customer
    text included; task events already carry only ``argsrepr``."""

    def info(self, safe: bool = False) -> dict[str, Any]:
        return super().info(safe=True)


settings = get_settings()
app = make_celery(settings)
app.conf.update(
    worker_pool="threads",
    worker_concurrency=settings.worker_concurrency,
    include=["workers.tasks"],
    # Remote control (the pidbox: ping, inspect, Flower's worker pages and buttons) answers
    # anyone who can publish on the broker; MT_WORKER_REMOTE_CONTROL=false turns it off.
    worker_enable_remote_control=settings.worker_remote_control,
)
# Every task of this app (they subclass app.Task) builds its requests from RedactedRequest.
app.Task.Request = RedactedRequest

# Interactive chunks on their own consumer when the worker serves both lanes.
if consumer_plan(list(settings.lanes), settings.interactive_prefetch)[1]:
    app.steps["consumer"].add(InteractiveConsumer)

# Signal handlers are registered by importing the module.
from workers import lifecycle  # noqa: E402,F401
