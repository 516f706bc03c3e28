"""The scheduler of batch engines (Apertium, a transformers model, anything whose ``translate``
takes one call at a time).

* **Work-conserving**: the dispatcher blocks only while nothing is buffered; while a call runs,
  the next work gathers, so the next call is formed the moment the last one returns.
* **Sized calls**: :func:`~mtfleet.workers.batching.plan_batch` fills a call within the
  engine's sequence limit and a token budget from the online
  :class:`~mtfleet.workers.costmodel.CostModel`, so a bulk call never lasts more than half the
  interactive latency target; interactive work goes first in every call.
* **Interactive never waits behind bulk** where the engine allows it
  (``Engine.parallel_lanes``: Apertium runs a pipeline per lane): a second dispatcher thread
  serves the interactive lane alone, its calls running beside the bulk call in progress.
  Otherwise interactive work waits for at most the bulk call in progress, whose length the
  token budget bounds (above).
* **One bad segment fails alone**: a call that raises is split in halves until the failing
  segment is alone (:func:`~mtfleet.workers.translation.run_isolated`).
* **Deadlines**: a call may take :class:`~mtfleet.workers.scheduler.base.Deadlines` of what the
  cost model predicts for it. Past that the watchdog interrupts it, naming it
  (``Engine.interrupt(call)``: that call alone raises; the other lane's call beside it and a
  call that started after it returned run on), and bisection isolates a segment that hangs
  the engine, which then fails alone with ``engine_timeout`` — the parts of a timed-out call
  under shrinking limits, so one wedged segment costs its chunk at most about two deadlines,
  not one per halving; the parts of a call with no single wedge get their own full deadlines
  (:func:`~mtfleet.workers.translation.run_isolated`), and a segment no one waits for any
  more (its ticket given up) is not sent again. A call that does not return even then (an
  engine that cannot be interrupted, or a stuck one) makes the engine *down*: its worker
  restarts it.
* **Calls fit their deadlines**: a call is cut to what the cost model expects to finish within
  half the longest deadline (``Deadlines.ceiling_s``, a quarter of the visibility timeout),
  so a slow engine behind a short visibility timeout gets calls it can finish, not calls that
  only ever time out.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from mtfleet.core.errors import EngineTimeout
from mtfleet.core.models import SegmentOutcome
from mtfleet.workers import metrics
from mtfleet.workers.batching import bulk_token_budget, plan_batch
from mtfleet.workers.engines.base import Translation, TranslationRequest
from mtfleet.workers.scheduler.base import BULK, INTERACTIVE, WATCH_S, Item, Scheduler
from mtfleet.workers.translation import run_isolated, seconds

#: A call is sized to what the cost model expects within this share of the longest deadline.
CALL_SHARE_OF_CEILING = 0.5


@dataclass
class _Call:
    """One engine call in progress: what the engine was given (the handle
    ``Engine.interrupt`` takes: that call alone ends), when it started, its deadline, and when
    the watchdog interrupted it."""

    requests: Sequence[TranslationRequest]
    started: float
    deadline: float
    interrupted_at: float | None = None


class BatchScheduler(Scheduler):
    def __init__(self, *args: object, **kwargs: object) -> None:
        self._call_lock = threading.Lock()
        # per dispatcher (the lane it serves, BULK when one serves both): the call running,
        # and the items in the engine
        self._calls: dict[int, _Call] = {}
        self._current: dict[int, list[Item]] = {}
        self._busy: dict[int, float] = {}
        self._parallel = False
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._parallel = bool(self.engine.parallel_lanes)
        if self._parallel:
            self._interactive_thread = threading.Thread(
                target=self._interactive_loop, name="mt-scheduler-interactive", daemon=True
            )
            self._interactive_thread.start()

    def keep_full_segments(self) -> int:
        per_call = self.batch_token_budget() / max(self._avg_tokens, 1.0)
        return max(1, int(2 * min(per_call, self.engine.limits.max_sequences)))

    def batch_token_budget(self) -> int:
        budget = bulk_token_budget(
            self.engine.limits, self.cost, latency_target_s=self.latency_target_s
        )
        fits = self.cost.tokens_within(self.deadlines.ceiling_s * CALL_SHARE_OF_CEILING)
        return max(1, min(budget, fits))

    # -- the dispatchers: one for both lanes, or (parallel lanes) this one for bulk and a
    # second one for interactive work ----------------------------------------------------------
    def _runnable(self) -> bool:
        interactive, bulk = self._lanes
        return bool(bulk) if self._parallel else bool(interactive or bulk)

    def _take(self) -> list[Item]:
        lanes = (deque[Item](), self._lanes[BULK]) if self._parallel else self._lanes
        return self._plan(lanes)

    def _plan(self, lanes: tuple[deque[Item], deque[Item]]) -> list[Item]:
        plan = plan_batch(
            lanes,
            max_sequences=self.engine.limits.max_sequences,
            max_tokens=self.batch_token_budget(),
        )
        taken: list[Item] = []
        for lane, n in zip(lanes, plan.take, strict=True):
            taken += [lane.popleft() for _ in range(n)]
        return taken

    def _interactive_loop(self) -> None:
        lanes = (self._lanes[INTERACTIVE], deque[Item]())
        while True:
            with self._cond:
                while not self._closed and (self._down is not None or not lanes[0]):
                    self._cond.wait()
                if self._closed:
                    return
                items = self._plan(lanes)
            self._dispatch_safely(items)

    def _dispatch(self, items: list[Item]) -> None:
        lane = INTERACTIVE if self._parallel and items[0].interactive else BULK
        tokens = sum(it.tokens for it in items)
        t0 = time.monotonic()
        with self._cond:
            self._busy[lane] = t0
            if self._busy_since is None:
                self._busy_since = t0
            self._current[lane] = items
        try:
            results = run_isolated(
                self.engine.name,
                partial(self._timed_call, lane),
                [it.request for it in items],
                deadline_of=self._deadline_of,
                factor=self.deadlines.factor,
                on_result=lambda i, res: self._resolve(items[i], res),
                waiting=lambda i: items[i].ticket.waits(items[i].index),
            )
        finally:
            elapsed = time.monotonic() - t0
            with self._cond:
                # busy time: the span some call was running (overlapping calls count once)
                del self._busy[lane]
                now = time.monotonic()
                self._busy_total += now - (self._busy_since or t0)
                self._busy_since = now if self._busy else None
                self._done_total += len(items)
                self._current.pop(lane, None)
        metrics.observe_batch(len(items), tokens, elapsed)
        self._count_out(results)
        metrics.TIMED_OUT.inc(
            sum(
                1
                for res in results
                if isinstance(res, SegmentOutcome)
                and res.error is not None
                and res.error.get("type") == EngineTimeout.code
            )
        )

    def _deadline_of(self, requests: Sequence[TranslationRequest]) -> float:
        """A call's own deadline: the cost model's estimate for its tokens, by Deadlines."""
        tokens = sum(self.engine.count_tokens(r) for r in requests)
        return self.deadlines.of(self.cost.predict(tokens))

    def _timed_call(
        self, lane: int, requests: Sequence[TranslationRequest], limit_s: float
    ) -> Sequence[str | Translation]:
        """One engine call that the watchdog interrupts ``limit_s`` after it starts; a call
        that returns teaches the cost model (one that was interrupted says nothing of the
        engine's speed: it held a segment that wedges it, or it was too big)."""
        now = time.monotonic()
        call = _Call(requests, now, now + limit_s)
        with self._call_lock:
            self._calls[lane] = call
        try:
            out = self.engine.translate(requests)
        except Exception as exc:
            if call.interrupted_at is not None:
                raise EngineTimeout(f"the engine did not finish within {seconds(limit_s)}") from exc
            raise
        finally:
            with self._call_lock:
                self._calls.pop(lane, None)
        self.cost.observe(
            sum(self.engine.count_tokens(r) for r in requests), time.monotonic() - now
        )
        return out

    def _abort_inflight(self, which: Callable[[Item], bool]) -> list[Item]:
        # A call cannot give up some of its segments: they are released (their outcomes are
        # set now) and what the call returns for them later is ignored.
        with self._cond:
            return [it for items in self._current.values() for it in items if which(it)]

    def _watch_s(self, now: float) -> float:
        """Until the next call's deadline (a wedged call's parts have short ones), at most
        ``WATCH_S``."""
        with self._call_lock:
            due = [c.deadline for c in self._calls.values() if c.interrupted_at is None]
        return min(WATCH_S, max(0.01, min(due, default=now + WATCH_S) - now + 0.005))

    def _overdue(self, now: float) -> None:
        overdue: list[_Call] = []
        stuck: list[str] = []
        with self._call_lock:
            for call in self._calls.values():
                if now < call.deadline:
                    continue
                if call.interrupted_at is None:
                    call.interrupted_at = now
                    overdue.append(call)
                elif now - call.interrupted_at > self.deadlines.floor_s:
                    # interrupted and still not back: the engine cannot be reached
                    stuck.append(
                        f"an engine call has not returned {now - call.started:.0f}s after it "
                        f"started (deadline {call.deadline - call.started:.0f}s), even after an "
                        "interrupt"
                    )
        if stuck:
            self._engine_down(stuck[0])
            return
        for call in overdue:
            # that call alone raises (one that returned meanwhile is left alone, as is the
            # other lane's); run_isolated narrows it down
            self.engine.interrupt(call.requests)
