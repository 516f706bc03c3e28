"""The online cost model and the throughput meter (pure code)."""

from __future__ import annotations

import random

import pytest

from mtfleet.workers.costmodel import BulkGovernor, CostModel, ThroughputMeter


def test_fit_recovers_fixed_and_per_token_cost_from_noisy_batches() -> None:
    rng = random.Random(7)
    model = CostModel()
    for _ in range(200):
        tokens = rng.randint(10, 4000)
        model.observe(tokens, 0.02 + 0.0001 * tokens + rng.gauss(0, 0.002))
    assert model.fixed_s == pytest.approx(0.02, abs=0.004)
    assert model.per_token_s == pytest.approx(0.0001, rel=0.05)
    assert model.predict(1000) == pytest.approx(0.12, rel=0.05)


def test_prior_holds_until_enough_samples() -> None:
    model = CostModel(fixed_s=0.5, per_token_s=0.01, min_samples=3)
    model.observe(100, 0.1)
    model.observe(200, 0.2)
    assert (model.fixed_s, model.per_token_s) == (0.5, 0.01)
    model.observe(300, 0.3)
    assert model.per_token_s == pytest.approx(0.001)


def test_forgetting_follows_an_engine_that_slows_down() -> None:
    model = CostModel(decay=0.9)
    for tokens in [100, 400, 800] * 20:
        model.observe(tokens, 0.01 + 0.0001 * tokens)
    for tokens in [100, 400, 800] * 20:
        model.observe(tokens, 0.01 + 0.0004 * tokens)  # throttled: 4x per token
    assert model.per_token_s == pytest.approx(0.0004, rel=0.05)


def test_batches_of_one_size_attribute_all_cost_per_token() -> None:
    model = CostModel()
    for _ in range(5):
        model.observe(500, 0.25)
    assert model.fixed_s == 0.0 and model.per_token_s == pytest.approx(0.0005)


def test_noise_never_gives_negative_terms() -> None:
    model = CostModel()
    for tokens, seconds in [(100, 0.05), (200, 0.04), (300, 0.03), (400, 0.02)]:
        model.observe(tokens, seconds)  # time falling with size: noise
    assert model.fixed_s >= 0 and model.per_token_s > 0
    model = CostModel()
    for tokens in (100, 200, 300):
        model.observe(tokens, tokens * 0.001 - 0.05)  # would fit a negative intercept
    assert model.fixed_s == 0.0 and model.per_token_s > 0


def test_bad_observations_are_ignored() -> None:
    model = CostModel(fixed_s=0.1, per_token_s=0.001)
    for bad in [(0, 1.0), (10, -1.0), (10, float("nan")), (10, float("inf"))]:
        model.observe(*bad)
    assert model.samples == 0


def test_budget_questions() -> None:
    model = CostModel(fixed_s=0.01, per_token_s=0.001)
    assert model.tokens_within(0.11) == 100
    assert model.tokens_within(0.005) == 1  # the fixed cost alone is over: one at a time
    # at 90% efficiency per-token work is 9x the fixed cost: 9 x 10 ms / 1 ms = 90 tokens
    assert model.tokens_for_efficiency(0.9) == 90
    assert CostModel(fixed_s=0.0, per_token_s=0.001).tokens_for_efficiency(0.99) == 1


def test_throughput_meter_reports_recent_rate() -> None:
    meter = ThroughputMeter(horizon_s=10)
    assert meter.rate() is None
    for _ in range(20):
        meter.add(100, 1.0)  # 100 segments per busy second
    assert meter.rate() == pytest.approx(100)
    for _ in range(20):
        meter.add(10, 1.0)  # the engine slowed down: the old window is forgotten
    assert meter.rate() == pytest.approx(10)
    meter.add(0, 5.0)
    meter.add(5, 0.0)
    assert meter.rate() == pytest.approx(10)


class KneeEngine:
    """Per-token time of an engine that is memory-bound (3 ms a step) up to 100 sequences in
    flight and compute-bound beyond: the roofline a continuous-batching GPU follows."""

    def per_token(self, inflight: int) -> float:
        return max(0.003, 0.00003 * inflight)


def test_governor_settles_the_bulk_cap_near_the_engines_knee() -> None:
    engine = KneeEngine()
    gov = BulkGovernor(ceiling=512, floor=8, slowdown=1.3, window=4)
    now = 0.0
    caps = []
    for _ in range(400):
        now += 0.05
        gov.observe(now, engine.per_token(gov.limit(now)))
        caps.append(gov.cap)
    settled = caps[-100:]
    # at most 1.3x the unloaded 3 ms per token: 130 in flight; the knee is at 100
    assert min(settled) >= 80 and max(settled) <= 140
    assert gov.baseline == pytest.approx(0.003)


def test_governor_returns_to_full_width_without_interactive_work() -> None:
    engine = KneeEngine()
    gov = BulkGovernor(ceiling=512, floor=8, window=4)
    now = 0.0
    for _ in range(200):
        now += 0.05
        gov.observe(now, engine.per_token(gov.limit(now)))
    assert gov.cap < 200
    assert gov.limit(now + 0.5) == gov.cap  # a short lull changes nothing
    for second in range(1, 40):
        gov.limit(now + second)
    assert gov.limit(now + 40) == 512


def test_governor_never_goes_below_its_floor_and_ignores_bad_samples() -> None:
    gov = BulkGovernor(ceiling=64, floor=16, window=2)
    gov.observe(0.0, 0.001)
    gov.observe(0.1, 0.001)
    for i in range(50):  # latency keeps rising whatever the cap: never below the floor
        gov.observe(0.2 + i * 0.1, 0.01 * (i + 2))
    assert gov.cap == 16
    before = gov.cap
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        gov.observe(10.0, bad)
    assert gov.cap == before


def test_a_probe_cut_short_by_silence_restores_the_cap() -> None:
    gov = BulkGovernor(ceiling=512, floor=32, window=8)
    for i in range(8):  # one small interactive job: its first sample starts a probe
        gov.observe(100 + i * 0.001, 0.003)
    assert gov.cap == 32
    caps = [gov.limit(100.0 + k * 0.25) for k in range(1, 11)]  # asked often, as the engine does
    assert caps[:6] == [32] * 6  # probing for two seconds
    assert caps[-1] == 512  # no interactive work since: back to where it was


def test_interactive_work_on_an_unloaded_engine_needs_no_probe() -> None:
    gov = BulkGovernor(ceiling=512, floor=32, window=8)
    for i in range(8):
        gov.observe(100 + i * 0.001, 0.003, unloaded=True)
    assert gov.cap == 512 and gov.baseline == pytest.approx(0.003)
    gov.observe(200, 0.003)  # loaded, and the baseline is old: now it probes
    assert gov.cap == 32
