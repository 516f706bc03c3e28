"""Job-done events: the listener reconnects, and CompletionWaiter wakes on the completion event
without missing a job that finished first."""

from __future__ import annotations

import asyncio
import threading
import time
from functools import partial

import redis

from mtfleet.core import keys
from mtfleet.core.events import CompletionWaiter, JobEvents
from mtfleet.core.models import SegmentOutcome
from mtfleet.core.redis_conn import connect_async
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

        async def final() -> bool:
            return bool(store.status(job_id).final)  # type: ignore[union-attr]

        done = asyncio.run(waiter.wait_async(job_id, final, timeout=5))
        waited = time.monotonic() - t0
        assert done
        assert 0.25 < waited < 2.0
    finally:
        waiter.stop()


def test_waiter_returns_at_once_for_finished_job_and_times_out_otherwise(r: redis.Redis) -> None:
    waiter = CompletionWaiter(r)
    waiter.start()
    try:

        async def yes() -> bool:
            return True

        async def no() -> bool:
            return False

        assert asyncio.run(waiter.wait_async("j1", yes, timeout=5))
        t0 = time.monotonic()
        assert not asyncio.run(waiter.wait_async("j2", no, timeout=0.3))
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


def test_async_waiters_hold_no_thread_while_they_wait(r: redis.Redis, redis_url: str) -> None:
    """200 requests waiting at once on the event loop: all wake when their jobs finish, and
    the process does not grow a thread per waiter (as the thread-pool wait did)."""
    store = JobStore(r, result_ttl_s=60)
    waiter = CompletionWaiter(r)
    waiter.start()
    ids = [new_job_id() for _ in range(200)]
    for job_id in ids:
        make_job(store, 1, job_id=job_id)

    async def main() -> tuple[list[bool], int]:
        # the API's own reads: the store's asyncio client, on this loop
        api_store = JobStore(r, result_ttl_s=60, aclient=connect_async(redis_url))
        tasks = [
            asyncio.create_task(waiter.wait_async(j, partial(api_store.afinal, j), timeout=20))
            for j in ids
        ]
        await asyncio.sleep(0.5)  # every waiter is registered and waiting
        threads_while_waiting = threading.active_count()
        for job_id in ids:
            store.record(job_id, [(0, SegmentOutcome(translation="x"))])
        done = list(await asyncio.gather(*tasks))
        assert api_store.ar is not None
        await api_store.ar.aclose()
        return done, threads_while_waiting

    try:
        before = threading.active_count()
        done, threads = asyncio.run(main())
        assert done == [True] * 200
        assert threads - before < 5  # no thread per waiter, nor any from the thread pool
        assert not waiter._events  # every waiter deregistered
    finally:
        waiter.stop()
