"""The scheduler of batch engines (Apertium, a transformers model, anything whose ``translate``
takes one call at a time).

* **Work-conserving**: the dispatcher blocks only while nothing is buffered; while a call runs,
  the next work gathers, so the next call is formed the moment the last one returns.
* **Sized calls**: :func:`~mtfleet.workers.batching.plan_batch` fills a call within the
  engine's sequence limit and a token budget from the online
  :class:`~mtfleet.workers.costmodel.CostModel`, so a bulk call never lasts more than half the
  interactive latency target; interactive work goes first in every call.
* **One bad segment fails alone**: a call that raises is split in halves until the failing
  segment is alone (:func:`~mtfleet.workers.translation.run_isolated`).
* **Deadlines**: a call may take :class:`~mtfleet.workers.scheduler.base.Deadlines` of what the
  cost model predicts for it. Past that the watchdog interrupts it (``Engine.interrupt``): the
  call raises, and bisection isolates a segment that hangs the engine, which then fails alone
  with ``engine_timeout``. A call that does not return even then (an engine that cannot be
  interrupted, or a stuck one) makes the engine *down*: its worker restarts it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from mtfleet.core.errors import EngineTimeout
from mtfleet.workers import metrics
from mtfleet.workers.batching import bulk_token_budget, plan_batch
from mtfleet.workers.engines.base import Translation, TranslationRequest
from mtfleet.workers.scheduler.base import Item, Scheduler, seconds
from mtfleet.workers.translation import run_isolated


class BatchScheduler(Scheduler):
    def __init__(self, *args: object, **kwargs: object) -> None:
        self._call_lock = threading.Lock()
        self._call: tuple[float, float] | None = None  # the call running: (started, deadline)
        self._interrupted_at: float | None = None
        self._current: list[Item] = []  # the items of the batch in the engine
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def keep_full_segments(self) -> int:
        per_call = self.batch_token_budget() / max(self._avg_tokens, 1.0)
        return max(1, int(2 * min(per_call, self.engine.limits.max_sequences)))

    def batch_token_budget(self) -> int:
        return bulk_token_budget(
            self.engine.limits, self.cost, latency_target_s=self.latency_target_s
        )

    def _runnable(self) -> bool:
        interactive, bulk = self._lanes
        return bool(interactive or bulk)

    def _take(self) -> list[Item]:
        plan = plan_batch(
            self._lanes,
            max_sequences=self.engine.limits.max_sequences,
            max_tokens=self.batch_token_budget(),
        )
        taken: list[Item] = []
        for lane, n in zip(self._lanes, plan.take, strict=True):
            taken += [lane.popleft() for _ in range(n)]
        return taken

    def _dispatch(self, items: list[Item]) -> None:
        tokens = sum(it.tokens for it in items)
        t0 = time.monotonic()
        with self._cond:
            self._busy_since = t0
            self._current = items
        try:
            results = run_isolated(self.engine.name, self._timed_call, [it.request for it in items])
        finally:
            elapsed = time.monotonic() - t0
            with self._cond:
                self._busy_total += elapsed
                self._busy_since = None
                self._done_total += len(items)
                self._current = []
        self.cost.observe(tokens, elapsed)
        metrics.observe_batch(len(items), tokens, elapsed)
        self._count_out(results)
        for it, res in zip(items, results, strict=True):
            self._resolve(it, res)

    def _timed_call(self, requests: Sequence[TranslationRequest]) -> Sequence[str | Translation]:
        """One engine call under a deadline the watchdog enforces."""
        tokens = sum(self.engine.count_tokens(r) for r in requests)
        now = time.monotonic()
        deadline = now + self.deadlines.of(self.cost.predict(tokens))
        with self._call_lock:
            self._call = (now, deadline)
            self._interrupted_at = None
        try:
            out = self.engine.translate(requests)
        except Exception as exc:
            if self._interrupted_at is not None:
                raise EngineTimeout(
                    f"the engine did not finish within {seconds(deadline - now)}"
                ) from exc
            raise
        finally:
            with self._call_lock:
                self._call = None
        return out

    def _abort_inflight(self, which: Callable[[Item], bool]) -> list[Item]:
        # A call cannot give up some of its segments: they are released (their outcomes are
        # set now) and what the call returns for them later is ignored.
        with self._cond:
            return [it for it in self._current if which(it)]

    def _overdue(self, now: float) -> None:
        with self._call_lock:
            call, interrupted = self._call, self._interrupted_at
            if call is None:
                return
            started, deadline = call
            if now < deadline:
                return
            if interrupted is None:
                self._interrupted_at = now
        if interrupted is None:
            self.engine.interrupt()  # the call raises; run_isolated narrows it down
            return
        # interrupted and still not back: the engine cannot be reached
        if now - interrupted > self.deadlines.floor_s:
            self._engine_down(
                f"an engine call has not returned {now - started:.0f}s after it started "
                f"(deadline {deadline - started:.0f}s), even after an interrupt"
            )
