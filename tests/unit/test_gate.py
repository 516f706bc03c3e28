"""The worker's shared/exclusive gate: a suspect chunk runs with no other chunk started."""

from __future__ import annotations

import threading
import time

from mtfleet.workers.chunk import Gate


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
