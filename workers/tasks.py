"""The one Celery task: translate a chunk of a job's segments.

Registered under :data:`core.keys.TRANSLATE_TASK`; the API sends it by that name. Its return
value is a small summary (counts, timings) that Flower shows; customer text never appears in it.

Failure handling — nothing accepted is dropped:

* any error while processing (Redis unreachable, an engine fault) *rejects the message with
  requeue*: it goes back to its queue (or, if Redis itself is down, stays unacknowledged and
  returns after the visibility timeout). The store is idempotent, so repeats are harmless, and
  the per-chunk delivery counter dead-letters a chunk that keeps failing, so it cannot loop;
* an engine that cannot serve at all (:class:`core.errors.EngineUnavailable`) also makes this
  worker shut down warmly, so the launcher restarts it with a fresh engine;
* a message that is not a valid chunk can never succeed: it is dead-lettered at once and its
  job, if it names one, fails with the reason.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from typing import Any

from celery import Task
from celery.exceptions import Reject
from pydantic import ValidationError

from core import keys
from core.errors import EngineUnavailable
from core.models import ChunkMessage
from workers.celery_app import app
from workers.lifecycle import runtime

log = logging.getLogger(__name__)

_failures = 0  # consecutive failed chunks in this process: paces requeues
_failures_lock = threading.Lock()


def _backoff() -> float:
    global _failures
    with _failures_lock:
        _failures += 1
        return min(0.25 * 2 ** min(_failures, 8), 10.0)


def _reset_backoff() -> None:
    global _failures
    with _failures_lock:
        _failures = 0


@app.task(name=keys.TRANSLATE_TASK, bind=True, acks_late=True, reject_on_worker_lost=True)
def translate_chunk(self: Task, chunk: Any) -> dict[str, Any]:
    try:
        msg = ChunkMessage.model_validate(chunk)
    except ValidationError as exc:
        return _dead_letter_malformed(self.request.id, chunk, exc)
    try:
        result = runtime().process(msg)
    except EngineUnavailable as exc:
        log.critical("engine unavailable (%s): chunk requeued, worker restarting", exc.message)
        os.kill(os.getpid(), signal.SIGTERM)  # warm shutdown; the launcher starts a new one
        raise Reject(exc.message, requeue=True) from exc
    except Exception as exc:
        delay = _backoff()
        log.exception("chunk %s of job %s failed; requeued in %.1fs", msg.chunk, msg.job_id, delay)
        time.sleep(delay)
        raise Reject(f"{type(exc).__name__}: {exc}", requeue=True) from exc
    _reset_backoff()
    return result


def _dead_letter_malformed(task_id: str, chunk: Any, exc: ValidationError) -> dict[str, Any]:
    reason = f"malformed chunk message ({exc.error_count()} error(s)): {exc.errors()[0]['msg']}"
    log.error("dead-lettering task %s: %s", task_id, reason)
    rt = runtime()
    job_id = chunk.get("job_id") if isinstance(chunk, dict) else None
    rt.redis.lpush(
        keys.DEAD_LETTER,
        json.dumps({"task_id": task_id, "job_id": job_id, "reason": reason, "at": time.time()}),
    )
    if isinstance(job_id, str):
        rt.store.fail(job_id, {"type": "dead_lettered", "message": reason})
    return {"dead_lettered": True, "reason": reason}
