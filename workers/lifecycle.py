"""Worker process lifecycle: load the engine before consuming, heartbeat, clean shutdown."""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import worker_init, worker_ready, worker_shutdown

from core.settings import get_settings
from workers import metrics

log = logging.getLogger(__name__)

_runtime: Any = None


def runtime() -> Any:
    """This process's :class:`workers.runtime.WorkerRuntime` (created on first use)."""
    global _runtime
    if _runtime is None:
        from workers.runtime import WorkerRuntime

        _runtime = WorkerRuntime(get_settings())
    return _runtime


def _in_process_pool(sender: Any) -> bool:
    pool = getattr(sender, "pool_cls", "")
    name = pool if isinstance(pool, str) else getattr(pool, "__module__", "")
    return "prefork" not in str(name)


@worker_init.connect
def _load_engine(sender: Any = None, **_: Any) -> None:
    settings = get_settings()
    if settings.worker_metrics_port:
        metrics.serve(settings.worker_metrics_port)
    if _in_process_pool(sender):
        runtime().load()


@worker_ready.connect
def _start_heartbeat(sender: Any = None, **_: Any) -> None:
    rt = runtime()
    rt.load()
    rt.start_heartbeat(getattr(sender, "hostname", None))


@worker_shutdown.connect
def _stop(**_: Any) -> None:
    if _runtime is not None:
        _runtime.stop()
