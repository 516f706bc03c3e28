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
hash, and drops the jobs that are final, cancelling or gone (``share_held`` in
``core/lua/lib.lua``). So the share is exact whichever way work ends — a chunk finished or
failed, a job cancelled, dead-lettered, expired or purged — without any worker script knowing
about it, and it heals itself.

A job takes its share in the step that stores it (:class:`Share`, ``core/lua/create_job.lua``,
with its characters): a request refused or cancelled before that step holds nothing, and a job
stored holds its share until it ends. A job answered whole at submission (the phrase cache)
holds none. Without API keys nothing is counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis

from mtfleet.core import keys, scripts
from mtfleet.core.errors import InteractiveShareExceeded

#: Seconds a refused key is told to wait (interactive work takes about that long).
RETRY_AFTER_S = 1


@dataclass
class Share:
    """``segments`` of a key's interactive share, for the job about to be stored: taken in the
    step that stores it unless the key's interactive work not done yet would pass
    ``most_segments`` or ``most_jobs`` (a key with none is never refused: one job is always
    let in)."""

    redis_key: str  # keys.api_key_interactive
    segments: int
    most_segments: int
    most_jobs: int
    ttl_s: int  # the hash lives as long as its newest job may

    def exceeded(self, segments: int, jobs: int) -> InteractiveShareExceeded:
        """The refusal, with the key holding ``segments`` in ``jobs``."""
        return InteractiveShareExceeded(
            f"this API key has {segments} interactive segments in {jobs} jobs "
            f"queued or being translated; it may hold {self.most_segments} segments in "
            f"{self.most_jobs} jobs at once (MT_KEY_INTERACTIVE_SEGMENTS, "
            "MT_KEY_INTERACTIVE_JOBS). Retry when some of them are done, or send large "
            'work as a bulk job (POST /v1/jobs with "lane": "bulk")',
            retry_after=RETRY_AFTER_S,
            interactive_segments=segments,
            interactive_jobs=jobs,
        )


class InteractiveShares:
    """The interactive-lane shares of every API key (on the durable Redis: the job hashes are
    read in the same script)."""

    def __init__(self, r: redis.Redis, *, segments: int, jobs: int, ttl_s: int) -> None:
        self.r = r
        self.segments = segments
        self.jobs = jobs
        self.ttl_s = ttl_s
        self._held: Any = scripts.register(r, "interactive_share")

    def share(self, owner: str, segments: int) -> Share | None:
        """What a job of ``segments`` takes of ``owner``'s share (None without an owner:
        ``MT_AUTH=off`` counts nothing)."""
        if not owner:
            return None
        return Share(
            keys.api_key_interactive(owner), segments, self.segments, self.jobs, self.ttl_s
        )

    def held(self, owner: str) -> tuple[int, int]:
        """(segments, jobs) of the key's interactive work not done yet, read as a new job is
        checked against it (and so tidied the same way): an operator's or a test's look."""
        if not owner:
            return 0, 0
        segments, jobs = self._held(keys=[keys.api_key_interactive(owner)], args=[keys.job("")])
        return int(segments), int(jobs)
