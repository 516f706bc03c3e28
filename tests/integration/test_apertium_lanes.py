"""Apertium's two lanes, on the real pipelines through the scheduler a worker builds for it: an
interactive call is answered while a long bulk call runs, and the bulk pipeline yields the CPU
(its processes run under ``SCHED_IDLE`` at ``BULK_NICENESS``, in the worker's session, and in
the idle cgroup where the host allows one: ``workers.priority``); a bulk call past its deadline
is interrupted alone, never the interactive call beside it nor a later call."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator

import psutil
import pytest

from bench.workload import segments
from mtfleet.core.errors import EngineError
from mtfleet.core.settings import Settings
from mtfleet.workers import priority
from mtfleet.workers.engines.apertium import ApertiumEngine, discover_modes
from mtfleet.workers.engines.base import TranslationRequest
from mtfleet.workers.scheduler import Deadlines, make_scheduler

pytestmark = pytest.mark.skipif(
    ("en", "es") not in discover_modes(), reason="apertium-eng-spa is not installed"
)


def test_an_interactive_call_is_answered_while_a_bulk_call_runs() -> None:
    # the default the suite changes (tests/conftest.py): the bulk pipeline at the lowest priority
    engine = ApertiumEngine(Settings(bulk_priority="lowest").engine)
    engine.load()
    sched = make_scheduler(engine, latency_target_s=None)  # bulk calls as large as they come
    try:
        # both pipelines started, so neither pays its start-up below
        engine.translate([TranslationRequest("Warm up.", "en", "es", 0)])
        engine.translate([TranslationRequest("Warm up.", "en", "es", 1)])
        texts = segments(500, seed=7, tag="lanes")
        bulk = sched.submit([TranslationRequest(t, "en", "es", 1) for t in texts])
        time.sleep(0.1)  # the bulk call (about a second of work here) is in the pipeline
        t0 = time.monotonic()
        urgent = sched.submit([TranslationRequest("Free shipping on every order", "en", "es", 0)])
        out = urgent.result(timeout=30)
        waited = time.monotonic() - t0
        assert not bulk.done(), f"the bulk call finished first (interactive took {waited:.2f}s)"
        # (at the lowest priority it runs on what the suite's other processes leave of the CPU)
        done = bulk.result(timeout=300)
        assert all(o.ok and o.translation for o in done)
        alone = engine.translate([TranslationRequest("Free shipping on every order", "en", "es")])
        assert out[0].ok and out[0].translation == alone[0] == "Navío libre en cada orden"

        def pipeline(interactive: bool) -> list[psutil.Process]:
            proc = engine._pipes[("en", "es", interactive)].proc
            assert proc is not None
            leader = psutil.Process(proc.pid)
            return [leader, *leader.children(recursive=True)]

        mine = os.getpriority(os.PRIO_PROCESS, 0)
        bulk_procs, interactive_procs = pipeline(False), pipeline(True)
        assert len(bulk_procs) > 5 and len(interactive_procs) > 5  # lt-proc, tagger, ...
        assert {p.nice() for p in bulk_procs} == {min(19, mine + priority.BULK_NICENESS)}
        assert {p.nice() for p in interactive_procs} == {mine}
        assert {os.sched_getscheduler(p.pid) for p in bulk_procs} == {os.SCHED_IDLE}
        assert {os.sched_getscheduler(p.pid) for p in interactive_procs} == {os.SCHED_OTHER}
        # each pipeline is a process group of its own (killed whole) in the worker's session:
        # the worker's CPU group, where its wake-ups preempt the bulk pipeline at once
        for procs in (bulk_procs, interactive_procs):
            assert {os.getpgid(p.pid) for p in procs} == {procs[0].pid}
            assert {os.getsid(p.pid) for p in procs} == {os.getsid(0)}
        idle = priority.idle_cgroup()
        if idle is not None:  # root here: the bulk pipeline is in the idle cgroup, whole
            members = set(idle.read_text().split())
            assert {str(p.pid) for p in bulk_procs} <= members
            assert not {str(p.pid) for p in interactive_procs} & members
            assert (idle.parent / "cpu.idle").read_text().strip() == "1"
    finally:
        sched.close()
        engine.close()


@contextlib.contextmanager
def stopped(engine: ApertiumEngine, interactive: bool) -> Iterator[int]:
    """A lane's en->es pipeline stopped (SIGSTOP: a pipeline that makes no progress, as one
    wedged by its input) until the block ends; yields its leader's pid."""
    pipe = engine._pipes[("en", "es", interactive)]
    proc = pipe.proc
    assert proc is not None, "warm the pipeline first"
    os.killpg(proc.pid, signal.SIGSTOP)
    try:
        yield proc.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGCONT)


def warm(engine: ApertiumEngine) -> None:
    """Both pipelines started."""
    engine.translate([TranslationRequest("Warm up.", "en", "es", 0)])
    engine.translate([TranslationRequest("Warm up.", "en", "es", 1)])


def test_an_interrupt_ends_the_call_it_names_and_no_other() -> None:
    """On the engine: an interrupt naming a call that already returned, or a call of the other
    lane, leaves the calls running now alone (the watchdog's interrupt can arrive after its
    call returned and the next one started); one naming the running call ends it."""
    engine = ApertiumEngine(Settings().engine)
    engine.load()
    try:
        warm(engine)
        earlier = [TranslationRequest("Red shoes", "en", "es", 1)]
        assert engine.translate(earlier) == ["Zapatos rojos"]
        bulk = [TranslationRequest("Free shipping on every order", "en", "es", 1)]
        urgent = [TranslationRequest("Add to cart", "en", "es", 0)]
        outcomes: dict[str, object] = {}

        def run(name: str, call: list[TranslationRequest]) -> None:
            try:
                outcomes[name] = engine.translate(call)
            except Exception as exc:  # noqa: BLE001 - what the test looks at
                outcomes[name] = exc

        with stopped(engine, interactive=False) as bulk_pid, stopped(engine, interactive=True):
            threads = [
                threading.Thread(target=run, args=("bulk", bulk)),
                threading.Thread(target=run, args=("urgent", urgent)),
            ]
            for t in threads:
                t.start()
            time.sleep(0.2)  # both calls are in their pipelines
            engine.interrupt(earlier)  # returned already: nothing happens
            engine.interrupt(urgent[:])  # an equal list, not that call: nothing happens
            assert all(t.is_alive() for t in threads)
            engine.interrupt(bulk)
            threads[0].join(10)
            assert isinstance(outcomes["bulk"], EngineError)
        threads[1].join(10)
        assert outcomes["urgent"] == ["Añade a carro"]
        # the bulk pipeline starts again at its next call
        assert engine.translate(bulk) == ["Navío libre en cada orden"]
        assert engine._pipes[("en", "es", False)].proc.pid != bulk_pid  # type: ignore[union-attr]
    finally:
        engine.close()


def test_a_bulk_call_past_its_deadline_fails_alone_not_the_interactive_one_beside_it() -> None:
    """Through the scheduler a worker builds: a bulk call outlives its deadline (its pipeline
    makes no progress) while an interactive call is inside the other pipeline. The watchdog
    interrupts the bulk call alone: its segment fails with ``engine_timeout``; the interactive
    one is translated, on the same pipeline process."""
    engine = ApertiumEngine(Settings().engine)
    engine.load()
    # The interactive call's deadline comes 3 s after the bulk's: the time the bulk call's
    # failure and this test's resuming of the interactive pipeline may take on a loaded machine
    # (with 1 s, `make test`'s four files at a time on two cores missed it now and then).
    deadlines = Deadlines(factor=1, floor_s=5.0, ceiling_s=60)
    sched = make_scheduler(engine, latency_target_s=None, deadlines=deadlines)
    try:
        warm(engine)
        with stopped(engine, interactive=False), stopped(engine, interactive=True) as pid:
            bulk = sched.submit([TranslationRequest("Free shipping on every order", "en", "es", 1)])
            time.sleep(3.0)
            urgent = sched.submit([TranslationRequest("Add to cart", "en", "es", 0)])
            [late] = bulk.result(timeout=deadlines.floor_s + 10)
            assert late.error is not None and late.error["type"] == "engine_timeout", late
            assert not urgent.done()
        [out] = urgent.result(timeout=10)  # its pipeline goes on where it stopped
        assert out.ok and out.translation == "Añade a carro", out
        assert engine._pipes[("en", "es", True)].proc.pid == pid  # type: ignore[union-attr]
        assert sched.down is None
    finally:
        sched.close()
        engine.close()
