"""``mtfleet plan`` and the step model under it (fleet/capacity.py, fleet/gpucost.py): pure
arithmetic, no fleet. Its predictions against a measured fleet: tests/integration/
test_capacity_plan.py (``make soak``) and ``make bench`` (``plan_check``)."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from bench.costengine import direct_throughput
from mtfleet.__main__ import app
from mtfleet.core.errors import ConfigError
from mtfleet.fleet.capacity import Workload, parse_duration, plan, poisson_quantile
from mtfleet.fleet.gpucost import PRESETS, CostParams, derive, steady_rate

NIGHTLY = Workload(interactive_rps=200, nightly_segments=50_000_000, window_s=8 * 3600)


def test_the_reference_gpu_and_model_are_the_benchmarks_preset() -> None:
    ref = derive("h200", "hunyuan-mt-7b", "bf16", 1)
    preset = PRESETS["h200-7b"]
    assert (ref.step_fixed_s, ref.per_token_s) == (preset.step_fixed_s, preset.per_token_s)
    fp8 = derive("h200", "hunyuan-mt-7b", "fp8", 1)
    assert fp8.step_fixed_s == pytest.approx(preset.step_fixed_s * 8.0 / 15.0)  # weight bytes
    assert fp8.per_token_s == pytest.approx(preset.per_token_s / 2, rel=0.01)  # FP8 arithmetic
    a100 = derive("a100", "hunyuan-mt-7b", "fp8", 1)  # no FP8 arithmetic: bf16 rate
    assert a100.per_token_s == pytest.approx(preset.per_token_s * 989 / 312)
    tp2 = derive("h200", "hunyuan-mt-7b", "bf16", 2)
    assert tp2.step_fixed_s == pytest.approx(preset.step_fixed_s / (2 * 0.9))


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("l4", "qwen2.5-72b", "bf16", 1), "does not fit"),
        (("h200", "hunyuan-mt-7b", "bf16", 3), "tensor-parallel size 3"),
        (("h300", "hunyuan-mt-7b", "bf16", 1), "unknown GPU 'h300'"),
        (("h200", "hunyuan-mt-7b", "int3", 1), "unknown precision"),
    ],
)
def test_derive_refuses_what_cannot_run(args: tuple[str, str, str, int], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        derive(*args)


def test_steady_rate_is_the_simulated_engines_rate() -> None:
    """The planner steps the same batch logic the simulated GPU sleeps through: at full batch
    they agree, and both fall below the smooth ceiling when a tight step budget makes
    sequences start and finish in waves."""
    tight = CostParams(0.002, 5e-5, 16, 52)  # a budget of about three prompts
    rate = steady_rate(tight, 16, 16)
    assert rate < 0.95 * tight.ceiling(16, 16)
    direct = direct_throughput(tight, [(16, 16)] * 400)  # really sleeps through the steps
    # on the simulated GPU's own clock (busy_s, its steps' modelled seconds), not the wall's: a
    # saturated machine wakes its 2 ms sleeps late (302 requests/s for 463 in one suite run)
    assert direct["completed"] / direct["busy_s"] == pytest.approx(rate, rel=0.1)
    h200 = PRESETS["h200-7b"].with_budget(1.3)
    assert steady_rate(h200, 48, 48) == pytest.approx(h200.ceiling(48, 48), rel=0.02)


def test_the_plan_takes_the_fewest_gpus_and_data_parallel_on_a_tie() -> None:
    result = plan(NIGHTLY, gpu="h200", precision="fp8", gpu_hour_cost=3.5)
    best = result.chosen
    assert best is not None and best.meets
    assert best.gpus == min(o.gpus for o in result.options if o.meets)
    assert best.tp == min(o.tp for o in result.options if o.meets and o.gpus == best.gpus)
    assert best.nightly_hours <= 8 and best.interactive_p95_s <= 0.5
    assert best.cost_per_day == pytest.approx(best.gpus * 24 * 3.5)
    # one group fewer would not finish the volume in the window beside the interactive work
    bulk_groups = 50_000_000 / (best.nightly_hours * 3600 * best.nightly_segments_per_s)
    assert (bulk_groups - 1) * best.nightly_segments_per_s * 8 * 3600 < 50_000_000
    settings = result.settings()
    assert settings["MT_QUANTIZATION"] == "fp8" and int(settings["MT_MAX_SEQS"]) > 0


def test_a_latency_target_one_gpu_cannot_meet_asks_for_tensor_parallel_groups() -> None:
    """A 72B model on A100s: p95 ≤ 500 ms needs the shorter steps of TP 8, whatever the
    number of TP 4 groups (each output token is one step)."""
    w = Workload(interactive_rps=5, nightly_segments=100_000, p95_target_s=0.5)
    result = plan(w, gpu="a100", model="qwen2.5-72b")
    by_tp = {o.tp: o for o in result.options}
    assert set(by_tp) == {4, 8}  # TP 1 and 2 cannot hold the weights
    assert not by_tp[4].meets and "more groups do not help" in by_tp[4].reason
    assert result.chosen is by_tp[8]


def test_more_interactive_load_means_more_groups_or_longer_steps() -> None:
    light = plan(Workload(interactive_rps=10), tp=1).chosen
    heavy = plan(Workload(interactive_rps=2000), tp=1).chosen
    assert light is not None and heavy is not None
    assert heavy.groups > light.groups
    assert heavy.interactive_p95_s >= light.interactive_p95_s


def test_poisson_quantile_and_durations() -> None:
    assert poisson_quantile(1.5) == 4  # P(X <= 3) = 0.934, P(X <= 4) = 0.981
    assert poisson_quantile(0.0) == 0
    assert parse_duration("8h") == 28800 and parse_duration("500ms") == 0.5
    assert parse_duration("90") == 90 and parse_duration("1.5m") == 90
    for bad in ("8x", "-1h", "0s", ""):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_cli_prints_json_and_exits_by_whether_a_plan_meets() -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["plan", "--interactive-rps", "200", "--nightly-segments",
                             "50000000", "--window", "8h", "--gpu", "h200", "--model",
                             "hunyuan-mt-7b", "--quantization", "fp8", "--json"])  # fmt: skip
    assert ok.exit_code == 0, ok.output
    out = json.loads(ok.stdout)
    assert out["chosen"]["meets"] and out["chosen"]["gpus"] >= 1
    assert out["settings"]["MT_TENSOR_PARALLEL_SIZE"] == str(out["chosen"]["tp"])
    assert {o["tp"] for o in out["options"]} == {1, 2, 4, 8}
    table = runner.invoke(app, ["plan", "--interactive-rps", "50", "--gpu-hour-cost", "2"])
    assert table.exit_code == 0 and "plan: " in table.stdout and "cost/day" in table.stdout
    assert "--gpu-hour-cost" not in table.stdout  # the cost columns are filled in
    priceless = runner.invoke(app, ["plan", "--interactive-rps", "50"])
    assert priceless.exit_code == 0 and "give --gpu-hour-cost" in priceless.stdout
    impossible = runner.invoke(app, ["plan", "--interactive-rps", "5", "--p95", "10ms"])
    assert impossible.exit_code == 1 and "no option meets" in impossible.stdout
    for bad, says in (
        (["--window", "8x"], "not a duration"),
        (["--gpu", "h300"], "unknown GPU"),
        (["--step-ms", "3"], "--token-us"),
        (["--tp", "3"], "tensor-parallel size 3"),
    ):
        refused = runner.invoke(app, ["plan", *bad])
        assert refused.exit_code == 2 and says in refused.output, refused.output
    measured = runner.invoke(app, ["plan", "--step-ms", "20", "--token-us", "500", "--max-seqs",
                                   "16", "--max-step-tokens", "2048", "--tp", "1",
                                   "--interactive-rps", "4", "--p95", "2s", "--json"])  # fmt: skip
    engine = json.loads(measured.stdout)["chosen"]["engine"]
    assert (engine["step_fixed_s"], engine["max_num_seqs"]) == (0.02, 16)
    assert math.isclose(engine["per_token_s"], 5e-4)


def test_cli_plan_prints_each_workers_own_command_line() -> None:
    """Each worker (GPU group) the plan chooses gets its own command line with its own GPUs:
    ``--gpus 0`` and ``--gpus 1``, never "2 workers, each --gpus 0"."""
    runner = CliRunner()
    single = runner.invoke(app, ["plan", "--interactive-rps", "200", "--nightly-segments",
                                 "50000000", "--window", "8h", "--gpu", "h200", "--quantization",
                                 "fp8"], env={"COLUMNS": "200"})  # fmt: skip
    assert single.exit_code == 0, single.output
    assert "as 2 worker(s) of TP 1" in single.stdout
    lines = [line.strip() for line in single.stdout.splitlines()]
    assert [line for line in lines if line.startswith("mtfleet worker")] == [
        "mtfleet worker --gpus 0 --tp 1",
        "mtfleet worker --gpus 1 --tp 1",
    ], single.stdout
    assert "each: mtfleet worker" not in single.stdout
    paired = runner.invoke(app, ["plan", "--interactive-rps", "200", "--nightly-segments",
                                 "150000000", "--window", "8h", "--quantization", "fp8",
                                 "--tp", "2", "--json"])  # fmt: skip
    out = json.loads(paired.stdout)
    assert (out["chosen"]["tp"], out["chosen"]["groups"]) == (2, 3)
    assert out["worker_commands"] == [
        "mtfleet worker --gpus 0,1 --tp 2",
        "mtfleet worker --gpus 2,3 --tp 2",
        "mtfleet worker --gpus 4,5 --tp 2",
    ]
    # an unknown GPU is refused (exit 2), naming the ones the planner knows
    unknown = runner.invoke(app, ["plan", "--gpu", "H300"], env={"COLUMNS": "200"})
    assert unknown.exit_code == 2
    assert "unknown GPU 'H300'; known: a100, h100, h200, l4, l40s" in unknown.output
