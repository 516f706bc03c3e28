"""Chunks the broker lost are sent again (workers/reconciler.py).

kombu pops a message with BRPOP and only then records it as unacknowledged; a worker killed in
between loses it, and the visibility timeout never brings it back. Here the loss is made
deterministic: the worker is stopped (SIGSTOP), a job is queued, one of its messages is taken off
the queue as the dead worker would have taken it, and the worker resumes. The job must still
complete, with exactly one result per segment, and only the lost chunk may be sent twice.
"""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.core import keys
from mtfleet.core.backlog import Backlog
from mtfleet.core.models import SegmentOutcome
from mtfleet.core.registry import Registry, WorkerInfo
from mtfleet.core.settings import Settings
from mtfleet.core.store import JobStore
from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.workers.reconciler import MAX_JOBS, Reconciler
from tests.integration.costfleet import COST_POOL, cost_fleet
from tests.integration.test_backlog import LANE, POOL, make_job
from tests.integration.test_faults import (
    FAULT_ENV,
    celery_children,
    signal_all,
    submit,
    wait_final,
)

ENV = {**FAULT_ENV, "MT_RECONCILE_INTERVAL_S": "1"}


@pytest.fixture
def fleet(redis_server: str) -> Iterator[tuple[LocalFleet, TestClient, redis.Redis]]:
    url = redis_server.rsplit("/", 1)[0] + "/6"
    rd = redis.Redis.from_url(url, decode_responses=True)
    rd.flushdb()
    with cost_fleet(url, ENV) as (f, api):
        yield f, api, rd


def resent_fields(rd: redis.Redis, job_id: str) -> dict[str, str]:
    return {
        k: v
        for k, v in rd.hgetall(keys.chunk_deliveries(job_id)).items()
        if k.startswith("resent:")
    }


def test_a_message_lost_between_fetch_and_unacked_is_sent_again(
    fleet: tuple[LocalFleet, TestClient, redis.Redis],
) -> None:
    f, api, rd = fleet
    kids = celery_children(f.procs[-1])
    assert kids
    signal_all(kids, signal.SIGSTOP)
    try:
        texts = [f"line {i} of the job that loses a message" for i in range(320)]  # 10 chunks
        job_id = submit(api, texts)
        # a second job behind it keeps the queue busy for longer than the grace period
        other_texts = [f"line {i} of the job behind it" for i in range(1600)]
        other_id = submit(api, other_texts)
        queue = keys.queue(COST_POOL, "bulk")
        # the fetching end holds the first job's oldest chunk (a stopped worker blocked in
        # BRPOP may already have been handed one more; it gets it when it resumes)
        lost = rd.rpop(queue)
        assert lost is not None
        m = re.search(r'"id": "([0-9a-f]{32})\.(\d+)\.', lost)
        assert m and m.group(1) == job_id, lost[:300]
        lost_chunk = int(m.group(2))
    finally:
        signal_all(kids, signal.SIGCONT)

    job = wait_final(api, job_id, timeout=90, fleet=f)
    assert job["status"] == "succeeded", job
    assert job["progress"] == {"done": 320, "failed": 0, "total": 320}
    assert api.get(f"/v1/jobs/{job_id}/result").json()["translations"] == [
        f"<es> {t}" for t in texts
    ]
    assert rd.hlen(keys.job_results(job_id)) == 320
    # only the lost chunk was sent again, once
    assert resent_fields(rd, job_id) == {f"resent:{lost_chunk}": "1"}

    other = wait_final(api, other_id, timeout=90, fleet=f)
    assert other["status"] == "succeeded"
    assert resent_fields(rd, other_id) == {}  # queued for seconds, never taken for lost
    # finished jobs leave the ledger and the active set
    assert rd.exists(keys.job_chunks(job_id), keys.job_chunks(other_id)) == 0
    assert rd.zcard(keys.active(COST_POOL, "bulk")) == 0
    assert rd.llen(keys.DEAD_LETTER) == 0


def test_a_cancelled_or_purged_job_is_not_reconciled(
    fleet: tuple[LocalFleet, TestClient, redis.Redis],
) -> None:
    f, api, rd = fleet
    kids = celery_children(f.procs[-1])
    signal_all(kids, signal.SIGSTOP)
    try:
        # more chunks than the broker queue holds (MT_RELEASE_AHEAD): its released ones fill it
        job_id = submit(api, [f"cancelled line {i}" for i in range(1100)])
        released = keys.backlog_released(COST_POOL, "bulk")
        assert rd.hlen(released) == 32
        assert rd.zscore(keys.active(COST_POOL, "bulk"), job_id) is not None
        assert rd.hlen(keys.job_chunks(job_id)) > 0
        assert api.delete(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
        assert rd.zscore(keys.active(COST_POOL, "bulk"), job_id) is None
        assert rd.exists(keys.job_chunks(job_id)) == 0
        rd.delete(keys.queue(COST_POOL, "bulk"))  # its messages are gone too: nothing to reconcile
    finally:
        signal_all(kids, signal.SIGCONT)
    time.sleep(7)  # longer than the grace period at 1 s sweeps
    assert resent_fields(rd, job_id) == {}
    assert api.get(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
    # the chunks it had released are nowhere and will never run: they no longer count as out
    # there, so the lane goes on (they once kept the next jobs from ever being released)
    deadline = time.monotonic() + 30  # two grace periods: seen missing, then still missing
    while rd.hlen(released):
        assert time.monotonic() < deadline, rd.hgetall(released)
        time.sleep(0.5)
    assert wait_final(api, submit(api, ["the next job"]), timeout=30)["status"] == "succeeded"


def test_one_reconciler_leads_and_renews_its_lease_until_it_is_gone(r: redis.Redis) -> None:
    """The lease (workers/reconciler.py ``_lead``): the first instance takes it, another does
    not while it is held, the holder's every tick renews it to the full three heartbeats, and
    once it lapses (a dead leader) the other takes over and the old one does not get it back."""
    settings = Settings(heartbeat_s=1.0)

    def reconciler(instance: str) -> Reconciler:
        store = JobStore(r, result_ttl_s=60)
        return Reconciler(settings.worker, r, store, Backlog(r, ttl_s=60), instance)

    first, second = reconciler("worker-a"), reconciler("worker-b")
    assert first._lead() and not second._lead()
    assert r.get(keys.RECONCILE_LOCK) == "worker-a"
    r.pexpire(keys.RECONCILE_LOCK, 500)
    assert first._lead() and 2500 < r.pttl(keys.RECONCILE_LOCK) <= 3000  # renewed in full
    assert not second._lead() and r.pttl(keys.RECONCILE_LOCK) <= 3000  # not renewed by another
    r.delete(keys.RECONCILE_LOCK)  # the lease ran out
    assert second._lead() and not first._lead()
    assert r.get(keys.RECONCILE_LOCK) == "worker-b"


def test_a_chunk_lost_in_the_newest_of_many_active_jobs_is_found(r: redis.Redis) -> None:
    """The sweep reads a bounded number of a lane's active jobs per pass (MAX_JOBS), walking the
    whole set across passes: a chunk lost in flight in the newest of 650 active jobs (fair
    shares keep a lane's oldest jobs unfinished for hours) is found and put back within a few
    passes, not hidden behind the oldest 500."""
    settings = Settings(reconcile_interval_s=1)
    store = JobStore(r, result_ttl_s=3600)
    backlog = Backlog(r, ttl_s=3600)
    reconciler = Reconciler(settings.worker, r, store, backlog, "worker-a")
    worker = WorkerInfo(
        name="w@host",
        instance="worker-a",
        pool=POOL,
        engine="apertium",
        model="apertium",
        fingerprint="apertium-x",
        pairs=[("en", "es")],
        lanes=[LANE],
    )
    Registry(r).beat(worker, ttl_s=60)
    older = [make_job(store, "busy", 1) for _ in range(MAX_JOBS + 149)]
    newest = make_job(store, "late", 1)
    assert r.zcard(keys.active(POOL, LANE)) == MAX_JOBS + 150
    # the busy key's first chunk and the late key's only one are released and taken by a
    # worker; the late one's message is then lost (nowhere: not queued, not unacknowledged)
    assert [(c.job_id, c.chunk) for c in backlog.release(POOL, LANE, 2)] == [
        (older[0], 0),
        (newest, 0),
    ]
    for job_id in (older[0], newest):
        store.start_chunk(job_id, 0, [0], pool=POOL, lane=LANE)
    store.record(
        older[0], [(0, SegmentOutcome(translation="hecho"))], chunk=0, pool=POOL, lane=LANE
    )
    # in flight too long
    now = time.time() + settings.worker.visibility_timeout_s + reconciler.grace + 1
    put_back: list[tuple[str, int]] = []
    for _ in range(8):
        put_back += reconciler.sweep(now)
        now += reconciler.grace
    assert put_back == [(newest, 0)]
    assert resent_fields(r, newest) == {"resent:0": "1"}
    assert not r.hexists(keys.chunk_starts(newest), "0")  # back in its key's backlog
    assert backlog.waiting(POOL, LANE).by_key["late"] == 1
