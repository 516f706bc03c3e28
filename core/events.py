"""Wait for jobs to finish without polling.

One background thread per process subscribes to :data:`core.keys.JOB_DONE_CHANNEL` (a single
Redis connection however many requests wait) and wakes the waiters of each finished job.
Pub/sub is at-most-once, so a waiter always re-reads the job's status itself: after registering
(the job may have finished before), when woken, after a reconnect, and at its deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable

import anyio.to_thread
import redis

from core import keys

log = logging.getLogger(__name__)


class _LoopEvent:
    """Looks like a threading.Event to the listener thread; sets an asyncio.Event on its loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
        self.loop = loop
        self.event = event

    def set(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
            self.loop.call_soon_threadsafe(self.event.set)


class CompletionWaiter:
    def __init__(self, client: redis.Redis) -> None:
        self.r = client
        self._lock = threading.Lock()
        self._events: dict[str, list[threading.Event]] = defaultdict(list)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="job-done-listener", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake_all()

    def wait(self, job_id: str, is_final: Callable[[], bool], timeout: float) -> bool:
        """Block until ``is_final()`` is true or ``timeout`` passes; returns the last check."""
        deadline = time.monotonic() + timeout
        event = threading.Event()
        with self._lock:
            self._events[job_id].append(event)
        try:
            while True:
                if is_final():
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                event.wait(remaining)
                event.clear()
        finally:
            with self._lock:
                waiters = self._events.get(job_id, [])
                if event in waiters:
                    waiters.remove(event)
                if not waiters:
                    self._events.pop(job_id, None)

    async def wait_async(self, job_id: str, is_final: Callable[[], bool], timeout: float) -> bool:
        """:meth:`wait` for the event loop: the request holds no thread while it waits (only
        the short status reads run in the thread pool), so thousands of requests can wait at
        once without starving the pool that runs the others."""
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()
        event = _LoopEvent(loop, woken)
        deadline = time.monotonic() + timeout
        with self._lock:
            self._events[job_id].append(event)  # type: ignore[arg-type]
        try:
            while True:
                if await anyio.to_thread.run_sync(is_final):
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), remaining)
                woken.clear()
        finally:
            with self._lock:
                waiters = self._events.get(job_id, [])
                if event in waiters:
                    waiters.remove(event)  # type: ignore[arg-type]
                if not waiters:
                    self._events.pop(job_id, None)

    def _wake(self, job_id: str) -> None:
        with self._lock:
            for event in self._events.get(job_id, ()):
                event.set()

    def _wake_all(self) -> None:
        with self._lock:
            for waiters in self._events.values():
                for event in waiters:
                    event.set()

    def _run(self) -> None:
        backoff = 0.1
        while not self._stop.is_set():
            pubsub = self.r.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.subscribe(keys.JOB_DONE_CHANNEL)
                self._wake_all()  # anything published while we were away: re-check
                backoff = 0.1
                while not self._stop.is_set():
                    msg = pubsub.get_message(timeout=1.0)
                    if msg and msg.get("type") == "message":
                        self._wake(str(msg["data"]))
            except Exception as exc:  # noqa: BLE001 - the listener must outlive any failure
                if self._stop.is_set():
                    break
                log.warning("job-done listener lost Redis (%s); retrying", exc)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                with contextlib.suppress(Exception):  # closing a broken connection
                    pubsub.close()
