"""The Celery client configuration the API and the workers share.

Both sides must agree on serializer, queues and the broker's visibility timeout, so both build
their app here. The API only *sends* (by task name); it never imports ``workers``.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import redis
from celery import Celery
from kombu import Exchange, Queue
from pydantic import ValidationError

from mtfleet.core import deadletters, keys
from mtfleet.core.backlog import Backlog, Released
from mtfleet.core.errors import DeadLettered
from mtfleet.core.models import ChunkMessage
from mtfleet.core.redis_urls import kombu_broker
from mtfleet.core.settings import Settings
from mtfleet.core.store import JobStore

log = logging.getLogger(__name__)


def make_celery(settings: Settings, name: str = "mtfleet") -> Celery:
    # TLS options in broker_use_ssl, a Sentinel URL as kombu's own (core.redis_urls.kombu_broker)
    broker = kombu_broker(settings.redis.redis_url)
    app = Celery(name, broker=broker.url, set_as_current=False)
    app.conf.update(
        broker_use_ssl=broker.use_ssl or False,
        # JSON only: no pickle anywhere, so a message can never run code. A worker refuses a
        # message in another format before decoding it (tests/integration/test_redis_security).
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        event_serializer="json",
        # Results live in our job store; Celery's result backend is not used.
        task_ignore_result=True,
        result_backend=None,
        # A queue per pool and lane; pools come and go, so a queue is made when first used
        # (the API sends to the queue of the pool it routed a job to; a worker consumes its
        # pool's, given by name on its command line).
        task_queues=[lane_queue(settings.worker.pool_name, lane) for lane in keys.LANES],
        task_default_queue=keys.queue(settings.worker.pool_name, "bulk"),
        task_create_missing_queues=True,
        # At-least-once: ack after the chunk is done; a lost worker's chunk comes back.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        # A chunk whose task raised is not acknowledged either: the broker redelivers it after
        # the visibility timeout (the delivery counter stops poison chunks from looping).
        task_acks_on_failure_or_timeout=False,
        # kombu's Redis transport restores unacked messages after this many seconds; a chunk's
        # deadlines keep it well inside (docs/reliability.md). Each worker sweeps its own
        # expired chunks every restore_interval_s (kombu's own default scans only every tenth
        # sweep: ~100 s); a dead worker's come back through the reconciler's rescue.
        broker_transport_options={
            **broker.transport_options,
            "visibility_timeout": settings.worker.visibility_timeout_s,
            "unacked_restore_interval": settings.worker.restore_interval_s,
            "unacked_restore_throttle": 1,
        },
        broker_connection_retry_on_startup=True,
        broker_pool_limit=16,
        # Flower: every chunk is a task with received/started/succeeded events (sent by the
        # worker). No task-sent event from the API: it cost the API more CPU than the rest of
        # a submission (a locked publish per chunk) and Flower lists a task once received.
        worker_send_task_events=True,
        task_send_sent_event=False,
        task_track_started=True,
        # One message per execution slot at most; the worker's pull window lowers it further.
        worker_prefetch_multiplier=1,
        worker_cancel_long_running_tasks_on_connection_loss=False,
        worker_hijack_root_logger=False,
    )
    return app


def lane_queue(pool: str, lane: str) -> Queue:
    """A pool lane's queue, bound to an exchange of its own with its own name as the key, as
    Celery makes a queue it creates on first use (``task_create_missing_queues``).

    A queue in ``task_queues`` without an exchange is given Celery's default one, the bulk
    queue's name with the bulk queue's key: both lanes were bound alike, and a message published
    to that exchange and key reached both queues (Celery's own sends go to a queue by its name,
    so the fleet never did; tests/integration/test_broker_bindings.py)."""
    name = keys.queue(pool, lane)
    return Queue(name, Exchange(name), routing_key=name)


def forget_shared_binding(app: Celery, pool: str) -> bool:
    """Remove the binding of the pool's interactive queue to the bulk queue's exchange and key
    that fleets before :func:`lane_queue` declared (see there: the first send to the
    interactive queue made it), which Redis keeps after an upgrade; True when there was one.
    Each worker's start runs it, so one that an API not yet upgraded makes again goes at the
    next. kombu's Redis transport keeps each exchange's bindings in sets that its
    ``queue_unbind`` leaves as they are, so the member is removed from them here, named by the
    channel's own key format."""
    bulk, interactive = keys.queue(pool, "bulk"), keys.queue(pool, "interactive")
    with app.connection_for_write() as conn:
        channel = conn.default_channel
        member = channel.sep.join([bulk, "", interactive])
        sets = [channel.keyprefix_queue % bulk]
        permanent = getattr(channel, "keyprefix_binding_permanent", None)
        if permanent:
            sets.append(permanent % bulk)
        with channel.conn_or_acquire() as client:
            removed = [client.srem(key, member) for key in sets]
    return any(removed)


def send_chunk(
    app: Celery, msg: ChunkMessage, *, payload: str | None = None, producer: Any = None
) -> str:
    """Publish one chunk on its pool's queue of its lane; returns the task id, which starts with
    :func:`core.keys.task_id_prefix` so the reconciler can find the chunk among broker
    messages.

    A chunk released from its job's ledger (``payload``: its ledger entry, as
    :meth:`Backlog.release` gave it) is sent as its place there (:func:`core.keys.ledger_ref`: the
    job, the chunk and when it was queued), and the worker reads the message from the ledger: the
    chunk's text is not carried through the broker a second time (published, held in the worker's
    unacked hash, delivered, acknowledged; measured with ``make bench --only overhead``: 8 to 18 µs
    per segment less, worker and Redis). Any other message (one in no ledger) is sent as its JSON
    text, which the worker parses in one call (``model_validate_json``)."""
    if msg.pool is None:
        # only a chunk queued before pools existed: its ledger entry names no pool
        raise ValueError(f"chunk {msg.chunk} of job {msg.job_id} names no pool")
    task_id = keys.task_id(msg.job_id, msg.chunk, uuid.uuid4().hex[:12])
    app.send_task(
        keys.TRANSLATE_TASK,
        args=[
            keys.ledger_ref(
                keys.LedgerPlace(msg.job_id, msg.chunk, msg.pool, msg.lane.value, msg.enqueued_at)
            )
            if payload is not None
            else msg.model_dump_json()
        ],
        task_id=task_id,
        queue=keys.queue(msg.pool, msg.lane.value),
        producer=producer,
        # Flower shows this instead of customer text.
        argsrepr=f"({msg.summary()})",
        kwargsrepr="{}",
        retry=True,
        retry_policy={
            "max_retries": 2,
            "interval_start": 0,
            "interval_step": 0.2,
            "interval_max": 0.5,
        },
    )
    return task_id


def release(
    app: Celery, backlog: Backlog, store: JobStore, pool: str, lane: str, target: int
) -> int:
    """Take what the backlog releases for a pool lane (:meth:`Backlog.release`) and publish it,
    in one round trip to the broker; returns how many chunks were sent. A chunk whose message
    cannot be sent fails alone (:func:`refuse`); the others that cannot be published go back to
    the front of their key's backlog (and the error is raised): nothing released is ever only
    in flight between the two."""
    sendable: list[tuple[Released, ChunkMessage]] = []
    for chunk in backlog.release(pool, lane, target):
        try:
            sendable.append((chunk, message(chunk)))
        except ValueError as exc:
            try:
                refuse(store, backlog, chunk, pool, lane, str(exc))
            except redis.RedisError as err:  # the reconciler puts it back: refused again then
                log.warning("chunk %s of job %s stays released: %s", chunk.chunk, chunk.job_id, err)
    if not sendable:
        return 0
    try:
        with app.producer_or_acquire() as producer, producer.batch():
            for chunk, msg in sendable:
                send_chunk(app, msg, payload=chunk.payload, producer=producer)
    except Exception:
        for chunk, _ in reversed(sendable):  # each to the front: in the order they were in
            try:
                backlog.requeue(chunk.job_id, chunk.chunk, pool=pool, lane=lane, owner=chunk.owner)
            except redis.RedisError as exc:  # the reconciler puts it back from the released hash
                log.warning("chunk %s of job %s stays released: %s", chunk.chunk, chunk.job_id, exc)
        raise
    return len(sendable)


def message(chunk: Released) -> ChunkMessage:
    """A released chunk's message, checked before it is sent: it parses, it is the chunk its
    ledger entry stands for, and it names its pool (ValueError saying what is wrong)."""
    try:
        msg = ChunkMessage.model_validate_json(chunk.payload)
    except ValidationError as exc:
        raise ValueError(
            f"its message is not a chunk message ({exc.error_count()} error(s)): "
            f"{exc.errors()[0]['msg']}"
        ) from None
    if (msg.job_id, msg.chunk) != (chunk.job_id, chunk.chunk):
        raise ValueError(f"its message is chunk {msg.chunk} of job {msg.job_id}")
    if msg.pool is None:
        raise ValueError("its message names no pool")
    return msg


def refuse(
    store: JobStore, backlog: Backlog, chunk: Released, pool: str, lane: str, why: str
) -> None:
    """A released chunk whose message cannot be sent, alone: it is dead-lettered with the
    reason (its message kept beside its job for an operator to look at), its job fails saying
    why (which segments the chunk held cannot be known; a job being cancelled takes the chunk
    as settled instead), and it leaves the lane's released hash: nothing of it waits."""
    reason = (
        f"chunk {chunk.chunk} of job {chunk.job_id} cannot be sent: {why}; it was dead-lettered"
    )
    log.error("%s", reason)
    store.dead_letter(
        chunk.job_id, chunk.chunk, deadletters.entry(chunk.job_id, chunk.chunk, lane, reason)
    )
    store.fail(chunk.job_id, DeadLettered(reason).as_dict())
    store.record(chunk.job_id, [], chunk=chunk.chunk, pool=pool, lane=lane)
    # (puts nothing back for a job that ended or a chunk off its ledger: only leaves the hash)
    backlog.requeue(chunk.job_id, chunk.chunk, pool=pool, lane=lane, owner=chunk.owner)
