"""Job-done events: the listener reconnects, and CompletionWaiter wakes on the completion event
without missing a job that finished first."""

from __future__ import annotations

import asyncio
import threading
import time

import redis

from mtfleet.core import keys
from mtfleet.core.events import CompletionWaiter, JobEvents
from mtfleet.core.models import SegmentOutcome
from mtfleet.core.store import JobStore, new_job_id
from tests.integration.test_store import make_job


def test_waiter_wakes_when_job_finishes(r: redis.Redis) -> None:
    store = JobStore(r, result_ttl_s=60)
    waiter = CompletionWaiter(r)
    waiter.start()
    try:
        job_id = new_job_id()
        make_job(store, 1, job_id=job_id)
        threading.Timer(
            0.3, lambda: store.record(job_id, [(0, SegmentOutcome(translation="x"))])
        ).start()
        t0 = time.monotonic()
        done = asyncio.run(
            waiter.wait_async(job_id, lambda: bool(store.status(job_id).final), timeout=5)  # type: ignore[union-attr]
        )
        waited = time.monotonic() - t0
        assert done
        assert 0.25 < waited < 2.0
    finally:
        waiter.stop()


def test_waiter_returns_at_once_for_finished_job_and_times_out_otherwise(r: redis.Redis) -> None:
    waiter = CompletionWaiter(r)
    waiter.start()
    try:
        assert asyncio.run(waiter.wait_async("j1", lambda: True, timeout=5))
        t0 = time.monotonic()
        assert not asyncio.run(waiter.wait_async("j2", lambda: False, timeout=0.3))
        assert time.monotonic() - t0 >= 0.3
    finally:
        waiter.stop()


def test_a_listener_reconnects_and_rechecks_after_redis_drops_it(r: redis.Redis) -> None:
    """Pub/sub is at-most-once: after the connection is cut, the listener subscribes again and
    calls ``on_reconnect`` (so listeners re-read what they wait for), then gets new events."""
    events: list[str] = []
    reconnects: list[float] = []
    listener = JobEvents(r, events.append, lambda: reconnects.append(time.monotonic()))
    listener.start()
    try:
        deadline = time.monotonic() + 5
        while not reconnects:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        r.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
        while len(reconnects) < 2:
            assert time.monotonic() < deadline + 10
            time.sleep(0.05)
        r.publish(keys.JOB_DONE_CHANNEL, "job-after")
        while "job-after" not in events:
            assert time.monotonic() < deadline + 10
            time.sleep(0.05)
    finally:
        listener.stop()


def test_async_waiters_hold_no_thread_while_they_wait(r: redis.Redis) -> None:
    """200 requests waiting at once on the event loop: all wake when their jobs finish, and
    the process does not grow a thread per waiter (as the thread-pool wait did)."""
    store = JobStore(r, result_ttl_s=60)
    waiter = CompletionWaiter(r)
    waiter.start()
    ids = [new_job_id() for _ in range(200)]
    for job_id in ids:
        make_job(store, 1, job_id=job_id)

    async def main() -> tuple[list[bool], int]:
        def final(job_id: str) -> bool:
            status = store.status(job_id)
            return status is None or status.final

        tasks = [
            asyncio.create_task(waiter.wait_async(j, lambda j=j: final(j), timeout=20)) for j in ids
        ]
        await asyncio.sleep(0.5)  # every waiter is registered and waiting
        threads_while_waiting = threading.active_count()
        for job_id in ids:
            store.record(job_id, [(0, SegmentOutcome(translation="x"))])
        return list(await asyncio.gather(*tasks)), threads_while_waiting

    try:
        before = threading.active_count()
        done, threads = asyncio.run(main())
        assert done == [True] * 200
        assert threads - before < 50  # anyio's worker threads, not one per waiter
        assert not waiter._events  # every waiter deregistered
    finally:
        waiter.stop()
