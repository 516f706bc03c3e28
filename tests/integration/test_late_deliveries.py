"""Late and duplicate deliveries on a real Redis, through the real scripts (JobStore) and the
worker's chunk path: a job that is final never changes again (no result written, no counter
moved, no second job-done event), and a duplicate delivery of a chunk another worker still runs
never settles a cancel under it."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from mtfleet.core import keys
from mtfleet.core.models import ChunkMessage, ChunkSegment, JobStatus, Lane, Progress
from mtfleet.core.models import SegmentOutcome as Outcome
from mtfleet.core.settings import Settings
from mtfleet.core.store import JobRecord, JobStore, new_job_id
from tests.support import POOL, ChunkRun, Gate, ScriptedEngine


@pytest.fixture
def store(r: redis.Redis) -> JobStore:
    return JobStore(r, result_ttl_s=600)


def make_job(store: JobStore, chunks: list[list[int]]) -> str:
    """A job whose chunk ``n`` holds the segment indices ``chunks[n]``, stored as the API
    stores one (its chunk ledger too)."""
    job_id = new_job_id()
    total = sum(len(c) for c in chunks)
    messages = {
        n: ChunkMessage(
            job_id=job_id,
            chunk=n,
            lane=Lane.bulk,
            source="en",
            target="es",
            segments=[ChunkSegment(indices=[i], text=f"text {i}") for i in indices],
            enqueued_at=time.time(),
            pool=POOL,
        ).model_dump_json()
        for n, indices in enumerate(chunks)
    }
    job = JobRecord(
        id=job_id,
        status=JobStatus.queued,
        source_lang="en",
        target_lang="es",
        lane=Lane.bulk,
        pool=POOL,
        progress=Progress(done=0, failed=0, total=total),
        cached=0,
        created_at=time.time(),
        chunks=len(chunks),
    )
    store.create(job, cached={}, ledger=messages)
    return job_id


def ok(text: str) -> Outcome:
    return Outcome(translation=text)


def announced(r: redis.Redis, pubsub: redis.client.PubSub) -> list[str]:
    """The job-done events published so far: everything before a marker published now (no
    waiting on a clock: the marker arrives after every earlier message)."""
    marker = f"marker-{new_job_id()}"
    r.publish(keys.JOB_DONE_CHANNEL, marker)
    got: list[str] = []
    while True:
        msg = pubsub.get_message(timeout=5)
        assert msg is not None, f"the marker never came; got {got}"
        if msg["type"] != "message":
            continue
        if msg["data"] == marker:
            return got
        got.append(msg["data"])


@pytest.fixture
def events(r: redis.Redis) -> redis.client.PubSub:
    pubsub = r.pubsub()
    pubsub.subscribe(keys.JOB_DONE_CHANNEL)
    return pubsub


def snapshot(store: JobStore, job_id: str) -> tuple[JobRecord, list[Outcome | None]]:
    job = store.get(job_id)
    return job, store.results(job_id, job.progress.total)


def test_a_chunk_that_finishes_after_its_job_failed_changes_nothing(
    store: JobStore, r: redis.Redis, events: redis.client.PubSub
) -> None:
    job_id = make_job(store, [[0, 1, 2]])
    store.start_chunk(job_id, 0, [0, 1, 2], pool=POOL, lane="bulk")
    store.record(job_id, [(0, ok("uno"))], pool=POOL, lane="bulk")  # what was done in budget
    store.fail(job_id, {"type": "unavailable", "message": "the broker went away"})
    assert announced(r, events) == [job_id]
    before = snapshot(store, job_id)

    # the chunk that was running meanwhile finishes
    status = store.record(
        job_id, [(0, ok("UNO")), (1, ok("dos")), (2, ok("tres"))], chunk=0, pool=POOL, lane="bulk"
    )
    assert status is JobStatus.failed
    assert snapshot(store, job_id) == before  # no result, no counter, no status moved
    job = store.get(job_id)
    assert (job.progress.done, job.progress.failed, job.progress.total) == (1, 0, 3)
    assert announced(r, events) == []  # and no second job-done event


def test_a_duplicate_delivery_after_a_cancel_settled_changes_nothing(
    store: JobStore, r: redis.Redis, events: redis.client.PubSub
) -> None:
    job_id = make_job(store, [[0, 1], [2, 3]])
    store.start_chunk(job_id, 0, [0, 1], pool=POOL, lane="bulk")
    assert store.cancel(job_id) is JobStatus.cancelling  # chunk 0 is in flight
    # chunk 0 finishes: segment 1 was aborted in the engine, so only segment 0 has a result
    assert store.record(job_id, [(0, ok("uno"))], chunk=0, pool=POOL, lane="bulk") is (
        JobStatus.cancelled
    )
    assert announced(r, events) == [job_id, job_id]  # cancelling, then cancelled
    before = snapshot(store, job_id)

    # a duplicate delivery of chunk 0 that ran to the end elsewhere
    status = store.record(job_id, [(0, ok("UNO")), (1, ok("dos"))], chunk=0, pool=POOL, lane="bulk")
    assert status is JobStatus.cancelled
    assert snapshot(store, job_id) == before
    job = store.get(job_id)
    assert (job.progress.done, job.progress.failed) == (1, 0)
    assert announced(r, events) == []


def test_a_duplicate_delivery_never_settles_a_cancel_under_the_running_chunk(
    r: redis.Redis,
) -> None:
    """Two deliveries of one chunk (a message sent twice, or put back while its first worker
    still runs it): the job is cancelled while worker A runs the chunk, and worker B is handed
    the duplicate. The chunk was in flight at the cancel, so its results are kept: the cancel
    settles only once a delivery of the chunk has recorded them, never by B skipping it while
    A still runs it (the job would end without them, and A's results would then either move
    a final job or be lost)."""
    gate = Gate()
    settings = Settings(check_language=False, chunk_size=8)
    a = ChunkRun(ScriptedEngine(gate, streaming=True), settings=settings, redis=r)
    b = ChunkRun(ScriptedEngine(streaming=True), settings=settings, redis=r)
    texts = [f"line {i}" for i in range(8)]
    job, (msg,) = a.submit(texts)
    worker_a = threading.Thread(target=a.processor.process, args=(msg,))
    try:
        worker_a.start()
        assert gate.started.wait(30)  # A has started the chunk and waits on its engine
        assert a.store.cancel(job.id) is JobStatus.cancelling

        b.processor.process(msg)  # B is handed the duplicate
        after_b = a.store.get(job.id)
        # not final under A, or final with the chunk's results counted
        assert after_b.status is JobStatus.cancelling or (
            after_b.status is JobStatus.cancelled and after_b.progress.done == len(texts)
        ), after_b

        gate.open()
        worker_a.join(30)
        assert not worker_a.is_alive()
        final = a.store.get(job.id)
        outcomes = a.store.results(job.id, len(texts))
        assert final.status is JobStatus.cancelled
        # the in-flight chunk's results are kept and counted, once
        assert final.progress.done == sum(o is not None and o.ok for o in outcomes) == len(texts)
        assert [o.translation for o in outcomes if o] == [f"[es] {t}" for t in texts]
    finally:
        gate.open()
        worker_a.join(30)
        a.close()
        b.close()
