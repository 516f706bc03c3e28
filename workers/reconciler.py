"""Put back what the broker would otherwise keep too long or lose: a dead worker's chunks, and
chunks that are nowhere they should be.

**A dead worker's chunks, within seconds** (dramatiq's heartbeat requeue and Sidekiq's
super_fetch are the models). Every worker instance keeps the messages it fetched and has not
acknowledged in an unacked hash of its own (kombu's ``unacked_key`` transport option,
:func:`mtfleet.core.keys.unacked`), and is listed in :data:`mtfleet.core.keys.WORKERS` before it
consumes. When an instance's heartbeat has expired (three missed beats: a SIGKILL, an OOM kill,
a lost node), everything in its hash goes back to the front of its queue through kombu's own
restore (marked redelivered) and the instance is forgotten. The visibility timeout is
untouched: it still bounds a live worker that holds a message too long.

**Chunks that are nowhere, by state** (:mod:`mtfleet.core.backlog`). A chunk is in its job's
pending list (waiting), in its pool lane's released hash (handed to the broker, not started),
in its job's in-flight starts (a worker has it), or finished. Only the broker's own step can
lose one: kombu pops a message with ``BRPOP`` and only then writes it to the unacked hash, from
the client, so a worker killed between the two loses it. Every ``MT_RECONCILE_INTERVAL_S``,
for each pool lane a live worker consumes:

* the whole broker queue is read (it is shallow: at most ``MT_RELEASE_AHEAD`` chunks, plus any
  a rescue put back) and the live workers' unacked hashes, the whole released hash, and the
  in-flight starts of about ``MAX_JOBS`` of the lane's active jobs: the next ones from where
  the last sweep stopped (a ``ZSCAN`` cursor: every job that stays active is looked at within
  one walk of the set, however deep fair shares keep it), and those of the suspects;
* a released chunk older than a grace period that is in neither, and a chunk in flight longer
  than the visibility timeout that is in neither, is a suspect; still missing one grace period
  later it goes back to the front of its key's backlog.

Nothing is inferred from positions in a queue, whatever its depth. A wrong guess costs one
duplicate delivery, which is harmless: every result is written once (HSETNX) and a chunk whose
segments all have results does no work. A chunk put back ``MT_MAX_DELIVERIES`` times this way is
dead-lettered like a poison chunk.

One worker does all this at a time: the holder of a short lease (redis-py's :class:`Lock`),
taken when free or renewed by its holder at every tick, each in one atomic step.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

import redis
from redis.exceptions import LockError
from redis.lock import Lock

from mtfleet.core import keys
from mtfleet.core.backlog import Backlog
from mtfleet.core.models import ChunkMessage
from mtfleet.core.registry import Registry
from mtfleet.core.settings import WorkerSettings
from mtfleet.core.store import JobStore
from mtfleet.workers import metrics
from mtfleet.workers.chunk import dead_letter
from mtfleet.workers.hooks import Periodic

log = logging.getLogger(__name__)

#: Most messages read from a broker queue (it holds MT_RELEASE_AHEAD chunks, plus any a rescue
#: put back: far fewer).
QUEUE_READ = 10_000
#: About how many of a pool lane's active jobs one sweep looks at: a cursor walks the whole set
#: across sweeps (:meth:`Reconciler._jobs`), so the work of one stays bounded however many wait.
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
        self,
        settings: WorkerSettings,
        client: redis.Redis,
        store: JobStore,
        backlog: Backlog,
        instance: str,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.r = client
        self.store = store
        self.backlog = backlog
        self.registry = Registry(client)
        self.instance = instance
        self.interval_s = settings.heartbeat_s  # a dead worker is seen at its first missed tick
        # The lease outlives three ticks, so a dead leader is replaced within three heartbeats.
        # Its value is the instance (who leads shows in Redis); one object per process, used
        # from one thread, so the token need not be thread-local.
        self._lease = Lock(
            client, keys.RECONCILE_LOCK, timeout=self.interval_s * 3, thread_local=False
        )
        self.sweep_every_s = float(settings.reconcile_interval_s)
        # A chunk must stay missing this long before it is re-sent; jobs younger than this
        # (still being published) and chunks enqueued less than this before the lane's
        # started mark are left alone.
        self.grace = max(2 * self.sweep_every_s, 5.0)
        self.app: Any = None
        self._swept = time.monotonic()
        self._cursors: dict[tuple[str, str], int] = {}  # (pool, lane) -> where its walk is

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
        """Hold the lease (one reconciler at a time across the fleet): renew it if this
        instance holds it (``reacquire``: the full TTL again only while the value is still
        ours, in one Lua step, so a lease another instance took over in between is never
        extended), else take it if nobody holds it (``acquire``: SET NX)."""
        try:
            return self._lease.reacquire()
        except LockError:  # not this instance's (never was, or taken over since)
            return self._lease.acquire(blocking=False, token=self.instance)

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

    # -- chunks that are nowhere -------------------------------------------------------------
    def sweep(self, now: float | None = None) -> list[tuple[str, int]]:
        """Look once; returns the (job, chunk) pairs put back in their backlog."""
        now = time.time() if now is None else now
        live = self.registry.live_workers()
        consumed = sorted({(w.pool_name, lane) for w in live for lane in w.lanes})
        held: set[tuple[str, int]] | None = None
        missing: dict[tuple[str, int], tuple[str, str, str]] = {}  # -> pool, lane, owner
        suspects = {str(k): float(v) for k, v in self.r.hgetall(keys.RECONCILE_SUSPECTS).items()}
        suspected = sorted({field.partition(":")[0] for field in suspects})
        stale_start = now - self.settings.visibility_timeout_s - self.grace
        for pool, lane in consumed:
            released = self.r.hgetall(keys.backlog_released(pool, lane))
            active = keys.active(pool, lane)
            starts = self._stale_starts(self._jobs(pool, lane, suspected), active, stale_start)
            due = {ref: v for ref, v in released.items() if _at(str(v)) <= now - self.grace}
            if not due and not starts:
                continue
            if held is None:
                held = set()
                for w in live:
                    held |= chunk_ids([str(v) for v in self.r.hvals(keys.unacked(w.instance))])
            queued = chunk_ids(
                [str(m) for m in self.r.lrange(keys.queue(pool, lane), 0, QUEUE_READ)]
            )
            for ref, value in due.items():
                job_id, _, chunk = str(ref).partition(":")
                key = (job_id, int(chunk))
                if key not in held and key not in queued:
                    missing[key] = (pool, lane, str(value).split("|", 1)[0])
            for key, owner in starts.items():
                if key not in held and key not in queued:
                    missing[key] = (pool, lane, owner)
        return self._settle(missing, suspects, now)

    def _jobs(self, pool: str, lane: str, suspected: list[str]) -> list[str]:
        """The active jobs of a pool lane this sweep looks at: about ``MAX_JOBS`` more from
        where the last one stopped (``ZSCAN`` from a cursor kept per lane, back to the start
        after the end), and those of ``suspected`` in the lane, looked at again at every sweep
        until their suspect chunks are found or put back."""
        active = keys.active(pool, lane)
        jobs: dict[str, None] = {}
        if suspected:
            scores = self.r.zmscore(active, suspected)
            jobs = dict.fromkeys(
                j for j, at in zip(suspected, scores, strict=True) if at is not None
            )
        cursor = self._cursors.get((pool, lane), 0)
        walked = 0
        while True:
            cursor, page = self.r.zscan(active, cursor, count=MAX_JOBS)
            jobs.update(dict.fromkeys(str(job_id) for job_id, _ in page))
            walked += len(page)
            if cursor == 0 or walked >= MAX_JOBS:
                break
        self._cursors[(pool, lane)] = cursor
        return list(jobs)

    def _stale_starts(
        self, jobs: list[str], active: str, before: float
    ) -> dict[tuple[str, int], str]:
        """The chunks of ``jobs`` in flight since before ``before`` (-> the job's owner); a job
        that is not running any more leaves the active set."""
        pipe = self.r.pipeline(transaction=False)
        for job_id in jobs:
            pipe.hgetall(keys.chunk_starts(job_id))
            pipe.hmget(keys.job(job_id), ["status", "owner"])
        replies = pipe.execute() if jobs else []
        out: dict[tuple[str, int], str] = {}
        for n, job_id in enumerate(jobs):
            starts, (status, owner) = replies[2 * n], replies[2 * n + 1]
            if status is None or status not in ("queued", "running", "cancelling"):
                self.r.zrem(active, job_id)  # expired, purged or final
                continue
            for chunk, at in starts.items():
                if float(at) < before:
                    out[(job_id, int(chunk))] = str(owner or "")
        return out

    def _settle(
        self,
        missing: dict[tuple[str, int], tuple[str, str, str]],
        suspects: dict[str, float],
        now: float,
    ) -> list[tuple[str, int]]:
        """Record new suspects, forget found ones (this sweep looked at every suspect's job),
        put back those missing a grace period."""
        keep: dict[str, float] = {}
        put_back: list[tuple[str, int]] = []
        for (job_id, chunk), where in sorted(missing.items()):
            field = f"{job_id}:{chunk}"
            first = suspects.get(field, now)
            if now - first < self.grace:
                keep[field] = first
                continue
            if self._put_back(job_id, chunk, *where):
                put_back.append((job_id, chunk))
        pipe = self.r.pipeline()
        pipe.delete(keys.RECONCILE_SUSPECTS)
        if keep:
            pipe.hset(keys.RECONCILE_SUSPECTS, mapping=dict(keep))  # type: ignore[arg-type]
        pipe.execute()
        return put_back

    def _put_back(self, job_id: str, chunk: int, pool: str, lane: str, owner: str) -> bool:
        raw = self.r.hget(keys.job_chunks(job_id), str(chunk))
        if raw is None:  # finished meanwhile, or its job ended or is gone: it will not run
            self.backlog.unrelease(pool, lane, job_id, chunk)  # not out there
            return False
        sends = int(self.r.hincrby(keys.chunk_deliveries(job_id), f"resent:{chunk}", 1))
        if sends > self.settings.max_deliveries:
            msg = ChunkMessage.model_validate_json(raw)
            indices = [i for seg in msg.segments for i in seg.indices]
            dead_letter(self.store, msg, indices, reason=f"chunk {chunk} was lost {sends} times")
            return False
        log.warning(
            "job %s chunk %d is in neither the queue nor a worker: back to its backlog (%d)",
            job_id,
            chunk,
            sends,
        )
        where = self.backlog.requeue(job_id, chunk, pool=pool, lane=lane, owner=owner)
        metrics.RESENT.inc()
        return where == "backlog"


def _at(value: str) -> float:
    """When a released chunk was released ("<owner>|<time>")."""
    try:
        return float(value.rsplit("|", 1)[1])
    except (IndexError, ValueError):
        return 0.0
