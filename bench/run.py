"""``python -m bench``: run the benchmarks, print a table, write ``bench/results/latest.json``.

    python -m bench                       # every scenario (about 5-10 minutes)
    python -m bench --quick               # smaller sizes, a smoke run (under 3 minutes)
    python -m bench --only cache,overhead --out /tmp/bench.json

Each scenario starts its own fleet (private redis-server, API, one worker) and stops it. Targets
are reported as met or missed with the numbers, never asserted: machines are shared and noisy.
The exit status is 1 only when a scenario (or part of one) could not run.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from bench.baselines import baselines
from bench.cache_hits import cache
from bench.documents import documents_scenario
from bench.efficiency import fleet_efficiency, naive_baseline
from bench.fleet import ROOT
from bench.guidance import guidance_cpu
from bench.interactive import interactive_under_load
from bench.openai_engine import openai_engine
from bench.overhead import overhead
from bench.plan_check import plan_check
from bench.projection import projection
from bench.report import Outcome, ScenarioRun, print_table, write_json
from bench.run_context import Context
from bench.tm import tm_scenario

SCENARIOS: dict[str, Callable[[Context], Outcome]] = {
    "fleet_efficiency": fleet_efficiency,
    "naive_baseline": naive_baseline,
    "baselines": baselines,
    "interactive_under_load": interactive_under_load,
    "overhead": overhead,
    "cache": cache,
    "projection": projection,
    "openai_engine": openai_engine,
    "plan_check": plan_check,
    "documents": documents_scenario,
    "tm": tm_scenario,
    "guidance_cpu": guidance_cpu,
}
DEFAULT_OUT = ROOT / "bench" / "results" / "latest.json"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run the mtfleet benchmarks: a table and bench/results/latest.json.",
    )
    parser.add_argument(
        "--only",
        default="",
        help=f"comma-separated scenarios (default: all): {', '.join(SCENARIOS)}",
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a smoke run")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    parser.add_argument("--seed", type=int, default=0, help="workload seed")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        parser.error(
            f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}"
        )
    args.names = names
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # Piped output (make, CI) gets a table wide enough to read.
    console = Console() if sys.stdout.isatty() else Console(width=120)
    start = time.monotonic()

    def log(msg: str) -> None:
        console.log(f"[dim]{msg}[/dim]")

    ctx = Context(quick=args.quick, seed=args.seed, log=log)
    runs: list[ScenarioRun] = []
    for name in args.names:
        console.rule(name)
        t0 = time.monotonic()
        try:
            outcome = SCENARIOS[name](ctx)
            runs.append(ScenarioRun(name, outcome, time.monotonic() - t0))
        except Exception:  # noqa: BLE001 - one broken scenario must not hide the others
            err = traceback.format_exc()
            console.print(f"[red]{name} failed[/red]\n{err}")
            runs.append(ScenarioRun(name, None, time.monotonic() - t0, error=err))
        log(f"{name}: {time.monotonic() - t0:.0f}s")
    total = time.monotonic() - start
    print_table(runs, console)
    write_json(
        args.out,
        runs,
        root=ROOT,
        args={"only": args.names, "quick": args.quick, "seed": args.seed},
        total_s=total,
    )
    console.print(f"total {total:.0f}s; results in {args.out}")
    return 1 if any(r.failed for r in runs) else 0
