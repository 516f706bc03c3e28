"""An asyncio event loop on a thread of its own: how a streaming engine serves ``submit`` from
any thread (:class:`workers.engines.base.Engine`).

``submit`` starts a coroutine on the loop and calls ``done`` once, from the loop, with its
result or the exception that ended it; the handle it returns is what ``abort`` takes: it
cancels the coroutine (whatever it awaits, an HTTP request or a backoff sleep, ends there), and
``done`` is then not called. ``run`` waits for one coroutine from the calling thread, with a
deadline.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopRequest:
    """One coroutine on the loop (its task, once started there)."""

    __slots__ = ("aborted", "task")

    def __init__(self) -> None:
        self.aborted = False
        self.task: asyncio.Task[Any] | None = None

    def abort(self) -> None:  # on the loop
        self.aborted = True
        if self.task is not None:
            self.task.cancel()


class LoopThread:
    """The loop and its thread. Not anyio's ``BlockingPortal`` (``start_task_soon`` and a done
    callback on the future it returns), which keeps "no ``done`` after an abort" (a cancelled
    future is never set) but costs more than it gives here:

    * a ``concurrent.futures.Future`` (a lock and a condition), a task-group task and a cancel
      scope per request: about 60 µs a request against 15 µs here (20,000 trivial coroutines
      from one thread), where a streaming engine is submitted thousands of segments a second
      and :mod:`workers.engines.base` chose a callback over a future for that cost;
    * a request aborted before it started still starts: the portal creates the coroutine and
      runs it to its first await (it may take a slot of the server's gate) before the
      cancellation lands; here it is never started;
    * leaving the portal waits for its thread without a deadline; :meth:`stop` gives up after
      ``timeout`` (an engine's close is best effort)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name=self.name, daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread

    @property
    def running(self) -> bool:
        return self._loop is not None and self._thread is not None and self._thread.is_alive()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (TimeoutError past ``timeout``)."""
        if self._loop is None:
            coro.close()
            raise RuntimeError(f"{self.name}: the loop is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def submit(
        self,
        make: Callable[[], Coroutine[Any, Any, Any]],
        done: Callable[[Any], None],
    ) -> LoopRequest:
        """Start ``make()`` on the loop; ``done`` gets its result or exception (not after an
        abort). From any thread."""
        loop = self._loop
        if loop is None:
            raise RuntimeError(f"{self.name}: the loop is not running")
        handle = LoopRequest()
        loop.call_soon_threadsafe(self._start, handle, make, done)
        return handle

    @staticmethod
    def _start(
        handle: LoopRequest,
        make: Callable[[], Coroutine[Any, Any, Any]],
        done: Callable[[Any], None],
    ) -> None:
        if handle.aborted:
            return
        task = asyncio.ensure_future(make())
        handle.task = task

        def finished(t: asyncio.Task[Any]) -> None:
            if t.cancelled():
                return
            exc = t.exception()
            done(exc if exc is not None else t.result())

        task.add_done_callback(finished)

    def abort(self, handle: LoopRequest) -> None:
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(handle.abort)

    def stop(self, timeout: float = 10) -> None:
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=timeout)
