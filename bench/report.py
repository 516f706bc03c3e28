"""What a scenario hands back, and the table and JSON file made from all of them.

Targets are reported, never asserted: the machines are shared and noisy, so a missed target is
a figure to look at, not a failed build. Each figure is a ratio or a rate from one run.
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table


@dataclass
class Check:
    """One target: ``value op threshold`` (``op`` is ``>=`` or ``<=``)."""

    name: str
    value: float | None
    op: str
    threshold: float
    unit: str = ""

    @property
    def met(self) -> bool | None:
        if self.value is None or math.isnan(self.value):
            return None
        return self.value >= self.threshold if self.op == ">=" else self.value <= self.threshold

    @property
    def target(self) -> str:
        return f"{self.op} {fmt(self.threshold)}{self.unit}"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "target": self.target, "met": self.met}


@dataclass
class Outcome:
    """A scenario's result: ``figures`` are shown in the table (in order), ``raw`` goes to the
    JSON file only, ``checks`` are the targets."""

    figures: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # parts that could not run


@dataclass
class ScenarioRun:
    name: str
    outcome: Outcome | None
    seconds: float
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        o = self.outcome or Outcome()
        return {
            "seconds": round(self.seconds, 2),
            "error": self.error,
            "figures": o.figures,
            "checks": [c.as_dict() for c in o.checks],
            "raw": o.raw,
            "notes": o.notes,
            "errors": o.errors,
        }

    @property
    def failed(self) -> bool:
        return bool(self.error or self.outcome is None or self.outcome.errors)


def fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isinf(v) or math.isnan(v):
            return str(v)
        a = abs(v)
        if a >= 1000:
            return f"{v:,.0f}"
        if a >= 100:
            return f"{v:.1f}"
        if a >= 1:
            return f"{v:.2f}"
        return f"{v:.3g}"
    return str(v)


def table(runs: list[ScenarioRun]) -> Table:
    t = Table(title="mtfleet benchmarks (one run; ratios, not assertions)", show_lines=False)
    t.add_column("scenario", style="bold")
    t.add_column("figure")
    t.add_column("value", justify="right")
    t.add_column("target", justify="right")
    t.add_column("met?", justify="center")
    for run in runs:
        rows: list[tuple[str, str, str, str]] = []
        if run.error or run.outcome is None:
            last = (run.error or "no result").strip().splitlines()[-1][:70]
            rows.append(("error", f"[red]{last}[/red]", "", ""))
        else:
            rows += [("error", f"[red]{e[:70]}[/red]", "", "") for e in run.outcome.errors]
            rows += [(k, fmt(v), "", "") for k, v in run.outcome.figures.items()]
            for c in run.outcome.checks:
                met = {True: "[green]met[/green]", False: "[red]missed[/red]", None: "?"}[c.met]
                rows.append((c.name, fmt(c.value), c.target, met))
        rows.append(("(seconds)", f"{run.seconds:.0f}", "", ""))
        for i, r in enumerate(rows):
            t.add_row(run.name if i == 0 else "", *r)
        t.add_section()
    return t


def git_commit(root: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def machine(root: Path) -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "git_commit": git_commit(root),
    }
    try:
        import psutil

        info["memory_gib"] = round(psutil.virtual_memory().total / 2**30, 1)
        info["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    except (ImportError, OSError):
        pass
    return info


def write_json(
    path: Path, runs: list[ScenarioRun], *, root: Path, args: dict[str, Any], total_s: float
) -> None:
    data = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "total_seconds": round(total_s, 1),
        "args": args,
        "machine": machine(root),
        "scenarios": {r.name: r.as_dict() for r in runs},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_finite(data), indent=2, default=str, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")


def _finite(o: Any) -> Any:
    """JSON has no inf or NaN: they become null."""
    if isinstance(o, float):
        return None if math.isinf(o) or math.isnan(o) else o
    if isinstance(o, dict):
        return {str(k): _finite(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_finite(v) for v in o]
    return o


def print_table(runs: list[ScenarioRun], console: Console | None = None) -> None:
    (console or Console()).print(table(runs))
