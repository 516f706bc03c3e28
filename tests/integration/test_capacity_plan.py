"""``mtfleet plan`` against a fleet measured on this machine: the plan for the cost-model
engine's figures (``--step-ms 20 --token-us 500``: the ``cpu-small`` preset) and a small
workload, then a one-worker fleet deployed with the plan's settings (``bench/plan_check.py``,
which ``make bench`` also runs). The nightly rate and the interactive p95 it measures, idle and
under a bulk backlog, are within 15 % of the plan's. Timing on two shared cores: ``make soak``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.plan_check import RATE_PER_S, SEGMENTS_PER_REQUEST, measure, workload

NIGHTLY = 800
WINDOW_S = 15.0


@pytest.mark.soak
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_plan_predicts_the_measured_rate_and_both_p95s_within_15_percent() -> None:
    w = workload(NIGHTLY)
    args = [
        "plan", "--step-ms", "20", "--token-us", "500", "--max-seqs", "16",
        "--max-step-tokens", "2048", "--tp", "1",
        "--interactive-rps", str(RATE_PER_S), "--segments-per-request", str(SEGMENTS_PER_REQUEST),
        "--interactive-tokens", str(w.interactive_tokens), "--nightly-segments", str(NIGHTLY),
        "--nightly-tokens", str(w.nightly_tokens), "--window", "1h", "--p95", "2s", "--json",
    ]  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "mtfleet", *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    planned = json.loads(proc.stdout)
    best = planned["chosen"]
    assert best["groups"] == 1, planned["options"]
    got = measure(planned["settings"], NIGHTLY, WINDOW_S)
    assert got.interactive_under_bulk is not None
    rate = got.nightly_segments_per_s / best["nightly_segments_per_s_per_group"]
    p95 = got.interactive["p95_ms"] / 1000 / best["interactive_p95_s"]
    p95_bulk = got.interactive_under_bulk["p95_ms"] / 1000 / best["interactive_p95_nightly_s"]
    print(
        f"\nnightly seg/s planned {best['nightly_segments_per_s_per_group']:.1f}, measured "
        f"{got.nightly_segments_per_s:.1f} ({rate:.2f}); interactive p95 planned "
        f"{best['interactive_p95_s'] * 1000:.0f} ms, measured {got.interactive['p95_ms']:.0f} ms "
        f"({p95:.2f}); under bulk planned {best['interactive_p95_nightly_s'] * 1000:.0f} ms, "
        f"measured {got.interactive_under_bulk['p95_ms']:.0f} ms ({p95_bulk:.2f})"
    )
    assert 0.85 <= rate <= 1.15
    assert 0.85 <= p95 <= 1.15
    assert 0.85 <= p95_bulk <= 1.15
