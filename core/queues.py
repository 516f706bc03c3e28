"""What waits on the broker: a queue's depth and how long its oldest chunk has been waiting.

A queue is a Redis list (kombu's Redis transport): the API's ``send_task`` pushes on the left,
workers pop on the right, so the chunk that leaves next, the oldest one, is the list's last
element. Each element is kombu's envelope (JSON) around Celery's message body (base64 JSON
``[args, kwargs, embed]``); the one argument is the chunk message
(:class:`~mtfleet.core.models.ChunkMessage`) as JSON text, whose ``enqueued_at`` says when the
API queued it. A chunk put back by a worker (a restore, a rescue) may land at the other end, so
both ends are read and the older counts.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis


@dataclass(frozen=True)
class QueueReading:
    queue: str
    queued: int  # chunks waiting for a worker
    oldest_queued_s: float | None  # seconds the oldest has waited; None: the queue is empty


def enqueued_at(raw: bytes | str) -> float | None:
    """When the chunk in a broker message was queued (None when the message is not one of
    ours, or malformed)."""
    try:
        envelope = json.loads(raw)
        body: Any = envelope["body"]
        if envelope.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        chunk = json.loads(args[0]) if isinstance(args[0], str) else args[0]
        return float(chunk["enqueued_at"])
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None


def read_queues(
    r: redis.Redis, queues: Sequence[str], now: float | None = None
) -> dict[str, QueueReading]:
    """Depth and oldest wait of each queue, in one round trip."""
    now = time.time() if now is None else now
    pipe = r.pipeline(transaction=False)
    for q in queues:
        pipe.llen(q)
        pipe.lindex(q, -1)
        pipe.lindex(q, 0)
    replies = pipe.execute() if queues else []
    out = {}
    for i, q in enumerate(queues):
        depth, *ends = replies[3 * i : 3 * i + 3]
        times = [t for t in (enqueued_at(raw) for raw in ends if raw) if t is not None]
        oldest = round(max(0.0, now - min(times)), 3) if times else None
        out[q] = QueueReading(q, int(depth), oldest if depth else None)
    return out
