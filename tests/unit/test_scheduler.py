"""The worker's scheduler between task threads and the engine (no Redis, no Celery).

The engines here are small test engines whose behaviour each test controls (blocking, failing,
recording); the scheduler is the thing under test.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future

import pytest

from mtfleet.core.errors import EngineUnavailable
from mtfleet.core.models import SegmentOutcome
from mtfleet.workers.engines.base import Engine, EngineLimits, Translation, TranslationRequest
from mtfleet.workers.scheduler import Scheduler, Ticket


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


def req(text: str, priority: int = 1) -> TranslationRequest:
    return TranslationRequest(text, "en", "es", priority)


def results(ticket: Ticket) -> list[SegmentOutcome]:
    return ticket.result(timeout=10)


@pytest.fixture
def engine() -> RecordingEngine:
    return RecordingEngine()


@pytest.fixture
def sched(engine: RecordingEngine) -> Scheduler:
    s = Scheduler(engine, latency_target_s=0.5)
    yield s  # type: ignore[misc]
    engine.gate.set()
    s.close()


def test_idle_engine_runs_work_at_once(engine: RecordingEngine, sched: Scheduler) -> None:
    out = results(sched.submit([req("a b"), req("  c  ")]))
    assert [o.translation for o in out] == ["A B", "  C  "]  # outer whitespace kept


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
    sched = Scheduler(engine, latency_target_s=0.5)
    try:
        engine.gate.clear()
        sched.submit([req("busy")])
        assert engine.entered.wait(5)
        bulk = sched.submit([req(f"b{i}") for i in range(6)])
        urgent = sched.submit([req("i0", 0), req("i1", 0)])
        engine.gate.set()
        results(bulk)
        results(urgent)
        assert [r.text for r in engine.calls[1]] == ["i0", "i1"]
    finally:
        sched.close()


def test_batches_respect_the_token_budget(engine: RecordingEngine) -> None:
    engine._limits = EngineLimits(64, 12, 1_000)
    sched = Scheduler(engine, latency_target_s=None)
    try:
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
    assert out[2].error is not None and out[2].error["type"] == "segment_too_long"


def test_a_dead_engine_fails_every_waiter_with_engine_unavailable(
    engine: RecordingEngine, sched: Scheduler
) -> None:
    engine.dead = True
    futs = sched.submit([req("a"), req("b")])
    with pytest.raises(EngineUnavailable):
        futs.result(timeout=5)


def test_cost_model_learns_the_engine(engine: RecordingEngine) -> None:
    class Timed(RecordingEngine):
        def check(self, request: TranslationRequest) -> str | None:
            return None

        def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
            time.sleep(0.005 + 0.0005 * sum(len(r.text.split()) for r in requests))
            return [r.text for r in requests]

    timed = Timed()
    sched = Scheduler(timed, latency_target_s=None)
    try:
        for n in (4, 40, 10, 60, 20, 80, 30, 5):
            results(sched.submit([req("w " * n)]))
        assert sched.cost.samples == 8
        # sleep granularity and a loaded machine only ever add time
        assert 0.0004 <= sched.cost.per_token_s <= 0.002
        assert 0.05 <= sched.cost.predict(100) <= 0.2
    finally:
        sched.close()


def test_close_fails_buffered_work_so_it_is_requeued(engine: RecordingEngine) -> None:
    sched = Scheduler(engine, latency_target_s=0.5)
    engine.gate.clear()
    sched.submit([req("busy")])
    assert engine.entered.wait(5)
    waiting = sched.submit([req("later")])
    threading.Timer(0.2, engine.gate.set).start()
    sched.close()
    with pytest.raises(EngineUnavailable):
        waiting.result(timeout=5)
    with pytest.raises(EngineUnavailable):
        sched.submit([req("after close")])


def test_tick_measures_busy_time_and_throughput(engine: RecordingEngine) -> None:
    engine.delay = 0.05
    sched = Scheduler(engine, latency_target_s=0.5)
    try:
        results(sched.submit([req(f"s{i}") for i in range(10)]))
        rate = sched.tick()
        # ten segments in one call of at least 50 ms (a loaded machine only adds time)
        assert rate is not None and 10 / 2.0 < rate <= 10 / 0.05
    finally:
        sched.close()


class StreamEngine(RecordingEngine):
    """A streaming engine: requests finish when the test says so."""

    streaming = True

    def __init__(self) -> None:
        super().__init__(EngineLimits(2, 10_000, 1_000))
        self.open: list[tuple[TranslationRequest, Future[str | Translation]]] = []
        self.lock = threading.Lock()
        self.peak = 0

    def submit(self, request: TranslationRequest) -> Future[str | Translation]:
        fut: Future[str | Translation] = Future()
        with self.lock:
            self.open.append((request, fut))
            self.peak = max(self.peak, len(self.open))
        return fut

    def finish(self, n: int) -> list[TranslationRequest]:
        with self.lock:
            done, self.open = self.open[:n], self.open[n:]
        for r, f in done:
            f.set_result(Translation(r.text.upper(), tokens_out=1))
        return [r for r, _ in done]


def wait_for(cond: object, timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)


def test_streaming_engine_is_fed_up_to_its_cap_then_as_requests_finish() -> None:
    eng = StreamEngine()  # max_sequences 2: the scheduler keeps 4 in flight
    sched = Scheduler(eng, latency_target_s=0.5)
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
    sched = Scheduler(eng, latency_target_s=0.5)
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
    sched = Scheduler(eng, latency_target_s=0.5)
    try:
        futs = sched.submit([req("a"), req("b")])
        wait_for(lambda: len(eng.open) == 2)
        with eng.lock:
            (_, f1), (_, f2) = eng.open
            eng.open.clear()
        f1.set_exception(RuntimeError("one bad request"))
        f2.set_result(Translation(""))
        out = results(futs)
        assert out[0].error is not None and "one bad request" in out[0].error["message"]
        assert out[1].error is not None and out[1].error["type"] == "empty_output"
        # the engine slots were released: more work flows
        more = sched.submit([req("c")])
        wait_for(lambda: len(eng.open) == 1)
        eng.finish(1)
        assert more.result(timeout=5)[0].translation == "C"
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
    # what arrived while the engine was busy went together, 64 segments per call at most
    assert len(engine.calls) <= 3 and max(len(c) for c in engine.calls) == 64
