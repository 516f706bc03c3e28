"""The backlog on a real Redis, through its scripts (core/backlog.py): keys take turns by their
weights, a key's jobs go in order, the broker queue is kept at its target, a cancelled or failed
job's chunks leave at once, a chunk put back goes first again, and every count is exact."""

from __future__ import annotations

import base64
import json
import time

import pytest
import redis
from kombu.exceptions import OperationalError

from mtfleet.core import keys
from mtfleet.core.backlog import Backlog
from mtfleet.core.broker import make_celery, release
from mtfleet.core.keys import LedgerPlace, ledger_ref
from mtfleet.core.models import ChunkMessage, ChunkSegment, JobStatus, Lane, Progress
from mtfleet.core.queues import read_queues
from mtfleet.core.settings import Settings
from mtfleet.core.store import JobRecord, JobStore, new_job_id
from mtfleet.fleet.localfleet import free_port
from mtfleet.workers.reconciler import chunk_ids

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
    for chunk in backlog.release(POOL, lane, target):
        msg = ChunkMessage.model_validate_json(chunk.payload)
        assert (msg.owner, msg.job_id, msg.chunk) == (chunk.owner, chunk.job_id, chunk.chunk)
        out.append((chunk.owner, chunk.job_id, chunk.chunk))
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


# -- a release through the broker (core/broker.py release) --------------------------------------
def corrupt(r: redis.Redis, job_id: str, chunk: int, entry: str) -> None:
    """Replace a chunk's ledger entry (what the release hands to the broker)."""
    r.hset(keys.job_chunks(job_id), str(chunk), entry)


def test_a_corrupt_ledger_entry_fails_alone_and_the_rest_of_its_batch_is_sent(
    store: JobStore, backlog: Backlog, r: redis.Redis, redis_url: str
) -> None:
    app = make_celery(Settings(redis_url=redis_url))
    a, b = make_job(store, "a", 2), make_job(store, "b", 2)
    corrupt(r, a, 1, '{"job_id": "' + a + '", "chunk": 1, "segm')  # cut short
    assert release(app, backlog, store, POOL, LANE, 10) == 3
    # the good chunks are in the broker queue, and only they count as released
    sent = chunk_ids([str(m) for m in r.lrange(keys.queue(POOL, LANE), 0, -1)])
    assert sent == {(a, 0), (b, 0), (b, 1)}
    assert set(r.hkeys(keys.backlog_released(POOL, LANE))) == {f"{a}:0", f"{b}:0", f"{b}:1"}
    # the bad one is dead-lettered with the reason, and its job says why it failed
    [entry] = store.dead_letters.entries()
    assert (entry.job_id, entry.chunk, entry.lane) == (a, 1, LANE)
    assert "chunk 1" in entry.reason and "JSON" in entry.reason, entry.reason
    job = store.get(a)
    assert job.status is JobStatus.failed and job.error is not None
    assert job.error["type"] == "dead_lettered" and "chunk 1" in job.error["message"]
    assert store.get(b).status is JobStatus.queued
    assert backlog.waiting(POOL, LANE).by_key == {}


def test_a_corrupt_chunk_of_a_job_being_cancelled_settles_the_cancel(
    store: JobStore, backlog: Backlog, r: redis.Redis, redis_url: str
) -> None:
    app = make_celery(Settings(redis_url=redis_url))
    job = make_job(store, "a", 2)
    released(backlog, 10)
    store.start_chunk(job, 1, [1], pool=POOL, lane=LANE)
    assert store.cancel(job) is JobStatus.cancelling  # chunk 1 was in flight: it goes round
    assert backlog.requeue(job, 1, pool=POOL, lane=LANE, owner="a") == "backlog"
    corrupt(r, job, 1, "[]")
    assert release(app, backlog, store, POOL, LANE, 10) == 0
    assert store.get(job).status is JobStatus.cancelled
    assert [(e.job_id, e.chunk) for e in store.dead_letters.entries()] == [(job, 1)]
    assert r.hlen(keys.backlog_released(POOL, LANE)) == 1  # (chunk 0, released before)
    assert backlog.waiting(POOL, LANE).by_key == {}


def test_with_the_broker_away_a_batchs_good_chunks_are_back_at_once_and_a_bad_one_fails(
    store: JobStore, backlog: Backlog, r: redis.Redis
) -> None:
    """A ledger entry that parses but cannot be sent (it names no pool) fails alone, and the
    batch's good chunks go back to the front of their keys' backlogs when the broker cannot be
    reached: none of them stays released until the reconciler's grace period."""
    app = make_celery(Settings(redis_url=f"redis://127.0.0.1:{free_port()}/0"))  # nobody there
    bad, a, b = make_job(store, "x", 1), make_job(store, "a", 2), make_job(store, "b", 1)
    entry = ChunkMessage.model_validate_json(r.hget(keys.job_chunks(bad), "0") or "")
    corrupt(r, bad, 0, entry.model_copy(update={"pool": None}).model_dump_json())
    with pytest.raises(OperationalError):
        release(app, backlog, store, POOL, LANE, 10)
    assert r.hlen(keys.backlog_released(POOL, LANE)) == 0
    assert backlog.waiting(POOL, LANE).by_key == {"a": 2, "b": 1}
    assert [(j, c) for _, j, c in released(backlog, 10)] == [(a, 0), (b, 0), (a, 1)]
    [dead] = store.dead_letters.entries()
    assert (dead.job_id, dead.chunk) == (bad, 0) and "names no pool" in dead.reason
    assert store.get(bad).status is JobStatus.failed


def test_a_released_chunk_travels_as_its_place_in_the_ledger_not_its_text(
    store: JobStore, backlog: Backlog, r: redis.Redis, redis_url: str
) -> None:
    """The broker carries a released chunk as ``ledger <job> <chunk> <when queued>``: its text
    is kept once, in the ledger, where the worker reads it (not published, held unacked and
    delivered too); the operator's panel still reads how long the oldest waited."""
    app = make_celery(Settings(redis_url=redis_url))
    job_id = make_job(store, "a", 2)
    assert release(app, backlog, store, POOL, LANE, 10) == 2
    queued = [str(m) for m in r.lrange(keys.queue(POOL, LANE), 0, -1)]
    assert chunk_ids(queued) == {(job_id, 0), (job_id, 1)}
    args = sorted(task_args(m)[0] for m in queued)
    entries = [
        ChunkMessage.model_validate_json(r.hget(keys.job_chunks(job_id), str(n)) or "")
        for n in (0, 1)
    ]
    places = [LedgerPlace(job_id, e.chunk, POOL, LANE, e.enqueued_at) for e in entries]
    assert args == [ledger_ref(place) for place in places]
    assert not any("text 0" in m or "text 1" in m for m in queued)
    waited = min(e.enqueued_at for e in entries)
    reading = read_queues(r, [(POOL, LANE)], now=waited + 7.5)[keys.queue(POOL, LANE)]
    assert reading.oldest_queued_s == 7.5


def task_args(raw: str) -> list[object]:
    """The arguments of the task a raw broker message carries (kombu's envelope, its body
    base64 as kombu's Redis transport sends it by default)."""
    message = json.loads(raw)
    body = message["body"]
    if message["properties"].get("body_encoding") == "base64":
        body = base64.b64decode(body)
    args: list[object] = json.loads(body)[0]
    return args
