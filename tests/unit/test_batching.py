"""Batch planning and the pull window (pure code)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mtfleet.workers.batching import bulk_token_budget, plan_batch, pull_window
from mtfleet.workers.costmodel import CostModel
from mtfleet.workers.engines.base import EngineLimits


@dataclass
class It:
    tokens: int


def lanes(*sizes: list[int]) -> list[list[It]]:
    return [[It(t) for t in lane] for lane in sizes]


def test_interactive_lane_goes_first_then_bulk_fills() -> None:
    plan = plan_batch(lanes([5, 5], [5, 5, 5]), max_sequences=4, max_tokens=100)
    assert plan.take == (2, 2) and plan.tokens == 20 and plan.size == 4


def test_token_budget_stops_the_batch_without_reordering() -> None:
    # a big bulk item is not overtaken by the small one behind it (FIFO inside a lane)
    plan = plan_batch(lanes([10], [50, 5]), max_sequences=10, max_tokens=40)
    assert plan.take == (1, 0)


def test_an_item_over_the_budget_runs_alone() -> None:
    plan = plan_batch(lanes([], [500, 5]), max_sequences=10, max_tokens=40)
    assert plan.take == (0, 1) and plan.tokens == 500


def test_sequence_limit_blocks_lower_lanes() -> None:
    plan = plan_batch(lanes([1, 1, 1], [1]), max_sequences=2, max_tokens=100)
    assert plan.take == (2, 0)


def test_empty_lanes_plan_nothing() -> None:
    assert plan_batch(lanes([], []), max_sequences=4, max_tokens=10).size == 0


LIMITS = EngineLimits(max_sequences=256, max_batch_tokens=100_000, max_input_tokens=1000)


def test_bulk_budget_follows_the_latency_target() -> None:
    cost = CostModel(fixed_s=0.01, per_token_s=0.0001)
    # half of a 0.5 s target: (0.25 - 0.01) / 0.0001 = 2400 tokens
    assert bulk_token_budget(LIMITS, cost, latency_target_s=0.5) == 2400
    assert bulk_token_budget(LIMITS, cost, latency_target_s=2.0) == 9900
    # no interactive work on this worker: only the engine's limit
    assert bulk_token_budget(LIMITS, cost, latency_target_s=None) == 100_000


def test_bulk_budget_never_below_an_efficient_batch_nor_over_the_engine() -> None:
    slow_start = CostModel(fixed_s=0.2, per_token_s=0.0001)
    # 0.25 s target leaves 0.125 s, less than the fixed cost; efficiency 0.8 needs 8000 tokens
    assert bulk_token_budget(LIMITS, slow_start, latency_target_s=0.25) == 8000
    small = EngineLimits(max_sequences=8, max_batch_tokens=500, max_input_tokens=100)
    assert bulk_token_budget(small, slow_start, latency_target_s=10) == 500


def test_pull_window_keeps_the_engine_full_before_any_measurement() -> None:
    w = pull_window(
        chunk_size=32,
        max_chunks=64,
        keep_full_segments=512,
        rate=None,
        pull_ahead_s=2,
        visibility_timeout_s=3600,
    )
    assert w == 16


def test_pull_window_follows_throughput_within_bounds() -> None:
    args = dict(chunk_size=32, max_chunks=64, keep_full_segments=64, visibility_timeout_s=3600)
    assert pull_window(rate=320.0, pull_ahead_s=2, **args) == 20  # 640 segments ahead
    assert pull_window(rate=10_000.0, pull_ahead_s=2, **args) == 64  # capped by the slots
    assert pull_window(rate=1.0, pull_ahead_s=2, **args) == 2  # keep-full floor


def test_pull_window_never_holds_past_the_visibility_timeout() -> None:
    # 1 segment/s with a 60 s timeout: hold at most 15 s of work = 15 segments = 1 chunk
    w = pull_window(
        chunk_size=32,
        max_chunks=64,
        keep_full_segments=512,
        rate=1.0,
        pull_ahead_s=2,
        visibility_timeout_s=60,
    )
    assert w == 1


@pytest.mark.parametrize("rate", [0.0, None])
def test_pull_window_is_at_least_one(rate: float | None) -> None:
    w = pull_window(
        chunk_size=32,
        max_chunks=8,
        keep_full_segments=0,
        rate=rate,
        pull_ahead_s=2,
        visibility_timeout_s=60,
    )
    assert w == 1
