"""Where a pool lane's work waits: a backlog the fleet owns, released to the broker a little at a
time and fairly between API keys.

The broker queue Celery consumes (``mt.<pool>.<lane>``) stays shallow: it holds at most
``MT_RELEASE_AHEAD`` chunks. Everything else waits here, in Redis structures the fleet owns
(:mod:`mtfleet.core.keys`, "the backlog"), changed only by Lua scripts, each one atomic step:

* a new job's chunks join its API key's backlog in the step that stores the job
  (``create_job.lua``): a job is never stored without its work being somewhere;
* :meth:`Backlog.release` (``release.lua``) hands chunks to the broker until its queue holds
  the target: the API calls it after each submission, each worker after each chunk and a few
  times a second. Keys with work waiting take turns, each for as many chunks as its weight
  (``mtfleet keys set-weight``; 1 by default): deficit round robin with a chunk as the unit. A
  key's own jobs go in the order they came. So one key's ten million segments make another
  key's 200-line job wait for its turn, not for all of them;
* a chunk a worker cannot finish (its engine is down, its budget ran out, it failed) goes back
  to the front of its key's backlog (:meth:`Backlog.requeue`), or aside for its backoff;
* a cancelled or failed job's waiting chunks leave at once (``cancel_job.lua``,
  ``fail_job.lua``).

Where every chunk is, is state: its job's pending list (waiting), the lane's released hash
(handed to the broker, not started by a worker yet), the job's in-flight starts (a worker has
it), its ledger until it is finished. The reconciler checks the released and the in-flight
ones against the shallow broker queue and the workers' unacknowledged messages
(:mod:`mtfleet.workers.reconciler`); nothing is inferred from list positions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import redis

from mtfleet.core import keys, scripts

#: Most backlog entries one release looks at (skipped chunks of cancelled jobs included): a
#: release stays a short script whatever waits.
RELEASE_STEPS = 2_000

_JOB_PREFIX = keys.job("")
_LEDGER_SUFFIX = keys.job_chunks("").removeprefix(_JOB_PREFIX)
_PENDING_SUFFIX = keys.job_pending("").removeprefix(_JOB_PREFIX)
_KEY_PREFIX = keys.api_key("")


def job_keys(job_id: str, pool: str, lane: str, owner: str) -> list[str]:
    """A job's place in its pool lane's backlog, as the scripts take it: its pending list, its
    owner's list, the ring, the sizes, the credits."""
    return [
        keys.job_pending(job_id),
        keys.backlog_owner(pool, lane, owner),
        keys.backlog_ring(pool, lane),
        keys.backlog_sizes(pool, lane),
        keys.backlog_credit(pool, lane),
    ]


@dataclass(frozen=True)
class Released:
    """A chunk a release took from the backlog: its entry in the lane's released hash (job,
    chunk, owner) and its message as its job's ledger holds it (JSON, not checked yet)."""

    job_id: str
    chunk: int
    owner: str
    payload: str


@dataclass(frozen=True)
class Waiting:
    """What waits in one pool lane: chunks per API key in the backlog, and messages in the
    broker queue."""

    by_key: dict[str, int]
    in_broker: int

    @property
    def total(self) -> int:
        return sum(self.by_key.values()) + self.in_broker


class Backlog:
    def __init__(self, client: redis.Redis, *, ttl_s: int) -> None:
        self.r = client
        self.ttl_s = ttl_s
        self._release = scripts.register(client, "release")
        self._requeue = scripts.register(client, "requeue")

    def release(self, pool: str, lane: str, target: int) -> list[Released]:
        """Chunks taken from the backlog for the broker, so that its queue holds ``target``;
        the caller publishes them (:func:`mtfleet.core.broker.release`)."""
        reply = self._release(
            keys=[
                keys.backlog_ring(pool, lane),
                keys.backlog_sizes(pool, lane),
                keys.backlog_credit(pool, lane),
                keys.backlog_released(pool, lane),
                keys.backlog_delayed(pool, lane),
                keys.queue(pool, lane),
            ],
            args=[
                keys.backlog_owner_prefix(pool, lane),
                _JOB_PREFIX,
                _LEDGER_SUFFIX,
                _PENDING_SUFFIX,
                _KEY_PREFIX,
                time.time(),
                target,
                RELEASE_STEPS,
            ],
        )
        return [
            Released(str(reply[i]), int(reply[i + 1]), str(reply[i + 2]), str(reply[i + 3]))
            for i in range(0, len(reply), 4)
        ]

    def requeue(
        self,
        job_id: str,
        chunk: int,
        *,
        pool: str,
        lane: str,
        owner: str,
        delay_s: float = 0.0,
    ) -> str:
        """Put a chunk a worker could not finish back: at the front of its key's backlog, or
        after ``delay_s`` (a failure's backoff). Returns where it went ('backlog',
        'delayed'), or why it did not (its job's status, 'done', 'gone')."""
        return str(
            self._requeue(
                keys=[
                    keys.job(job_id),
                    keys.job_chunks(job_id),
                    keys.chunk_starts(job_id),
                    keys.backlog_released(pool, lane),
                    keys.backlog_delayed(pool, lane),
                    *job_keys(job_id, pool, lane, owner),
                ],
                args=[
                    job_id,
                    chunk,
                    owner,
                    self.ttl_s,
                    time.time() + delay_s if delay_s > 0 else "",
                ],
            )
        )

    def unrelease(self, pool: str, lane: str, job_id: str, chunk: int) -> None:
        """Take a released chunk that will not run (its ledger no longer holds it: finished,
        or its job ended or is gone) off its lane's released hash, so it no longer counts
        against what the lane may release."""
        self.r.hdel(keys.backlog_released(pool, lane), f"{job_id}:{chunk}")

    def waiting(self, pool: str, lane: str, client: Any = None) -> Waiting:
        """What waits in a pool lane now (one round trip)."""
        return _waiting(self._waiting_pipe(client or self.r, pool, lane).execute())

    async def awaiting(self, aclient: Any, pool: str, lane: str) -> Waiting:
        """:meth:`waiting` through an asyncio client (the API's)."""
        return _waiting(await self._waiting_pipe(aclient, pool, lane).execute())

    @staticmethod
    def _waiting_pipe(client: Any, pool: str, lane: str) -> Any:
        pipe = client.pipeline(transaction=False)
        pipe.hgetall(keys.backlog_sizes(pool, lane))
        pipe.llen(keys.queue(pool, lane))
        return pipe


def _waiting(replies: list[Any]) -> Waiting:
    sizes, depth = replies
    return Waiting({str(k): int(v) for k, v in sizes.items() if int(v) > 0}, int(depth))
