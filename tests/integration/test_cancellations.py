"""A worker hears only of the jobs it holds: the worker's runtime (its chunk path and its
Cancellations hook) on a real Redis, its engine held mid-chunk. It is subscribed to the channel
of the job it holds and to no other (the fleet-wide job-done channel included), so the fleet's
other jobs cost it no message and no read; a cancel of its job still aborts the job's segments
in the engine at once, and the subscription goes when the chunk ends."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import redis

from mtfleet.core import keys
from mtfleet.core.models import JobStatus, SegmentOutcome
from mtfleet.core.settings import Settings
from mtfleet.workers.cancellation import Cancellations
from mtfleet.workers.runtime import WorkerRuntime
from tests.support import ChunkRun, Gate, ScriptedEngine


def eventually(what: Callable[[], object], seen: Callable[[], object], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, f"never happened; last seen: {seen()}"
        time.sleep(0.02)


def job_channels(r: redis.Redis) -> list[str]:
    return sorted(str(c) for c in r.pubsub_channels(keys.job_events("*")))


def test_a_worker_follows_only_the_jobs_it_holds(redis_url: str, r: redis.Redis) -> None:
    gate = Gate()
    settings = Settings(redis_url=redis_url, check_language=False, chunk_size=8)
    rt = WorkerRuntime(settings, engine_factory=lambda _: ScriptedEngine(gate, streaming=True))
    rt.boot()
    hook = next(h for h in rt.hooks if isinstance(h, Cancellations))
    hook.ready(None)
    jobs = ChunkRun(ScriptedEngine(), settings=settings, redis=r)  # jobs stored as the API does
    held, (msg,) = jobs.submit([f"line {i}" for i in range(8)])
    worker = threading.Thread(target=rt.process, args=(msg,))
    try:
        # jobs of the fleet this worker has nothing of, finished before and while it works
        for n in range(20):
            other, _ = jobs.submit([f"other {n}"])
            jobs.store.record(other.id, [(0, SegmentOutcome(translation="x"))], chunk=0)
        worker.start()
        assert gate.started.wait(30)  # the chunk is in the engine
        eventually(lambda: job_channels(r) == [keys.job_events(held.id)], lambda: job_channels(r))
        assert r.pubsub_numsub(keys.JOB_DONE_CHANNEL) == [(keys.JOB_DONE_CHANNEL, 0)]
        for n in range(20):
            other, _ = jobs.submit([f"another {n}"])
            jobs.store.cancel(other.id)
        assert job_channels(r) == [keys.job_events(held.id)]

        # its own job cancelled: the segments in the engine are aborted, not translated
        assert jobs.store.cancel(held.id) is JobStatus.cancelling
        worker.join(30)
        assert not worker.is_alive()
        job = jobs.store.get(held.id)
        assert job.status is JobStatus.cancelled and job.progress.done == 0
        eventually(lambda: job_channels(r) == [], lambda: job_channels(r))  # nothing held
    finally:
        gate.open()
        worker.join(30)
        rt.shutdown()
        jobs.close()
