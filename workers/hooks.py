"""A worker's life, one concern per hook (dramatiq's middleware is the model).

:class:`~mtfleet.workers.runtime.WorkerRuntime` owns a worker's life and calls every hook at
three named moments, in order (and in reverse order at shutdown):

* ``boot()`` — in the worker process, once its engine is loaded, before it takes a message;
* ``ready(consumer)`` — Celery's consumer is connected (``worker_ready``): loops start here;
* ``shutdown()`` — warm shutdown: loops stop, the registry entry goes.

Each method is a no-op by default. :class:`Periodic` is a hook that runs ``tick()`` every
``interval_s`` seconds on its own thread between ``ready`` and ``shutdown``; a failing tick is
logged and tried again at the next one.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger(__name__)


class Hook:
    name = "hook"

    def boot(self) -> None:
        """The engine is loaded; no message has been taken yet."""

    def ready(self, consumer: Any) -> None:
        """Celery's consumer (its ``qos`` is the prefetch, ``app`` the Celery app)."""

    def shutdown(self) -> None:
        """Warm shutdown."""


class Periodic(Hook):
    interval_s = 1.0

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> None:
        """One round of the hook's work."""

    def ready(self, consumer: Any) -> None:
        self._thread = threading.Thread(target=self._loop, name=f"mt-{self.name}", daemon=True)
        self._thread.start()

    def shutdown(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.tick()
            except Exception as exc:  # noqa: BLE001 - Redis may be away; try again next tick
                log.warning("%s failed: %s", self.name, exc)
