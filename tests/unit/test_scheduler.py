"""The worker's schedulers between task threads and the engine (no Redis, no Celery).

The engines here are small test engines whose behaviour each test controls (blocking, failing,
hanging, recording); the schedulers are the things under test: :class:`BatchScheduler` for
batch engines, :class:`StreamingScheduler` for streaming ones, both made by ``make_scheduler``.
Deadline tests use short :class:`Deadlines` (the watchdog looks every ``WATCH_S``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence

import pytest

from mtfleet.core.errors import EngineTimeout, EngineUnavailable, Unfinished
from mtfleet.core.models import SegmentOutcome
from mtfleet.workers.engines.base import Done, Engine, EngineLimits, Translation, TranslationRequest
from mtfleet.workers.scheduler import (
    BatchScheduler,
    Deadlines,
    Scheduler,
    StreamingScheduler,
    Ticket,
    make_scheduler,
)
from mtfleet.workers.scheduler.base import WATCH_S
from mtfleet.workers.translation import run_isolated

SHORT = Deadlines(factor=1, floor_s=0.3, ceiling_s=5)


class RecordingEngine(Engine):
    """A batch engine that upper-cases, records each call and can be held at a gate."""

    name = "recording"

    def __init__(self, limits: EngineLimits | None = None, delay: float = 0.0) -> None:
        self._limits = limits or EngineLimits(64, 10_000, 1_000)
        self.calls: list[list[TranslationRequest]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.delay = delay
        self.fail_on: set[str] = set()
        self.dead = False
        self.interrupts = 0
        self.interrupted: list[Sequence[TranslationRequest]] = []  # the calls named

    def load(self) -> None: ...

    model = "test"
    fingerprint = "test"

    @property
    def limits(self) -> EngineLimits:
        return self._limits

    def pairs(self) -> list[tuple[str, str]]:
        return [("en", "es")]

    def check(self, request: TranslationRequest) -> str | None:
        return "too long" if len(request.text) > 100 else None

    def count_tokens(self, request: TranslationRequest) -> int:
        return len(request.text.split())

    def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
        self.calls.append(list(requests))
        self.entered.set()
        self.gate.wait(10)
        if self.dead:
            raise EngineUnavailable("gone")
        if self.fail_on & {r.text for r in requests}:
            raise RuntimeError("bad segment")
        time.sleep(self.delay)
        return [r.text.upper() for r in requests]

    def interrupt(self, call: Sequence[TranslationRequest]) -> None:
        self.interrupts += 1
        self.interrupted.append(call)


class HangingEngine(RecordingEngine):
    """A call holding ``hang_on`` does not return: until it is interrupted (then it raises),
    or, with ``honours_interrupt=False``, until the test releases it. An interrupt that names
    another call does nothing."""

    def __init__(self, hang_on: str = "hang", *, honours_interrupt: bool = True) -> None:
        super().__init__()
        self.hang_on = hang_on
        self.honours_interrupt = honours_interrupt
        self.wake = threading.Event()
        self.hanging = threading.Event()
        self.released = False
        self.hung: Sequence[TranslationRequest] | None = None  # the call hanging now

    def release(self) -> None:
        """End the test: nothing hangs any more."""
        self.released = True
        self.wake.set()

    def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
        if not self.released and any(r.text == self.hang_on for r in requests):
            self.calls.append(list(requests))
            self.hung = requests
            self.hanging.set()
            self.wake.wait(10)
            self.wake.clear()
            self.hung = None
            raise RuntimeError("interrupted")
        return super().translate(requests)

    def interrupt(self, call: Sequence[TranslationRequest]) -> None:
        super().interrupt(call)
        if self.honours_interrupt and call is self.hung:
            self.wake.set()


def req(text: str, priority: int = 1) -> TranslationRequest:
    return TranslationRequest(text, "en", "es", priority)


def results(ticket: Ticket) -> list[SegmentOutcome]:
    return ticket.result(timeout=10)


def results_within(ticket: Ticket, timeout: float) -> list[SegmentOutcome]:
    return ticket.result(timeout=timeout)


def error_type(outcome: SegmentOutcome) -> str | None:
    return None if outcome.error is None else str(outcome.error["type"])


def wait_for(cond: Callable[[], object], timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)


@pytest.fixture
def engine() -> RecordingEngine:
    return RecordingEngine()


@pytest.fixture
def sched(engine: RecordingEngine) -> Iterator[Scheduler]:
    s = make_scheduler(engine, latency_target_s=0.5)
    yield s
    engine.gate.set()
    s.close()


# --- batch engines ------------------------------------------------------------------------------
def test_make_scheduler_picks_the_class_by_the_engine_kind() -> None:
    batch, stream = RecordingEngine(), StreamEngine()
    made = [
        make_scheduler(batch, latency_target_s=0.5),
        make_scheduler(stream, latency_target_s=0.5),
        make_scheduler(stream, latency_target_s=None),
    ]
    try:
        assert [type(s) for s in made] == [BatchScheduler, StreamingScheduler, StreamingScheduler]
        # bulk is governed only on a worker that takes interactive work
        assert [s.governor is None for s in made[1:]] == [False, True]  # type: ignore[attr-defined]
        assert made[1].keep_full_segments() == 2 * stream.limits.max_sequences
    finally:
        for s in made:
            s.close()


def test_idle_engine_runs_work_at_once(engine: RecordingEngine, sched: Scheduler) -> None:
    out = results(sched.submit([req("a b"), req("c")]))
    assert [o.translation for o in out] == ["A B", "C"]
    assert [o.ok for o in out] == [True, True]
    assert [[r.text for r in c] for c in engine.calls] == [["a b", "c"]]


def test_engine_output_is_stripped_of_outer_whitespace() -> None:
    class Spacey(RecordingEngine):
        def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
            return [f"  {r.text.upper()}\n" for r in requests]

    s = make_scheduler(Spacey(), latency_target_s=0.5)
    try:
        assert [o.translation for o in results(s.submit([req("a"), req("b c")]))] == ["A", "B C"]
    finally:
        s.close()


def test_an_empty_submit_is_done_at_once(sched: Scheduler) -> None:
    ticket = sched.submit([])
    assert ticket.done() and ticket.result(0) == []


def test_work_gathers_while_the_engine_is_busy_and_runs_next(
    engine: RecordingEngine, sched: Scheduler
) -> None:
    engine.gate.clear()
    first = sched.submit([req("one")])
    assert engine.entered.wait(5)
    later = [sched.submit([req(f"w{i}")]) for i in range(5)]
    assert sched.buffered() == (0, 5)
    engine.gate.set()
    results(first)
    for f in later:
        results(f)
    assert [len(c) for c in engine.calls] == [1, 5]  # the five went together, in one call


def test_interactive_work_overtakes_buffered_bulk(engine: RecordingEngine) -> None:
    engine._limits = EngineLimits(2, 10_000, 1_000)  # two segments per call
    sched = make_scheduler(engine, latency_target_s=0.5)
    try:
        engine.gate.clear()
        sched.submit([req("busy")])
        assert engine.entered.wait(5)
        bulk = sched.submit([req(f"b{i}") for i in range(6)])
        urgent = sched.submit([req("i0", 0), req("i1", 0)])
        assert sched.buffered() == (2, 6)
        engine.gate.set()
        results(bulk)
        results(urgent)
        assert [r.text for r in engine.calls[1]] == ["i0", "i1"]
    finally:
        sched.close()


class LaneEngine(RecordingEngine):
    """A batch engine with an instance per lane (``parallel_lanes``): bulk calls wait at the
    gate, interactive ones do not."""

    parallel_lanes = True

    def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
        if all(r.priority <= 0 for r in requests):
            self.calls.append(list(requests))
            return [r.text.upper() for r in requests]
        return super().translate(requests)


def test_interactive_work_runs_beside_a_bulk_call_on_an_engine_with_parallel_lanes() -> None:
    engine = LaneEngine()
    sched = make_scheduler(engine, latency_target_s=0.5)
    try:
        engine.gate.clear()
        bulk = sched.submit([req("b0"), req("b1")])
        assert engine.entered.wait(5)
        urgent = sched.submit([req("i0", 0)])
        # answered while the bulk call is still inside the engine
        assert [o.translation for o in results(urgent)] == ["I0"]
        assert not bulk.done()
        later = sched.submit([req("b2")])  # bulk waits for the bulk call, as before
        engine.gate.set()
        assert [o.translation for o in results(bulk)] == ["B0", "B1"]
        assert [o.translation for o in results(later)] == ["B2"]
        # one interactive call of its own, never mixed into a bulk one
        lanes = [{r.priority for r in call} for call in engine.calls]
        assert {0} in lanes and all(len(p) == 1 for p in lanes)
    finally:
        engine.gate.set()
        sched.close()


def test_without_parallel_lanes_interactive_work_waits_for_the_bulk_call(
    engine: RecordingEngine,
) -> None:
    sched = make_scheduler(engine, latency_target_s=0.5)
    try:
        engine.gate.clear()
        bulk = sched.submit([req("b0")])
        assert engine.entered.wait(5)
        urgent = sched.submit([req("i0", 0)])
        assert not urgent.wait(0.2)  # one call at a time: behind the bulk call in progress
        engine.gate.set()
        assert [o.translation for o in results(urgent)] == ["I0"]
        results(bulk)
    finally:
        engine.gate.set()
        sched.close()


def test_overlapping_calls_count_their_busy_time_once() -> None:
    engine = LaneEngine()
    engine.delay = 0.2
    sched = make_scheduler(engine, latency_target_s=0.5)
    try:
        t0 = time.monotonic()
        bulk = sched.submit([req(f"b{i}") for i in range(4)])
        assert engine.entered.wait(5)
        results(sched.submit([req("i0", 0)]))
        results(bulk)
        wall = time.monotonic() - t0
        sched.tick()
        busy = sched._busy_total
        assert 0.2 <= busy <= wall + 0.01  # the interactive call ran inside the bulk one
    finally:
        sched.close()


def test_batches_respect_the_token_budget(engine: RecordingEngine) -> None:
    engine._limits = EngineLimits(64, 12, 1_000)
    sched = make_scheduler(engine, latency_target_s=None)
    try:
        assert isinstance(sched, BatchScheduler) and sched.batch_token_budget() == 12
        engine.gate.clear()
        sched.submit([req("x")])
        assert engine.entered.wait(5)
        futs = sched.submit([req("a b c d") for _ in range(9)])  # 4 tokens each
        engine.gate.set()
        results(futs)
        assert [len(c) for c in engine.calls[1:]] == [3, 3, 3]
    finally:
        sched.close()


def test_a_too_long_or_failing_segment_fails_alone(
    engine: RecordingEngine, sched: Scheduler
) -> None:
    engine.fail_on = {"poison"}
    out = results(sched.submit([req("ok"), req("poison"), req("x" * 200), req("fine")]))
    assert [o.translation for o in out] == ["OK", None, None, "FINE"]
    assert out[1].error is not None and "bad segment" in out[1].error["message"]
    assert error_type(out[2]) == "segment_too_long"
    assert all(len(r.text) <= 100 for c in engine.calls for r in c)  # never sent


def test_a_dead_engine_fails_the_waiters_and_is_reported_once(engine: RecordingEngine) -> None:
    downs: list[str] = []
    sched = make_scheduler(engine, latency_target_s=0.5, on_engine_down=downs.append)
    try:
        engine.gate.clear()
        engine.dead = True
        sched.submit([req("in the call")])
        assert engine.entered.wait(5)
        waiting = [sched.submit([req("a"), req("b")]), sched.submit([req("c", 0)])]
        engine.gate.set()
        for ticket in waiting:
            with pytest.raises(EngineUnavailable):
                ticket.result(timeout=5)
        wait_for(lambda: downs)
        assert downs == ["gone"] and sched.down == "gone"
        with pytest.raises(EngineUnavailable, match="gone"):
            sched.submit([req("after")])
        assert sched.buffered() == (0, 0)
    finally:
        sched.close()


def test_the_ticket_of_the_call_that_found_the_engine_dead_fails_too(
    engine: RecordingEngine, sched: Scheduler
) -> None:
    engine.dead = True
    ticket = sched.submit([req("a"), req("b")])
    with pytest.raises(EngineUnavailable):
        ticket.result(timeout=1.0)


def test_cost_model_learns_the_engine() -> None:
    class Timed(RecordingEngine):
        def check(self, request: TranslationRequest) -> str | None:
            return None

        def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
            time.sleep(0.005 + 0.0005 * sum(len(r.text.split()) for r in requests))
            return [r.text for r in requests]

    sched = make_scheduler(Timed(), latency_target_s=None)
    try:
        for n in (4, 40, 10, 60, 20, 80, 30, 5):
            results(sched.submit([req("w " * n)]))
        assert sched.cost.samples == 8
        # sleep granularity and a loaded machine only ever add time, but not evenly: delays
        # on the small calls flatten the slope (0.00025 s a token, 0.036 s fixed, on a loaded
        # day), while what it predicts for a batch stays near what the batch costs
        assert 0.0001 <= sched.cost.per_token_s <= 0.002
        assert 0.05 <= sched.cost.predict(100) <= 0.2
    finally:
        sched.close()


def test_close_fails_buffered_work_so_it_is_requeued(engine: RecordingEngine) -> None:
    sched = make_scheduler(engine, latency_target_s=0.5)
    engine.gate.clear()
    busy = sched.submit([req("busy")])
    assert engine.entered.wait(5)
    waiting = sched.submit([req("later")])
    threading.Timer(0.2, engine.gate.set).start()
    sched.close()
    for ticket in (busy, waiting):
        with pytest.raises(EngineUnavailable):
            ticket.result(timeout=5)
    with pytest.raises(EngineUnavailable):
        sched.submit([req("after close")])


def test_tick_measures_busy_time_and_throughput(engine: RecordingEngine) -> None:
    engine.delay = 0.05
    sched = make_scheduler(engine, latency_target_s=0.5)
    try:
        results(sched.submit([req(f"s{i}") for i in range(10)]))
        rate = sched.tick()
        # ten segments in one call of at least 50 ms (a loaded machine only adds time)
        assert rate is not None and 10 / 2.0 < rate <= 10 / 0.05
    finally:
        sched.close()


def test_many_task_threads_submit_at_once(engine: RecordingEngine, sched: Scheduler) -> None:
    out: dict[int, list[str | None]] = {}

    def task(n: int) -> None:
        out[n] = [
            o.translation for o in results(sched.submit([req(f"t{n} s{j}") for j in range(5)]))
        ]

    engine.gate.clear()
    threads = [threading.Thread(target=task, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    in_call = lambda: sum(len(c) for c in engine.calls)  # noqa: E731
    wait_for(lambda: sum(sched.buffered()) + in_call() == 100)
    engine.gate.set()
    for t in threads:
        t.join(10)
    assert out == {n: [f"T{n} S{j}" for j in range(5)] for n in range(20)}
    # the first call took what had arrived when the scheduler woke (a few segments; 50 of them
    # once, in a fresh clone's run on a loaded machine); what arrived while the engine was busy
    # went together after it, 64 segments per call at most
    first, *rest = (len(c) for c in engine.calls)
    full, part = divmod(100 - first, 64)
    assert first <= 64 and rest == [64] * full + ([part] if part else [])


# --- batch engines: deadlines -------------------------------------------------------------------
def test_a_call_hanging_on_one_segment_is_interrupted_and_only_that_segment_fails() -> None:
    engine = HangingEngine()
    downs: list[str] = []
    sched = make_scheduler(
        engine, latency_target_s=0.5, deadlines=SHORT, on_engine_down=downs.append
    )
    try:
        out = results(sched.submit([req("a"), req("b"), req("hang"), req("c")]))
        assert [o.translation for o in out] == ["A", "B", None, "C"]
        assert error_type(out[2]) == "engine_timeout"
        message = out[2].error["message"]  # type: ignore[index]
        assert "did not finish within" in message and "on this segment alone" in message
        # bisection: the whole call, then its half with the segment, then the segment alone
        hung = [[r.text for r in c] for c in engine.calls if any(r.text == "hang" for r in c)]
        assert hung == [["a", "b", "hang", "c"], ["hang", "c"], ["hang"]]
        assert engine.interrupts == 3
        assert downs == [] and sched.down is None
        # the engine serves on
        assert results(sched.submit([req("d")]))[0].translation == "D"
    finally:
        engine.release()
        sched.close()


def test_one_wedged_segment_of_a_big_call_fails_alone_within_three_deadlines() -> None:
    """64 segments, one of which hangs the call until it is interrupted. Bisection with a full
    deadline per halving would take seven deadlines (the call and six halvings); the halves of
    a timed-out call get half its time, so the 63 others are translated and the wedged one
    fails alone within three."""
    deadlines = Deadlines(factor=1, floor_s=3.0, ceiling_s=60)
    engine = HangingEngine()
    sched = make_scheduler(engine, latency_target_s=None, deadlines=deadlines)
    try:
        texts = [f"s{i}" for i in range(64)]
        texts[41] = "hang"
        t0 = time.monotonic()
        out = results_within(sched.submit([req(t) for t in texts]), 60)
        took = time.monotonic() - t0
        assert [o.translation for o in out] == [t.upper() if t != "hang" else None for t in texts]
        assert error_type(out[41]) == "engine_timeout"
        hung = [len(c) for c in engine.calls if any(r.text == "hang" for r in c)]
        assert hung == [64, 32, 16, 8, 4, 2, 1]
        assert took <= 3 * deadlines.floor_s, took
        assert sched.down is None
    finally:
        engine.release()
        sched.close()


def test_both_halves_timing_out_is_no_single_wedge_and_gets_full_deadlines() -> None:
    """An engine that is merely slow (a call of n segments takes n x 0.3 s) gets a call of 8
    that outlives its 1 s deadline. Both halves timing out under half that time says it held no
    single wedge: their parts get full deadlines again, so every segment is translated."""

    class Slow(RecordingEngine):
        def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
            self.calls.append(list(requests))
            waited = self.gate.wait(0.3 * len(requests))  # the interrupt opens the gate
            self.gate.clear()
            if waited:
                raise RuntimeError("interrupted")
            return [r.text.upper() for r in requests]

        def interrupt(self, call: Sequence[TranslationRequest]) -> None:
            super().interrupt(call)
            self.gate.set()

    engine = Slow()
    engine.gate.clear()
    sched = make_scheduler(
        engine, latency_target_s=None, deadlines=Deadlines(factor=1, floor_s=1.0, ceiling_s=60)
    )
    try:
        out = results_within(sched.submit([req(f"s{i}") for i in range(8)]), 30)
        assert [o.translation for o in out] == [f"S{i}" for i in range(8)]
        sizes = [len(c) for c in engine.calls]
        # the call, both halves (timed out at 0.5 s: they need 1.2 s), then parts of them
        assert sizes[:3] == [8, 4, 4] and all(n <= 4 for n in sizes[3:])
    finally:
        engine.gate.set()
        sched.close()


def test_a_call_that_ignores_the_interrupt_makes_the_engine_down() -> None:
    """The watchdog interrupts the call at its deadline; the call still not back after the
    grace (at least 5 s, whatever the deadlines) makes the engine down. The grace is driven
    through the watchdog's own check with a clock moved ahead, not waited for."""
    engine = HangingEngine(honours_interrupt=False)
    downs: list[str] = []
    sched = make_scheduler(
        engine, latency_target_s=0.5, deadlines=SHORT, on_engine_down=downs.append
    )
    try:
        ticket = sched.submit([req("a"), req("hang")])
        buffered = sched.submit([req("later")])
        assert engine.hanging.wait(5)
        wait_for(lambda: engine.interrupts == 1, timeout=SHORT.floor_s + 4 * WATCH_S + 2)
        assert not ticket.done() and downs == []
        # the call does not return within a floor's grace after its interrupt: engine down
        wait_for(lambda: downs, timeout=SHORT.floor_s + 4 * WATCH_S + 2)
        assert engine.interrupts == 1  # one interrupt per call
        assert len(downs) == 1 and "even after an interrupt" in downs[0]
        assert sched.down == downs[0]
        for t in (ticket, buffered):
            with pytest.raises(EngineUnavailable):
                t.result(timeout=1)
        with pytest.raises(EngineUnavailable):
            sched.submit([req("after")])
        sched._overdue(time.monotonic() + 60)
        assert len(downs) == 1  # told once
    finally:
        engine.release()
        sched.close()


class LanePipesEngine(HangingEngine):
    """Apertium's shape: a pipeline per lane (``parallel_lanes``), and an interrupt that ends
    the call it names; an interactive call waits at ``interactive_gate``."""

    parallel_lanes = True

    def __init__(self) -> None:
        super().__init__()
        self.interactive_gate = threading.Event()
        self.interactive_in = threading.Event()
        self.interactive_call: Sequence[TranslationRequest] | None = None

    def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
        if all(r.priority <= 0 for r in requests):
            self.interactive_call = requests
            self.interactive_in.set()
            assert self.interactive_gate.wait(10)
            if any(c is requests for c in self.interrupted):
                raise RuntimeError("interrupted")  # its pipeline was killed
            return [r.text.upper() for r in requests]
        return super().translate(requests)


def test_the_watchdog_interrupts_the_overdue_call_alone() -> None:
    """A bulk call outlives its deadline while an interactive call runs beside it: the
    watchdog interrupts the bulk call, naming it, and the interactive call is translated."""
    engine = LanePipesEngine()
    deadlines = Deadlines(factor=1, floor_s=1.0, ceiling_s=5)
    sched = make_scheduler(engine, latency_target_s=0.5, deadlines=deadlines)
    try:
        bulk = sched.submit([req("hang")])
        assert engine.hanging.wait(5)
        time.sleep(0.5)  # the interactive call's deadline comes half a second after the bulk's
        urgent = sched.submit([req("i0", 0)])
        assert engine.interactive_in.wait(5)
        wait_for(lambda: engine.interrupts, timeout=deadlines.floor_s + 4 * WATCH_S + 2)
        assert [[r.text for r in c] for c in engine.interrupted] == [["hang"]]
        assert engine.interactive_call not in engine.interrupted
        engine.interactive_gate.set()
        assert [o.translation for o in results(urgent)] == ["I0"]
        assert error_type(results(bulk)[0]) == "engine_timeout"
    finally:
        engine.interactive_gate.set()
        engine.release()
        sched.close()


def test_segments_no_one_waits_for_are_not_bisected() -> None:
    """A call wedged by one of its segments; its ticket is given up (its chunk's budget ran
    out) while the call hangs. The call is interrupted at its deadline and nothing of it is
    sent to the engine again: no halves, no segment alone."""
    engine = HangingEngine()
    sched = make_scheduler(engine, latency_target_s=0.5, deadlines=SHORT)
    try:
        ticket = sched.submit([req("a"), req("b"), req("hang"), req("c")])
        assert engine.hanging.wait(5)
        sched.cancel(ticket, Unfinished("the chunk's time budget ran out"))
        assert all(error_type(o) == "unfinished" for o in results(ticket))
        wait_for(lambda: engine.interrupts, timeout=SHORT.floor_s + 4 * WATCH_S + 2)
        after = sched.submit([req("d")])  # the lane's next call: the one above is over
        assert [o.translation for o in results(after)] == ["D"]
        assert [[r.text for r in c] for c in engine.calls] == [["a", "b", "hang", "c"], ["d"]]
    finally:
        engine.release()
        sched.close()


def test_the_parts_of_a_call_with_no_single_wedge_get_their_own_full_deadlines() -> None:
    """run_isolated as the batch scheduler runs it, over a slow engine (a call of n segments
    needs 0.3 n s; every call's own deadline is 1 s): the call of 8 and both its halves (given
    half its time) time out, so it held no single wedge, and every part from there gets its
    own full deadline: the quarters (0.6 s) finish, in 2 + 2 + 4 calls, not 2n - 1."""
    calls: list[tuple[int, float]] = []

    def call(batch: Sequence[TranslationRequest], limit: float) -> list[str]:
        calls.append((len(batch), limit))
        if 0.3 * len(batch) > limit:
            raise EngineTimeout(f"did not finish within {limit}")
        return [r.text.upper() for r in batch]

    out = run_isolated(
        "slow", call, [req(f"s{i}") for i in range(8)], deadline_of=lambda _: 1.0, factor=1
    )
    assert out == [f"S{i}" for i in range(8)]
    assert calls == [(8, 1.0), (4, 0.5), (4, 0.5), (2, 1.0), (2, 1.0), (2, 1.0), (2, 1.0)]


# --- cancellation -------------------------------------------------------------------------------
def test_cancel_job_releases_a_jobs_items_in_the_call_and_drops_its_buffered_ones(
    engine: RecordingEngine, sched: Scheduler
) -> None:
    engine.gate.clear()
    in_call = sched.submit([req("a1"), req("a2")], job_id="A")
    assert engine.entered.wait(5)
    other = sched.submit([req("b1")], job_id="B")
    queued = sched.submit([req("a3")], job_id="A")
    assert sched.cancel_job("A") == 3
    for ticket in (in_call, queued):  # settled now, while the call still runs
        out = results(ticket)
        assert all(not o.ok and "cancelled" in o.error["message"] for o in out)  # type: ignore[index]
    assert sched.buffered() == (0, 1) and not other.done()
    engine.gate.set()
    assert results(other)[0].translation == "B1"
    assert [[r.text for r in c] for c in engine.calls] == [["a1", "a2"], ["b1"]]  # a3 never ran
    assert results(in_call)[0].translation is None  # the call's late output is ignored
    assert sched.cancel_job("nobody") == 0


def test_cancel_a_ticket_with_a_reason(engine: RecordingEngine, sched: Scheduler) -> None:
    engine.gate.clear()
    running = sched.submit([req("x")])
    assert engine.entered.wait(5)
    given_up = sched.submit([req("p"), req("q")])
    kept = sched.submit([req("r")])
    sched.cancel(given_up, EngineUnavailable("the chunk's time budget is spent"))
    out = results(given_up)
    assert [error_type(o) for o in out] == ["engine_unavailable"] * 2
    assert all("time budget" in o.error["message"] for o in out)  # type: ignore[index]
    assert not kept.done() and sched.buffered() == (0, 1)
    engine.gate.set()
    assert results(running)[0].translation == "X"
    assert results(kept)[0].translation == "R"
    assert [[r.text for r in c] for c in engine.calls] == [["x"], ["r"]]


# --- streaming engines --------------------------------------------------------------------------
class StreamEngine(RecordingEngine):
    """A streaming engine: requests finish when the test says so; aborts are recorded."""

    streaming = True

    def __init__(self, limits: EngineLimits | None = None) -> None:
        super().__init__(limits or EngineLimits(2, 10_000, 1_000))
        self.open: list[tuple[TranslationRequest, Done]] = []
        self.aborted: list[TranslationRequest] = []
        self.lock = threading.Lock()
        self.peak = 0
        self.is_alive = True

    def submit(self, request: TranslationRequest, done: Done) -> object:
        handle = (request, done)
        with self.lock:
            self.open.append(handle)
            self.peak = max(self.peak, len(self.open))
        return handle

    def finish(self, n: int) -> list[TranslationRequest]:
        with self.lock:
            done, self.open = self.open[:n], self.open[n:]
        for r, d in done:
            d(Translation(r.text.upper(), tokens_out=1))
        return [r for r, _ in done]

    def finish_where(self, which: Callable[[str], bool]) -> list[str]:
        with self.lock:
            done = [h for h in self.open if which(h[0].text)]
            self.open = [h for h in self.open if not which(h[0].text)]  # the handles themselves
        for r, d in done:
            d(Translation(r.text.upper(), tokens_out=1))
        return [r.text for r, _ in done]

    def fail_where(self, which: Callable[[str], bool], exc: BaseException) -> None:
        with self.lock:
            done = [h for h in self.open if which(h[0].text)]
            self.open = [h for h in self.open if not which(h[0].text)]
        for _, d in done:
            d(exc)

    def abort(self, handle: object) -> None:
        with self.lock:
            found = [h for h in self.open if h is handle]
            self.open = [h for h in self.open if h is not handle]
        self.aborted += [r for r, _ in found]

    def alive(self) -> bool:
        return self.is_alive

    @property
    def open_texts(self) -> list[str]:
        with self.lock:
            return [r.text for r, _ in self.open]


def test_streaming_engine_is_fed_up_to_its_cap_then_as_requests_finish() -> None:
    eng = StreamEngine()  # max_sequences 2: the scheduler keeps 4 in flight
    sched = make_scheduler(eng, latency_target_s=0.5)
    try:
        futs = sched.submit([req(f"b{i}") for i in range(10)])
        wait_for(lambda: len(eng.open) == 4)
        time.sleep(0.05)
        assert len(eng.open) == 4 and sched.buffered() == (0, 6)
        eng.finish(2)
        wait_for(lambda: len(eng.open) == 4 and sched.buffered() == (0, 4))
        while not futs.done():
            eng.finish(4)
            time.sleep(0.01)
        assert [o.translation for o in results(futs)] == [f"B{i}" for i in range(10)]
        assert eng.peak == 4
    finally:
        sched.close()


def test_streaming_interactive_work_is_fed_past_the_cap_with_its_priority() -> None:
    eng = StreamEngine()
    sched = make_scheduler(eng, latency_target_s=0.5)
    try:
        sched.submit([req(f"b{i}") for i in range(10)])
        wait_for(lambda: len(eng.open) == 4)
        urgent = sched.submit([req("now", 0)])
        wait_for(lambda: len(eng.open) == 5)
        assert eng.open[-1][0].priority == 0 and sched.buffered() == (0, 6)
        eng.finish(5)
        assert urgent.result(timeout=5)[0].translation == "NOW"
    finally:
        eng.finish(100)
        sched.close()


def test_streaming_request_failure_is_its_own() -> None:
    eng = StreamEngine()
    sched = make_scheduler(eng, latency_target_s=0.5)
    try:
        futs = sched.submit([req("a"), req("b")])
        wait_for(lambda: len(eng.open) == 2)
        with eng.lock:
            (_, f1), (_, f2) = eng.open
            eng.open.clear()
        f1(RuntimeError("one bad request"))
        f2(Translation(""))
        out = results(futs)
        assert out[0].error is not None and "one bad request" in out[0].error["message"]
        assert error_type(out[1]) == "empty_output"
        # the engine slots were released: more work flows
        more = sched.submit([req("c")])
        wait_for(lambda: len(eng.open) == 1)
        eng.finish(1)
        assert more.result(timeout=5)[0].translation == "C"
    finally:
        sched.close()


def test_streaming_truncated_output_is_delivered_with_a_warning() -> None:
    eng = StreamEngine()
    sched = make_scheduler(eng, latency_target_s=0.5)
    try:
        ticket = sched.submit([req("long one")])
        wait_for(lambda: len(eng.open) == 1)
        with eng.lock:
            (_, fut), = eng.open  # fmt: skip
            eng.open.clear()
        fut(Translation(" LONG ", truncated=True, tokens_out=3))
        (out,) = results(ticket)
        assert out.translation == "LONG" and [w["type"] for w in out.warnings] == ["truncated"]
    finally:
        sched.close()


# --- streaming engines: deadlines ---------------------------------------------------------------
def test_streaming_a_request_that_never_finishes_fails_alone_and_is_aborted() -> None:
    eng = StreamEngine()
    downs: list[str] = []
    sched = make_scheduler(eng, latency_target_s=0.5, deadlines=SHORT, on_engine_down=downs.append)
    try:
        ticket = sched.submit([req("a"), req("hang"), req("b")])
        wait_for(lambda: len(eng.open) == 3)
        assert eng.finish_where(lambda t: t != "hang") == ["a", "b"]
        out = results(ticket)
        assert [o.translation for o in out] == ["A", None, "B"]
        assert error_type(out[1]) == "engine_timeout"
        assert [r.text for r in eng.aborted] == ["hang"] and eng.open == []
        assert downs == [] and sched.down is None
        # the engine serves on, and its slot is free again
        more = sched.submit([req("c")])
        wait_for(lambda: eng.open_texts == ["c"])
        eng.finish(1)
        assert results(more)[0].translation == "C"
    finally:
        sched.close()


def test_streaming_a_lone_overdue_request_on_a_live_engine_fails_alone() -> None:
    eng = StreamEngine()
    downs: list[str] = []
    sched = make_scheduler(eng, latency_target_s=0.5, deadlines=SHORT, on_engine_down=downs.append)
    try:
        (out,) = results(sched.submit([req("hang")]))
        assert error_type(out) == "engine_timeout"
        assert [r.text for r in eng.aborted] == ["hang"] and downs == []
    finally:
        sched.close()


def test_streaming_several_stuck_requests_and_none_finished_make_the_engine_down() -> None:
    eng = StreamEngine(EngineLimits(1, 10_000, 1_000))  # two in flight, the rest buffered
    downs: list[str] = []
    sched = make_scheduler(eng, latency_target_s=0.5, deadlines=SHORT, on_engine_down=downs.append)
    try:
        first = sched.submit([req("x"), req("y")], job_id="A")
        second = sched.submit([req("z")], job_id="B")
        wait_for(lambda: len(eng.open) == 2 and sched.buffered() == (0, 1))
        for ticket in (first, second):
            with pytest.raises(EngineUnavailable, match="past their deadline"):
                ticket.result(timeout=SHORT.floor_s + 4 * WATCH_S + 2)
        wait_for(lambda: downs)
        assert len(downs) == 1 and "2 request(s) past their deadline" in downs[0]
        assert sorted(r.text for r in eng.aborted) == ["x", "y"]  # stopped in the engine
        assert sched.buffered() == (0, 0) and sched.down == downs[0]
        with pytest.raises(EngineUnavailable):
            sched.submit([req("after")])
        time.sleep(2 * WATCH_S)
        assert len(downs) == 1
    finally:
        sched.close()


def test_streaming_an_overdue_request_on_an_engine_that_is_not_alive_makes_it_down() -> None:
    eng = StreamEngine()
    eng.is_alive = False
    downs: list[str] = []
    sched = make_scheduler(eng, latency_target_s=0.5, deadlines=SHORT, on_engine_down=downs.append)
    try:
        ticket = sched.submit([req("hang")])
        with pytest.raises(EngineUnavailable):
            ticket.result(timeout=SHORT.floor_s + 4 * WATCH_S + 2)
        assert len(downs) == 1 and "1 request(s)" in downs[0]
    finally:
        sched.close()


# --- streaming engines: cancellation ------------------------------------------------------------
def test_streaming_cancel_job_aborts_its_requests_and_drops_its_buffered_ones() -> None:
    eng = StreamEngine()  # four in flight
    sched = make_scheduler(eng, latency_target_s=0.5)
    try:
        a_sent = sched.submit([req("a1"), req("a2"), req("a3")], job_id="A")
        b = sched.submit([req("b1"), req("b2"), req("b3")], job_id="B")
        a_buffered = sched.submit([req("a4"), req("a5")], job_id="A")
        wait_for(lambda: len(eng.open) == 4 and sched.buffered() == (0, 4))
        assert eng.open_texts == ["a1", "a2", "a3", "b1"]
        assert sched.cancel_job("A") == 5
        assert sorted(r.text for r in eng.aborted) == ["a1", "a2", "a3"]
        for ticket in (a_sent, a_buffered):
            out = results(ticket)
            assert all(not o.ok and "cancelled" in o.error["message"] for o in out)  # type: ignore[index]
        # B's buffered requests take the freed slots; A's never reach the engine
        wait_for(lambda: eng.open_texts == ["b1", "b2", "b3"])
        assert sched.buffered() == (0, 0)
        eng.finish(3)
        assert [o.translation for o in results(b)] == ["B1", "B2", "B3"]
        assert not {"a4", "a5"} & {r.text for r, _ in eng.open} and len(eng.aborted) == 3
    finally:
        sched.close()


def test_streaming_cancel_keeps_what_already_finished() -> None:
    eng = StreamEngine()
    sched = make_scheduler(eng, latency_target_s=0.5)
    try:
        ticket = sched.submit([req("done"), req("open")])
        wait_for(lambda: len(eng.open) == 2)
        eng.finish_where(lambda t: t == "done")
        wait_for(lambda: ticket.partial()[0] is not None)
        sched.cancel(ticket, EngineUnavailable("the chunk's time budget is spent"))
        out = results(ticket)
        assert out[0].translation == "DONE"
        assert error_type(out[1]) == "engine_unavailable"
        assert [r.text for r in eng.aborted] == ["open"]
    finally:
        sched.close()


@pytest.mark.parametrize("streaming", [False, True])
def test_cancel_job_outcomes_have_the_type_cancelled(streaming: bool) -> None:
    eng: RecordingEngine = StreamEngine() if streaming else RecordingEngine()
    eng.gate.clear()
    sched = make_scheduler(eng, latency_target_s=0.5)
    try:
        ticket = sched.submit([req("a")], job_id="A")
        wait_for(lambda: eng.entered.is_set() or getattr(eng, "open", None))
        sched.cancel_job("A")
        assert [error_type(o) for o in results(ticket)] == ["cancelled"]
    finally:
        eng.gate.set()
        sched.close()
