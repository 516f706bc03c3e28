"""The GPU step model that the benchmarks simulate and ``mtfleet plan`` sizes fleets with.

A continuous-batching engine (vLLM) runs every sequence in steps; a step carrying ``t`` tokens
(prefill chunks plus one per decoding sequence) lasts ``max(step_fixed_s, per_token_s × t)``:
bound by reading the weights once (memory) or by the arithmetic on its tokens (compute),
whichever is longer. :class:`CostParams` holds those figures with the engine's limits
(``max_num_seqs``, ``max_num_batched_tokens``) and the steady-state arithmetic on them;
``bench/costengine.py`` sleeps through such steps (a simulated GPU) and
:mod:`mtfleet.fleet.capacity` plans with them.

**Where the figures come from.** The reference is :data:`PRESETS` ``["h200-7b"]``: a ~7B dense
model in bf16 on one H200, 3 ms per step for the weight read (15 GB / 4.8 TB/s) and 15 µs per
token of arithmetic (14 GFLOP per token at ~93 % of the H200's 989 dense bf16 TFLOP/s; the
arithmetic is in ``bench/costengine.py``'s docstring). :func:`derive` scales that reference to
another GPU, model, precision and tensor-parallel size by the hardware's ratios: the weight read
by weight bytes / memory bandwidth, the arithmetic by FLOP per token / peak throughput in the
precision the GPU computes in, both split over a tensor-parallel group at
:data:`TP_EFFICIENCY` (an all-reduce per layer costs time no GPU saves). These are projections
from data sheets, to be checked against a measurement (``make bench`` on the real engine, or
``mtfleet plan --step-ms/--token-us`` with measured figures).
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
import os
from dataclasses import dataclass
from typing import Any

from mtfleet.core.errors import ConfigError

MODES = ("continuous", "batch")


@dataclass(frozen=True)
class CostParams:
    step_fixed_s: float  # one step regardless of batch size (weight reads)
    per_token_s: float  # compute per token processed in a step (prefill or decode)
    max_num_seqs: int  # sequences running at once
    max_num_batched_tokens: int  # tokens per step; prefill is chunked to fit
    out_ratio: float = 1.0  # output tokens = ceil(input tokens × out_ratio), at least 1
    max_model_len: int = 4096
    mode: str = "continuous"
    preset: str = "custom"

    def __post_init__(self) -> None:
        if self.step_fixed_s < 0 or self.per_token_s < 0 or self.out_ratio <= 0:
            raise ConfigError("cost model: times must be >= 0 and out_ratio > 0")
        if not 1 <= self.max_num_seqs <= self.max_num_batched_tokens:
            raise ConfigError("cost model: need 1 <= max_num_seqs <= max_num_batched_tokens")
        if self.max_model_len < 2:
            raise ConfigError("cost model: max_model_len must be at least 2")
        if self.mode not in MODES:
            raise ConfigError(f"cost model: mode must be one of {MODES}, not {self.mode!r}")

    @property
    def free(self) -> bool:
        """Zero cost: requests complete at once, no steps are simulated."""
        return self.step_fixed_s == 0 and self.per_token_s == 0

    def out_tokens(self, in_tokens: int) -> int:
        return max(1, math.ceil(in_tokens * self.out_ratio))

    def step_s(self, tokens: float) -> float:
        """How long a step carrying ``tokens`` lasts."""
        return max(self.step_fixed_s, self.per_token_s * tokens)

    def ceiling(self, in_tokens: int, out_tokens: int) -> float:
        """Requests/s at full batch for uniform requests (steady state of the step model)."""
        tokens = in_tokens + out_tokens - 1
        steps = max(out_tokens / self.max_num_seqs, tokens / self.max_num_batched_tokens)
        per_request_s = max(steps * self.step_fixed_s, tokens * self.per_token_s)
        return math.inf if per_request_s == 0 else 1 / per_request_s

    def step_budget(self, slowdown: float) -> dict[str, str]:
        """The fleet settings that hold each step within ``slowdown`` x an idle one: step
        tokens at the knee times the slowdown, running sequences at most three quarters of
        them (a step keeps room for new prompts)."""
        knee = self.step_fixed_s / self.per_token_s if self.per_token_s else 0.0
        tokens = max(16, math.floor(knee * slowdown))
        return {"MT_MAX_STEP_TOKENS": str(tokens), "MT_MAX_SEQS": str(tokens * 3 // 4)}

    def with_budget(self, slowdown: float) -> CostParams:
        """These figures as a fleet deployed with :meth:`step_budget` runs them (never more
        sequences or step tokens than the engine's own limits)."""
        budget = self.step_budget(slowdown)
        tokens = min(self.max_num_batched_tokens, int(budget["MT_MAX_STEP_TOKENS"]))
        seqs = min(self.max_num_seqs, int(budget["MT_MAX_SEQS"]), tokens)
        return dataclasses.replace(self, max_num_batched_tokens=tokens, max_num_seqs=seqs)

    @classmethod
    def from_env(cls) -> CostParams:
        """The cost-model engine's figures (``bench/costengine.py``): ``MTBENCH_PRESET`` and
        the ``MTBENCH_*`` overrides of its fields."""
        name = os.environ.get("MTBENCH_PRESET", "h200-7b")
        if name not in PRESETS:
            raise ConfigError(f"MTBENCH_PRESET={name!r}: choose one of {sorted(PRESETS)}")
        overrides: dict[str, Any] = {}
        for field, kind in (
            ("step_fixed_s", float),
            ("per_token_s", float),
            ("max_num_seqs", int),
            ("max_num_batched_tokens", int),
            ("out_ratio", float),
            ("mode", str),
        ):
            raw = os.environ.get(f"MTBENCH_{field.upper()}")
            if raw is not None:
                try:
                    overrides[field] = kind(raw)
                except ValueError as exc:
                    raise ConfigError(f"MTBENCH_{field.upper()}={raw!r}: {exc}") from exc
        return dataclasses.replace(PRESETS[name], **overrides)


PRESETS: dict[str, CostParams] = {
    "h200-7b": CostParams(0.003, 15e-6, 256, 8192, 1.0, 4096, preset="h200-7b"),
    "zero": CostParams(0.0, 0.0, 1 << 16, 1 << 24, 1.0, 1 << 20, preset="zero"),
    # A ~0.5B model on a few CPU cores: slow steps, small batches.
    "cpu-small": CostParams(0.02, 5e-4, 16, 2048, 1.0, 2048, preset="cpu-small"),
}


# --- the steps ----------------------------------------------------------------------------------
@dataclass(eq=False)
class EngineSequence:
    """One request in a :class:`StepBatch`."""

    in_tokens: int
    out_tokens: int
    prefilled: int = 0
    emitted: int = 0


@dataclass
class Step:
    """What one step carries: prefill chunks per sequence, decoding sequences, its length."""

    chunks: list[tuple[EngineSequence, int]]
    prefill: int
    decoding: int
    seconds: float


class StepBatch:
    """An engine's waiting and running sequences and how a step moves them (vLLM-like, chunked
    prefill). :meth:`plan` admits waiting sequences, lowest ``priority`` first then arrival
    order, while fewer than ``max_num_seqs`` run and token budget is left; every decoding
    sequence costs one token of the ``max_num_batched_tokens`` budget, prefill fills the rest
    in chunks. :meth:`advance` ends the step: every sequence whose prompt is fully read emits
    one token (the step that finishes a prompt emits the first), so a request costs
    ``in + out - 1`` tokens and, if its prompt fits one step, ``out`` steps in the batch.
    Running sequences are never preempted. Not thread-safe: its driver locks (the simulated
    GPU of ``bench/costengine.py``) or runs it alone (:func:`steady_rate`)."""

    def __init__(self, params: CostParams) -> None:
        self.params = params
        self.waiting: list[tuple[int, int, EngineSequence]] = []
        self.running: list[EngineSequence] = []
        self._order = itertools.count()

    def add(self, seq: EngineSequence, priority: int = 0) -> None:
        heapq.heappush(self.waiting, (priority, next(self._order), seq))

    def remove(self, seq: EngineSequence) -> None:
        self.waiting = [w for w in self.waiting if w[2] is not seq]
        heapq.heapify(self.waiting)
        self.running = [s for s in self.running if s is not seq]

    def plan(self) -> Step:
        p = self.params
        decoding = sum(1 for s in self.running if s.prefilled >= s.in_tokens)
        budget = p.max_num_batched_tokens - decoding
        chunks: list[tuple[EngineSequence, int]] = []
        for seq in self.running:
            if budget > 0 and seq.prefilled < seq.in_tokens:
                take = min(seq.in_tokens - seq.prefilled, budget)
                chunks.append((seq, take))
                budget -= take
        while self.waiting and budget > 0 and len(self.running) < p.max_num_seqs:
            seq = heapq.heappop(self.waiting)[2]
            self.running.append(seq)
            take = min(seq.in_tokens, budget)
            chunks.append((seq, take))
            budget -= take
        prefill = sum(take for _, take in chunks)
        return Step(chunks, prefill, decoding, p.step_s(prefill + decoding))

    def advance(self, step: Step) -> tuple[list[EngineSequence], int]:
        """End ``step``: the sequences it finished, and how many tokens it emitted."""
        decoding = [s for s in self.running if s.prefilled >= s.in_tokens]
        for seq, take in step.chunks:
            seq.prefilled += take
        emitting = decoding + [s for s, _ in step.chunks if s.prefilled >= s.in_tokens]
        done = []
        for seq in emitting:
            seq.emitted += 1
            if seq.emitted >= seq.out_tokens:
                done.append(seq)
        self.running = [s for s in self.running if s.emitted < s.out_tokens]
        return done, len(emitting)


def steady_rate(params: CostParams, in_tokens: int, out_tokens: int, n: int = 0) -> float:
    """Requests/s the step model keeps for uniform requests with work always waiting: ``n``
    of them (enough for many full batches) stepped through without sleeping, the rate between
    10 % and 90 % done (what a long run keeps, without the first batch's start or the last
    one's tail). Lower than :meth:`CostParams.ceiling` where sequences start and finish in
    waves (a step budget of a few prompts)."""
    if params.free:
        return math.inf
    n = n or max(200, 8 * params.max_num_seqs)
    batch = StepBatch(params)
    for _ in range(n):
        batch.add(EngineSequence(in_tokens, out_tokens))
    clock, finished, marks = 0.0, 0, {}
    while batch.waiting or batch.running:
        step = batch.plan()
        clock += step.seconds
        done, _ = batch.advance(step)
        finished += len(done)
        for share in (0.1, 0.9):
            if share not in marks and finished >= share * n:
                marks[share] = (clock, finished)
    (t0, d0), (t1, d1) = marks[0.1], marks[0.9]
    return (d1 - d0) / (t1 - t0) if t1 > t0 else params.ceiling(in_tokens, out_tokens)


# --- hardware ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Gpu:
    """A data sheet's figures (dense, no sparsity)."""

    name: str
    memory_gb: float
    bandwidth_tb_s: float
    bf16_tflops: float
    fp8_tflops: float | None  # None: no FP8 arithmetic (FP8 weights are read, bf16 computed)


@dataclass(frozen=True)
class Model:
    name: str
    flop_per_token_g: float  # 2 × the parameters a token passes through (not the embedding)
    weights_gb: dict[str, float]  # per precision: what the GPUs must hold
    kv_kib_per_token: float  # bf16 KV cache per token (K and V, every layer)
    max_model_len: int = 8192


@dataclass(frozen=True)
class Precision:
    compute: str  # the arithmetic: "bf16" or "fp8" (when the GPU has it)
    vllm: str | None  # MT_QUANTIZATION for a bf16 checkpoint (None: a checkpoint of its own)


GPUS: dict[str, Gpu] = {
    "h200": Gpu("NVIDIA H200 SXM", 141, 4.8, 989, 1979),
    "h100": Gpu("NVIDIA H100 SXM", 80, 3.35, 989, 1979),
    "a100": Gpu("NVIDIA A100 SXM 80GB", 80, 2.039, 312, None),
    "l40s": Gpu("NVIDIA L40S", 48, 0.864, 362, 733),
    "l4": Gpu("NVIDIA L4", 24, 0.3, 121, 242),
}
MODELS: dict[str, Model] = {
    # docs/engines.md: 7.5 B parameters, 0.53 B of them the (tied) embedding
    "hunyuan-mt-7b": Model(
        "tencent/Hunyuan-MT-7B", 14.0, {"bf16": 15.0, "fp8": 8.0, "int4": 4.7}, 128, 8192
    ),
    # a dense 72 B instruction model: 80 layers, 8 KV heads of 128
    "qwen2.5-72b": Model(
        "Qwen/Qwen2.5-72B-Instruct", 140.0, {"bf16": 145.4, "fp8": 73.5, "int4": 41.5}, 320, 8192
    ),
}
PRECISIONS: dict[str, Precision] = {
    "bf16": Precision("bf16", None),
    "fp8": Precision("fp8", "fp8"),
    "int4": Precision("bf16", None),  # AWQ/GPTQ W4A16: 4-bit weights, bf16 arithmetic
}
#: Share of a tensor-parallel group's summed speed a step gets (all-reduces between GPUs).
TP_EFFICIENCY = {1: 1.0, 2: 0.9, 4: 0.8, 8: 0.7}
#: What vLLM leaves for weights and KV cache: MT_GPU_MEMORY_UTILIZATION (0.9) of the GPU less
#: its own overhead (CUDA context, activations, CUDA graphs; docs/engines.md).
MEMORY_SHARE, OVERHEAD_GB = 0.9, 2.0
_REF = ("h200", "hunyuan-mt-7b", "bf16")


def tflops(gpu: Gpu, precision: str) -> float:
    if PRECISIONS[precision].compute == "fp8" and gpu.fp8_tflops is not None:
        return gpu.fp8_tflops
    return gpu.bf16_tflops


def kv_room_gb(gpu: Gpu, model: Model, precision: str, tp: int) -> float:
    """Memory a tensor-parallel group of ``tp`` GPUs has left for KV cache, per GPU (< 0: the
    weights do not fit)."""
    return gpu.memory_gb * MEMORY_SHARE - OVERHEAD_GB - model.weights_gb[precision] / tp


def derive(gpu_name: str, model_name: str, precision: str = "bf16", tp: int = 1) -> CostParams:
    """The step figures of ``model_name`` in ``precision`` on a tensor-parallel group of ``tp``
    ``gpu_name`` GPUs, scaled from the reference (module doc); ``ConfigError`` for a name not
    in the tables, a TP size not in :data:`TP_EFFICIENCY` or weights that do not fit."""
    for name, table in (("GPU", GPUS), ("model", MODELS), ("precision", PRECISIONS)):
        key = {"GPU": gpu_name, "model": model_name, "precision": precision}[name]
        if key not in table:
            raise ConfigError(f"unknown {name} {key!r}; known: {', '.join(sorted(table))}")
    if tp not in TP_EFFICIENCY:
        raise ConfigError(f"tensor-parallel size {tp}: use one of {sorted(TP_EFFICIENCY)}")
    gpu, model = GPUS[gpu_name], MODELS[model_name]
    if kv_room_gb(gpu, model, precision, tp) <= 0:
        raise ConfigError(
            f"{model.name} in {precision} ({model.weights_gb[precision]:.0f} GB) does not fit "
            f"{tp} x {gpu.name} ({gpu.memory_gb:.0f} GB each)"
        )
    ref = PRESETS["h200-7b"]
    ref_gpu, ref_model, _ = GPUS[_REF[0]], MODELS[_REF[1]], _REF[2]
    split = tp * TP_EFFICIENCY[tp]
    read = (model.weights_gb[precision] / ref_model.weights_gb["bf16"]) * (
        ref_gpu.bandwidth_tb_s / gpu.bandwidth_tb_s
    )
    compute = (model.flop_per_token_g / ref_model.flop_per_token_g) * (
        ref_gpu.bf16_tflops / tflops(gpu, precision)
    )
    return dataclasses.replace(
        ref,
        step_fixed_s=ref.step_fixed_s * read / split,
        per_token_s=ref.per_token_s * compute / split,
        max_model_len=model.max_model_len,
        preset=f"{gpu_name}-{model_name}-{precision}-tp{tp}",
    )
