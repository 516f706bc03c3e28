"""The worker's gates: a suspect chunk runs with no other chunk started (shared/exclusive), every
wait at the gate has a deadline, chunks that failed once (a dead worker's, an engine restart's)
run side by side; and bulk chunks give way to interactive ones for the CPU. The chunk tests
drive the production ChunkProcessor (tests/support.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from mtfleet.core import keys
from mtfleet.core.models import ChunkMessage, SegmentOutcome
from mtfleet.core.settings import Settings
from mtfleet.workers import checks
from mtfleet.workers.chunk import Gate, InteractiveFirst, Requeue
from mtfleet.workers.engines.base import TranslationRequest
from tests.support import ChunkRun, ScriptedEngine


def test_exclusive_waits_for_shared_and_new_shared_waits_for_exclusive() -> None:
    gate = Gate()
    events: list[str] = []
    release_a = threading.Event()

    def shared(name: str, hold: threading.Event | None = None) -> None:
        with gate.hold(exclusive=False, timeout=10):
            events.append(f"{name} in")
            if hold is not None:
                hold.wait(5)
            events.append(f"{name} out")

    def exclusive() -> None:
        with gate.hold(exclusive=True, timeout=10):
            events.append("X in")
            time.sleep(0.05)
            events.append("X out")

    a = threading.Thread(target=shared, args=("A", release_a))
    a.start()
    while events != ["A in"]:
        time.sleep(0.005)
    x = threading.Thread(target=exclusive)
    x.start()
    time.sleep(0.05)
    b = threading.Thread(target=shared, args=("B",))  # arrives while X waits: goes after X
    b.start()
    time.sleep(0.05)
    assert events == ["A in"]  # X waits for A; B waits behind X
    release_a.set()
    for t in (a, x, b):
        t.join(5)
    assert events == ["A in", "A out", "X in", "X out", "B in", "B out"]


def test_bulk_work_gives_way_while_an_interactive_chunk_runs_but_never_for_long() -> None:
    lanes = InteractiveFirst(max_wait_s=2.0)
    t0 = time.monotonic()
    lanes.bulk_turn()  # nothing interactive: no wait
    assert time.monotonic() - t0 < 0.5
    done = threading.Event()

    def interactive(hold_s: float) -> None:
        with lanes.interactive():
            time.sleep(hold_s)
        done.set()

    threading.Thread(target=interactive, args=(0.3,)).start()
    time.sleep(0.05)
    t0 = time.monotonic()
    lanes.bulk_turn()  # waits until the interactive chunk is done
    assert done.is_set() and time.monotonic() - t0 >= 0.2
    short = InteractiveFirst(max_wait_s=0.1)
    release = threading.Event()

    def endless() -> None:
        with short.interactive():
            release.wait(5)

    threading.Thread(target=endless).start()
    time.sleep(0.05)
    t0 = time.monotonic()
    short.bulk_turn()  # bounded: bulk never stalls behind interactive work
    waited = time.monotonic() - t0
    release.set()
    assert 0.09 <= waited < 2.0


def test_the_language_check_pauses_between_slices() -> None:
    outs = [f"La mesa roja número {i} está en la cocina." for i in range(40)]
    pauses: list[int] = []
    cfg = checks.CheckConfig("en", "es", 3.0, True)

    def submit(batch: checks.Submitted) -> list[SegmentOutcome]:
        return [SegmentOutcome(translation=outs[int(p.text.split()[-1])]) for _, p in batch]

    texts = [f"The red table number {i}" for i in range(40)]
    got, _ = checks.translate_checked(submit, texts, cfg, pause=lambda: pauses.append(len(pauses)))
    assert len(pauses) == -(-40 // checks.LANGUAGE_SLICE)  # one pause before each slice
    assert all(o.ok and not o.warnings for o in got)


# --- the gate in a worker's chunk path --------------------------------------------------------
class Held:
    """A streaming engine's script: a text starting with ``hold`` waits for :meth:`release`;
    ``inside`` counts the requests the engine is working on, ``most`` the most at once."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.lock = threading.Lock()
        self.inside = 0
        self.most = 0
        self.entered = threading.Event()

    def __call__(self, r: TranslationRequest) -> str:
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        self.entered.set()
        try:
            if r.text.startswith("hold"):
                self.released.wait(10)
            return r.text.upper()
        finally:
            with self.lock:
                self.inside -= 1

    def release(self) -> None:
        self.released.set()


@pytest.fixture
def held() -> Iterator[tuple[Held, ChunkRun]]:
    script = Held()
    run = ChunkRun(
        ScriptedEngine(script, streaming=True),
        settings=Settings(check_language=False, chunk_size=2, max_deliveries=5),
    )
    run.processor.budget_s = 2.0
    yield script, run
    script.release()
    run.close()


def failed_before(run: ChunkRun, msg: ChunkMessage, times: int) -> None:
    """``msg`` was started ``times`` times by workers that died with it (each start counts a
    delivery, as a worker's does)."""
    for _ in range(times):
        run.store.start_chunk(msg.job_id, msg.chunk, [i for s in msg.segments for i in s.indices])


def in_thread(run: ChunkRun, msg: ChunkMessage, out: dict[int, object]) -> threading.Thread:
    def go() -> None:
        try:
            out[msg.chunk] = run.processor.process(msg)
        except Exception as exc:  # noqa: BLE001 - the test looks at it
            out[msg.chunk] = exc

    t = threading.Thread(target=go)
    t.start()
    return t


def test_chunks_a_dead_worker_held_run_side_by_side_not_one_at_a_time(
    held: tuple[Held, ChunkRun],
) -> None:
    """Three chunks come back after the worker (or engine) they were in died: each failed
    once, none is a suspect yet, so they run together, not one after another."""
    script, run = held
    run.processor.budget_s = 30.0  # no chunk gives up while the others wait
    job, msgs = run.submit(["hold a", "hold b", "hold c", "hold d", "hold e", "hold f"])
    for msg in msgs:
        failed_before(run, msg, 1)
    out: dict[int, object] = {}
    threads = [in_thread(run, msg, out) for msg in msgs]
    deadline = time.monotonic() + 5
    while script.inside < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    together = script.inside
    script.release()
    for t in threads:
        t.join(10)
    assert together == 6, "the returned chunks were run one at a time"
    assert all(isinstance(r, dict) and r["segments"] == 2 for r in out.values()), out
    assert run.store.get(job.id).status.value == "succeeded"


def test_a_suspect_runs_alone_and_its_wait_for_the_gate_has_a_deadline(
    held: tuple[Held, ChunkRun],
) -> None:
    """A chunk whose deliveries failed twice runs alone: it waits for the chunk in progress,
    but only for its share of the budget; then it goes back, not charged a delivery."""
    script, run = held
    _, [busy, suspect] = run.submit(["hold busy", "x", "the suspect", "y"])
    failed_before(run, suspect, 2)
    out: dict[int, object] = {}
    first = in_thread(run, busy, out)
    assert script.entered.wait(5)
    t0 = time.monotonic()
    with pytest.raises(Requeue, match="did not get its turn"):
        run.processor.process(suspect)
    waited = time.monotonic() - t0
    assert waited < run.processor.budget_s  # its share of the budget, not the busy chunk's time
    assert run.store.failed_deliveries(suspect.job_id, suspect.chunk) == 2  # not charged
    script.release()
    first.join(10)
    assert isinstance(out[busy.chunk], dict)


def test_a_chunk_behind_a_suspect_waits_no_longer_than_its_share_of_the_budget(
    held: tuple[Held, ChunkRun],
) -> None:
    script, run = held
    _, [suspect, fresh] = run.submit(["hold the suspect", "x", "a fresh chunk", "y"])
    failed_before(run, suspect, 2)
    out: dict[int, object] = {}
    alone = in_thread(run, suspect, out)
    assert script.entered.wait(5)
    t0 = time.monotonic()
    with pytest.raises(Requeue, match="did not get its turn"):
        run.processor.process(fresh)
    assert time.monotonic() - t0 < run.processor.budget_s
    assert "a fresh chunk" not in run.engine.texts  # nothing ran beside the suspect
    assert run.redis.hget(keys.chunk_deliveries(fresh.job_id), str(fresh.chunk)) is None
    script.release()
    alone.join(10)
    assert isinstance(out[suspect.chunk], dict)
