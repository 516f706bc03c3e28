"""Apertium's two lanes, on the real pipelines through the scheduler a worker builds for it: an
interactive call is answered while a long bulk call runs, and the bulk pipeline yields the CPU
(its processes run under ``SCHED_IDLE`` at ``BULK_NICENESS``, in the worker's session, and in
the idle cgroup where the host allows one: ``workers.priority``)."""

from __future__ import annotations

import os
import time

import psutil
import pytest

from bench.workload import segments
from mtfleet.core.settings import Settings
from mtfleet.workers import priority
from mtfleet.workers.engines.apertium import ApertiumEngine, discover_modes
from mtfleet.workers.engines.base import TranslationRequest
from mtfleet.workers.scheduler import make_scheduler

pytestmark = pytest.mark.skipif(
    ("en", "es") not in discover_modes(), reason="apertium-eng-spa is not installed"
)


def test_an_interactive_call_is_answered_while_a_bulk_call_runs() -> None:
    engine = ApertiumEngine(Settings())
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
        done = bulk.result(timeout=60)
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
