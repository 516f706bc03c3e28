"""The worker's Celery app (``celery -A mtfleet.workers.celery_app worker``) and its one task.

Its life is :class:`~mtfleet.workers.runtime.WorkerRuntime`'s, driven by Celery's signals:
``worker_init`` boots it (the engine loads before the consumer takes any message, in this
process: only the ``threads`` and ``solo`` pools are accepted, never a fork after loading),
``worker_ready`` makes it ready, ``worker_shutdown`` shuts it down. A worker whose engine
cannot load exits (``SystemExit``, which Celery's signal dispatch does not swallow) so the
launcher restarts it with backoff, instead of consuming chunks it cannot translate.

The task, :data:`mtfleet.core.keys.TRANSLATE_TASK`, translates one chunk; the API sends it by
that name. Its return value is a small summary (counts, timings) that Flower shows; customer
text never appears in it. Nothing accepted is dropped:

* a chunk that cannot be finished here (its engine is down, its time budget ran out, an error)
  goes back to the front of its API key's backlog (:meth:`mtfleet.core.backlog.Backlog.requeue`;
  after an error, aside for a backoff that grows with its deliveries, holding no worker
  thread) and its message is acknowledged; if Redis itself is away the message is rejected
  and stays with the broker (it returns with the rescue or the visibility timeout). The store
  is idempotent, so repeats are harmless, and the per-chunk delivery counter dead-letters a
  chunk that keeps failing;
* an engine that cannot serve (:class:`~mtfleet.core.errors.EngineUnavailable`) is restarted
  by the worker's :class:`~mtfleet.workers.health.EngineHealth` while its chunks go back;
* a message that is not a valid chunk can never succeed: it is dead-lettered at once and its
  job, if it names one, fails with the reason.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
import warnings
from typing import Any

from celery import Task
from celery.exceptions import Reject, SecurityWarning
from celery.signals import worker_init, worker_ready, worker_shutdown
from celery.utils.log import mlevel
from celery.worker.request import Request
from pydantic import ValidationError

from mtfleet.core import keys
from mtfleet.core.backoff import Backoff
from mtfleet.core.broker import forget_shared_binding, make_celery
from mtfleet.core.errors import EngineUnavailable
from mtfleet.core.models import ChunkMessage
from mtfleet.core.settings import get_settings
from mtfleet.workers import metrics
from mtfleet.workers.chunk import Requeue
from mtfleet.workers.consumers import interactive_consumer
from mtfleet.workers.gpus import consumer_plan
from mtfleet.workers.reconciler import unacked_options
from mtfleet.workers.runtime import WorkerRuntime, new_instance_id
from mtfleet.workers.supervisor import ROOT_WARNED

log = logging.getLogger(__name__)

if os.environ.get(ROOT_WARNED):
    # a restart by `mtfleet worker`: Celery's "running as root" warning was shown once already
    warnings.filterwarnings("ignore", category=SecurityWarning)


class RedactedRequest(Request):
    """A task request that describes itself by its ``argsrepr`` (the chunk's summary), never its
    arguments. Celery's remote-control answers (``inspect active/reserved/scheduled``,
    ``query_task``: Flower's worker pages) otherwise carry a chunk's full arguments, customer
    text included; task events already carry only ``argsrepr``."""

    def info(self, safe: bool = False) -> dict[str, Any]:
        return super().info(safe=True)


settings = get_settings()
INSTANCE = new_instance_id()
app = make_celery(settings)
app.conf.update(
    worker_pool="threads",
    worker_concurrency=settings.worker.worker_concurrency,
    worker_consumer="mtfleet.workers.consumers:TaskConsumer",
    # Remote control (the pidbox: ping, inspect, Flower's worker pages and buttons) answers
    # anyone who can publish on the broker; MT_WORKER_REMOTE_CONTROL=false turns it off.
    worker_enable_remote_control=settings.worker.worker_remote_control,
    # This process's fetched, unacknowledged messages in a hash of its own, so the reconciler
    # knows exactly what a dead worker held (mtfleet.workers.reconciler).
    broker_transport_options={**app.conf.broker_transport_options, **unacked_options(INSTANCE)},
)
# Every task of this app (they subclass app.Task) builds its requests from RedactedRequest.
app.Task.Request = RedactedRequest

# Interactive chunks on their own consumer when the worker serves both lanes.
_, _interactive_prefetch = consumer_plan(
    settings.worker.pool_name, list(settings.worker.lanes), settings.scheduler.interactive_prefetch
)
if _interactive_prefetch:
    app.steps["consumer"].add(
        interactive_consumer(settings.worker.pool_name, _interactive_prefetch)
    )

_runtime: WorkerRuntime | None = None


def runtime() -> WorkerRuntime:
    """This process's runtime (made on first use; booted by ``worker_init``)."""
    global _runtime
    if _runtime is None:
        _runtime = WorkerRuntime(settings, instance=INSTANCE)
    return _runtime


# -- the task ----------------------------------------------------------------------------------
#: How long a chunk that failed on its n-th delivery waits aside in the backlog (holding no
#: thread) before it may go again: 0.5 s, doubling per delivery, at most 10 s.
CHUNK_BACKOFF = Backoff(first_s=0.5, max_s=10.0)
#: Seconds a chunk waits aside when the engine it met was down (it is no fault of the chunk's:
#: no backoff grows), so it does not bounce straight back to a worker that cannot serve it.
ENGINE_DOWN_S = 0.5


@app.task(name=keys.TRANSLATE_TASK, bind=True, acks_late=True, reject_on_worker_lost=True)
def translate_chunk(self: Task, chunk: Any) -> dict[str, Any]:
    """One chunk: its place in its job's ledger (:func:`mtfleet.core.keys.ledger_ref`, read from
    there), its message as JSON text (:func:`mtfleet.core.broker.send_chunk`), or as an object (the
    earlier format: chunks still queued across an upgrade)."""
    if isinstance(chunk, str) and chunk.startswith(f"{keys.LEDGER_REF} "):
        entry = _ledger_entry(chunk)
        if entry is None:
            return {"skipped": "no longer in its job's ledger (finished, or the job is gone)"}
        chunk = entry
    try:
        if isinstance(chunk, str | bytes):
            msg = ChunkMessage.model_validate_json(chunk)
        else:
            msg = ChunkMessage.model_validate(chunk)
    except ValidationError as exc:
        return _dead_letter_malformed(self.request.id, chunk, exc)
    rt = runtime()
    try:
        return rt.process(msg)
    except EngineUnavailable as exc:
        rt.health.engine_down(exc.message)
        # aside a moment: not straight back to a worker whose engine is away
        return _put_back(rt, msg, exc.message, "engine_unavailable", delay_s=ENGINE_DOWN_S)
    except Requeue as exc:
        log.warning("job %s chunk %s requeued: %s", msg.job_id, msg.chunk, exc)
        return _put_back(rt, msg, str(exc), "budget")
    except Exception as exc:
        log.exception("chunk %s of job %s failed; it goes back", msg.chunk, msg.job_id)
        return _put_back(rt, msg, f"{type(exc).__name__}: {exc}", "error", backoff=True)
    finally:
        rt.releaser.nudge()  # its slot is free: what waits may go


def _ledger_entry(ref: str) -> str | None:
    """The message a ledger reference names; None when the ledger no longer holds it (finished,
    or its job ended or is gone: the chunk is taken off its lane's released hash, as a delivered
    message's start would). A reference that names no job is returned as it is, to be refused as
    any malformed message."""
    place = keys.parse_ledger_ref(ref)
    if place is None:
        return ref
    rt = runtime()
    entry = rt.redis.hget(keys.job_chunks(place.job_id), str(place.chunk))
    if entry is None:
        rt.backlog.unrelease(place.pool, place.lane, place.job_id, place.chunk)
        return None
    return str(entry)


def _put_back(
    rt: WorkerRuntime,
    msg: ChunkMessage,
    why: str,
    reason: str,
    *,
    backoff: bool = False,
    delay_s: float = 0.0,
) -> dict[str, Any]:
    """A chunk this worker could not finish goes back to the front of its key's backlog (or
    aside for its backoff: a chunk that fails again waits longer, without holding a thread),
    and its message is acknowledged. With Redis away the message is rejected instead: the
    broker keeps it (and returns it with the visibility timeout)."""
    try:
        delay = delay_s
        if backoff:
            delay = CHUNK_BACKOFF.wait_s(rt.store.deliveries(msg.job_id, msg.chunk) - 1)
        where = rt.backlog.requeue(
            msg.job_id,
            msg.chunk,
            pool=msg.pool or settings.worker.pool_name,
            lane=msg.lane.value,
            owner=msg.owner,
            delay_s=delay,
        )
    except Exception as exc:
        log.warning(
            "job %s chunk %s stays with the broker: %s (and it could not be put back: %s)",
            msg.job_id,
            msg.chunk,
            why,
            exc,
        )
        raise Reject(f"{why} (and it could not be put back: {exc})", requeue=True) from exc
    metrics.REQUEUED.labels(reason).inc()
    return {"requeued": where, "reason": why}


def _dead_letter_malformed(task_id: str, chunk: Any, exc: ValidationError) -> dict[str, Any]:
    reason = f"malformed chunk message ({exc.error_count()} error(s)): {exc.errors()[0]['msg']}"
    log.error("dead-lettering task %s: %s", task_id, reason)
    rt = runtime()
    if isinstance(chunk, str | bytes):
        with contextlib.suppress(ValueError):
            chunk = json.loads(chunk)
    job_id = chunk.get("job_id") if isinstance(chunk, dict) else None
    rt.redis.lpush(
        keys.DEAD_LETTER,
        json.dumps({"task_id": task_id, "job_id": job_id, "reason": reason, "at": time.time()}),
    )
    if isinstance(job_id, str):
        rt.store.fail(job_id, {"type": "dead_lettered", "message": reason})
    return {"dead_lettered": True, "reason": reason}


# -- the worker's life -------------------------------------------------------------------------
#: Celery's own lines per chunk ("Task ... received", "Task ... succeeded in ..."), logged only
#: with ``--loglevel DEBUG``: at a bulk backlog's rate they are a few hundred a second that say
#: nothing Flower's task list and the metrics do not, and cost ~3 % of a worker's CPU (py-spy on
#: ``make bench --only overhead``). Failures still log at ERROR, and a chunk put back at WARNING.
TASK_LINE_LOGGERS = ("celery.worker.strategy", "celery.app.trace")


def quiet_task_lines(loglevel: int) -> None:
    """Celery's per-chunk INFO lines off unless the worker logs at DEBUG (called before the
    consumer starts: Celery reads the level once, when it builds a task's tracer and strategy)."""
    if loglevel > logging.DEBUG:
        for name in TASK_LINE_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)


def pool_name(sender: Any) -> str:
    pool = getattr(sender, "pool_cls", "")
    return pool if isinstance(pool, str) else f"{pool.__module__}.{pool.__name__}"


@worker_init.connect
def _boot(sender: Any = None, **_: Any) -> None:
    name = pool_name(sender)
    if "thread" not in name and "solo" not in name:
        log.critical("mtfleet workers run the 'threads' or 'solo' pool, not %s", name)
        raise SystemExit(2)
    quiet_task_lines(mlevel(getattr(sender, "loglevel", None) or logging.INFO))
    if settings.worker.worker_metrics_port:
        try:
            metrics.serve(settings.worker.worker_metrics_port)
        except OSError as exc:  # taken: without this the boot below never ran (Celery
            # swallows a worker_init handler's error) and the worker served without an engine
            log.critical(
                "MT_WORKER_METRICS_PORT=%d: cannot serve metrics there (%s); exiting so the "
                "launcher restarts",
                settings.worker.worker_metrics_port,
                exc,
            )
            raise SystemExit(3) from exc
    try:
        runtime().boot(getattr(sender, "hostname", None))
    except Exception as exc:
        log.critical("engine failed to load; exiting so the launcher restarts: %s", exc)
        raise SystemExit(3) from exc


@worker_ready.connect
def _ready(sender: Any = None, **_: Any) -> None:
    try:
        if forget_shared_binding(app, settings.worker.pool_name):
            log.warning(
                "removed the binding of pool %s's interactive queue to its bulk exchange "
                "(declared by fleets before 2026-12-07: a message published there reached "
                "both lanes)",
                settings.worker.pool_name,
            )
    except Exception as exc:  # noqa: BLE001 - the next worker's start tries again
        log.warning("could not check the queues' bindings: %s", exc)
    # The sender is the consumer: its QoS is the prefetch count the pull window steers.
    runtime().ready(sender)


@worker_shutdown.connect
def _shutdown(**_: Any) -> None:
    if _runtime is not None:
        _runtime.shutdown()
