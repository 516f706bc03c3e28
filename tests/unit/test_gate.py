"""The worker's gates: a suspect chunk runs with no other chunk started (shared/exclusive), and
bulk chunks give way to interactive ones for the CPU."""

from __future__ import annotations

import threading
import time

from mtfleet.core.models import SegmentOutcome
from mtfleet.workers import checks
from mtfleet.workers.chunk import Gate, InteractiveFirst


def test_exclusive_waits_for_shared_and_new_shared_waits_for_exclusive() -> None:
    gate = Gate()
    events: list[str] = []
    release_a = threading.Event()

    def shared(name: str, hold: threading.Event | None = None) -> None:
        with gate.hold(exclusive=False):
            events.append(f"{name} in")
            if hold is not None:
                hold.wait(5)
            events.append(f"{name} out")

    def exclusive() -> None:
        with gate.hold(exclusive=True):
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

    def submit(batch: list[str]) -> list[SegmentOutcome]:
        return [SegmentOutcome(translation=outs[int(t.split()[-1])]) for t in batch]

    texts = [f"The red table number {i}" for i in range(40)]
    got, _ = checks.translate_checked(submit, texts, cfg, pause=lambda: pauses.append(len(pauses)))
    assert len(pauses) == -(-40 // checks.LANGUAGE_SLICE)  # one pause before each slice
    assert all(o.ok and not o.warnings for o in got)
