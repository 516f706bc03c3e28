"""Job-done events: every job is announced once on :data:`mtfleet.core.keys.JOB_DONE_CHANNEL`
when it reaches a final state (the scripts' ``finalize``).

:class:`JobEvents` is the one listener: a background thread per process on one Redis
connection, however many parties listen, that reconnects with backoff. Pub/sub is
at-most-once, so listeners re-read what they care about themselves: after a reconnect
(``on_reconnect``) as well as on each event.

* :class:`CompletionWaiter` (the API) wakes the requests waiting for a job without polling;
* the workers do not listen here: each follows only the jobs it holds, on their own channels
  (:func:`mtfleet.core.keys.job_events`, published beside this one by the same ``announce``;
  :class:`~mtfleet.workers.cancellation.Cancellations`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar, cast

import redis

from mtfleet.core import keys
from mtfleet.core.backoff import RECONNECT

log = logging.getLogger(__name__)

T = TypeVar("T")


class JobEvents:
    """Calls ``on_event(job_id)`` for each job-done event, ``on_reconnect()`` after the
    subscription was (re)made (events published meanwhile are lost)."""

    def __init__(
        self,
        client: redis.Redis,
        on_event: Callable[[str], None],
        on_reconnect: Callable[[], None] = lambda: None,
        *,
        name: str = "job-done-listener",
    ) -> None:
        self.r = client
        self.on_event = on_event
        self.on_reconnect = on_reconnect
        self.name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            pubsub = self.r.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.subscribe(keys.JOB_DONE_CHANNEL)
                self.on_reconnect()  # anything published while we were away: re-check
                failures = 0
                while not self._stop.is_set():
                    msg = pubsub.get_message(timeout=1.0)
                    if msg and msg.get("type") == "message":
                        self.on_event(str(msg["data"]))
            except Exception as exc:  # noqa: BLE001 - the listener must outlive any failure
                if self._stop.is_set():
                    break
                log.warning("job-done listener lost Redis (%s); retrying", exc)
                self._stop.wait(RECONNECT.wait_s(failures))
                failures += 1
            finally:
                with contextlib.suppress(Exception):  # closing a broken connection
                    pubsub.close()


class CompletionWaiter:
    """Requests waiting for jobs to finish, woken by :class:`JobEvents`; a waiter always
    re-reads the job's status itself (after registering, when woken, at its deadline).

    Reads of the same job are shared (:meth:`shared`): the thousand waiters of one job that
    its job-done event wakes at once make one read between them, not a thousand (each would
    hold a Redis connection)."""

    def __init__(self, client: redis.Redis) -> None:
        self._lock = threading.Lock()
        self._events: dict[str, list[asyncio.Event]] = defaultdict(list)
        self._loops: dict[int, asyncio.AbstractEventLoop] = {}
        self._listener = JobEvents(client, self._wake, self._wake_all)
        # job-done events seen so far: a read started before the latest may predate it
        self._generation = 0
        self._reads: dict[Hashable, tuple[int, asyncio.Future[Any]]] = {}

    async def shared(self, key: Hashable, read: Callable[[], Awaitable[T]]) -> T:
        """``await read()``, or the result of the same read (``key``) already under way, when
        it started after the last job-done event (so it cannot miss one). On the event loop
        (asyncio reads); a caller that is cancelled does not cancel the others' read."""
        with self._lock:
            generation = self._generation
        found = self._reads.get(key)
        if found is not None and found[0] == generation and not found[1].done():
            return cast(T, await asyncio.shield(found[1]))
        task: asyncio.Future[Any] = asyncio.ensure_future(read())
        self._reads[key] = (generation, task)

        def forget(_: asyncio.Future[Any]) -> None:
            if self._reads.get(key, (0, None))[1] is task:
                del self._reads[key]

        task.add_done_callback(forget)
        return cast(T, await asyncio.shield(task))

    def start(self) -> None:
        self._listener.start()

    def stop(self) -> None:
        self._listener.stop()
        self._wake_all()

    async def wait_async(
        self, job_id: str, is_final: Callable[[], Awaitable[bool]], timeout: float
    ) -> bool:
        """Wait until ``await is_final()`` is true or ``timeout`` passes; returns the last
        check (``is_final`` reads whether job ``job_id`` is final: the checks of the job's
        waiters are shared). The request holds no thread while it waits, and its status reads
        run on the event loop (an asyncio Redis client): thousands of requests can wait at
        once, and a wait costs no thread-pool hop."""
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()
        deadline = time.monotonic() + timeout
        with self._lock:
            self._events[job_id].append(woken)
            self._loops[id(woken)] = loop
        try:
            while True:
                if await self.shared(("final", job_id), is_final):
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
                if woken in waiters:
                    waiters.remove(woken)
                if not waiters:
                    self._events.pop(job_id, None)
                self._loops.pop(id(woken), None)

    def _set(self, event: asyncio.Event) -> None:
        loop = self._loops.get(id(event))
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
                loop.call_soon_threadsafe(event.set)

    def _wake(self, job_id: str) -> None:
        with self._lock:
            self._generation += 1
            for event in self._events.get(job_id, ()):
                self._set(event)

    def _wake_all(self) -> None:
        with self._lock:
            self._generation += 1
            for waiters in self._events.values():
                for event in waiters:
                    self._set(event)
