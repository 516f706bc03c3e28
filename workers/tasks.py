"""The one Celery task: translate a chunk of a job's segments.

Registered under :data:`core.keys.TRANSLATE_TASK`; the API sends it by that name. Its return
value is a small summary (counts, timings) that Flower shows; customer text never appears in it.
"""

from __future__ import annotations

from typing import Any

from celery import Task

from core import keys
from core.models import ChunkMessage
from workers.celery_app import app
from workers.lifecycle import runtime


@app.task(name=keys.TRANSLATE_TASK, bind=True, acks_late=True, reject_on_worker_lost=True)
def translate_chunk(self: Task, chunk: dict[str, Any]) -> dict[str, Any]:
    return runtime().process(ChunkMessage.model_validate(chunk))
