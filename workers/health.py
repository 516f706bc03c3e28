"""Engine health: a worker whose engine is down stops taking work, says so, and restarts it.

The scheduler reports the engine down (a request raised
:class:`~mtfleet.core.errors.EngineUnavailable`, requests outlived their deadlines with none
finishing, an engine call would not return). Then, in order:

1. every waiting segment fails with EngineUnavailable: its chunk goes back to the queue for
   another worker (the delivery counter still bounds a chunk that kills every engine);
2. the worker stops consuming (Celery's queues and the interactive consumer are cancelled on
   the consumer's own event loop) and reports itself unhealthy at once: the registry entry
   (``healthy: false`` with the reason), so ``/readyz`` no longer counts it, and
   ``mt_worker_engine_healthy 0``;
3. a new engine is built, loaded and asked to translate a short text (up to ``ATTEMPTS``
   times, with backoff): loaded is not serving (an engine server may still be away), and a
   worker that consumed again too early would take chunks only to give them back; then the
   worker is healthy again and consumes again. If it cannot, the process exits and its
   launcher starts a fresh one. A chunk in flight when the engine went down is charged that
   one delivery, however long the outage lasts.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from mtfleet.core.backoff import Backoff
from mtfleet.workers import metrics
from mtfleet.workers.hooks import Hook

log = logging.getLogger(__name__)

#: Restarts tried (1, 2, 4, 8 s apart) before the process exits and its launcher starts afresh.
ATTEMPTS = 5
RESTART_BACKOFF = Backoff(first_s=1.0, max_s=16.0)
INTERACTIVE_STEP = "mtfleet.workers.consumers.InteractiveConsumer"


class EngineHealth(Hook):
    name = "health"

    def __init__(
        self,
        restart: Callable[[], None],
        changed: Callable[[], None],
        probe: Callable[[], None] = lambda: None,
    ) -> None:
        """``restart``: replace the engine with a freshly loaded one (raises when it cannot);
        ``changed``: tell the registry now; ``probe``: the new engine translates something
        (raises when it does not: loaded is not serving, an engine server may still be away)."""
        self.restart = restart
        self.changed = changed
        self.probe = probe
        self.reason: str | None = None  # why the engine is down; None while healthy
        self._lock = threading.Lock()
        self._consumer: Any = None
        self._stopped: list[str] = []
        self._stopping = False
        metrics.HEALTHY.set(1)

    @property
    def healthy(self) -> bool:
        return self.reason is None

    def ready(self, consumer: Any) -> None:
        self._consumer = consumer

    def shutdown(self) -> None:
        self._stopping = True  # the scheduler closing is not an engine failure

    def engine_down(self, reason: str) -> None:
        """Start steps 2 and 3 (once, however many threads report it)."""
        with self._lock:
            if self.reason is not None or self._stopping:
                return
            self.reason = reason
        metrics.HEALTHY.set(0)
        log.critical("engine down (%s): stop consuming, restart the engine", reason)
        self._on_loop(self._stop_consuming)
        self.changed()
        threading.Thread(target=self._recover, name="mt-engine-restart", daemon=True).start()

    def _recover(self) -> None:
        for attempt in range(ATTEMPTS):
            try:
                self.restart()
                self.probe()
            except Exception as exc:  # noqa: BLE001 - reported, then tried again
                log.error("engine restart %d/%d failed: %s", attempt + 1, ATTEMPTS, exc)
                time.sleep(RESTART_BACKOFF.wait_s(attempt))
                continue
            metrics.ENGINE_RESTARTS.inc()
            with self._lock:
                self.reason = None
            metrics.HEALTHY.set(1)
            self._on_loop(self._resume_consuming)
            self.changed()
            log.warning("engine restarted; consuming again")
            return
        log.critical("the engine cannot be restarted; exiting so the launcher starts afresh")
        os.kill(os.getpid(), signal.SIGTERM)

    # -- the consumer, on its own event loop -------------------------------------------------
    def _on_loop(self, fn: Callable[[], None]) -> None:
        hub = getattr(getattr(self._consumer, "controller", None), "hub", None)
        if self._consumer is None:
            return
        if hub is not None:
            hub.call_soon(fn)
        else:
            fn()

    def _stop_consuming(self) -> None:
        c = self._consumer
        try:
            self._stopped = [q.name for q in c.task_consumer.queues]
            for name in self._stopped:
                c.cancel_task_queue(name)
            for consumer in self._interactive():
                consumer.cancel()
        except Exception as exc:  # noqa: BLE001 - the chunks are refused anyway while down
            log.warning("could not stop consuming: %s", exc)

    def _resume_consuming(self) -> None:
        c = self._consumer
        try:
            for name in self._stopped:
                c.add_task_queue(name)
            for consumer in self._interactive():
                consumer.consume()
        except Exception as exc:  # noqa: BLE001 - a worker that cannot consume restarts
            log.error("could not consume again (%s); exiting", exc)
            os.kill(os.getpid(), signal.SIGTERM)

    def _interactive(self) -> list[Any]:
        steps = getattr(getattr(self._consumer, "blueprint", None), "steps", {}) or {}
        step = steps.get(INTERACTIVE_STEP)
        return list(getattr(step, "consumers", None) or [])
