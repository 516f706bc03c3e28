"""Capacity planning (``mtfleet plan``): how many GPUs, in which tensor-parallel groups, serve an
interactive request rate within a p95 target and finish a nightly volume within its window.

The engine is the step model of :mod:`mtfleet.fleet.gpucost` (the one the benchmarks simulate),
deployed as docs/operations.md says ("sizing the step": step tokens at the knee × the
interactive slowdown), and the fleet around it adds what ``make bench`` measured:
:data:`FLEET_EFFICIENCY` of the engine's bulk rate and :data:`OVERHEAD_P95_S` on an interactive
request. For each tensor-parallel size that fits, the smallest number of groups is found for
which

* **the nightly volume finishes in the window** while the interactive traffic goes on: a group
  finishes bulk segments at the rate the step model keeps with work always waiting
  (:func:`~mtfleet.fleet.gpucost.steady_rate` × the fleet's efficiency), less the share the
  interactive segments take;
* **the interactive p95 meets the target**, both on a fleet without bulk work (its requests
  share the steps with each other: the step time and the requests in flight are solved
  together, Little's law) and while the nightly volume runs (every step then carries the full
  step budget, and a request waits up to one step to join).

The option with the fewest GPUs wins (then the smaller TP size). Every figure is a projection
from data sheets unless the step figures are given (``step_s``, ``token_s``: measured on the
real engine, or the cost-model engine's): ``tests/integration/test_capacity_plan.py`` checks
the predictions against a fleet measured on this machine.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field

from mtfleet.core.errors import ConfigError
from mtfleet.fleet.gpucost import (
    GPUS,
    MODELS,
    PRECISIONS,
    TP_EFFICIENCY,
    CostParams,
    derive,
    kv_room_gb,
    steady_rate,
)

#: Bulk segments the fleet finishes per second, as a share of its engine alone (make bench:
#: fleet efficiency 0.96-0.97 on the cost model, projection 0.98).
FLEET_EFFICIENCY = 0.96
#: The fleet's own time in an interactive request's p95 (HTTP, Redis, the broker, the worker's
#: pickup and record, the answer): a zero-cost engine's p95 on a 2-core machine (~35 ms).
OVERHEAD_P95_S = 0.035
#: Tokens of prompt template around each segment (Hunyuan-MT's instruction): KV memory only.
PROMPT_TOKENS = 40
#: Most groups looked at per TP size.
MAX_GROUPS = 4096
DAY_S = 86400.0

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": DAY_S}


def parse_duration(text: str) -> float:
    """``"8h"``, ``"30m"``, ``"500ms"``, ``"2.5s"`` or plain seconds -> seconds (> 0)."""
    m = _DURATION.match(text)
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"{text!r} is not a duration like 8h, 30m, 90s or 500ms")
    return float(m.group(1)) * _UNIT_S[m.group(2) or "s"]


@dataclass(frozen=True)
class Workload:
    interactive_rps: float = 0.0  # requests per second (POST /v1/translate, small jobs)
    segments_per_request: int = 4
    interactive_tokens: int = 24  # source tokens per interactive segment
    nightly_segments: int = 0
    nightly_tokens: int = 48  # source tokens per nightly segment
    window_s: float = 8 * 3600.0
    p95_target_s: float = 0.5

    def __post_init__(self) -> None:
        if self.interactive_rps < 0 or self.nightly_segments < 0:
            raise ConfigError("rates and volumes must be >= 0")
        if min(self.segments_per_request, self.interactive_tokens, self.nightly_tokens) < 1:
            raise ConfigError("segments per request and tokens per segment must be >= 1")
        if self.window_s <= 0 or self.p95_target_s <= 0:
            raise ConfigError("the window and the p95 target must be > 0")

    @property
    def interactive_segments_per_s(self) -> float:
        return self.interactive_rps * self.segments_per_request


@dataclass
class Option:
    """One tensor-parallel size, with the fewest groups that meet the workload (or the reason
    none do)."""

    tp: int
    groups: int
    params: CostParams  # as deployed (the step budget applied)
    nightly_segments_per_s: float  # one group, bulk alone, through the fleet
    interactive_p95_s: float  # no bulk running
    interactive_p95_nightly_s: float  # while the nightly volume runs
    nightly_hours: float  # the nightly volume, beside the interactive traffic
    utilisation: float  # GPU-busy share over a day
    meets: bool
    reason: str = ""
    cost_per_day: float | None = None
    cost_per_million: float | None = None

    @property
    def gpus(self) -> int:
        return self.groups * self.tp


@dataclass
class Plan:
    workload: Workload
    gpu: str
    model: str
    precision: str
    slowdown: float
    options: list[Option] = field(default_factory=list)

    @property
    def chosen(self) -> Option | None:
        meeting = [o for o in self.options if o.meets]
        return min(meeting, key=lambda o: (o.gpus, o.tp)) if meeting else None

    def settings(self) -> dict[str, str]:
        """What to deploy the chosen option with."""
        best = self.chosen
        if best is None:
            return {}
        p = best.params
        out = {
            "MT_MAX_STEP_TOKENS": str(p.max_num_batched_tokens),
            "MT_MAX_SEQS": str(p.max_num_seqs),
            "MT_TENSOR_PARALLEL_SIZE": str(best.tp),
            "MT_INTERACTIVE_SLOWDOWN": str(self.slowdown),
        }
        quantization = PRECISIONS[self.precision].vllm if self.precision in PRECISIONS else None
        if quantization:
            out["MT_QUANTIZATION"] = quantization
        return out


def poisson_quantile(mean: float, q: float = 0.95) -> int:
    """The smallest ``k`` with P(X <= k) >= ``q`` for X ~ Poisson(``mean``)."""
    k, term = 0, math.exp(-mean)
    total = term
    while total < q and k < 10_000:
        k += 1
        term *= mean / k
        total += term
    return k


def interactive_p95(params: CostParams, w: Workload, groups: int) -> float:
    """The p95 of an interactive request on a fleet without bulk work: the fleet's overhead,
    its own prefill and one step per output token (steps lengthened by the segments of other
    requests in flight), the prefills of the requests that arrive meanwhile (as many as 95 %
    of such stretches see), and the wait to join a step already running."""
    lam = w.interactive_rps / groups  # requests per second reaching one group
    seg, tin = w.segments_per_request, w.interactive_tokens
    tout = params.out_tokens(tin)
    budget = params.max_num_batched_tokens
    prefill_steps = max(1, math.ceil(seg * tin / budget))
    step = first = params.step_fixed_s
    engine = prefill_steps * first + (tout - 1) * step
    others = 0.0
    for _ in range(60):  # the step time and the work in flight, solved together
        others = lam * seg * engine  # segments of other requests in flight (Little's law)
        first = params.step_s(min(budget, seg * tin + others))
        step = params.step_s(min(budget, others + seg))
        engine = prefill_steps * first + (tout - 1) * step
    if others + seg > params.max_num_seqs:
        return math.inf  # more sequences than a group runs: requests queue without bound
    arrivals = poisson_quantile(lam * engine)  # requests whose prefill lands in our steps
    burst = arrivals * prefill_steps * (first - step)
    busy = 1 - math.exp(-lam * engine)  # someone else's step is running when it arrives
    wait = step * (1 - 0.05 / busy) if busy > 0.05 else 0.0
    return OVERHEAD_P95_S + engine + burst + wait


def interactive_p95_under_bulk(params: CostParams, w: Workload) -> float:
    """The p95 of an interactive request while bulk work fills every step's budget and every
    sequence slot: it waits to join a step, for its segments' slots (bulk sequences finish
    at ``max_num_seqs / their output tokens`` per step; running ones are never preempted),
    then prefills and decodes one token per step."""
    step = params.step_s(params.max_num_batched_tokens)
    seg, tin = w.segments_per_request, w.interactive_tokens
    bulk_out = params.out_tokens(w.nightly_tokens)
    slot_steps = seg * bulk_out / params.max_num_seqs
    prefill_steps = max(1, math.ceil(seg * tin / params.max_num_batched_tokens))
    tout = params.out_tokens(tin)
    return OVERHEAD_P95_S + (0.95 + slot_steps + prefill_steps + tout - 1) * step


def option(params: CostParams, tp: int, w: Workload, gpu_hour_cost: float | None = None) -> Option:
    """The fewest groups of ``params`` (one TP group each) that meet ``w``."""
    bulk_rate = steady_rate(params, w.nightly_tokens, params.out_tokens(w.nightly_tokens))
    group_rate = bulk_rate * FLEET_EFFICIENCY
    interactive_rate = steady_rate(
        params, w.interactive_tokens, params.out_tokens(w.interactive_tokens)
    )
    # share of one group the interactive segments keep busy, in all
    interactive_load = w.interactive_segments_per_s / (interactive_rate * FLEET_EFFICIENCY)
    nightly_load = w.nightly_segments / w.window_s / group_rate
    under_bulk = interactive_p95_under_bulk(params, w) if w.nightly_segments else 0.0
    start = max(1, math.ceil(interactive_load + nightly_load - 1e-9))
    reason = ""
    groups = start
    while True:
        p95 = interactive_p95(params, w, groups) if w.interactive_rps else 0.0
        left = groups - interactive_load  # groups' worth of capacity bulk work gets
        hours = w.nightly_segments / (left * group_rate) / 3600 if w.nightly_segments else 0.0
        if w.nightly_segments and under_bulk > w.p95_target_s:
            reason = (
                f"interactive p95 while the nightly volume runs is {under_bulk * 1000:.0f} ms "
                "(one step per output token at the full step budget): more groups do not help"
            )
            break
        if p95 <= w.p95_target_s and hours * 3600 <= w.window_s:
            break
        if groups >= MAX_GROUPS:
            reason = f"not met with {MAX_GROUPS} groups"
            break
        groups = groups + 1 if groups < 64 else math.ceil(groups * 1.05)
    busy_s = (w.nightly_segments / group_rate) + interactive_load * DAY_S
    out = Option(
        tp=tp,
        groups=groups,
        params=params,
        nightly_segments_per_s=group_rate,
        interactive_p95_s=p95,
        interactive_p95_nightly_s=under_bulk,
        nightly_hours=hours,
        utilisation=min(1.0, busy_s / (groups * DAY_S)),
        meets=not reason,
        reason=reason,
    )
    if gpu_hour_cost is not None:
        out.cost_per_day = out.gpus * 24 * gpu_hour_cost
        daily = w.nightly_segments + w.interactive_segments_per_s * DAY_S
        out.cost_per_million = out.cost_per_day / (daily / 1e6) if daily else None
    return out


def fitted(
    params: CostParams, model: str, gpu: str, precision: str, tp: int, w: Workload
) -> CostParams:
    """``params`` with no more sequences than the KV cache of one group holds."""
    per_token_kib = MODELS[model].kv_kib_per_token / tp
    tokens = PROMPT_TOKENS + w.nightly_tokens + params.out_tokens(w.nightly_tokens)
    room_kib = kv_room_gb(GPUS[gpu], MODELS[model], precision, tp) * 1e9 / 1024
    seqs = max(1, min(params.max_num_seqs, int(room_kib / (per_token_kib * tokens))))
    return dataclasses.replace(params, max_num_seqs=seqs)


def plan(
    w: Workload,
    *,
    gpu: str = "h200",
    model: str = "hunyuan-mt-7b",
    precision: str = "bf16",
    tp: int | None = None,
    slowdown: float = 1.3,
    gpu_hour_cost: float | None = None,
    measured: CostParams | None = None,
) -> Plan:
    """Every TP size that fits (or ``tp`` alone), each with its fewest groups. ``measured``:
    step figures of one group to plan with instead of the data sheets (``gpu``, ``model`` and
    ``precision`` then only name it)."""
    if slowdown < 1:
        raise ConfigError("the interactive slowdown is at least 1")
    result = Plan(w, gpu, model, precision, slowdown)
    sizes = [tp] if tp is not None else sorted(TP_EFFICIENCY)
    for size in sizes:
        if measured is not None:
            params = measured
        else:
            try:
                params = derive(gpu, model, precision, size)
            except ConfigError:
                if tp is not None:
                    raise
                continue  # does not fit this TP size
            params = fitted(params, model, gpu, precision, size, w)
        result.options.append(option(params.with_budget(slowdown), size, w, gpu_hour_cost))
    return result
