"""The scheduler of streaming engines (vLLM's async engine, a served model): they batch
continuously on their own, so it feeds them request by request and leaves batching to them.

* **Keep full**: up to two batches' worth of sequences in flight (``2 x max_sequences``), so
  the engine's waiting queue is never empty; lane priority is passed through (vLLM's priority
  policy runs interactive requests first).
* **Bulk under a governor**: while interactive work runs, bulk in flight is capped by the
  :class:`~mtfleet.workers.costmodel.BulkGovernor`, which holds interactive time per token near
  ``MT_INTERACTIVE_SLOWDOWN`` x what the engine does unloaded.
* **Deadlines**: each request may take :class:`~mtfleet.workers.scheduler.base.Deadlines` of
  what it should need (its tokens at the engine's measured seconds per token). Past it:

  - if the engine finished other requests since this one was sent, it is serving: the request
    is aborted and fails alone (``engine_timeout``);
  - if several requests are overdue and none finished, or the engine says it is not alive,
    the engine is down (its worker restarts it);
  - otherwise (it was alone, the engine says it is alive) it fails alone, as above.
* **Cancel**: a cancelled job's requests are aborted in the engine (``Engine.abort``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from mtfleet.core.errors import EngineTimeout
from mtfleet.core.models import SegmentOutcome
from mtfleet.workers import metrics
from mtfleet.workers.costmodel import BulkGovernor
from mtfleet.workers.engines.base import Translation, estimate_tokens
from mtfleet.workers.scheduler.base import Item, Scheduler
from mtfleet.workers.translation import outcome_of, seconds


class StreamingScheduler(Scheduler):
    def __init__(self, *args: object, slowdown: float = 1.3, **kwargs: object) -> None:
        """``slowdown``: how much slower per token interactive requests may run under bulk load
        (see :class:`~mtfleet.workers.costmodel.BulkGovernor`)."""
        self._inflight: dict[int, Item] = {}  # id(item) -> item, inside the engine
        self._done: list[tuple[Item, object]] = []  # completions the dispatcher settles next
        self._inflight_bulk = 0
        self._bulk_seen_at = -1.0  # last time the engine held bulk requests
        self._last_finished = 0.0  # when the engine last finished a request
        self._s_per_token = 0.0  # measured engine seconds per input token (0: not yet)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        limits = self.engine.limits
        self.governor = (
            BulkGovernor(
                ceiling=self.inflight_cap,
                floor=max(1, limits.max_sequences // 8),
                slowdown=slowdown,
            )
            if self.latency_target_s is not None
            else None
        )

    @property
    def inflight_cap(self) -> int:
        return 2 * self.engine.limits.max_sequences

    def keep_full_segments(self) -> int:
        return self.inflight_cap

    def bulk_cap(self) -> int:
        """Bulk requests the engine may hold now."""
        if self.governor is None:
            return self.inflight_cap
        return self.governor.limit(time.monotonic())

    def tick(self) -> float | None:
        rate = super().tick()
        metrics.INFLIGHT.set(len(self._inflight))
        metrics.BULK_CAP.set(self.bulk_cap())
        return rate

    # -- dispatch ----------------------------------------------------------------------------
    def _runnable(self) -> bool:
        interactive, bulk = self._lanes
        return bool(interactive) or (bool(bulk) and self._inflight_bulk < self.bulk_cap())

    def _take(self) -> list[Item]:
        interactive, bulk = self._lanes
        taken = list(interactive)
        interactive.clear()
        room = self.bulk_cap() - self._inflight_bulk
        n_bulk = max(0, min(room, len(bulk)))
        taken += [bulk.popleft() for _ in range(n_bulk)]
        now = time.monotonic()
        if taken and not self._inflight:
            self._busy_since = now
        d = self.deadlines
        per_token = d.factor * self._s_per_token
        for it in taken:  # Deadlines.of, inline: this runs once per segment
            it.sent_at = now
            it.deadline = now + min(d.ceiling_s, max(d.floor_s, per_token * it.tokens))
            self._inflight[id(it)] = it
        self._inflight_bulk += n_bulk
        if self._inflight_bulk:
            self._bulk_seen_at = now
        return taken

    def _dispatch(self, items: list[Item]) -> None:
        metrics.observe_batch(len(self._inflight), sum(it.tokens for it in items), None)
        with self._cond:  # not aborted (cancelled, failed) between take and dispatch
            items = [it for it in items if id(it) in self._inflight]
        submit = self.engine.submit
        for it in items:
            try:
                it.handle = submit(it.request, partial(self._on_done, it))
            except Exception as exc:  # noqa: BLE001 - one request's failure is its own
                self._on_done(it, exc)
        with self._cond:  # aborted while they were being submitted: no handle to abort then
            gone = [it for it in items if it.handle is not None and id(it) not in self._inflight]
        for it in gone:
            self.engine.abort(it.handle)

    def _on_done(self, it: Item, result: str | Translation | BaseException) -> None:
        """A request finished (the engine's thread, or an exception from submit): queued for
        the dispatcher, which settles completions in batches. Only the first completion of a
        batch wakes it: the dispatcher is this condition's one waiter and takes every completion
        queued when it wakes (a notify per request cost 3 % of a worker's CPU)."""
        with self._cond:
            self._done.append((it, result))
            if len(self._done) == 1:
                self._cond.notify()

    def _finished_work(self) -> list[tuple[Item, object]]:
        return self._done

    def _settle(self, done: list[tuple[Item, object]]) -> None:
        now = time.monotonic()
        live: list[tuple[Item, object]] = []
        with self._cond:
            for it, result in done:
                if self._inflight.pop(id(it), None) is None:
                    continue  # aborted or failed already (its outcome is set)
                if not it.interactive:
                    self._inflight_bulk -= 1
                    self._bulk_seen_at = now
                live.append((it, result))
            if live:
                self._done_total += len(live)
                self._last_finished = now
            if not self._inflight and self._busy_since is not None:
                self._busy_total += now - self._busy_since
                self._busy_since = None
        outs: list[tuple[Item, str | Translation]] = []
        for it, result in live:
            if isinstance(result, BaseException):
                self._resolve(it, result)
                continue
            out: str | Translation = result  # type: ignore[assignment]
            self._learn(it, out, now)
            outs.append((it, out))
        self._count_out([out for _, out in outs])
        by_ticket: dict[int, list[tuple[int, SegmentOutcome]]] = {}
        tickets = {}
        for it, out in outs:  # outcomes set per ticket, one lock each
            key = id(it.ticket)
            tickets[key] = it.ticket
            by_ticket.setdefault(key, []).append(
                (it.index, outcome_of(out, source=it.request.text))
            )
        for key, settled in by_ticket.items():
            tickets[key].set_many(settled)

    def _learn(self, it: Item, out: str | Translation, now: float) -> None:
        """Fold a finished request into the seconds-per-token estimate (deadlines) and, for
        interactive work, into the governor."""
        took = now - it.sent_at
        per_token = took / max(it.tokens, 1)
        # a slow, high estimate: deadlines must not be cut by one fast request
        self._s_per_token = max(per_token, self._s_per_token * 0.99 + per_token * 0.01)
        if it.interactive and self.governor is not None:
            tokens = out.tokens_out if isinstance(out, Translation) else None
            text = out.text if isinstance(out, Translation) else out
            self.governor.observe(
                now,
                took / (tokens or estimate_tokens(text)),
                unloaded=self._inflight_bulk == 0 and self._bulk_seen_at <= it.sent_at,
            )

    # -- abort and deadlines -----------------------------------------------------------------
    def _abort_inflight(self, which: Callable[[Item], bool]) -> list[Item]:
        with self._cond:
            chosen = [it for it in self._inflight.values() if which(it)]
            for it in chosen:
                del self._inflight[id(it)]
                if not it.interactive:
                    self._inflight_bulk -= 1
            if chosen:
                self._cond.notify()
        for it in chosen:
            if it.handle is not None:
                self.engine.abort(it.handle)
        return chosen

    def _overdue(self, now: float) -> None:
        with self._cond:
            late = [it for it in self._inflight.values() if it.deadline <= now]
            last = self._last_finished
        if not late:
            return
        serving = [it for it in late if last > it.sent_at]
        stuck = [it for it in late if last <= it.sent_at]
        if len(stuck) > 1 or (stuck and not self.engine.alive()):
            self._engine_down(
                f"{len(stuck)} request(s) past their deadline and none finished since they "
                f"were sent (the oldest {now - min(it.sent_at for it in stuck):.0f}s ago)"
            )
            return
        for it in serving + stuck:
            limit = seconds(it.deadline - it.sent_at)
            self._fail_alone(it, EngineTimeout(f"the engine did not finish within {limit}"))

    def _fail_alone(self, it: Item, exc: EngineTimeout) -> None:
        if self._abort_inflight(lambda x: x is it):
            metrics.TIMED_OUT.inc()
            self._resolve(it, exc)
