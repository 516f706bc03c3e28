"""A cancelled job stops using the engine: its segments still buffered leave the scheduler and
those inside the engine are aborted (vLLM frees their sequences at its next step).

A worker follows only the jobs it holds a chunk of, each on the job's own channel
(:func:`mtfleet.core.keys.job_events`, published with every job-done and cancel event): the
fleet's other jobs cost it no message and no read, however many there are. One listener thread
per process looks at what is held every :data:`POLL_S` and subscribes or unsubscribes to match
(a chunk done sooner costs no subscription at all). When a subscription is confirmed, and on
each event of a held job, the job's status is read (one pipelined read for all of them): a
status of ``cancelling`` (or ``cancelled``) cancels the job's work here. The read at
confirmation covers what happened before it; after a reconnect every held job is subscribed,
so read, again (pub/sub is at-most-once).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

import redis

from mtfleet.core import keys
from mtfleet.core.backoff import RECONNECT
from mtfleet.core.models import JobStatus
from mtfleet.core.store import JobStore
from mtfleet.workers.hooks import Hook
from mtfleet.workers.scheduler import Scheduler

log = logging.getLogger(__name__)

#: How often the listener matches its subscriptions to the jobs held (and waits for events).
POLL_S = 0.1
#: Most messages handled per round.
MAX_MESSAGES = 1000
_PREFIX = keys.job_events("")
_STOPPED = {JobStatus.cancelling.value, JobStatus.cancelled.value}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Cancellations(Hook):
    name = "cancellations"

    def __init__(
        self,
        client: redis.Redis,
        store: JobStore,
        scheduler: Callable[[], Scheduler],
        held: Callable[[], set[str]],
    ) -> None:
        """``held``: the jobs this worker has chunks of in progress now."""
        self.r = client
        self.store = store
        self.scheduler = scheduler
        self.held = held
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def ready(self, consumer: Any) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="mt-cancellations", daemon=True)
            self._thread.start()

    def shutdown(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            pubsub = self.r.pubsub()
            following: set[str] = set()  # a new connection follows nothing yet
            try:
                while not self._stop.is_set():
                    following = self._follow(pubsub, following)
                    self._look(self._heard(pubsub))
                    failures = 0
            except Exception as exc:  # noqa: BLE001 - the listener must outlive any failure
                if self._stop.is_set():
                    break
                log.warning("cancellation listener lost Redis (%s); retrying", exc)
                self._stop.wait(RECONNECT.wait_s(failures))
                failures += 1
            finally:
                with contextlib.suppress(Exception):  # closing a broken connection
                    pubsub.close()

    def _follow(self, pubsub: Any, following: set[str]) -> set[str]:
        """Subscribe to the jobs held now and not followed yet; leave the others."""
        held = self.held()
        new, gone = held - following, following - held
        if new:
            pubsub.subscribe(*(keys.job_events(j) for j in new))
        if gone:
            pubsub.unsubscribe(*(keys.job_events(j) for j in gone))
        return held

    def _heard(self, pubsub: Any) -> set[str]:
        """The jobs whose subscription was confirmed, or that had an event, within POLL_S."""
        jobs: set[str] = set()
        msg = pubsub.get_message(timeout=POLL_S)
        for _ in range(MAX_MESSAGES):
            if msg is None:
                break
            if msg.get("type") in ("subscribe", "message"):
                jobs.add(_text(msg["channel"]).removeprefix(_PREFIX))
            msg = pubsub.get_message(timeout=0)
        return jobs

    def _look(self, jobs: set[str]) -> None:
        """Read the status of those of ``jobs`` still held; cancel the work of stopped ones."""
        jobs &= self.held()
        if not jobs:
            return
        pipe = self.r.pipeline(transaction=False)
        for job_id in sorted(jobs):
            pipe.hget(keys.job(job_id), "status")
        for job_id, status in zip(sorted(jobs), pipe.execute(), strict=True):
            if status is not None and _text(status) in _STOPPED:
                n = self.scheduler().cancel_job(job_id)
                log.info("job %s cancelled: %d segment(s) dropped or aborted", job_id, n)
