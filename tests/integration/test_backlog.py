"""The backlog on a real Redis, through its scripts (core/backlog.py): keys take turns by their
weights, a key's jobs go in order, the broker queue is kept at its target, a cancelled or failed
job's chunks leave at once, a chunk put back goes first again, and every count is exact."""

from __future__ import annotations

import time

import pytest
import redis

from mtfleet.core import keys
from mtfleet.core.backlog import Backlog
from mtfleet.core.models import ChunkMessage, ChunkSegment, JobStatus, Lane, Progress
from mtfleet.core.store import JobRecord, JobStore, new_job_id

POOL, LANE = "apertium", "bulk"


@pytest.fixture
def store(r: redis.Redis) -> JobStore:
    return JobStore(r, result_ttl_s=3600)


@pytest.fixture
def backlog(r: redis.Redis) -> Backlog:
    return Backlog(r, ttl_s=3600)


def make_job(store: JobStore, owner: str, chunks: int, *, lane: str = LANE) -> str:
    """A job of ``chunks`` one-segment chunks for ``owner``, stored as the API stores it."""
    job_id = new_job_id()
    now = time.time()
    ledger = {
        n: ChunkMessage(
            job_id=job_id,
            chunk=n,
            lane=Lane(lane),
            source="en",
            target="es",
            segments=[ChunkSegment(text=f"text {n}", indices=[n])],
            enqueued_at=now,
            pool=POOL,
            owner=owner,
        ).model_dump_json()
        for n in range(chunks)
    }
    job = JobRecord(
        id=job_id,
        status=JobStatus.queued,
        source_lang="en",
        target_lang="es",
        lane=Lane(lane),
        pool=POOL,
        progress=Progress(done=0, failed=0, total=chunks),
        cached=0,
        created_at=now,
        chunks=chunks,
        owner=owner,
    )
    assert store.create(job, cached={}, ledger=ledger) is None
    return job_id


def released(backlog: Backlog, target: int, *, lane: str = LANE) -> list[tuple[str, str, int]]:
    """(owner, job, chunk) of each chunk one release hands over."""
    out = []
    for raw in backlog.release(POOL, lane, target):
        msg = ChunkMessage.model_validate_json(raw)
        out.append((msg.owner, msg.job_id, msg.chunk))
    return out


def test_keys_take_turns_and_a_keys_jobs_go_in_order(store: JobStore, backlog: Backlog) -> None:
    a1 = make_job(store, "a", 3)
    a2 = make_job(store, "a", 2)
    b1 = make_job(store, "b", 2)
    assert backlog.waiting(POOL, LANE).by_key == {"a": 5, "b": 2}
    got = released(backlog, 100)
    assert [owner for owner, _, _ in got] == ["a", "b", "a", "b", "a", "a", "a"]
    assert [(j, c) for o, j, c in got if o == "a"] == [(a1, 0), (a1, 1), (a1, 2), (a2, 0), (a2, 1)]
    assert [(j, c) for o, j, c in got if o == "b"] == [(b1, 0), (b1, 1)]
    assert backlog.waiting(POOL, LANE).by_key == {}  # every count back to nothing


def test_a_keys_weight_is_its_share_of_the_turns(
    store: JobStore, backlog: Backlog, r: redis.Redis
) -> None:
    r.hset(keys.api_key("heavy"), "weight", 2)
    make_job(store, "light", 10)
    make_job(store, "heavy", 10)
    got = [owner for owner, _, _ in released(backlog, 9)]
    assert got == ["light", "heavy", "heavy", "light", "heavy", "heavy", "light", "heavy", "heavy"]


def test_the_broker_queue_is_kept_at_its_target(
    store: JobStore, backlog: Backlog, r: redis.Redis
) -> None:
    make_job(store, "a", 10)
    queue = keys.queue(POOL, LANE)
    r.rpush(queue, "m1", "m2", "m3")  # three messages in the broker already
    assert len(backlog.release(POOL, LANE, 5)) == 2
    r.rpush(queue, "m4", "m5")  # ... and the two released, once published
    assert backlog.release(POOL, LANE, 5) == []  # at the target: nothing more
    waiting = backlog.waiting(POOL, LANE)
    assert (waiting.by_key, waiting.in_broker, waiting.total) == ({"a": 8}, 5, 13)
    # fetched by workers that have not begun them, released chunks still count as out
    r.delete(queue)
    assert len(backlog.release(POOL, LANE, 5)) == 3
    assert r.hlen(keys.backlog_released(POOL, LANE)) == 5
    assert backlog.release(POOL, LANE, 5) == []


def test_a_cancelled_or_failed_jobs_waiting_chunks_leave_at_once(
    store: JobStore, backlog: Backlog, r: redis.Redis
) -> None:
    a = make_job(store, "a", 40)
    b = make_job(store, "b", 3)
    failed = make_job(store, "b", 5)
    assert backlog.waiting(POOL, LANE).by_key == {"a": 40, "b": 8}
    assert store.cancel(a) is JobStatus.cancelled
    store.fail(failed, {"type": "x", "message": "cannot run"})
    assert backlog.waiting(POOL, LANE).by_key == {"b": 3}
    assert r.lrange(keys.backlog_ring(POOL, LANE), 0, -1) == ["b"]
    assert not r.exists(keys.job_pending(a))
    assert [(j, c) for _, j, c in released(backlog, 100)] == [(b, 0), (b, 1), (b, 2)]


def test_a_chunk_put_back_goes_first_again_or_after_its_backoff(
    store: JobStore, backlog: Backlog, r: redis.Redis
) -> None:
    first = make_job(store, "a", 3)
    second = make_job(store, "a", 2)
    assert [c for _, _, c in released(backlog, 2)] == [0, 1]
    # chunk 1 started on a worker that could not finish it: back, before anything else of a's
    store.start_chunk(first, 1, [1], pool=POOL, lane=LANE)
    assert r.hexists(keys.chunk_starts(first), "1")
    where = backlog.requeue(first, 1, pool=POOL, lane=LANE, owner="a")
    assert where == "backlog" and not r.hexists(keys.chunk_starts(first), "1")
    assert backlog.waiting(POOL, LANE).by_key == {"a": 4}
    # (chunk 0 is still out, released and not started: three more make four)
    assert [(j, c) for _, j, c in released(backlog, 4)] == [(first, 1), (first, 2), (second, 0)]
    # chunk 0 failed: aside until its backoff is over, then first of all
    assert backlog.requeue(first, 0, pool=POOL, lane=LANE, owner="a", delay_s=0.3) == "delayed"
    assert backlog.waiting(POOL, LANE).by_key == {"a": 1}
    assert [(j, c) for _, j, c in released(backlog, 10)] == [(second, 1)]
    time.sleep(0.35)
    assert [(j, c) for _, j, c in released(backlog, 10)] == [(first, 0)]


def test_a_finished_chunk_is_not_put_back_and_a_cancelling_jobs_chunk_goes_round_again(
    store: JobStore, backlog: Backlog, r: redis.Redis
) -> None:
    """A chunk in flight when its job was cancelled goes back like any other: the cancel
    settles when a delivery of it records, never under another worker that may still run it."""
    job = make_job(store, "a", 3)
    released(backlog, 10)
    for chunk in (0, 1):
        store.start_chunk(job, chunk, [chunk], pool=POOL, lane=LANE)
    assert store.record(job, [], chunk=0, pool=POOL, lane=LANE) is JobStatus.running
    assert backlog.requeue(job, 0, pool=POOL, lane=LANE, owner="a") == "done"
    assert store.cancel(job) is JobStatus.cancelling  # chunk 1 is in flight, 2 is not
    assert backlog.requeue(job, 1, pool=POOL, lane=LANE, owner="a") == "backlog"
    assert store.get(job).status is JobStatus.cancelling
    assert [c for _, _, c in released(backlog, 10)] == [1]  # (chunk 2 left with the cancel)
    status, deliveries, _ = store.start_chunk(job, 1, [1], pool=POOL, lane=LANE)
    assert (status, deliveries) == (JobStatus.cancelling, 2)
    assert store.record(job, [], chunk=1, pool=POOL, lane=LANE) is JobStatus.cancelled
    assert backlog.waiting(POOL, LANE).total == 0


def test_a_release_drops_what_cannot_run_without_counting_it(
    store: JobStore, backlog: Backlog, r: redis.Redis
) -> None:
    job = make_job(store, "a", 3)
    r.hdel(keys.job_chunks(job), "1")  # finished by an earlier delivery
    assert [c for _, _, c in released(backlog, 10)] == [0, 2]
    assert backlog.waiting(POOL, LANE).by_key == {}
    assert r.llen(keys.backlog_ring(POOL, LANE)) == 0
