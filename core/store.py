"""Job state in Redis: creation, idempotent result writes, progress, cancellation.

A job is a hash (metadata + ``done``/``failed``/``total`` counters) and a results hash (segment
index -> JSON outcome). Workers execute at least once; every write here is safe to repeat:

* a segment result is written with HSETNX, and progress moves only when that write was new, so a
  redelivered chunk never double-counts or overwrites a finished result;
* the final status is set once, by the write that completes the job, and announced once on
  :data:`core.keys.JOB_DONE_CHANNEL`.

Each multi-step change is one Lua script, so it is atomic and one round trip.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import redis

from core import keys
from core.errors import JobNotFound
from core.models import JobRecord, JobStatus, Lane, Progress, SegmentOutcome

_CREATE = """
-- KEYS: job, results, idem (or ''), chunk ledger, the lane's active set
-- ARGV: ttl, idem_ttl, idem_value, n_meta, n_results, created_at, meta..., results..., ledger...
local ttl = tonumber(ARGV[1])
if KEYS[3] ~= '' then
  local existing = redis.call('GET', KEYS[3])
  if existing then return existing end
  redis.call('SET', KEYS[3], ARGV[3], 'EX', tonumber(ARGV[2]))
end
local n_meta, n_results = tonumber(ARGV[4]), tonumber(ARGV[5])
local first = 7
-- One field per HSET: unpack() of thousands of values would exceed Lua's stack.
for i = first, first + n_meta - 1, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[1], ttl)
first = first + n_meta
if n_results > 0 then
  for i = first, first + n_results - 1, 2 do
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  end
  redis.call('EXPIRE', KEYS[2], ttl)
end
first = first + n_results
if #ARGV >= first then
  for i = first, #ARGV, 2 do redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1]) end
  redis.call('EXPIRE', KEYS[4], ttl)
  redis.call('ZADD', KEYS[5], tonumber(ARGV[6]), redis.call('HGET', KEYS[1], 'id'))
end
return false
"""

_RECORD = """
-- KEYS: job, results, chunk ledger, active sets...
-- ARGV: job_id, now, ttl, channel, chunk ('' = none), (index, json, ok)...
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, -1, ''} end
local nd, nf = 0, 0
for i = 6, #ARGV, 3 do
  if redis.call('HSETNX', KEYS[2], ARGV[i], ARGV[i + 1]) == 1 then
    if ARGV[i + 2] == '1' then nd = nd + 1 else nf = nf + 1 end
  end
end
-- every outcome of the chunk is written: it leaves the ledger
if ARGV[5] ~= '' then redis.call('HDEL', KEYS[3], ARGV[5]) end
local done = redis.call('HINCRBY', KEYS[1], 'done', nd)
local failed = redis.call('HINCRBY', KEYS[1], 'failed', nf)
local total = tonumber(redis.call('HGET', KEYS[1], 'total'))
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'queued' then
  redis.call('HSET', KEYS[1], 'status', 'running', 'started_at', ARGV[2])
  status = 'running'
end
if status == 'running' and done + failed >= total then
  if failed == 0 then status = 'succeeded' elseif done == 0 then status = 'failed'
  else status = 'partial' end
  redis.call('HSET', KEYS[1], 'status', status, 'finished_at', ARGV[2])
  redis.call('DEL', KEYS[3])
  for k = 4, #KEYS do redis.call('ZREM', KEYS[k], ARGV[1]) end
  redis.call('PUBLISH', ARGV[4], ARGV[1])
end
local ttl = tonumber(ARGV[3])
redis.call('EXPIRE', KEYS[1], ttl)
redis.call('EXPIRE', KEYS[2], ttl)
return {done, failed, status}
"""

_START_CHUNK = """
-- KEYS: job, deliveries, results, the lane's started mark (or '')
-- ARGV: chunk, now, ttl, enqueued_at, index...
-- -> {status, deliveries of this chunk, indices (of ARGV[5..]) that already have a result}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'', 0, {}} end
local status = redis.call('HGET', KEYS[1], 'status')
local n = redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[3]))
if n == 1 and KEYS[4] ~= '' then
  local mark = tonumber(redis.call('GET', KEYS[4]) or '0')
  if tonumber(ARGV[4]) > mark then redis.call('SET', KEYS[4], ARGV[4]) end
end
if status == 'queued' then
  redis.call('HSET', KEYS[1], 'status', 'running', 'started_at', ARGV[2])
  status = 'running'
end
local done = {}
-- only this chunk writes these indices: a first delivery cannot find results
if n > 1 and #ARGV > 4 then
  local present = redis.call('HMGET', KEYS[3], unpack(ARGV, 5))
  for i = 1, #present do
    if present[i] then done[#done + 1] = ARGV[i + 4] end
  end
end
return {status, n, done}
"""

_CANCEL = """
-- KEYS: job, chunk ledger, active sets...   ARGV: job_id, now, channel
-- -> status after the call ('' when missing)
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return '' end
if status == 'queued' or status == 'running' then
  redis.call('HSET', KEYS[1], 'status', 'cancelled', 'finished_at', ARGV[2])
  redis.call('DEL', KEYS[2])
  for k = 3, #KEYS do redis.call('ZREM', KEYS[k], ARGV[1]) end
  redis.call('PUBLISH', ARGV[3], ARGV[1])
  return 'cancelled'
end
return status
"""

_FAIL = """
-- KEYS: job, idem (or ''), chunk ledger, active sets...   ARGV: job_id, now, channel, error_json
-- Fail a job that cannot run at all, and free its Idempotency-Key so a retry makes a new job.
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'queued' or status == 'running' then
  redis.call('HSET', KEYS[1], 'status', 'failed', 'finished_at', ARGV[2], 'error', ARGV[4])
  redis.call('DEL', KEYS[3])
  for k = 4, #KEYS do redis.call('ZREM', KEYS[k], ARGV[1]) end
  redis.call('PUBLISH', ARGV[3], ARGV[1])
end
if KEYS[2] ~= '' then
  local v = redis.call('GET', KEYS[2])
  if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
end
return status
"""


_DEAD_LETTER = """
-- KEYS: deliveries, dead-letter list   ARGV: chunk, now, entry
-- One entry per chunk, however often this runs (a client retrying after a lost reply too).
if redis.call('HSETNX', KEYS[1], 'dead-lettered:' .. ARGV[1], ARGV[2]) == 1 then
  redis.call('LPUSH', KEYS[2], ARGV[3])
  return 1
end
return 0
"""


def new_job_id() -> str:
    return uuid.uuid4().hex


def encode_outcome(outcome: SegmentOutcome) -> str:
    return outcome.model_dump_json(exclude_none=True, exclude_defaults=True)


def decode_outcome(raw: str) -> SegmentOutcome:
    return SegmentOutcome.model_validate_json(raw)


class JobStore:
    """Job state on the durable Redis (``MT_REDIS_URL``)."""

    def __init__(self, client: redis.Redis, *, result_ttl_s: int) -> None:
        self.r = client
        self.ttl = result_ttl_s
        self._create = client.register_script(_CREATE)
        self._record = client.register_script(_RECORD)
        self._start = client.register_script(_START_CHUNK)
        self._cancel = client.register_script(_CANCEL)
        self._fail = client.register_script(_FAIL)
        self._dead = client.register_script(_DEAD_LETTER)

    # -- API side ------------------------------------------------------------------------------
    def create(
        self,
        *,
        job_id: str,
        source: str,
        target: str,
        lane: Lane,
        total: int,
        chunks: int,
        cached: dict[int, SegmentOutcome],
        idempotency: tuple[str, str, int] | None = None,
        extra: dict[str, str] | None = None,
        now: float | None = None,
        ledger: dict[int, str] | None = None,
    ) -> str | None:
        """Store a new job atomically. Returns None, or the idempotency key's earlier value.

        ``idempotency`` is (redis key, value to store, ttl); when the key already exists nothing
        is written and its value comes back (``"<job id> <request digest>"``). ``ledger`` maps
        each chunk number to its message (JSON): kept until the chunk is finished, so a chunk
        the broker lost can be sent again (:mod:`workers.reconciler`).
        """
        now = time.time() if now is None else now
        done = len(cached)
        status = JobStatus.succeeded if done == total else JobStatus.queued
        meta: dict[str, Any] = {
            "id": job_id,
            "status": status.value,
            "source_lang": source,
            "target_lang": target,
            "lane": lane.value,
            "total": total,
            "done": done,
            "failed": 0,
            "cached": done,
            "chunks": chunks,
            "created_at": now,
            **(extra or {}),
        }
        if status is JobStatus.succeeded:
            meta["finished_at"] = now
        flat_meta = [str(x) for kv in meta.items() for x in kv]
        flat_results = [str(x) for i, o in cached.items() for x in (i, encode_outcome(o))]
        flat_ledger = [str(x) for kv in (ledger or {}).items() for x in kv]
        idem_key, idem_value, idem_ttl = idempotency or ("", "", 0)
        existing = self._create(
            keys=[
                keys.job(job_id),
                keys.job_results(job_id),
                idem_key,
                keys.job_chunks(job_id),
                keys.active(lane.value),
            ],
            args=[
                self.ttl,
                idem_ttl,
                idem_value,
                len(flat_meta),
                len(flat_results),
                now,
                *flat_meta,
                *flat_results,
                *flat_ledger,
            ],
        )
        return str(existing) if existing else None

    def cancel(self, job_id: str) -> JobStatus:
        status = self._cancel(
            keys=[keys.job(job_id), keys.job_chunks(job_id), *keys.ACTIVE_KEYS],
            args=[job_id, time.time(), keys.JOB_DONE_CHANNEL],
        )
        if not status:
            raise JobNotFound(f"job {job_id} not found (it may have expired)")
        return JobStatus(status)

    def fail(self, job_id: str, error: dict[str, Any], idempotency_key: str = "") -> None:
        """Fail a whole job that cannot run (e.g. its chunks could not be enqueued).

        ``idempotency_key`` (the Redis key) is released if it still points at this job, so a
        client retrying after the 503 gets a new job rather than this failed one.
        """
        self._fail(
            keys=[keys.job(job_id), idempotency_key, keys.job_chunks(job_id), *keys.ACTIVE_KEYS],
            args=[job_id, time.time(), keys.JOB_DONE_CHANNEL, json.dumps(error)],
        )

    def put_document(self, job_id: str, content: bytes) -> None:
        """Keep a document job's original file (written before the job, so a job never
        exists without it; an orphan left by a refused job expires with the TTL)."""
        self.r.set(keys.job_document(job_id), base64.b64encode(content).decode(), ex=self.ttl)

    def get_document(self, job_id: str) -> bytes | None:
        raw = self.r.get(keys.job_document(job_id))
        return base64.b64decode(str(raw)) if raw is not None else None

    def purge(self, job_id: str) -> None:
        """Delete a job and everything stored for it (texts, results, delivery counts). A
        running job is cancelled first; a chunk still in a worker then writes nothing (every
        worker write checks that the job exists). Raises JobNotFound when it does not exist."""
        self.cancel(job_id)
        self.r.delete(*keys.job_all(job_id))

    # -- worker side ---------------------------------------------------------------------------
    def start_chunk(
        self,
        job_id: str,
        chunk: int,
        indices: Sequence[int] = (),
        *,
        lane: str | None = None,
        enqueued_at: float = 0.0,
    ) -> tuple[JobStatus | None, int, set[int]]:
        """Count a delivery of ``chunk`` and mark the job running, in one round trip:
        (status, deliveries so far, those of ``indices`` that still need a result). A first
        delivery also moves the lane's started mark to ``enqueued_at``."""
        status, n, done = self._start(
            keys=[
                keys.job(job_id),
                keys.chunk_deliveries(job_id),
                keys.job_results(job_id),
                keys.lane_started(lane) if lane else "",
            ],
            args=[chunk, time.time(), self.ttl, enqueued_at, *indices],
        )
        finished = {int(i) for i in done}
        return (JobStatus(status) if status else None), int(n), set(indices) - finished

    def record(
        self,
        job_id: str,
        outcomes: Iterable[tuple[int, SegmentOutcome]],
        *,
        chunk: int | None = None,
    ) -> JobStatus | None:
        """Write outcomes idempotently; returns the job status after the write (None: gone).
        With ``chunk``, these are all of that chunk's outstanding outcomes: it leaves the
        ledger in the same step."""
        args: list[Any] = [
            job_id,
            time.time(),
            self.ttl,
            keys.JOB_DONE_CHANNEL,
            "" if chunk is None else chunk,
        ]
        for index, outcome in outcomes:
            args += [index, encode_outcome(outcome), "1" if outcome.ok else "0"]
        _done, _failed, status = self._record(
            keys=[
                keys.job(job_id),
                keys.job_results(job_id),
                keys.job_chunks(job_id),
                *keys.ACTIVE_KEYS,
            ],
            args=args,
        )
        return JobStatus(status) if status else None

    def dead_letter(self, job_id: str, chunk: int, entry: str) -> bool:
        """List ``entry`` (JSON) on the dead-letter list once per chunk; True if this call
        did."""
        return bool(
            self._dead(
                keys=[keys.chunk_deliveries(job_id), keys.DEAD_LETTER],
                args=[chunk, time.time(), entry],
            )
        )

    # -- reads ---------------------------------------------------------------------------------
    def get(self, job_id: str) -> JobRecord:
        raw = self.r.hgetall(keys.job(job_id))
        if not raw:
            raise JobNotFound(f"job {job_id} not found (it may have expired)")
        return parse_job({str(k): str(v) for k, v in raw.items()})

    def status(self, job_id: str) -> JobStatus | None:
        raw = self.r.hget(keys.job(job_id), "status")
        return JobStatus(str(raw)) if raw else None

    def results(self, job_id: str, total: int) -> list[SegmentOutcome | None]:
        raw = self.r.hgetall(keys.job_results(job_id))
        out: list[SegmentOutcome | None] = [None] * total
        for k, v in raw.items():
            i = int(k)
            if 0 <= i < total:
                out[i] = decode_outcome(str(v))
        return out


def parse_job(raw: dict[str, str]) -> JobRecord:
    def opt_float(name: str) -> float | None:
        v = raw.get(name)
        return float(v) if v else None

    return JobRecord(
        id=raw["id"],
        status=JobStatus(raw["status"]),
        source_lang=raw["source_lang"],
        target_lang=raw["target_lang"],
        lane=Lane(raw["lane"]),
        progress=Progress(
            done=int(raw.get("done", 0)), failed=int(raw.get("failed", 0)), total=int(raw["total"])
        ),
        created_at=float(raw["created_at"]),
        started_at=opt_float("started_at"),
        finished_at=opt_float("finished_at"),
        chunks=int(raw.get("chunks", 0)),
        cached=int(raw.get("cached", 0)),
        error=json.loads(raw["error"]) if raw.get("error") else None,
        owner=raw.get("owner", ""),
        document_format=raw.get("document_format") or None,
        document_name=raw.get("document_name") or None,
        detected_source_lang=raw.get("detected_source_lang") or None,
        segment_langs=json.loads(raw["segment_langs"]) if raw.get("segment_langs") else None,
    )
