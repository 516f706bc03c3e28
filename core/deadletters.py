"""The dead-letter list: chunks that exhausted their deliveries, kept a bounded time for an
operator to look at, retry or purge (``mtfleet dead-letters list | retry | purge``).

* **listed** once per chunk, by the step that dead-letters it (``dead_letter.lua``), which also
  keeps the chunk's message beside its job (:func:`mtfleet.core.keys.dead_chunks`, as long as
  the job) and trims the list: at most ``MT_DEAD_LETTER_MAX`` entries, none listed more than
  ``MT_DEAD_LETTER_TTL_S`` ago, and the list itself expires that long after its newest entry;
* **retry** (``dead_letter_retry.lua``, one step): the chunk's dead-lettered segments are
  pending again (their failures leave the results and the job's counters), its delivery counts
  start again, and it goes back on its job's ledger and to the front of its API key's backlog,
  as a requeue does; a job that had ended because of it runs again, and its new end is
  announced as any end is (job-done event, webhook). A job that expired, was purged or
  cancelled, or that failed as a whole, is not re-opened;
* **purge** drops entries, and the messages kept for them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import redis

from mtfleet.core import keys, scripts
from mtfleet.core.backlog import job_keys


def entry(job_id: str, chunk: int, lane: str, reason: str) -> str:
    """A chunk's dead-letter entry (JSON), as :meth:`DeadLetters.add` lists it and
    :meth:`DeadLetter.parse` reads it back."""
    return json.dumps(
        {"job_id": job_id, "chunk": chunk, "reason": reason, "at": time.time(), "lane": lane}
    )


@dataclass(frozen=True)
class DeadLetter:
    """One entry, as listed (``raw``: its JSON, what a retry or purge removes)."""

    raw: str
    job_id: str | None
    chunk: int | None
    reason: str
    at: float | None
    lane: str | None

    @classmethod
    def parse(cls, raw: str) -> DeadLetter:
        try:
            entry: Any = json.loads(raw)
        except ValueError:
            entry = None
        if not isinstance(entry, dict):
            return cls(raw, None, None, raw[:500], None, None)
        job_id, chunk, at, lane = (entry.get(k) for k in ("job_id", "chunk", "at", "lane"))
        return cls(
            raw,
            job_id if isinstance(job_id, str) else None,
            chunk if isinstance(chunk, int) and not isinstance(chunk, bool) else None,
            str(entry.get("reason", "")),
            float(at) if isinstance(at, int | float) else None,
            lane if isinstance(lane, str) else None,
        )

    def public(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "chunk": self.chunk,
            "lane": self.lane,
            "at": self.at,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Retried:
    """What a retry did: ``outcome`` 'requeued' (``segments`` pending again), 'done' (nothing
    of it was left to do; the entry left), 'gone' (its job expired or was purged),
    'no_message' (the chunk's message is not kept: listed by an older version, or not a
    chunk), or the status of a job that is not re-opened ('cancelling', 'cancelled',
    'failed')."""

    entry: DeadLetter
    outcome: str
    segments: int = 0


class DeadLetters:
    def __init__(self, client: redis.Redis, *, max_entries: int, ttl_s: int) -> None:
        self.r = client
        self.max_entries = max_entries
        self.ttl_s = ttl_s
        self._add = scripts.register(client, "dead_letter")
        self._trim = scripts.register(client, "dead_letter_trim")
        self._retry = scripts.register(client, "dead_letter_retry")

    def add(self, job_id: str, chunk: int, entry: str) -> bool:
        """List ``entry`` (JSON, with its ``at``) once per chunk; True if this call did."""
        return bool(
            self._add(
                keys=[
                    keys.chunk_deliveries(job_id),
                    keys.DEAD_LETTER,
                    keys.job_chunks(job_id),
                    keys.dead_chunks(job_id),
                    keys.job(job_id),
                ],
                args=[chunk, time.time(), entry, self.max_entries, self.ttl_s],
            )
        )

    def entries(self, job_id: str | None = None, chunk: int | None = None) -> list[DeadLetter]:
        """The entries (newest first; the list trimmed to its bounds first), or those of one
        job (and chunk)."""
        self._trim(keys=[keys.DEAD_LETTER], args=[time.time(), self.max_entries, self.ttl_s])
        found = [DeadLetter.parse(str(raw)) for raw in self.r.lrange(keys.DEAD_LETTER, 0, -1)]
        return [
            e
            for e in found
            if (job_id is None or e.job_id == job_id) and (chunk is None or e.chunk == chunk)
        ]

    def purge(self, entries: Iterable[DeadLetter]) -> int:
        """Drop ``entries`` and the messages kept for them; how many were still listed."""
        entries = list(entries)
        pipe = self.r.pipeline(transaction=False)
        for e in entries:
            pipe.lrem(keys.DEAD_LETTER, 1, e.raw)
            if e.job_id is not None and e.chunk is not None and keys.is_id(e.job_id):
                pipe.hdel(keys.dead_chunks(e.job_id), str(e.chunk))
        replies = pipe.execute() if entries else []
        n, i = 0, 0
        for e in entries:
            n += int(replies[i])
            i += 2 if e.job_id is not None and e.chunk is not None and keys.is_id(e.job_id) else 1
        return n

    def retry(self, entry: DeadLetter) -> Retried:
        """Send the entry's chunk again (see the module)."""
        job_id, chunk = entry.job_id, entry.chunk
        if job_id is None or chunk is None or not keys.is_id(job_id):
            return Retried(entry, "no_message")
        pool, lane, owner = self.r.hmget(keys.job(job_id), ["pool", "lane", "owner"])
        if pool is None or lane is None:
            return Retried(entry, "gone")
        pool, lane, owner = str(pool), str(lane), str(owner or "")
        outcome, segments = self._retry(
            keys=[
                keys.job(job_id),
                keys.job_results(job_id),
                keys.job_chunks(job_id),
                keys.chunk_deliveries(job_id),
                keys.chunk_starts(job_id),
                keys.dead_chunks(job_id),
                keys.DEAD_LETTER,
                keys.active(pool, lane),
                keys.webhook(job_id),
                keys.WEBHOOKS_DUE,
                *job_keys(job_id, pool, lane, owner),
            ],
            args=[job_id, chunk, entry.raw, owner],
        )
        return Retried(entry, str(outcome), int(segments))
