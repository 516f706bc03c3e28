"""core/backoff.py: the waits every retry in the fleet takes (each caller's own tests check its
policy: tests/unit/test_webhooks.py, test_engine_families.py)."""

from __future__ import annotations

import random

from mtfleet.core.backoff import RECONNECT, Backoff, retry_after_s
from mtfleet.workers.health import RESTART_BACKOFF


def test_without_jitter_the_wait_doubles_to_its_cap() -> None:
    assert [RECONNECT.wait_s(n) for n in range(8)] == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]
    assert [RESTART_BACKOFF.wait_s(n) for n in range(5)] == [1, 2, 4, 8, 16]
    assert Backoff(0.5, 10).wait_s(-1) == 0.5  # before any failure: the first wait
    assert Backoff(0.5, 10).wait_s(10_000) == 10  # no overflow however many failures


def test_equal_jitter_keeps_half_the_wait() -> None:
    rng = random.Random(3)
    waits = [Backoff(1, 8, jitter="equal").wait_s(2, rng) for _ in range(200)]
    assert all(2 <= w <= 4 for w in waits) and max(waits) > 3.5 and min(waits) < 2.5


def test_a_retry_after_in_decimal_seconds_is_read_and_garbage_is_not() -> None:
    assert retry_after_s(" 1.5 ", 0.0) == 1.5
    for bad in ("", "-3", "nan", "inf", "1e3", "soon"):
        assert retry_after_s(bad, 0.0) is None, bad
