"""A cancelled job stops using the engine: its segments still buffered leave the scheduler and
those inside the engine are aborted (vLLM frees their sequences at its next step).

The worker listens to the job-done events (:class:`~mtfleet.core.events.JobEvents`); for a job
it holds work of, a status of ``cancelling`` (or ``cancelled``) cancels that work. After a
reconnect, every held job is looked at again (events published meanwhile are lost).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import redis

from mtfleet.core.events import JobEvents
from mtfleet.core.models import JobStatus
from mtfleet.core.store import JobStore
from mtfleet.workers.hooks import Hook
from mtfleet.workers.scheduler import Scheduler

log = logging.getLogger(__name__)


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
        self.store = store
        self.scheduler = scheduler
        self.held = held
        self.events = JobEvents(client, self.job_done, self.recheck, name="mt-cancellations")

    def ready(self, consumer: Any) -> None:
        self.events.start()

    def shutdown(self) -> None:
        self.events.stop()

    def job_done(self, job_id: str) -> None:
        if job_id not in self.held():
            return
        if self.store.status(job_id) in (JobStatus.cancelling, JobStatus.cancelled):
            n = self.scheduler().cancel_job(job_id)
            log.info("job %s cancelled: %d segment(s) dropped or aborted", job_id, n)

    def recheck(self) -> None:
        for job_id in list(self.held()):
            self.job_done(job_id)
