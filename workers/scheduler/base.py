"""What both schedulers share: tickets, items, lanes, deadlines, cancellation, the dispatcher
thread and the watchdog.

The contract, in the order a segment lives it:

1. **submit** (a task thread): :meth:`Scheduler.submit` checks each request against the
   engine (too long: it fails alone, at once), counts its tokens and buffers it in its lane;
   the caller waits on the :class:`Ticket` it gets back, never longer than its chunk's budget.
2. **dispatch** (the dispatcher thread): :meth:`Scheduler._take` picks what runs next
   (interactive first) and :meth:`Scheduler._dispatch` hands it to the engine, each item with
   a **deadline** derived from what the engine should need (:class:`Deadlines`).
3. **resolve**: an engine output becomes the segment's outcome (:func:`outcome_of`); an error
   fails that segment alone; :class:`~mtfleet.core.errors.EngineUnavailable` means nothing can
   succeed on this engine: every waiter fails with it (their chunks go back to the queue) and
   ``on_engine_down`` is told, so the worker stops consuming and restarts its engine.
4. **watch** (the watchdog thread): an item past its deadline fails alone with
   ``engine_timeout`` when the engine is still making progress, and is aborted; an engine that
   makes none is reported down (step 3).
5. **cancel**: :meth:`Scheduler.cancel_job` drops a cancelled job's buffered items and aborts
   those inside the engine.

:class:`~mtfleet.workers.scheduler.batch.BatchScheduler` and
:class:`~mtfleet.workers.scheduler.streaming.StreamingScheduler` fill in steps 2 and 4 for the
two kinds of engine.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mtfleet.core.errors import Cancelled, EngineUnavailable, SegmentTooLong
from mtfleet.core.models import SegmentOutcome
from mtfleet.workers import metrics
from mtfleet.workers.costmodel import CostModel, ThroughputMeter
from mtfleet.workers.engines.base import Engine, Translation, TranslationRequest, estimate_tokens
from mtfleet.workers.translation import error_outcome, outcome_of

log = logging.getLogger(__name__)

INTERACTIVE, BULK = 0, 1  # request priorities; lanes are buffered in this order
WATCH_S = 0.25  # how often the watchdog looks at deadlines

#: What an item resolves to: the engine's output, a finished outcome, or why it failed.
Result = str | Translation | SegmentOutcome | BaseException


@dataclass(frozen=True)
class Deadlines:
    """How long the engine may take: ``factor`` x what it should need, never less than
    ``floor_s`` (an estimate can be far off on a cold or unusual engine) and never more than
    ``ceiling_s`` (a chunk must finish well inside the broker's visibility timeout)."""

    factor: float = 10.0
    floor_s: float = 30.0
    ceiling_s: float = 1800.0

    def of(self, expected_s: float) -> float:
        return min(self.ceiling_s, max(self.floor_s, self.factor * max(expected_s, 0.0)))


class Ticket:
    """The outcomes of one :meth:`Scheduler.submit` call, in order, filled in as they finish.

    One ticket per call rather than a future per segment: a chunk waits once, and the
    per-segment cost stays a list slot.
    """

    __slots__ = ("_done", "_error", "_lock", "_outcomes", "_remaining", "job_id")

    def __init__(self, n: int, job_id: str = "") -> None:
        self.job_id = job_id
        self._outcomes: list[SegmentOutcome | None] = [None] * n
        self._remaining = n
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        if n == 0:
            self._done.set()

    def set(self, index: int, outcome: SegmentOutcome) -> None:
        with self._lock:
            if self._outcomes[index] is not None or self._error is not None:
                return
            self._outcomes[index] = outcome
            self._remaining -= 1
            if self._remaining == 0:
                self._done.set()

    def fail(self, exc: BaseException) -> None:
        with self._lock:
            if self._error is None and self._remaining:
                self._error = exc
                self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def waits(self, index: int) -> bool:
        """Whether someone still waits for outcome ``index`` (not set yet: neither finished
        nor given up, as a cancelled job's or a chunk past its budget is)."""
        return self._error is None and self._outcomes[index] is None

    def wait(self, timeout: float) -> bool:
        return self._done.wait(timeout)

    def result(self, timeout: float | None = None) -> list[SegmentOutcome]:
        """Every outcome; raises the engine's failure (EngineUnavailable) or TimeoutError."""
        if not self._done.wait(timeout):
            raise TimeoutError("the engine did not finish in time")
        if self._error is not None:
            raise self._error
        return self._outcomes  # type: ignore[return-value]  # all set once done

    def set_many(self, outcomes: list[tuple[int, SegmentOutcome]]) -> None:
        """:meth:`set` for several outcomes at once (one lock)."""
        with self._lock:
            if self._error is not None:
                return
            slots = self._outcomes
            for index, outcome in outcomes:
                if slots[index] is None:
                    slots[index] = outcome
                    self._remaining -= 1
            if self._remaining == 0:
                self._done.set()

    def partial(self) -> list[SegmentOutcome | None]:
        """The outcomes so far (None where not finished)."""
        with self._lock:
            return list(self._outcomes)


class Item:
    """One request on its way through the scheduler."""

    __slots__ = (
        "deadline",
        "handle",
        "index",
        "interactive",
        "request",
        "sent_at",
        "ticket",
        "tokens",
    )

    def __init__(
        self, request: TranslationRequest, tokens: int, ticket: Ticket, index: int
    ) -> None:
        self.request = request
        self.interactive = request.priority <= 0
        self.tokens = tokens
        self.ticket = ticket
        self.index = index
        self.sent_at = 0.0  # when the engine got it
        self.deadline = 0.0  # when it must be done by (monotonic), once sent
        self.handle: object = None  # streaming engines: what submit() returned, for abort()


class Scheduler(ABC):
    """Between the task threads and one engine; see the module docs for the steps."""

    def __init__(
        self,
        engine: Engine,
        *,
        latency_target_s: float | None,
        deadlines: Deadlines | None = None,
        on_engine_down: Callable[[str], None] | None = None,
        cost: CostModel | None = None,
    ) -> None:
        """``latency_target_s``: interactive latency target, or None if this worker takes no
        interactive work; ``on_engine_down``: told (once) when nothing can succeed on the
        engine any more."""
        self.engine = engine
        self.latency_target_s = latency_target_s
        self.deadlines = deadlines or Deadlines()
        self.on_engine_down = on_engine_down
        self.cost = cost or CostModel()
        self.meter = ThroughputMeter()
        self._lanes: tuple[deque[Item], deque[Item]] = (deque(), deque())
        self._cond = threading.Condition()
        self._closed = False
        self._down: str | None = None  # why the engine is down, once it is
        self._busy_since: float | None = None
        self._busy_total = 0.0
        self._done_total = 0
        self._tick_state = (0.0, 0)
        self._avg_tokens = 32.0  # running mean tokens per segment (sizes the keep-full target)
        self._thread = threading.Thread(target=self._loop, name="mt-scheduler", daemon=True)
        self._watchdog = threading.Thread(target=self._watch, name="mt-watchdog", daemon=True)
        self._thread.start()
        self._watchdog.start()

    # -- the task threads' side --------------------------------------------------------------
    def submit(self, requests: Sequence[TranslationRequest], *, job_id: str = "") -> Ticket:
        """Queue the requests (texts already normalised); checks run here, in the caller's
        thread. Raises EngineUnavailable while the engine is down or the worker stops."""
        ticket = Ticket(len(requests), job_id)
        items: list[Item] = []
        engine = self.engine
        for i, req in enumerate(requests):
            reason = engine.check(req)
            if reason:
                ticket.set(i, SegmentOutcome(error=SegmentTooLong(reason).as_dict()))
                continue
            items.append(Item(req, engine.count_tokens(req), ticket, i))
        if items:
            metrics.TOKENS_IN.inc(sum(it.tokens for it in items))
            with self._cond:
                if self._closed or self._down is not None:
                    raise EngineUnavailable(self._down or "the worker is shutting down")
                for it in items:
                    self._lanes[INTERACTIVE if it.interactive else BULK].append(it)
                    self._avg_tokens += (it.tokens - self._avg_tokens) * 0.01
                self._cond.notify_all()  # a batch scheduler may have a dispatcher per lane
        return ticket

    def cancel(self, ticket: Ticket, reason: BaseException) -> None:
        """Give up on a ticket's unfinished items: buffered ones leave the lanes, those in the
        engine are aborted; each gets ``reason`` as its outcome."""
        self._cancel(lambda it: it.ticket is ticket, reason)

    def cancel_job(self, job_id: str) -> int:
        """A job was cancelled: its buffered items leave the lanes and those in the engine are
        aborted (their outcomes: ``cancelled``). Returns how many were dropped."""
        return self._cancel(
            lambda it: it.ticket.job_id == job_id, Cancelled(f"job {job_id} was cancelled")
        )

    def _cancel(self, which: Callable[[Item], bool], reason: BaseException) -> int:
        with self._cond:
            dropped = [it for lane in self._lanes for it in lane if which(it)]
            if dropped:
                for lane in self._lanes:
                    kept = [it for it in lane if not which(it)]
                    lane.clear()
                    lane.extend(kept)
        aborted = self._abort_inflight(which)
        for it in dropped + aborted:
            it.ticket.set(it.index, error_outcome(reason))
        metrics.ABORTED.inc(len(aborted))
        return len(dropped) + len(aborted)

    # -- what the window controller, metrics and health read ---------------------------------
    @abstractmethod
    def keep_full_segments(self) -> int:
        """Segments buffered or in flight that keep the engine from ever idling."""

    def buffered(self) -> tuple[int, int]:
        with self._cond:
            return len(self._lanes[INTERACTIVE]), len(self._lanes[BULK])

    @property
    def down(self) -> str | None:
        """Why the engine is down (None while it serves)."""
        return self._down

    def tick(self) -> float | None:
        """Fold the busy time and completions since the last tick into the meter; its rate."""
        with self._cond:
            busy = self._busy_total
            if self._busy_since is not None:
                busy += time.monotonic() - self._busy_since
            done = self._done_total
        last_busy, last_done = self._tick_state
        self._tick_state = (busy, done)
        metrics.ENGINE_BUSY.inc(max(busy - last_busy, 0.0))
        self.meter.add(done - last_done, busy - last_busy)
        interactive, bulk = self.buffered()
        metrics.BUFFERED.labels("interactive").set(interactive)
        metrics.BUFFERED.labels("bulk").set(bulk)
        return self.meter.rate()

    def close(self) -> None:
        """Stop; every waiter fails with EngineUnavailable (their chunks are requeued)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._fail_everything(EngineUnavailable("the worker is shutting down"))
        self._thread.join(timeout=10)

    # -- the dispatcher ----------------------------------------------------------------------
    @abstractmethod
    def _runnable(self) -> bool:
        """Something can be dispatched now (lock held)."""

    @abstractmethod
    def _take(self) -> list[Item]:
        """Take the next items to dispatch from the lanes (lock held)."""

    @abstractmethod
    def _dispatch(self, items: list[Item]) -> None:
        """Hand the items to the engine (no lock held)."""

    @abstractmethod
    def _abort_inflight(self, which: Callable[[Item], bool]) -> list[Item]:
        """Abort the items inside the engine that ``which`` selects; they are returned, and
        their outcomes are the caller's to set."""

    @abstractmethod
    def _overdue(self, now: float) -> None:
        """The watchdog's look at deadlines (no lock held)."""

    def _finished_work(self) -> list[tuple[Item, object]]:
        """Engine completions waiting to be settled by the dispatcher (lock held); a streaming
        engine's callbacks only queue them, so its own thread stays free."""
        return []

    def _settle(self, done: list[tuple[Item, object]]) -> None:  # noqa: B027 - streaming only
        """Settle engine completions (no lock held)."""

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not (
                    self._finished_work() or (self._down is None and self._runnable())
                ):
                    self._cond.wait()
                if self._closed:
                    return
                done = self._finished_work()
                if done:
                    done = list(done)
                    self._finished_work().clear()
                items = self._take() if self._down is None and self._runnable() else []
            if done:
                self._settle(done)
            if items:
                self._dispatch_safely(items)

    def _dispatch_safely(self, items: list[Item]) -> None:
        """:meth:`_dispatch`; a dispatcher never dies: an unexpected error fails the items."""
        try:
            self._dispatch(items)
        except Exception as exc:
            log.exception("scheduler failed a batch")
            for it in items:
                self._resolve(it, exc)

    def _watch(self) -> None:
        while not self._closed:
            time.sleep(self._watch_s(time.monotonic()))
            try:
                self._overdue(time.monotonic())
            except Exception:  # the watchdog must outlive anything
                log.exception("scheduler watchdog failed")

    def _watch_s(self, now: float) -> float:
        """How long the watchdog sleeps before its next look (at most ``WATCH_S``)."""
        return WATCH_S

    # -- outcomes ----------------------------------------------------------------------------
    def _resolve(self, it: Item, res: Result) -> None:
        if isinstance(res, EngineUnavailable):
            it.ticket.fail(res)  # its chunk goes back to the queue
            self._engine_down(res.message)
        elif isinstance(res, BaseException):
            it.ticket.set(it.index, error_outcome(res))
        elif isinstance(res, SegmentOutcome):
            it.ticket.set(it.index, res)
        else:
            it.ticket.set(it.index, outcome_of(res, source=it.request.text))

    @staticmethod
    def _count_out(results: Sequence[Result]) -> None:
        """Generated tokens of a batch of engine outputs, into the metric at once."""
        n = 0
        for res in results:
            if isinstance(res, Translation):
                n += res.tokens_out or estimate_tokens(res.text)
            elif isinstance(res, str):
                n += estimate_tokens(res)
        if n:
            metrics.TOKENS_OUT.inc(n)

    def _engine_down(self, reason: str) -> None:
        """Nothing can succeed on the engine: every waiter fails with EngineUnavailable and
        ``on_engine_down`` is told, once."""
        with self._cond:
            first = self._down is None and not self._closed
            if first:
                self._down = reason
        if not first:
            return
        log.critical("engine %s is down: %s", self.engine.name, reason)
        self._fail_everything(EngineUnavailable(reason))
        if self.on_engine_down is not None:
            self.on_engine_down(reason)

    def _fail_everything(self, exc: EngineUnavailable) -> None:
        with self._cond:
            pending = [it for lane in self._lanes for it in lane]
            for lane in self._lanes:
                lane.clear()
        pending += self._abort_inflight(lambda _it: True)
        for it in pending:
            it.ticket.fail(exc)
