"""``mtfleet plan``: how many GPUs, in which tensor-parallel groups, for this much work
(:mod:`mtfleet.fleet.capacity`), as a table or JSON."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from mtfleet.core.errors import ConfigError
from mtfleet.fleet.capacity import Option, Plan, Workload, parse_duration, plan
from mtfleet.fleet.gpucost import GPUS, MODELS, PRECISIONS, CostParams

# wide enough for the table in a pipe or a log, which rich would otherwise take as 80 columns
console = Console(soft_wrap=True, width=None if Console().is_terminal else 140)
err_console = Console(stderr=True, soft_wrap=True)


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def _choice(value: str, known: dict[str, Any], what: str) -> str:
    if value not in known:
        raise typer.BadParameter(f"unknown {what} {value!r}; known: {', '.join(sorted(known))}")
    return value


def _ms(seconds: float) -> str:
    return "∞" if math.isinf(seconds) else f"{seconds * 1000:,.0f} ms"


def _money(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def option_json(o: Option) -> dict[str, Any]:
    def finite(x: float) -> float | None:
        return None if math.isinf(x) else round(x, 6)

    return {
        "tp": o.tp,
        "groups": o.groups,
        "gpus": o.gpus,
        "nightly_segments_per_s_per_group": round(o.nightly_segments_per_s, 3),
        "interactive_p95_s": finite(o.interactive_p95_s),
        "interactive_p95_nightly_s": finite(o.interactive_p95_nightly_s),
        "nightly_hours": round(o.nightly_hours, 4),
        "utilisation": round(o.utilisation, 4),
        "meets": o.meets,
        "reason": o.reason or None,
        "cost_per_day": o.cost_per_day,
        "cost_per_million_segments": o.cost_per_million,
        "engine": {k: v for k, v in dataclasses.asdict(o.params).items() if k != "mode"},
    }


def worker_commands(o: Option) -> list[str]:
    """One ``mtfleet worker`` command line per GPU group of ``o``, each with its own GPU ids
    (TP 2: ``--gpus 0,1``, ``--gpus 2,3``, ...)."""
    return [
        f"mtfleet worker --gpus {','.join(str(g * o.tp + i) for i in range(o.tp))} --tp {o.tp}"
        for g in range(o.groups)
    ]


def plan_json(p: Plan) -> dict[str, Any]:
    best = p.chosen
    return {
        "workload": dataclasses.asdict(p.workload),
        "gpu": p.gpu,
        "model": p.model,
        "quantization": p.precision,
        "options": [option_json(o) for o in p.options],
        "chosen": option_json(best) if best is not None else None,
        "settings": p.settings(),
        "worker_commands": worker_commands(best) if best is not None else [],
    }


def show(p: Plan) -> None:
    w = p.workload
    gpu = GPUS[p.gpu].name if p.gpu in GPUS else p.gpu
    model = MODELS[p.model].name if p.model in MODELS else p.model
    console.print(
        f"[bold]{model}[/bold] ({p.precision}) on {gpu}: {w.interactive_rps:g} interactive "
        f"req/s of {w.segments_per_request} × {w.interactive_tokens} tokens, p95 ≤ "
        f"{_ms(w.p95_target_s)}; {w.nightly_segments:,} nightly segments of "
        f"{w.nightly_tokens} tokens in {w.window_s / 3600:g} h"
    )
    table = Table(show_lines=False)
    for name in ("TP", "groups", "GPUs", "bulk seg/s/group", "p95", "p95 nightly",
                 "nightly h", "busy 24h", "cost/day", "cost/1M seg", "meets"):  # fmt: skip
        table.add_column(name, justify="right", no_wrap=True)
    best = p.chosen
    for o in p.options:
        table.add_row(
            str(o.tp),
            str(o.groups),
            str(o.gpus),
            f"{o.nightly_segments_per_s:,.0f}",
            _ms(o.interactive_p95_s),
            _ms(o.interactive_p95_nightly_s) if w.nightly_segments else "-",
            f"{o.nightly_hours:.2f}",
            f"{o.utilisation:.0%}",
            _money(o.cost_per_day),
            _money(o.cost_per_million),
            "[green]yes[/green]" if o.meets else "[red]no[/red]",
            style="bold" if o is best else None,
        )
    console.print(table)
    if p.options and p.options[0].cost_per_day is None:
        console.print("  cost: give --gpu-hour-cost (what one GPU-hour costs you) to fill it in")
    for o in p.options:
        if o.reason:
            console.print(f"  TP {o.tp}: {o.reason}")
    if best is None:
        console.print("[red]no option meets the workload[/red] (see above)")
        return
    console.print(
        f"plan: [bold]{best.gpus} GPU(s)[/bold] as {best.groups} worker(s) of TP {best.tp}; "
        "settings: " + " ".join(f"{k}={v}" for k, v in p.settings().items())
    )
    for command in worker_commands(best):
        console.print(f"  {command}", markup=False, highlight=False)
    if best.groups > 1:
        console.print(
            f"  (or on one host with these {best.gpus} GPUs, one launcher runs them all: mtfleet "
            f"worker --gpus 0-{best.gpus - 1} --tp {best.tp})",
            markup=False,
            highlight=False,
        )


def plan_command(
    interactive_rps: Annotated[
        float, typer.Option(help="Interactive requests per second (POST /v1/translate).")
    ] = 0.0,
    segments_per_request: Annotated[int, typer.Option(help="Segments per request.")] = 4,
    interactive_tokens: Annotated[
        int, typer.Option(help="Source tokens per interactive segment.")
    ] = 24,
    nightly_segments: Annotated[int, typer.Option(help="Segments of nightly (bulk) work.")] = 0,
    nightly_tokens: Annotated[int, typer.Option(help="Source tokens per nightly segment.")] = 48,
    window: Annotated[str, typer.Option(help="Time the nightly work must finish in.")] = "8h",
    p95: Annotated[str, typer.Option(help="Interactive p95 target.")] = "500ms",
    gpu: Annotated[str, typer.Option(help=f"GPU: {', '.join(GPUS)}.")] = "h200",
    model: Annotated[str, typer.Option(help=f"Model: {', '.join(MODELS)}.")] = "hunyuan-mt-7b",
    quantization: Annotated[str, typer.Option(help=f"Weights: {', '.join(PRECISIONS)}.")] = "bf16",
    tp: Annotated[int | None, typer.Option("--tp", help="Only this tensor-parallel size.")] = None,
    slowdown: Annotated[
        float, typer.Option(help="MT_INTERACTIVE_SLOWDOWN the fleet is deployed with.")
    ] = 1.3,
    gpu_hour_cost: Annotated[
        float | None, typer.Option(help="Price of one GPU-hour, for the cost columns.")
    ] = None,
    step_ms: Annotated[
        float | None,
        typer.Option(help="Measured: milliseconds of an idle engine step (the weight read)."),
    ] = None,
    token_us: Annotated[
        float | None,
        typer.Option(help="Measured: microseconds of arithmetic per token in a step."),
    ] = None,
    max_seqs: Annotated[int, typer.Option(help="With --step-ms: the engine's max_num_seqs.")] = 256,
    max_step_tokens: Annotated[
        int, typer.Option(help="With --step-ms: the engine's max_num_batched_tokens.")
    ] = 8192,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """How many GPUs (and tensor-parallel groups) serve an interactive rate within a p95
    target and finish a nightly volume in its window, with utilisation and cost, from the
    step model the benchmarks use (docs/deployment.md#capacity-planning)."""
    _choice(gpu, GPUS, "GPU")
    _choice(model, MODELS, "model")
    _choice(quantization, PRECISIONS, "quantization")
    if (step_ms is None) != (token_us is None):
        raise typer.BadParameter("give --step-ms and --token-us together (measured figures)")
    try:
        workload = Workload(
            interactive_rps=interactive_rps,
            segments_per_request=segments_per_request,
            interactive_tokens=interactive_tokens,
            nightly_segments=nightly_segments,
            nightly_tokens=nightly_tokens,
            window_s=_duration(window),
            p95_target_s=_duration(p95),
        )
        measured = None
        if step_ms is not None and token_us is not None:
            measured = CostParams(
                step_ms / 1000, token_us / 1e6, max_seqs, max_step_tokens, preset="measured"
            )
        result = plan(
            workload,
            gpu=gpu,
            model=model,
            precision=quantization,
            tp=tp,
            slowdown=slowdown,
            gpu_hour_cost=gpu_hour_cost,
            measured=measured,
        )
    except ConfigError as exc:
        err_console.print(f"[red]{exc.message}[/red]")
        raise typer.Exit(2) from None
    if as_json:
        print(json.dumps(plan_json(result), indent=2))
    else:
        show(result)
    if result.chosen is None:
        raise typer.Exit(1)
