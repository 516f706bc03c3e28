"""Put back what the broker would otherwise keep too long or lose: a dead worker's chunks, and
chunks that exist nowhere.

**A dead worker's chunks, within seconds** (dramatiq's heartbeat requeue and Sidekiq's
super_fetch are the models). Every worker instance keeps the messages it fetched and has not
acknowledged in an unacked hash of its own (kombu's ``unacked_key`` transport option,
:func:`mtfleet.core.keys.unacked`), and is listed in :data:`mtfleet.core.keys.WORKERS` before it
consumes. When an instance's heartbeat has expired (three missed beats: a SIGKILL, an OOM kill,
a lost node), everything in its hash goes back to the front of its queue through kombu's own
restore (marked redelivered, so each such chunk runs alone on its next worker) and the instance
is forgotten. The visibility timeout is untouched: it still bounds a live worker that holds a
message too long.

**Chunks that exist nowhere.** kombu pops a message with ``BRPOP`` and only then writes it to
the unacked hash, from the client: a worker killed (or a connection cut) between the two loses
it for good. The API writes every chunk message into the job's ledger
(:func:`mtfleet.core.keys.job_chunks`) in the same step that creates the job, and a chunk leaves
the ledger in the same step that writes its last result. Every ``MT_RECONCILE_INTERVAL_S`` the
jobs that should have been fetched by now are swept:

* each pool's lane queue is first in, first out, so a job created well before its *started
  mark* (the newest ``enqueued_at`` of any chunk started from that queue) has had every chunk
  fetched at least once; when the queue is empty, every active job of the pool and lane
  qualifies (only queues that a live worker consumes are swept: nobody would fetch a re-sent
  chunk from the others, whose messages stay where they are);
* each of their unfinished chunks must then be either held by a live worker or back in the
  queue after a restore (restored messages go to the fetching end; the last ``SCAN_TAIL``
  messages are read);
* a chunk found in neither place becomes a suspect; still missing one grace period later (a
  message in the BRPOP window reaches a hash within microseconds), it is sent again from the
  ledger.

A wrong guess costs one duplicate message, which is harmless: every result is written once
(HSETNX) and a chunk whose segments all have results does no work. A chunk re-sent
``MT_MAX_DELIVERIES`` times is dead-lettered like a poison chunk.

One worker does all this at a time: the holder of a short Redis lock, renewed at every tick.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

import redis

from mtfleet.core import keys
from mtfleet.core.broker import send_chunk
from mtfleet.core.models import ChunkMessage
from mtfleet.core.registry import Registry
from mtfleet.core.settings import Settings
from mtfleet.core.store import JobStore
from mtfleet.workers import metrics
from mtfleet.workers.chunk import dead_letter
from mtfleet.workers.hooks import Periodic

log = logging.getLogger(__name__)

#: Messages read from the fetching end of a queue to find restored chunks.
SCAN_TAIL = 2000
#: Most active jobs looked at per pool, lane and sweep (the oldest first).
MAX_JOBS = 500
#: Messages restored from a dead instance's hash per kombu call.
RESTORE_BATCH = 500

_TASK_ID = re.compile(r'"id":\s*"([0-9a-f]{32})\.(\d+)\.')


def chunk_ids(raw_messages: list[str]) -> set[tuple[str, int]]:
    """(job id, chunk) of every broker message in ``raw_messages`` (kombu's JSON envelopes,
    from a queue or an unacked hash); the task id in the headers names the chunk."""
    found = set()
    for raw in raw_messages:
        m = _TASK_ID.search(raw)
        if m:
            found.add((m.group(1), int(m.group(2))))
    return found


def unacked_options(instance: str) -> dict[str, str]:
    """The broker transport options that give ``instance`` an unacked hash of its own."""
    return {
        "unacked_key": keys.unacked(instance),
        "unacked_index_key": keys.unacked_index(instance),
        "unacked_mutex_key": keys.unacked_mutex(instance),
    }


class Reconciler(Periodic):
    name = "reconciler"

    def __init__(
        self, settings: Settings, client: redis.Redis, store: JobStore, instance: str
    ) -> None:
        super().__init__()
        self.settings = settings
        self.r = client
        self.store = store
        self.registry = Registry(client)
        self.instance = instance
        self.interval_s = settings.heartbeat_s  # a dead worker is seen at its first missed tick
        self.sweep_every_s = float(settings.reconcile_interval_s)
        # A chunk must stay missing this long before it is re-sent; jobs younger than this
        # (still being published) and chunks enqueued less than this before the lane's
        # started mark are left alone.
        self.grace = max(2 * self.sweep_every_s, 5.0)
        self.app: Any = None
        self._swept = time.monotonic()

    def ready(self, consumer: Any) -> None:
        self.app = consumer.app
        super().ready(consumer)

    def tick(self) -> None:
        if not self._lead():
            return
        self.rescue()
        if time.monotonic() - self._swept >= self.sweep_every_s:
            self._swept = time.monotonic()
            self.sweep()

    def _lead(self) -> bool:
        """Hold the lock (one reconciler at a time across the fleet); it outlives three ticks,
        so a dead leader is replaced within three heartbeats."""
        ttl_ms = int(self.interval_s * 3000)
        if self.r.set(keys.RECONCILE_LOCK, self.instance, nx=True, px=ttl_ms):
            return True
        if self.r.get(keys.RECONCILE_LOCK) == self.instance:
            self.r.pexpire(keys.RECONCILE_LOCK, ttl_ms)
            return True
        return False

    # -- a dead worker's chunks --------------------------------------------------------------
    def rescue(self) -> int:
        """Put every message a dead instance held back on its queue; returns how many."""
        _live, gone = self.registry.instances()
        restored = 0
        for instance in gone:
            held = int(self.r.hlen(keys.unacked(instance)))
            if held:
                log.warning(
                    "worker instance %s is gone holding %d chunk(s): back to their queues",
                    instance,
                    held,
                )
                self._restore_all(instance)
                restored += held
            if not int(self.r.hlen(keys.unacked(instance))):
                self.r.delete(keys.unacked_index(instance), keys.unacked_mutex(instance))
                self.registry.forget(instance)
        metrics.RESCUED.inc(restored)
        return restored

    def _restore_all(self, instance: str) -> None:
        """kombu's own restore, on a channel that sees ``instance``'s hash with a visibility
        timeout of zero: every message in it is due."""
        options = {**unacked_options(instance), "visibility_timeout": 0}
        with self.app.connection_for_write(transport_options=options) as conn:
            qos = conn.default_channel.qos
            while int(self.r.hlen(keys.unacked(instance))):
                before = int(self.r.hlen(keys.unacked(instance)))
                qos.restore_visible(start=0, num=RESTORE_BATCH, interval=1)
                if int(self.r.hlen(keys.unacked(instance))) >= before:
                    # entries without an index entry: kombu cannot see them; drop the stale
                    # index so the lost-chunk sweep finds their chunks in the ledger instead
                    self.r.delete(keys.unacked(instance))
                    break

    # -- chunks that exist nowhere -----------------------------------------------------------
    def sweep(self, now: float | None = None) -> list[tuple[str, int]]:
        """Look once; returns the (job, chunk) pairs sent again."""
        now = time.time() if now is None else now
        live = self.registry.live_workers()
        consumed = sorted({(w.pool_name, lane) for w in live for lane in w.lanes})
        held: set[tuple[str, int]] | None = None
        missing: set[tuple[str, int]] = set()
        for pool, lane in consumed:
            queue = keys.queue(pool, lane)
            depth = int(self.r.llen(queue))
            mark = float(self.r.get(keys.lane_started(pool, lane)) or 0.0)
            newest = now - self.grace if depth == 0 else min(now, mark) - self.grace
            active = keys.active(pool, lane)
            jobs = [
                str(j) for j in self.r.zrangebyscore(active, "-inf", newest, start=0, num=MAX_JOBS)
            ]
            if not jobs:
                continue
            if held is None:
                held = set()
                for w in live:
                    held |= chunk_ids([str(v) for v in self.r.hvals(keys.unacked(w.instance))])
            queued = (
                chunk_ids([str(v) for v in self.r.lrange(queue, -SCAN_TAIL, -1)])
                if depth
                else set()
            )
            for job_id in jobs:
                chunks = self.r.hkeys(keys.job_chunks(job_id))
                if not chunks:
                    status = self.r.hget(keys.job(job_id), "status")
                    if status is None or status not in ("queued", "running", "cancelling"):
                        self.r.zrem(active, job_id)  # expired, purged or final
                    continue
                for c in chunks:
                    key = (job_id, int(c))
                    if key not in held and key not in queued:
                        missing.add(key)
        return self._settle(missing, now)

    def _settle(self, missing: set[tuple[str, int]], now: float) -> list[tuple[str, int]]:
        """Record new suspects, forget found ones, re-send those missing a grace period."""
        suspects = {k: float(v) for k, v in self.r.hgetall(keys.RECONCILE_SUSPECTS).items()}
        keep: dict[str, float] = {}
        resent: list[tuple[str, int]] = []
        for job_id, chunk in sorted(missing):
            field = f"{job_id}:{chunk}"
            first = suspects.get(field, now)
            if now - first < self.grace:
                keep[field] = first
                continue
            if self._resend(job_id, chunk):
                resent.append((job_id, chunk))
        pipe = self.r.pipeline()
        pipe.delete(keys.RECONCILE_SUSPECTS)
        if keep:
            pipe.hset(keys.RECONCILE_SUSPECTS, mapping=dict(keep))  # type: ignore[arg-type]
        pipe.execute()
        return resent

    def _resend(self, job_id: str, chunk: int) -> bool:
        raw = self.r.hget(keys.job_chunks(job_id), str(chunk))
        if raw is None:
            return False  # finished meanwhile
        msg = ChunkMessage.model_validate_json(raw)
        sends = int(self.r.hincrby(keys.chunk_deliveries(job_id), f"resent:{chunk}", 1))
        if sends > self.settings.max_deliveries:
            indices = [i for seg in msg.segments for i in seg.indices]
            dead_letter(self.store, msg, indices, reason=f"chunk {chunk} was lost {sends} times")
            return False
        log.warning(
            "job %s chunk %d is in neither the queue nor a worker: sending it again (%d)",
            job_id,
            chunk,
            sends,
        )
        send_chunk(self.app, msg, payload=str(raw))
        metrics.RESENT.inc()
        return True
