"""Each API key's share of the interactive lane, fleet-wide.

The interactive lane is for small requests that someone waits for. What one API key may hold
of it at once is bounded: the segments of its interactive jobs not done yet
(``MT_KEY_INTERACTIVE_SEGMENTS``) and how many such jobs (``MT_KEY_INTERACTIVE_JOBS``). Past
either, its next interactive request is refused (429 ``interactive_share_exceeded`` with
``Retry-After``), so a key that floods the lane waits for its own work while every other key
finds the lane as it would anyway. (How large one interactive job may be is the lane choice's
business: :meth:`mtfleet.api.service.JobService.lane_for`.)

The state is one hash per key (:func:`mtfleet.core.keys.api_key_interactive`), and nothing
counts into it: each check reads what is left of every job listed there from the job's own
hash, and drops the jobs that are final, cancelling or gone (``core/lua/interactive_share.lua``).
So the share is exact whichever way work ends — a chunk finished or failed, a job cancelled,
dead-lettered, expired or purged — without any worker script knowing about it, and it heals
itself: nothing can leak but a reservation whose API process died before binding it, and that
lapses after :data:`GRACE_S`.

A submission takes its share in two steps, like its characters (:class:`~mtfleet.core.apikeys
.Charge`): :meth:`InteractiveShares.reserve` before the job is written (atomic, across every API
process), :meth:`Reservation.bind` to the job made (or :meth:`Reservation.release` when the
request was refused or returned an earlier job). Without API keys nothing is counted.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio

from mtfleet.core import keys, scripts
from mtfleet.core.errors import InteractiveShareExceeded

#: Seconds a reservation counts before it is bound to its job: far longer than a submission
#: takes between the two steps (the job is written, its chunks sent).
GRACE_S = 60.0
#: Seconds a refused key is told to wait (interactive work takes about that long).
RETRY_AFTER_S = 1
_NO_LIMIT = 1 << 50


@dataclass
class Reservation:
    """Segments of a key's interactive share held for one submission under way."""

    shares: InteractiveShares | None
    owner: str
    field: str
    segments: int

    async def bind(self, job_id: str, *, final: bool) -> None:
        """Hold the share for the job made (``final``: answered at once, nothing held)."""
        shares, self.shares = self.shares, None
        if shares is not None:
            await shares._bind(self, None if final else job_id)

    async def release(self) -> None:
        """Give the segments back (the request was refused, or it returned an earlier job)."""
        shares, self.shares = self.shares, None
        if shares is not None:
            await shares._bind(self, None)


class InteractiveShares:
    """The interactive-lane shares of every API key (on the durable Redis: the job hashes
    are read in the same script). A submission reserves and binds on the event loop
    (``aclient``, the API's); :meth:`held` reads with ``r`` (an operator's or a test's look)."""

    def __init__(
        self,
        r: redis.Redis,
        *,
        segments: int,
        jobs: int,
        ttl_s: int,
        aclient: redis.asyncio.Redis | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.r = r
        self.ar = aclient
        self.segments = segments
        self.jobs = jobs
        self.ttl_s = ttl_s  # the hash lives as long as its newest job may
        self._wall = wall
        self._take: Any = scripts.register(r, "interactive_share")
        self._atake: Any = scripts.register(aclient, "interactive_share") if aclient else None

    async def reserve(self, owner: str, segments: int) -> Reservation:
        """Take ``segments`` of ``owner``'s share for a submission; raises
        :class:`InteractiveShareExceeded` when the key's interactive work not done yet would
        pass its segments or jobs (a key with none never is refused: one job is always let in).
        No owner (``MT_AUTH=off``): nothing is counted."""
        if not owner:
            return Reservation(None, owner, "", segments)
        assert self._atake is not None, "InteractiveShares built without an asyncio client"
        field = f"r:{secrets.token_hex(8)}"
        ok, held_segments, held_jobs = await self._atake(
            keys=[keys.api_key_interactive(owner)],
            args=self._args(field, segments, self.segments, self.jobs),
        )
        if not int(ok):
            raise InteractiveShareExceeded(
                f"this API key has {held_segments} interactive segments in {held_jobs} jobs "
                f"queued or being translated; it may hold {self.segments} segments in "
                f"{self.jobs} jobs at once (MT_KEY_INTERACTIVE_SEGMENTS, "
                "MT_KEY_INTERACTIVE_JOBS). Retry when some of them are done, or send large "
                'work as a bulk job (POST /v1/jobs with "lane": "bulk")',
                retry_after=RETRY_AFTER_S,
                interactive_segments=int(held_segments),
                interactive_jobs=int(held_jobs),
            )
        return Reservation(self, owner, field, segments)

    def held(self, owner: str) -> tuple[int, int]:
        """(segments, jobs) of the key's interactive work not done yet, read the way a
        reservation reads it (and so tidied the same way): a reservation of nothing, that no
        limit refuses, given back at once."""
        if not owner:
            return 0, 0
        field = f"r:{secrets.token_hex(8)}"
        try:
            _, segments, jobs = self._take(
                keys=[keys.api_key_interactive(owner)],
                args=self._args(field, 0, _NO_LIMIT, _NO_LIMIT),
            )
        finally:
            self.r.hdel(keys.api_key_interactive(owner), field)
        return int(segments), int(jobs) - 1  # not the probe itself

    def _args(self, field: str, segments: int, most_segments: int, most_jobs: int) -> list[Any]:
        """The script's arguments (core/lua/interactive_share.lua)."""
        now = repr(self._wall())
        return [keys.job(""), now, GRACE_S, most_segments, most_jobs, field, segments, self.ttl_s]

    async def _bind(self, reservation: Reservation, job_id: str | None) -> None:
        assert self.ar is not None, "InteractiveShares built without an asyncio client"
        key = keys.api_key_interactive(reservation.owner)
        pipe = self.ar.pipeline(transaction=True)
        pipe.hdel(key, reservation.field)
        if job_id is not None:
            pipe.hset(key, job_id, f"{reservation.segments} {self._wall()!r}")
            pipe.expire(key, self.ttl_s)
        await pipe.execute()
