"""Find chunks the broker lost and send them again.

Celery's Redis transport has one window in which a message exists nowhere: kombu pops it with
``BRPOP`` and only then writes it to its ``unacked`` hash, from the client. A worker killed (or a
connection cut) between the two loses the message for good, and its job would stay ``running``
forever. The visibility timeout cannot help: it only restores what reached ``unacked``.

mtfleet therefore keeps its own ledger. The API writes every chunk message into the job's
ledger hash (:func:`core.keys.job_chunks`) in the same step that creates the job, and a chunk
leaves the ledger in the same step that writes its last result. Once per
``MT_RECONCILE_INTERVAL_S`` one worker (a short Redis lock elects it) sweeps the jobs that
should have been fetched by now:

* a lane's queue is first in, first out, so a job created well before the lane's *started
  mark* (the newest ``enqueued_at`` of any chunk started on the lane) has had every chunk
  fetched at least once; when the queue is empty, every active job qualifies;
* each of their unfinished chunks must then be either held by a worker (kombu's ``unacked``
  hash) or back in the queue after a restore (restored messages go to the fetching end; the
  last ``SCAN_TAIL`` messages are read);
* a chunk found in neither place becomes a suspect; still missing one grace period later (a
  message in the BRPOP window reaches ``unacked`` within microseconds), it is sent again from
  the ledger.

A wrong guess costs one duplicate message, which is harmless: every result is written once
(HSETNX) and a chunk whose segments all have results does no work. A chunk re-sent
``MT_MAX_DELIVERIES`` times is dead-lettered like a poison chunk.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import TYPE_CHECKING, Any

import redis
from celery import Celery

from core import keys
from core.broker import send_chunk
from core.models import ChunkMessage
from workers import metrics

if TYPE_CHECKING:
    from workers.runtime import WorkerRuntime

log = logging.getLogger(__name__)

#: Messages read from the fetching end of a queue to find restored chunks.
SCAN_TAIL = 2000
#: Most active jobs looked at per lane and sweep (the oldest first).
MAX_JOBS = 500

_TASK_ID = re.compile(r'"id":\s*"([0-9a-f]{32})\.(\d+)\.')


def chunk_ids(raw_messages: list[str]) -> set[tuple[str, int]]:
    """(job id, chunk) of every broker message in ``raw_messages`` (kombu's JSON envelopes,
    from a queue or the unacked hash); the task id in the headers names the chunk."""
    found = set()
    for raw in raw_messages:
        m = _TASK_ID.search(raw)
        if m:
            found.add((m.group(1), int(m.group(2))))
    return found


class Reconciler:
    def __init__(self, rt: WorkerRuntime, app: Celery) -> None:
        self.rt = rt
        self.r: redis.Redis = rt.redis
        self.app = app
        self.interval = float(rt.settings.reconcile_interval_s)
        # A chunk must stay missing this long before it is re-sent; jobs younger than this
        # (still being published) and chunks enqueued less than this before the lane's
        # started mark are left alone.
        self.grace = max(2 * self.interval, 5.0)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the loop --------------------------------------------------------------------------
    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self.interval):
                try:
                    self.sweep()
                except Exception as exc:  # noqa: BLE001 - Redis may be away; try again later
                    log.warning("reconciler sweep failed: %s", exc)

        self._thread = threading.Thread(target=loop, name="mt-reconciler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _lead(self) -> bool:
        """Hold the sweep lock (one reconciler at a time across the fleet)."""
        ttl_ms = int(self.interval * 2000)
        if self.r.set(keys.RECONCILE_LOCK, self.rt.name, nx=True, px=ttl_ms):
            return True
        if self.r.get(keys.RECONCILE_LOCK) == self.rt.name:
            self.r.pexpire(keys.RECONCILE_LOCK, ttl_ms)
            return True
        return False

    # -- one sweep -------------------------------------------------------------------------
    def sweep(self, now: float | None = None) -> list[tuple[str, int]]:
        """Look once; returns the (job, chunk) pairs sent again."""
        if not self._lead():
            return []
        now = time.time() if now is None else now
        live_lanes = {lane for w in self.rt.registry.live_workers() for lane in w.lanes}
        held: set[tuple[str, int]] | None = None
        missing: set[tuple[str, int]] = set()
        for lane in keys.LANES:
            if lane not in live_lanes:
                continue  # nobody would fetch a re-sent chunk; the queue keeps its messages
            queue = keys.queue(lane)
            depth = int(self.r.llen(queue))
            mark = float(self.r.get(keys.lane_started(lane)) or 0.0)
            newest = now - self.grace if depth == 0 else min(now, mark) - self.grace
            jobs = [
                str(j)
                for j in self.r.zrangebyscore(
                    keys.active(lane), "-inf", newest, start=0, num=MAX_JOBS
                )
            ]
            if not jobs:
                continue
            if held is None:
                held = chunk_ids([str(v) for v in self.r.hvals(keys.KOMBU_UNACKED)])
            queued = (
                chunk_ids([str(v) for v in self.r.lrange(queue, -SCAN_TAIL, -1)])
                if depth
                else set()
            )
            for job_id in jobs:
                chunks = self.r.hkeys(keys.job_chunks(job_id))
                if not chunks:
                    status = self.r.hget(keys.job(job_id), "status")
                    if status is None or status not in ("queued", "running"):
                        self.r.zrem(keys.active(lane), job_id)  # expired, purged or final
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
        if sends > self.rt.settings.max_deliveries:
            indices = [i for seg in msg.segments for i in seg.indices]
            self.rt.dead_letter(msg, indices, reason=f"chunk {chunk} was lost {sends} times")
            return False
        log.warning(
            "job %s chunk %d is in neither the queue nor a worker: sending it again (%d)",
            job_id,
            chunk,
            sends,
        )
        send_chunk(self.app, msg)
        metrics.RESENT.inc()
        return True


def start(rt: WorkerRuntime, app: Any) -> Reconciler:
    rec = Reconciler(rt, app)
    rec.start()
    return rec
