"""The worker's scheduler: between the Celery task threads and the engine, keeping it full.

Task threads (one per held chunk) hand their segments to :meth:`Scheduler.submit` and wait on
a ticket; one dispatcher thread owns the engine side:

* **work-conserving** — the dispatcher blocks only while nothing is runnable; when the engine
  frees up and work is buffered, it runs at once. While a batch engine is busy, the next work
  gathers in the buffer, so the next call is formed the moment the last one returns;
* **streaming engines** (vLLM's async engine) are fed request by request as work arrives and
  batch continuously on their own; the dispatcher keeps up to two batches' worth of sequences
  in flight so the engine's waiting queue is never empty, and passes lane priority through;
* **batch engines** (Apertium) get calls planned by :mod:`workers.batching` within the engine's
  sequence and token limits, sized by the online :class:`~workers.costmodel.CostModel` so a
  bulk call never lasts more than half the interactive latency target;
* **lanes** — interactive work goes ahead of buffered bulk work in every decision;
* segments too long for the model, engine errors and empty output fail alone
  (:mod:`workers.translation`); :class:`~core.errors.EngineUnavailable` fails every waiter, so
  their chunks go back to the queue and the worker restarts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial

from core.errors import EngineUnavailable, SegmentTooLong
from core.models import SegmentOutcome
from workers import metrics
from workers.batching import bulk_token_budget, plan_batch
from workers.costmodel import BulkGovernor, CostModel, ThroughputMeter
from workers.engines.base import Engine, Translation, TranslationRequest, estimate_tokens
from workers.translation import error_outcome, outcome_of, run_isolated, split_outer_space

log = logging.getLogger(__name__)

INTERACTIVE, BULK = 0, 1  # request priorities; lanes are buffered in this order


class Ticket:
    """The outcomes of one :meth:`Scheduler.submit` call, in order, filled in as they finish.

    One ticket per call rather than a future per segment: a chunk waits once, and the
    per-segment cost stays a list slot.
    """

    __slots__ = ("_done", "_error", "_lock", "_outcomes", "_remaining")

    def __init__(self, n: int) -> None:
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

    def result(self, timeout: float | None = None) -> list[SegmentOutcome]:
        """Every outcome; raises the engine's failure (EngineUnavailable) or TimeoutError."""
        if not self._done.wait(timeout):
            raise TimeoutError("the engine did not finish in time")
        if self._error is not None:
            raise self._error
        return self._outcomes  # type: ignore[return-value]  # all set once done


@dataclass
class _Item:
    request: TranslationRequest  # outer whitespace stripped
    tokens: int
    lead: str
    trail: str
    ticket: Ticket
    index: int
    sent_at: float = 0.0  # streaming: when the engine got it


class Scheduler:
    def __init__(
        self,
        engine: Engine,
        *,
        latency_target_s: float | None,
        cost: CostModel | None = None,
        slowdown: float = 1.3,
    ) -> None:
        """``latency_target_s``: interactive latency target, or None if no interactive work;
        ``slowdown``: how much slower per token interactive requests may run in a streaming
        engine under bulk load (see :class:`~workers.costmodel.BulkGovernor`)."""
        self.engine = engine
        self.latency_target_s = latency_target_s
        self.cost = cost or CostModel()
        self.meter = ThroughputMeter()
        self._lanes: tuple[deque[_Item], deque[_Item]] = (deque(), deque())
        self._cond = threading.Condition()
        self._closed = False
        self._inflight = 0  # streaming: requests inside the engine
        self._inflight_bulk = 0
        self._bulk_seen_at = -1.0  # last time the engine held bulk requests
        self.governor = (
            BulkGovernor(
                ceiling=self.inflight_cap,
                floor=max(1, engine.limits.max_sequences // 8),
                slowdown=slowdown,
            )
            if engine.streaming and latency_target_s is not None
            else None
        )
        self._busy_since: float | None = None
        self._busy_total = 0.0
        self._done_total = 0
        self._tick_state = (0.0, 0)
        self._avg_tokens = 32.0  # running mean tokens per segment (sizes the keep-full target)
        self._thread = threading.Thread(target=self._loop, name="mt-scheduler", daemon=True)
        self._thread.start()

    # -- the task threads' side ------------------------------------------------------------
    def submit(self, requests: Sequence[TranslationRequest]) -> Ticket:
        """Queue the requests; checks (e.g. too long) run here, in the caller's thread."""
        ticket = Ticket(len(requests))
        items: list[_Item] = []
        for i, req in enumerate(requests):
            lead, core, trail = split_outer_space(req.text)
            if not core:
                ticket.set(i, SegmentOutcome(translation=req.text))
                continue
            core_req = TranslationRequest(core, req.source, req.target, req.priority)
            reason = self.engine.check(core_req)
            if reason:
                ticket.set(i, SegmentOutcome(error=SegmentTooLong(reason).as_dict()))
                continue
            tokens = self.engine.count_tokens(core_req)
            items.append(_Item(core_req, tokens, lead, trail, ticket, i))
        if items:
            metrics.TOKENS.labels("in").inc(sum(it.tokens for it in items))
            with self._cond:
                if self._closed:
                    raise EngineUnavailable("the worker is shutting down")
                for it in items:
                    self._lanes[INTERACTIVE if it.request.priority <= 0 else BULK].append(it)
                    self._avg_tokens += (it.tokens - self._avg_tokens) * 0.01
                self._cond.notify()
        return ticket

    # -- what the window controller and metrics read ---------------------------------------
    @property
    def inflight_cap(self) -> int:
        return 2 * self.engine.limits.max_sequences

    def keep_full_segments(self) -> int:
        """Segments buffered or in flight that keep the engine from ever idling."""
        if self.engine.streaming:
            return self.inflight_cap
        per_call = self.batch_token_budget() / max(self._avg_tokens, 1.0)
        return max(1, int(2 * min(per_call, self.engine.limits.max_sequences)))

    def batch_token_budget(self) -> int:
        return bulk_token_budget(
            self.engine.limits, self.cost, latency_target_s=self.latency_target_s
        )

    def buffered(self) -> tuple[int, int]:
        with self._cond:
            return len(self._lanes[INTERACTIVE]), len(self._lanes[BULK])

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
        metrics.INFLIGHT.set(self._inflight)
        if self.engine.streaming:
            metrics.BULK_CAP.set(self.bulk_cap())
        return self.meter.rate()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            pending = [it for lane in self._lanes for it in lane]
            for lane in self._lanes:
                lane.clear()
            self._cond.notify_all()
        for it in pending:
            it.ticket.fail(EngineUnavailable("the worker is shutting down"))
        self._thread.join(timeout=10)

    # -- the dispatcher --------------------------------------------------------------------
    def bulk_cap(self) -> int:
        """Bulk requests a streaming engine may hold now."""
        if self.governor is None:
            return self.inflight_cap
        return self.governor.limit(time.monotonic())

    def _runnable(self) -> bool:
        interactive, bulk = self._lanes
        if not self.engine.streaming:
            return bool(interactive or bulk)
        return bool(interactive) or (bool(bulk) and self._inflight_bulk < self.bulk_cap())

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not self._runnable():
                    self._cond.wait()
                if self._closed:
                    return
                batch = self._take_streaming() if self.engine.streaming else self._take_batch()
            try:
                if self.engine.streaming:
                    self._feed(batch)
                else:
                    self._run_batch(batch)
            except Exception as exc:  # never let the dispatcher die
                log.exception("scheduler failed a batch")
                self._fail(batch, exc)

    def _take_streaming(self) -> list[_Item]:
        interactive, bulk = self._lanes
        taken = list(interactive)
        interactive.clear()
        room = self.bulk_cap() - self._inflight_bulk
        n_bulk = max(0, min(room, len(bulk)))
        taken += [bulk.popleft() for _ in range(n_bulk)]
        now = time.monotonic()
        if taken and self._inflight == 0:
            self._busy_since = now
        for it in taken:
            it.sent_at = now
        self._inflight += len(taken)
        self._inflight_bulk += n_bulk
        if self._inflight_bulk:
            self._bulk_seen_at = now
        return taken

    def _take_batch(self) -> list[_Item]:
        limits = self.engine.limits
        plan = plan_batch(
            self._lanes, max_sequences=limits.max_sequences, max_tokens=self.batch_token_budget()
        )
        taken: list[_Item] = []
        for lane, n in zip(self._lanes, plan.take, strict=True):
            taken += [lane.popleft() for _ in range(n)]
        return taken

    def _run_batch(self, batch: list[_Item]) -> None:
        tokens = sum(it.tokens for it in batch)
        t0 = time.monotonic()
        with self._cond:
            self._busy_since = t0
        try:
            results = run_isolated(self.engine, [it.request for it in batch])
        finally:
            elapsed = time.monotonic() - t0
            with self._cond:
                self._busy_total += elapsed
                self._busy_since = None
                self._done_total += len(batch)
        self.cost.observe(tokens, elapsed)
        metrics.observe_batch(len(batch), tokens, elapsed)
        for it, res in zip(batch, results, strict=True):
            self._resolve(it, res)

    def _feed(self, batch: list[_Item]) -> None:
        metrics.observe_batch(self._inflight, sum(it.tokens for it in batch), None)
        for it in batch:
            try:
                fut = self.engine.submit(it.request)
            except Exception as exc:  # noqa: BLE001 - one request's failure is its own
                self._finished(it, exc)
                continue
            fut.add_done_callback(partial(self._finished, it))

    def _finished(self, it: _Item, result: Future[str | Translation] | BaseException) -> None:
        now = time.monotonic()
        interactive = it.request.priority <= 0
        if (
            interactive
            and self.governor is not None
            and not isinstance(result, BaseException)
            and result.exception() is None
        ):
            out = result.result()
            tokens = out.tokens_out if isinstance(out, Translation) else None
            text = out.text if isinstance(out, Translation) else out
            self.governor.observe(
                now,
                (now - it.sent_at) / (tokens or estimate_tokens(text)),
                unloaded=self._inflight_bulk == 0 and self._bulk_seen_at <= it.sent_at,
            )
        with self._cond:
            self._inflight -= 1
            if not interactive:
                self._inflight_bulk -= 1
                self._bulk_seen_at = now
            self._done_total += 1
            if self._inflight == 0 and self._busy_since is not None:
                self._busy_total += now - self._busy_since
                self._busy_since = None
            self._cond.notify()
        if isinstance(result, BaseException):
            self._resolve(it, result)
            return
        exc = result.exception()
        self._resolve(it, exc if exc is not None else result.result())

    def _resolve(self, it: _Item, res: str | Translation | SegmentOutcome | BaseException) -> None:
        if isinstance(res, EngineUnavailable):
            it.ticket.fail(res)
        elif isinstance(res, BaseException):
            it.ticket.set(it.index, error_outcome(res))
        elif isinstance(res, SegmentOutcome):
            it.ticket.set(it.index, res)
        else:
            text = res.text if isinstance(res, Translation) else res
            counted = res.tokens_out if isinstance(res, Translation) else None
            metrics.TOKENS.labels("out").inc(counted or estimate_tokens(text))
            it.ticket.set(it.index, outcome_of(res, it.lead, it.trail, it.request.text))

    def _fail(self, batch: list[_Item], exc: BaseException) -> None:
        for it in batch:
            self._resolve(it, exc)
