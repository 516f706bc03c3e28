"""The one Celery task: translate a chunk of a job's segments.

Registered under :data:`core.keys.TRANSLATE_TASK`; the API sends it by that name. Its return
value is a small summary (counts, timings) that Flower shows; customer text never appears in it.

Failure handling: a Redis error is retried with backoff (a new copy of the message; the
idempotent store makes the repeat harmless); a task that still fails is *not* acknowledged
(``task_acks_on_failure_or_timeout=False``), so the broker redelivers it after the visibility
timeout and the delivery counter dead-letters it if it keeps failing. A message that is not a
valid chunk can never succeed: it is dead-lettered at once instead of looping.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import redis
from celery import Task
from pydantic import ValidationError

from core import keys
from core.models import ChunkMessage
from workers.celery_app import app
from workers.lifecycle import runtime

log = logging.getLogger(__name__)


@app.task(
    name=keys.TRANSLATE_TASK,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(redis.RedisError, ConnectionError),
    retry_backoff=1,
    retry_backoff_max=30,
    retry_jitter=True,
    max_retries=8,
)
def translate_chunk(self: Task, chunk: Any) -> dict[str, Any]:
    try:
        msg = ChunkMessage.model_validate(chunk)
    except ValidationError as exc:
        reason = f"malformed chunk message: {exc.error_count()} error(s): {exc.errors()[0]['msg']}"
        log.error("dead-lettering task %s: %s", self.request.id, reason)
        runtime().redis.lpush(
            keys.DEAD_LETTER,
            json.dumps({"task_id": self.request.id, "reason": reason, "at": time.time()}),
        )
        return {"dead_lettered": True, "reason": reason}
    result: dict[str, Any] = runtime().process(msg)
    return result
