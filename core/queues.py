"""What waits in a pool lane: its chunks in the backlog (per API key, :mod:`mtfleet.core.backlog`)
and in the broker queue, and how long the oldest of them has waited.

The broker queue is a Redis list (kombu's Redis transport): the API's ``send_task`` pushes on the
left, workers pop on the right. Each element is kombu's envelope (JSON) around Celery's message body
(base64 JSON ``[args, kwargs, embed]``); the one argument is the chunk's place in its job's ledger
(:func:`~mtfleet.core.keys.ledger_ref`), or the chunk message
(:class:`~mtfleet.core.models.ChunkMessage`) as JSON text: each says when the API queued it. A chunk
put back by a worker's restore may land at the other end, so both ends are read and the older
counts. In the backlog, the oldest chunk of a key is in the first job of its list: that job's
``created_at`` is when it was queued.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from mtfleet.core import keys


@dataclass(frozen=True)
class QueueReading:
    queue: str  # the lane's broker queue
    queued: int  # chunks waiting for a worker: in the backlog and in the broker queue
    oldest_queued_s: float | None  # seconds the oldest has waited; None: nothing waits
    by_key: dict[str, int] = field(default_factory=dict)  # backlog chunks per API key


def enqueued_at(raw: bytes | str) -> float | None:
    """When the chunk in a broker message was queued (None when the message is not one of
    ours, or malformed)."""
    try:
        envelope = json.loads(raw)
        body: Any = envelope["body"]
        if envelope.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        arg = json.loads(body)[0][0]
        if isinstance(arg, str) and (place := keys.parse_ledger_ref(arg)) is not None:
            return place.enqueued_at  # a chunk sent as its place in its job's ledger
        chunk = json.loads(arg) if isinstance(arg, str) else arg
        return float(chunk["enqueued_at"])
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None


def read_queues(
    r: redis.Redis, lanes: Sequence[tuple[str, str]], now: float | None = None
) -> dict[str, QueueReading]:
    """What waits in each (pool, lane), keyed by its broker queue's name: three round trips
    whatever the depth (the ends of each broker queue and each backlog's sizes; the first job
    of each key with chunks waiting; when those jobs were made)."""
    now = time.time() if now is None else now
    pipe = r.pipeline(transaction=False)
    for pool, lane in lanes:
        q = keys.queue(pool, lane)
        pipe.llen(q)
        pipe.lindex(q, -1)
        pipe.lindex(q, 0)
        pipe.hgetall(keys.backlog_sizes(pool, lane))
    replies = pipe.execute() if lanes else []
    sizes: list[dict[str, int]] = []
    for i in range(len(lanes)):
        raw = replies[4 * i + 3]
        sizes.append({str(k): int(v) for k, v in raw.items() if int(v) > 0})
    # the first job waiting of every key with chunks in a backlog, and when it was made
    heads = [(i, owner) for i, by_key in enumerate(sizes) for owner in by_key]
    pipe = r.pipeline(transaction=False)
    for i, owner in heads:
        pipe.lindex(keys.backlog_owner(*lanes[i], owner), 0)
    first_jobs = pipe.execute() if heads else []
    pipe = r.pipeline(transaction=False)
    for job_id in first_jobs:
        if job_id:
            pipe.hget(keys.job(str(job_id)), "created_at")
        else:
            pipe.echo("")
    made = pipe.execute() if heads else []
    waited: dict[int, list[float]] = {}
    for (i, _), at in zip(heads, made, strict=True):
        if at:
            waited.setdefault(i, []).append(float(at))
    out = {}
    for i, (pool, lane) in enumerate(lanes):
        q = keys.queue(pool, lane)
        depth, *ends = replies[4 * i : 4 * i + 3]
        times = [t for t in (enqueued_at(raw) for raw in ends if raw) if t is not None]
        times += waited.get(i, [])
        total = int(depth) + sum(sizes[i].values())
        oldest = round(max(0.0, now - min(times)), 3) if times else None
        out[q] = QueueReading(q, total, oldest if total else None, sizes[i])
    return out
