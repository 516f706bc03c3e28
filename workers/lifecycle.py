"""Worker process lifecycle: load the engine before consuming, heartbeat, clean shutdown.

The engine loads in ``worker_init``, before the consumer takes any message. A worker whose
engine cannot load exits (``SystemExit``, which Celery's signal dispatch does not swallow) so
the launcher restarts it with backoff, instead of consuming chunks it cannot translate. Only
the threads and solo pools are accepted: the engine lives in the worker process itself, loaded
once, never before a fork.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from celery.signals import worker_init, worker_ready, worker_shutdown

from core.settings import get_settings
from workers import metrics

if TYPE_CHECKING:
    from workers.runtime import WorkerRuntime

log = logging.getLogger(__name__)

_runtime: WorkerRuntime | None = None


def runtime() -> WorkerRuntime:
    """This process's :class:`workers.runtime.WorkerRuntime` (created on first use)."""
    global _runtime
    if _runtime is None:
        from workers.runtime import WorkerRuntime

        _runtime = WorkerRuntime(get_settings())
    return _runtime


def pool_name(sender: Any) -> str:
    pool = getattr(sender, "pool_cls", "")
    return pool if isinstance(pool, str) else f"{pool.__module__}.{pool.__name__}"


@worker_init.connect
def _load_engine(sender: Any = None, **_: Any) -> None:
    name = pool_name(sender)
    if "thread" not in name and "solo" not in name:
        log.critical("mtfleet workers run the 'threads' or 'solo' pool, not %s", name)
        raise SystemExit(2)
    settings = get_settings()
    if settings.worker_metrics_port:
        metrics.serve(settings.worker_metrics_port)
    try:
        runtime().load()
    except Exception as exc:
        log.critical("engine failed to load; exiting so the launcher restarts: %s", exc)
        raise SystemExit(3) from exc


@worker_ready.connect
def _start_heartbeat(sender: Any = None, **_: Any) -> None:
    rt = runtime()
    rt.start_heartbeat(getattr(sender, "hostname", None))
    # The sender is the consumer: its QoS is the prefetch count the pull window steers.
    rt.start_control(sender)
    from workers.celery_app import app

    rt.start_reconciler(app)


@worker_shutdown.connect
def _stop(**_: Any) -> None:
    if _runtime is not None:
        _runtime.stop()
