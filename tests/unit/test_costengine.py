"""bench/costengine.py: the simulated continuous-batching GPU and its engine plugin."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future

import pytest

from bench.costengine import (
    PRESETS,
    CostModelEngine,
    CostParams,
    SimulatedGPU,
    direct_throughput,
)
from mtfleet.core.errors import ConfigError, EngineUnavailable
from mtfleet.core.languages import LANGUAGES
from mtfleet.core.settings import Settings
from mtfleet.workers.engines import create_engine
from mtfleet.workers.engines.base import Translation, TranslationRequest


def params(**kw: object) -> CostParams:
    base: dict[str, object] = {
        "step_fixed_s": 0.001,
        "per_token_s": 0.0,
        "max_num_seqs": 4,
        "max_num_batched_tokens": 1024,
        "max_model_len": 512,
    }
    base.update(kw)
    return CostParams(**base)  # type: ignore[arg-type]


@pytest.fixture
def gpu_factory() -> Iterator[type[SimulatedGPU]]:
    made: list[SimulatedGPU] = []

    class Tracked(SimulatedGPU):
        def __init__(self, p: CostParams) -> None:
            super().__init__(p)
            made.append(self)

    yield Tracked
    for gpu in made:
        gpu.close()


def req(text: str = "hello world", target: str = "de", priority: int = 0) -> TranslationRequest:
    return TranslationRequest(text=text, source="en", target=target, priority=priority)


def test_h200_preset_ceiling_is_in_the_documented_range() -> None:
    assert 200 <= PRESETS["h200-7b"].ceiling(128, 128) <= 270
    assert PRESETS["zero"].ceiling(128, 128) == float("inf")


def test_step_counts_and_tokens_follow_the_model(gpu_factory: type[SimulatedGPU]) -> None:
    # Prompt of 40 tokens, 16-token budget: read in 3 chunks, the third step emits token 1.
    gpu = gpu_factory(params(max_num_seqs=2, max_num_batched_tokens=16))
    gpu.future(40, 5, None).result(timeout=5)
    stats = gpu.stats()
    assert stats["steps"] == 3 + 4
    assert stats["tokens_in"] == 40 and stats["tokens_out"] == 5


def test_wall_time_matches_the_analytic_ceiling(gpu_factory: type[SimulatedGPU]) -> None:
    p = params(step_fixed_s=0.002, per_token_s=0.0001, max_num_seqs=4)
    n, i, o = 16, 10, 10  # four synchronized waves of four sequences
    # a wave: one prefill step (40 tokens: compute-bound) then o - 1 decode steps of 4 tokens
    # (memory-bound: the fixed term); each step costs the larger of the two roofline terms
    wave = max(p.step_fixed_s, 4 * i * p.per_token_s) + (o - 1) * max(
        p.step_fixed_s, 4 * p.per_token_s
    )
    predicted = (n // 4) * wave
    # the analytic ceiling is the staggered steady state: never slower than synchronized waves
    assert n / p.ceiling(i, o) <= predicted
    gpu = gpu_factory(p)
    start = time.monotonic()
    futures = [gpu.future(i, o, k) for k in range(n)]
    assert [f.result(timeout=5) for f in futures] == list(range(n))
    wall = time.monotonic() - start
    assert gpu.stats()["busy_s"] == pytest.approx(predicted, rel=1e-6)
    assert 0.9 * predicted <= wall <= 1.5 * predicted + 0.05


def test_continuous_batching_overlaps_requests() -> None:
    p = params(step_fixed_s=0.001, max_num_seqs=32)
    single = direct_throughput(p, [(4, 20)])["wall_s"]
    many = direct_throughput(p, [(4, 20)] * 32)
    assert many["completed"] == 32
    assert many["wall_s"] < 0.25 * 32 * single
    assert many["requests_per_s"] > 4 / single


def test_max_num_seqs_is_respected(gpu_factory: type[SimulatedGPU]) -> None:
    gpu = gpu_factory(params(max_num_seqs=3))
    for f in [gpu.future(2, 3, None) for _ in range(20)]:
        f.result(timeout=5)
    assert gpu.stats()["peak_running"] == 3


def test_priority_zero_overtakes_waiting_bulk(gpu_factory: type[SimulatedGPU]) -> None:
    gpu = gpu_factory(params(max_num_seqs=2))
    finished: list[str] = []
    futures: list[Future[str]] = []
    for name, priority in [*((f"bulk{k}", 1) for k in range(50)), ("urgent", 0)]:
        futures.append(gpu.future(1, 5, name, priority=priority))
        futures[-1].add_done_callback(lambda f: finished.append(f.result()))
    for f in futures:
        f.result(timeout=10)
    assert len(finished) == 51
    assert finished.index("urgent") < 10


def test_zero_preset_completes_at_once() -> None:
    gpu = SimulatedGPU(PRESETS["zero"])
    start = time.monotonic()
    futures = [gpu.future(100, 100, k) for k in range(1000)]
    assert all(f.done() for f in futures)
    assert time.monotonic() - start < 0.5
    assert gpu.stats()["completed"] == 1000
    gpu.close()


def test_close_fails_pending_futures() -> None:
    gpu = SimulatedGPU(params(step_fixed_s=0.05, max_num_seqs=2))
    futures = [gpu.future(1, 50, None) for _ in range(10)]
    start = time.monotonic()
    gpu.close()
    assert time.monotonic() - start < 1
    for f in futures:
        with pytest.raises(EngineUnavailable):
            f.result(timeout=1)
    with pytest.raises(EngineUnavailable):
        gpu.future(1, 1, None)


def test_engine_output_limits_and_pairs() -> None:
    engine = CostModelEngine(Settings().engine, params(max_model_len=20))
    engine.load()
    try:
        assert engine.streaming
        out = engine.translate([req("  hallo welt "), req("bonjour", target="es")])
        assert out == [
            Translation("<de> hallo welt", tokens_out=3),
            Translation("<es> bonjour", tokens_out=2),
        ]
        got: list[object] = []
        finished = threading.Event()
        engine.submit(req("x", target="fr"), lambda out: (got.append(out), finished.set()))
        assert finished.wait(5) and got == [Translation("<fr> x", tokens_out=2)]
        assert engine.limits.max_input_tokens == 10
        assert engine.check(req("a b c")) is None
        reason = engine.check(req(" ".join(["word"] * 30)))
        assert reason is not None and "tokens" in reason
        pairs = engine.pairs()
        assert ("en", "de") in pairs and ("de", "en") in pairs
        assert len(pairs) == len(LANGUAGES) * (len(LANGUAGES) - 1)
        assert engine.stats()["completed"] == 3
    finally:
        engine.close()
    with pytest.raises(EngineUnavailable):
        engine.translate([req()])


def test_fingerprint_and_model_follow_the_params() -> None:
    a = CostModelEngine(Settings().engine, PRESETS["h200-7b"])
    b = CostModelEngine(Settings().engine, PRESETS["zero"])
    assert a.model == "costmodel:h200-7b"
    assert a.fingerprint != b.fingerprint
    assert a.fingerprint == CostModelEngine(Settings().engine, PRESETS["h200-7b"]).fingerprint


def test_batch_mode_is_a_batch_engine() -> None:
    engine = CostModelEngine(Settings().engine, params(mode="batch"))
    engine.load()
    try:
        assert not engine.streaming
        assert engine.translate([req("a"), req("b")]) == [
            Translation("<de> a", tokens_out=2),
            Translation("<de> b", tokens_out=2),
        ]
        with pytest.raises(NotImplementedError):
            engine.submit(req(), print)
    finally:
        engine.close()


def test_from_env_preset_and_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTBENCH_PRESET", "zero")
    monkeypatch.setenv("MTBENCH_MAX_NUM_SEQS", "7")
    monkeypatch.setenv("MTBENCH_STEP_FIXED_S", "0.5")
    monkeypatch.setenv("MTBENCH_MODE", "batch")
    p = CostParams.from_env()
    assert (p.preset, p.max_num_seqs, p.step_fixed_s, p.mode) == ("zero", 7, 0.5, "batch")
    monkeypatch.setenv("MTBENCH_MODE", "sometimes")
    with pytest.raises(ConfigError):
        CostParams.from_env()
    monkeypatch.setenv("MTBENCH_PRESET", "nope")
    with pytest.raises(ConfigError):
        CostParams.from_env()


def test_loads_as_an_engine_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTBENCH_PRESET", "zero")
    engine = create_engine(Settings(engine="bench.costengine:CostModelEngine"))
    assert isinstance(engine, CostModelEngine)
    engine.load()
    try:
        assert engine.streaming and engine.model == "costmodel:zero"
        assert engine.translate([req("ok")]) == [Translation("<de> ok", tokens_out=2)]
    finally:
        engine.close()


def test_the_fleets_step_budget_bounds_every_step() -> None:
    """MT_MAX_STEP_TOKENS / MT_MAX_SEQS are the simulated GPU's max_num_batched_tokens and
    max_num_seqs, as they are vLLM's: no step carries more, and everything still finishes."""
    wide = params(max_num_seqs=64, max_num_batched_tokens=4096)
    budget = Settings(max_step_tokens=96, max_seqs=64)
    for settings, most in ((Settings(), 4096), (budget, 96)):
        engine = CostModelEngine(settings.engine, wide)
        engine.load()
        try:
            outs = engine.translate(
                [TranslationRequest(" ".join(["word"] * 60), "en", "es") for _ in range(40)]
            )
            assert len(outs) == 40
            peak = engine.stats()["peak_step_tokens"]
            assert peak <= most
            if most == 96:
                assert engine.params.max_num_batched_tokens == 96
            else:
                assert peak > 96  # unbounded, the first step takes many prompts at once
        finally:
            engine.close()


def test_step_budget_for_a_slowdown_is_at_the_knee() -> None:
    p = PRESETS["h200-7b"]
    env = p.step_budget(1.3)
    # knee = 3 ms weight read / 15 µs per token = 200 tokens; x 1.3
    assert env == {"MT_MAX_STEP_TOKENS": "260", "MT_MAX_SEQS": "195"}
    tokens = int(env["MT_MAX_STEP_TOKENS"])
    step = max(p.step_fixed_s, tokens * p.per_token_s)
    assert step <= 1.3 * p.step_fixed_s + 1e-9
