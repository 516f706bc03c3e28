"""The worker-side Celery app (``celery -A workers.celery_app worker``).

The engine loads in ``worker_init``, before the consumer takes any message, in this process:
only the ``threads`` (default) and ``solo`` pools are accepted (see ``workers.lifecycle``).
"""

from __future__ import annotations

from core.broker import make_celery
from core.settings import get_settings
from workers.consumers import InteractiveConsumer, consumer_plan

settings = get_settings()
app = make_celery(settings)
app.conf.update(
    worker_pool="threads",
    worker_concurrency=settings.worker_concurrency,
    include=["workers.tasks"],
)

# Interactive chunks on their own consumer when the worker serves both lanes.
if consumer_plan(list(settings.lanes), settings.interactive_prefetch)[1]:
    app.steps["consumer"].add(InteractiveConsumer)

# Signal handlers are registered by importing the module.
from workers import lifecycle  # noqa: E402,F401
