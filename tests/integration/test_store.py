"""JobStore on a real Redis: idempotent writes, one final status, one completion event, and
scripts that stay under Lua's unpack limit (measured here on the server)."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest
import redis

from mtfleet.core import keys, scripts
from mtfleet.core.apikeys import Charge, Storage
from mtfleet.core.errors import (
    InteractiveShareExceeded,
    JobNotFound,
    NotReplicated,
    QuotaExceeded,
    StorageQuotaExceeded,
)
from mtfleet.core.interactive import InteractiveShares, Share
from mtfleet.core.models import JobStatus, Lane, Progress, SegmentOutcome
from mtfleet.core.store import JobRecord, JobStore, new_job_id
from tests.support import script_names


@pytest.fixture
def store(r: redis.Redis) -> JobStore:
    return JobStore(r, result_ttl_s=600)


def make_job(
    store: JobStore,
    total: int,
    cached: dict[int, SegmentOutcome] | None = None,
    *,
    job_id: str | None = None,
    idem_key: str | None = None,
) -> str:
    """Create a job; with ``idem_key`` returns the key's earlier value, else the new job id."""
    job_id = job_id or new_job_id()
    cached = cached or {}
    done = len(cached) == total  # as the API decides it: all known at submission
    now = time.time()
    job = JobRecord(
        id=job_id,
        status=JobStatus.succeeded if done else JobStatus.queued,
        source_lang="en",
        target_lang="es",
        lane=Lane.bulk,
        progress=Progress(done=len(cached), failed=0, total=total),
        cached=len(cached),
        created_at=now,
        finished_at=now if done else None,
        chunks=1,
    )
    existing = store.create(
        job, cached=cached, idempotency=(idem_key, f"{job_id} body", 60) if idem_key else None
    )
    return existing if idem_key and existing else job_id


def ok(text: str) -> SegmentOutcome:
    return SegmentOutcome(translation=text)


def test_create_sets_ttl_and_queued_status(store: JobStore, r: redis.Redis) -> None:
    job_id = make_job(store, 3)
    job = store.get(job_id)
    assert job.status is JobStatus.queued
    assert (job.progress.done, job.progress.failed, job.progress.total) == (0, 0, 3)
    assert 0 < r.ttl(keys.job(job_id)) <= 600


def test_fully_cached_job_is_created_succeeded(store: JobStore) -> None:
    job_id = make_job(store, 2, {0: ok("a"), 1: ok("b")})
    job = store.get(job_id)
    assert job.status is JobStatus.succeeded
    assert job.cached == 2 and job.finished_at is not None
    assert [o.translation for o in store.results(job_id, 2)] == ["a", "b"]


def test_redelivered_results_never_double_count_or_overwrite(store: JobStore) -> None:
    job_id = make_job(store, 4)
    store.record(job_id, [(0, ok("uno")), (1, ok("dos"))])
    # The same chunk again (redelivery) with different text: nothing moves.
    store.record(job_id, [(0, ok("UNO")), (1, SegmentOutcome(error={"type": "x", "message": "y"}))])
    job = store.get(job_id)
    assert (job.progress.done, job.progress.failed) == (2, 0)
    assert job.status is JobStatus.running
    assert [o.translation if o else None for o in store.results(job_id, 4)] == [
        "uno",
        "dos",
        None,
        None,
    ]
    status = store.record(job_id, [(2, ok("tres")), (3, ok("cuatro"))])
    assert status is JobStatus.succeeded
    assert store.get(job_id).progress.done == 4


@pytest.mark.parametrize(
    ("outcomes", "final"),
    [
        ([True, True], JobStatus.succeeded),
        ([True, False], JobStatus.partial),
        ([False, False], JobStatus.failed),
    ],
)
def test_final_status_from_outcomes(
    store: JobStore, outcomes: list[bool], final: JobStatus
) -> None:
    job_id = make_job(store, len(outcomes))
    err = SegmentOutcome(error={"type": "engine_error", "message": "boom"})
    status = store.record(
        job_id, [(i, ok("t") if good else err) for i, good in enumerate(outcomes)]
    )
    assert status is final


def test_completion_is_announced_exactly_once(store: JobStore, r: redis.Redis) -> None:
    job_id = make_job(store, 2)
    pubsub = r.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(keys.JOB_DONE_CHANNEL)
    time.sleep(0.05)
    store.record(job_id, [(0, ok("a")), (1, ok("b"))])
    store.record(job_id, [(0, ok("a")), (1, ok("b"))])  # redelivery after completion
    got = []
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        msg = pubsub.get_message(timeout=0.1)
        if msg:
            got.append(msg["data"])
    assert got == [job_id]


def test_concurrent_redeliveries_count_each_segment_once(store: JobStore) -> None:
    job_id = make_job(store, 200)
    outcomes = [(i, ok(f"t{i}")) for i in range(200)]

    def deliver() -> None:
        for start in range(0, 200, 20):
            store.record(job_id, outcomes[start : start + 20])

    threads = [threading.Thread(target=deliver) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    job = store.get(job_id)
    assert (job.progress.done, job.progress.failed, job.status) == (200, 0, JobStatus.succeeded)


def test_cancel_keeps_finished_results_and_ignores_later_completion(store: JobStore) -> None:
    job_id = make_job(store, 3)
    store.record(job_id, [(0, ok("a"))])
    assert store.cancel(job_id) is JobStatus.cancelled
    status = store.record(job_id, [(1, ok("b")), (2, ok("c"))])  # a chunk already running
    assert status is JobStatus.cancelled
    assert store.get(job_id).status is JobStatus.cancelled
    assert store.cancel(job_id) is JobStatus.cancelled


def test_cancel_of_finished_job_changes_nothing(store: JobStore) -> None:
    job_id = make_job(store, 1)
    store.record(job_id, [(0, ok("a"))])
    assert store.cancel(job_id) is JobStatus.succeeded


def test_unknown_job(store: JobStore) -> None:
    with pytest.raises(JobNotFound):
        store.get("nope")
    with pytest.raises(JobNotFound):
        store.cancel("nope")
    assert store.record("nope", [(0, ok("a"))]) is None
    assert store.start_chunk("nope", 0) == (None, 0, set())


def test_start_chunk_counts_deliveries_and_marks_running(store: JobStore) -> None:
    job_id = make_job(store, 2)
    assert store.start_chunk(job_id, 0, [0, 1]) == (JobStatus.running, 1, {0, 1})
    store.record(job_id, [(1, SegmentOutcome(translation="uno"))])
    # a redelivery learns which of its segments are done already
    assert store.start_chunk(job_id, 0, [0, 1]) == (JobStatus.running, 2, {0})
    assert store.start_chunk(job_id, 1) == (JobStatus.running, 1, set())
    assert store.get(job_id).started_at is not None


def test_idempotency_key_returns_the_first_job(store: JobStore) -> None:
    key = keys.idempotency("digest")
    first, second = new_job_id(), new_job_id()
    assert make_job(store, 1, job_id=first, idem_key=key) == first
    existing = make_job(store, 1, job_id=second, idem_key=key)
    assert existing == f"{first} body"
    with pytest.raises(JobNotFound):
        store.get(second)


def test_fail_marks_unstarted_job_failed_with_reason(store: JobStore) -> None:
    job_id = make_job(store, 2)
    store.fail(job_id, {"type": "unavailable", "message": "broker down"})
    job = store.get(job_id)
    assert job.status is JobStatus.failed
    assert job.error == {"type": "unavailable", "message": "broker down"}


def test_thousands_of_cached_segments_fit_in_one_create(store: JobStore) -> None:
    cached = {i: ok(f"t{i}") for i in range(10_000)}
    job_id = make_job(store, 10_000, cached)
    assert store.get(job_id).status is JobStatus.succeeded
    assert store.results(job_id, 10_000)[9_999] == ok("t9999")


def test_failing_a_job_releases_its_idempotency_key(store: JobStore, r: redis.Redis) -> None:
    key = keys.idempotency("retry-me")
    first = make_job(store, 1, idem_key=key)
    store.fail(first, {"type": "unavailable", "message": "broker down"}, idempotency_key=key)
    assert r.get(key) is None
    second = new_job_id()
    assert make_job(store, 1, job_id=second, idem_key=key) == second


def unpack_limit(r: redis.Redis) -> int:
    """The most values one ``unpack()`` takes on this server (binary search)."""
    script = r.register_script("return #{unpack(ARGV)}")
    lo, hi = 1, 1 << 16
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            script(args=[0] * mid)
            lo = mid
        except redis.ResponseError as exc:
            assert "unpack" in str(exc)
            hi = mid - 1
    return lo


def test_every_unpack_is_batched_below_the_measured_limit(r: redis.Redis) -> None:
    limit = unpack_limit(r)
    assert 1000 < limit < 60_000, limit  # Redis 7's Lua 5.1: about 8,000
    lib = scripts.source("start_chunk").split("\n")
    batch = next(int(x.split("=")[1]) for x in lib if x.startswith("local UNPACK_MAX"))
    assert batch * 4 <= limit
    # no script unpacks ARGV unbatched (only lib.lua's helpers and small fixed tables do)
    for name in script_names():
        body = (scripts.LUA_DIR / f"{name}.lua").read_text()
        assert "unpack(ARGV" not in body, name


def test_a_redelivered_chunk_looks_up_ten_thousand_indices(store: JobStore) -> None:
    """A chunk of 3 distinct texts can fill 10,000 indices (a feed of repeated lines); its
    redelivery asks which of them are done in one call, past Lua's unpack limit."""
    job_id = make_job(store, 10_000)
    indices = list(range(10_000))
    _, n, pending = store.start_chunk(job_id, 0, indices)
    assert n == 1 and pending == set(indices)
    store.record(job_id, [(i, ok("x")) for i in range(0, 10_000, 2)])
    status, n, pending = store.start_chunk(job_id, 0, indices)
    assert status is JobStatus.running and n == 2
    assert pending == set(range(1, 10_000, 2))
    store.record(job_id, [(i, ok("y")) for i in sorted(pending)], chunk=0)
    assert store.get(job_id).status is JobStatus.succeeded


def test_a_job_is_stored_paid_for_or_not_at_all(store: JobStore, r: redis.Redis) -> None:
    """One script checks the key's characters, its interactive share and its storage, and
    writes the job with all three taken, or writes nothing: never a charge without its job,
    nor a job without its charge. A job no replica confirms gives its characters back. The
    request's reporting tag counts them in the same step, and gives them back with them."""
    wall = time.time()
    tags = keys.api_key_tags("k", "day")
    charge = Charge(keys.api_key_chars("k", "day"), 9, 20, wall, tags, "shop")
    share = Share(keys.api_key_interactive("k"), 2, 3, 5, 600)
    storage = Storage(r, "k", 10_000)

    def create(chars: int, segments: int, *, on: JobStore = store, room: Storage = storage) -> None:
        job_id = new_job_id()
        job = JobRecord(
            id=job_id, status=JobStatus.queued, source_lang="en", target_lang="es",
            lane=Lane.interactive, progress=Progress(done=0, failed=0, total=segments),
            cached=0, created_at=wall, chunks=1, owner="k", chars=chars,
        )  # fmt: skip
        on.create(
            job,
            cached={},
            idempotency=(keys.idempotency(job_id), f"{job_id} body", 60),
            ledger={0: "{}"},
            storage=room,
            charge=dataclasses.replace(charge, chars=chars),
            share=dataclasses.replace(share, segments=segments),
        )

    def held() -> tuple[int, set[str], set[str], set[str], int]:
        jobs = {str(k).split(":")[2] for k in r.scan_iter(keys.job("*")) if str(k).count(":") == 2}
        named = {str(r.get(k)).split(" ")[0] for k in r.scan_iter(keys.idempotency("*"))}
        shared = set(r.hkeys(share.redis_key))
        return int(r.get(charge.counter) or 0), jobs, named, shared, storage.used()

    create(9, 2)
    used, jobs, named, shared, stored = before = held()
    assert used == 9 and len(jobs) == 1 and jobs == named == shared and stored > 0
    assert r.hgetall(tags) == {"shop": "9"}
    with pytest.raises(QuotaExceeded, match="12 characters asked, 11 of 20 left"):
        create(12, 1)
    assert held() == before  # nothing charged, held, remembered or stored
    with pytest.raises(InteractiveShareExceeded, match="2 interactive segments in 1 jobs"):
        create(1, 2)  # 2 held + 2 > 3
    assert held() == before
    with pytest.raises(StorageQuotaExceeded):
        create(1, 1, room=dataclasses.replace(storage, limit=stored + 1))
    assert held() == before

    # written, but no replica confirms it: failed, and its characters back, in one step
    lonely = JobStore(r, result_ttl_s=600, min_replicas=1, replica_timeout_ms=10)
    with pytest.raises(NotReplicated):
        create(5, 1, on=lonely)
    used, after, named, _, _ = held()
    assert used == 9 and named == jobs
    assert r.hgetall(tags) == {"shop": "9"}  # counted, and given back with the characters
    assert InteractiveShares(r, segments=3, jobs=5, ttl_s=600).held("k") == (2, 1)  # not it
    (failed,) = after - jobs
    assert store.get(failed).status is JobStatus.failed
