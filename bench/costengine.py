"""A cost-model engine for benchmarks: a GPU running an LLM with continuous batching, simulated.

It computes nothing: a background thread *sleeps* through engine steps whose length a cost
model sets, so a benchmark shows the fleet's own overhead and idle gaps without the engine
competing for the CPU. Workers load it as a plugin::

    MT_ENGINE=bench.costengine:CostModelEngine MTBENCH_PRESET=h200-7b

**Step model** (vLLM-like, chunked prefill). Each step admits waiting sequences, lowest
``priority`` first then arrival order, while fewer than ``max_num_seqs`` run and token budget is
left; every decoding sequence costs one token of the ``max_num_batched_tokens`` budget, prefill
fills the rest in chunks. A step lasts ``max(step_fixed_s, per_token_s × tokens)`` (tokens =
prefill tokens plus decoding sequences): the roofline of a GPU step, which is either bound by
reading the weights once (memory) or by the arithmetic on its tokens (compute), whichever is
longer. At its end every sequence whose prompt is fully read emits one token (the step that
finishes a prompt emits the first), so a request costs ``in + out − 1`` tokens and, if its
prompt fits one step, ``out`` steps in the batch. Running sequences are never preempted
(vLLM's priority policy preempts only when KV-cache memory runs out).

The step model's figures and arithmetic (:class:`~mtfleet.fleet.gpucost.CostParams`, the
presets) live in :mod:`mtfleet.fleet.gpucost`, where ``mtfleet plan`` sizes fleets with the
same model; this module is the engine that sleeps through its steps.

**Preset ``h200-7b``**: a ~7B dense model in bf16 on one H200 (4.8 TB/s HBM, ≈989 TFLOP/s
dense bf16).

* Decode at small batch is memory-bound: ≈15 GB of weights / 4.8 TB/s ≈ 3.1 ms per step, so
  ``step_fixed_s = 0.003``.
* Compute is ≈ 2 × 7e9 = 14 GFLOP per token: 14e9 / 989e12 ≈ 14.2 µs per token at peak; at the
  ≈93 % of peak that the project's reference figure implies ("compute-bound at about 257
  requests/s for 128-in/128-out": 257 × 256 tokens × 14 GFLOP ≈ 920 TFLOP/s),
  ``per_token_s = 15e-6``. Published offline runs of 8B models reach ≈ 220 requests/s on an
  H200 (FP8).
* The 128/128 ceiling is then 1 / (255 × 15 µs) ≈ 261 req/s (compute-bound: 256 decoding
  sequences need 3.84 ms of arithmetic per step, more than the 3 ms weight read). One request
  alone takes ≈ 0.39 s (128 steps of 3 ms, ≈ 330 tokens/s); a step with 256 sequences takes
  3.84 ms, so a full engine decodes each sequence 1.28× slower than an idle one.
* ``max_num_seqs = 256``, ``max_num_batched_tokens = 8192``, ``max_model_len = 4096``,
  ``out_ratio = 1.0`` (a translation is about as long as its source).

**The step budget** (``MT_MAX_STEP_TOKENS``, vLLM's ``max_num_batched_tokens``; and
``MT_MAX_SEQS``, its ``max_num_seqs``) replaces the preset's figures when the fleet sets it. A
step of ``t`` tokens lasts ``max(step_fixed_s, t × per_token_s)``: below the knee
``step_fixed_s / per_token_s`` (200 tokens for ``h200-7b``) every step costs the weight read,
above it the arithmetic. Bulk throughput in tokens per second is the same anywhere above the
knee (``1 / per_token_s``), so a budget just above it loses none, while each of an interactive
request's steps lasts at most ``budget × per_token_s`` (3.9 ms at 260 tokens: 1.3× an idle
step) instead of up to 123 ms when 8,192 tokens of bulk prefill share its step.
:meth:`CostParams.step_budget` is that budget for a slowdown; the benchmarks deploy the
fleet with it, as docs/operations.md ("sizing the step") tells an operator to.

Environment: ``MTBENCH_PRESET`` (``h200-7b``, ``zero``, ``cpu-small``), then overrides
``MTBENCH_STEP_FIXED_S``, ``MTBENCH_PER_TOKEN_S``, ``MTBENCH_MAX_NUM_SEQS``,
``MTBENCH_MAX_NUM_BATCHED_TOKENS``, ``MTBENCH_OUT_RATIO`` and ``MTBENCH_MODE`` (``continuous``:
a streaming engine; ``batch``: a batch engine whose calls run one at a time on the same model).
Fault injection (fault tests): ``MTBENCH_CRASH_ON`` / ``MTBENCH_FAIL_ON`` /
``MTBENCH_SLOW_ON`` / ``MTBENCH_HANG_ON`` / ``MTBENCH_STALL_ON``, ``MTBENCH_LOAD_S`` (time to
load) and ``MTBENCH_DOWN_FILE`` (an outage while that file exists), see the engine.
``MTBENCH_PROMPTED=1``: the engine follows instructions as an LLM engine does (a request's
context, instructions, a memory's examples reach it) and builds each request's prompt with
:mod:`mtfleet.workers.prompts`, costing its tokens: the fleet's CPU for guidance, measured.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from mtfleet.core.errors import EngineError, EngineUnavailable
from mtfleet.core.languages import LANGUAGES
from mtfleet.core.settings import EngineSettings
from mtfleet.fleet.gpucost import PRESETS, CostParams, EngineSequence, Step, StepBatch
from mtfleet.workers import prompts
from mtfleet.workers.engines.base import (
    Done,
    Engine,
    EngineLimits,
    Translation,
    TranslationRequest,
    collect,
    estimate_tokens,
)

#: Re-exported: the benchmarks and their tests take the step model from here.
__all__ = ["PRESETS", "CostModelEngine", "CostParams", "SimulatedGPU", "direct_throughput"]

T = TypeVar("T")
_STATS = (
    "busy_s",
    "steps",
    "tokens_in",
    "tokens_out",
    "completed",
    "peak_running",
    "peak_step_tokens",
)


@dataclass(eq=False)
class _Seq(EngineSequence):
    done: Callable[[Any], None] = field(default=lambda _: None)  # once: the result or an error
    result: Any = None


def _ignore(_: Any) -> None:
    pass


def _settle(fut: Future[Any], out: Any) -> None:
    with contextlib.suppress(InvalidStateError):
        if isinstance(out, BaseException):
            fut.set_exception(out)
        else:
            fut.set_result(out)


class SimulatedGPU:
    """The continuous-batching core: one thread stepping through the running sequences."""

    def __init__(self, params: CostParams) -> None:
        self.params = params
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._batch = StepBatch(params)
        self._closed = False
        self.stalled = False  # fault injection: the GPU stops stepping (a hung device)
        self.busy_s = 0.0
        self.steps = self.tokens_in = self.tokens_out = self.completed = self.peak_running = 0
        self.peak_step_tokens = 0  # the most tokens (prefill + decoding) one step carried
        self._thread: threading.Thread | None = None
        if not params.free:
            self._thread = threading.Thread(target=self._loop, name="simulated-gpu", daemon=True)
            self._thread.start()

    def submit(
        self,
        in_tokens: int,
        out_tokens: int,
        result: T,
        priority: int = 0,
        done: Callable[[Any], None] | None = None,
    ) -> _Seq | None:
        """Queue one sequence (thread-safe); ``done(result)`` once it finishes (at once when the
        cost is zero). Returns its handle for :meth:`abort` (None when it finished already)."""
        if in_tokens < 1 or out_tokens < 1:
            raise ValueError("a sequence needs at least one input and one output token")
        with self._cond:
            if self._closed:
                raise EngineUnavailable("simulated GPU is closed")
            if self.params.free:
                self.tokens_in += in_tokens
                self.tokens_out += out_tokens
                self.completed += 1
            else:
                seq = _Seq(in_tokens, out_tokens, done=done or _ignore, result=result)
                self._batch.add(seq, priority)
                self._cond.notify()
                return seq
        if done is not None:
            done(result)
        return None

    def future(self, in_tokens: int, out_tokens: int, result: T, priority: int = 0) -> Future[T]:
        """:meth:`submit` with a future to wait on (benchmarks' direct runs, tests)."""
        fut: Future[T] = Future()
        self.submit(in_tokens, out_tokens, result, priority, partial(_settle, fut))
        return fut

    def abort(self, seq: _Seq | None) -> None:
        """Drop a sequence (waiting or running), as vLLM's abort frees it at the next step."""
        if seq is None:
            return
        with self._cond:
            self._batch.remove(seq)

    def stall(self) -> None:
        with self._cond:
            self.stalled = True

    def stats(self) -> dict[str, float]:
        """busy_s (simulated step time), steps, tokens_in/out, completed, peak_running,
        peak_step_tokens."""
        with self._cond:
            return {k: getattr(self, k) for k in _STATS}

    def close(self) -> None:
        """Stop the thread; sequences not finished fail with EngineUnavailable."""
        with self._cond:
            self._closed = True
            self._stop.set()
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
        batch = self._batch
        pending = [s for _, _, s in batch.waiting] + batch.running
        batch.waiting, batch.running = [], []
        for seq in pending:
            assert isinstance(seq, _Seq)
            seq.done(EngineUnavailable("simulated GPU closed"))

    def _plan(self) -> Step:
        """Admit and schedule one step (lock held)."""
        step = self._batch.plan()
        self.peak_running = max(self.peak_running, len(self._batch.running))
        self.peak_step_tokens = max(self.peak_step_tokens, step.prefill + step.decoding)
        return step

    def _loop(self) -> None:
        deadline: float | None = None  # end of the current step; None while idle
        batch = self._batch
        while True:
            with self._cond:
                while not self._closed and (
                    self.stalled or (not batch.waiting and not batch.running)
                ):
                    deadline = None
                    self._cond.wait()
                if self._closed:
                    return
                step = self._plan()
                if not batch.running:
                    continue  # everything that waited had been cancelled
            # The deadline clock keeps sleep jitter from adding up; when behind, no sleep.
            deadline = (time.monotonic() if deadline is None else deadline) + step.seconds
            delay = deadline - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                return
            with self._cond:
                done, emitted = batch.advance(step)
                self.busy_s += step.seconds
                self.steps += 1
                self.tokens_in += step.prefill
                self.tokens_out += emitted
                self.completed += len(done)
            for seq in done:  # outside the lock: callbacks may submit again
                assert isinstance(seq, _Seq)
                seq.done(seq.result)


def direct_throughput(params: CostParams, requests: Sequence[tuple[int, int]]) -> dict[str, float]:
    """The engine alone with its best batching: every (in, out) request submitted at once."""
    gpu = SimulatedGPU(params)
    try:
        start = time.monotonic()
        futures = [gpu.future(i, o, None) for i, o in requests]
        for f in futures:
            f.result()
        wall_s = time.monotonic() - start
    finally:
        gpu.close()
    rate = len(requests) / wall_s if wall_s > 0 else math.inf
    return {"requests": len(requests), "wall_s": wall_s, "requests_per_s": rate, **gpu.stats()}


class CostModelEngine(Engine):
    """Echoes ``<target> text`` after the time the cost model gives (see the module doc)."""

    name = "costmodel"

    def __init__(self, settings: EngineSettings, params: CostParams | None = None) -> None:
        self.settings = settings
        params = params if params is not None else CostParams.from_env()
        # The fleet's step budget applies here as it does to vLLM (MT_MAX_STEP_TOKENS is its
        # max_num_batched_tokens, MT_MAX_SEQS its max_num_seqs).
        steps: dict[str, Any] = {
            "max_num_batched_tokens": settings.max_step_tokens,
            "max_num_seqs": settings.max_seqs,
        }
        if settings.max_step_tokens and not settings.max_seqs:
            steps["max_num_seqs"] = min(params.max_num_seqs, settings.max_step_tokens)
        self.params = dataclasses.replace(params, **{k: v for k, v in steps.items() if v})
        self.streaming = self.params.mode == "continuous"
        self._gpu: SimulatedGPU | None = None
        p = self.params
        self._limits = EngineLimits(p.max_num_seqs, p.max_num_batched_tokens, p.max_model_len // 2)
        self._batch_lock = threading.Lock()  # batch mode: one call at a time
        # batch mode: the call in progress (the requests it was given; its futures and handles)
        self._call: tuple[Sequence[TranslationRequest] | None, list[tuple[Future[Any], Any]]] = (
            None,
            [],
        )
        # Fault injection for the fault tests: a request whose text contains MTBENCH_CRASH_ON
        # kills the process outright (as a segfault or a CUDA fault would); one containing
        # MTBENCH_FAIL_ON raises for that request alone.
        self.crash_on = os.environ.get("MTBENCH_CRASH_ON") or None
        self.fail_on = os.environ.get("MTBENCH_FAIL_ON") or None
        # MTBENCH_SLOW_ON="text:seconds": a request containing text takes that long (a batch
        # that outlives the broker's visibility timeout).
        slow = os.environ.get("MTBENCH_SLOW_ON") or ""
        self.slow_on, _, slow_s = slow.rpartition(":")
        self.slow_s = float(slow_s) if self.slow_on else 0.0
        # MTBENCH_HANG_ON: a request containing it never finishes (until aborted): one segment
        # that hangs while the engine serves the others. MTBENCH_STALL_ON: a request containing
        # it stops the whole simulated GPU (a hung device: nothing finishes any more).
        self.hang_on = os.environ.get("MTBENCH_HANG_ON") or None
        self.stall_on = os.environ.get("MTBENCH_STALL_ON") or None
        # MTBENCH_LOAD_S: loading takes this long (a model's weights), at boot and at restarts.
        self.load_s = float(os.environ.get("MTBENCH_LOAD_S") or 0)
        # MTBENCH_DOWN_FILE: while this file exists the engine cannot serve (an outage: a
        # server that is away, a device that is lost), then it serves again.
        self.down_file = os.environ.get("MTBENCH_DOWN_FILE") or None
        # MTBENCH_PROMPTED: prompted like an LLM (see the module doc)
        self.prompted = os.environ.get("MTBENCH_PROMPTED", "") not in ("", "0")

    @property
    def follows_instructions(self) -> bool:
        return self.prompted

    def load(self) -> None:
        if self._gpu is None:
            time.sleep(self.load_s)
            self._gpu = SimulatedGPU(self.params)

    @property
    def model(self) -> str:
        return f"costmodel:{self.params.preset}"

    @property
    def fingerprint(self) -> str:
        digest = hashlib.sha256(repr(self.params).encode()).hexdigest()[:16]
        return f"costmodel-{digest}"

    @property
    def limits(self) -> EngineLimits:
        return self._limits

    def pairs(self) -> list[tuple[str, str]]:
        return [(s, t) for s in LANGUAGES for t in LANGUAGES if s != t]

    def count_tokens(self, request: TranslationRequest) -> int:
        if not self.prompted:
            return estimate_tokens(request.text)
        # what the openai engine sends without a tokenizer (the same builder, the same steps)
        turn = prompts.user_turn(
            request.text,
            request.source,
            request.target,
            "chat",
            prompts.COMMON_CONTROL_TOKENS,
            request.guidance,
        )
        return estimate_tokens(turn)

    def check(self, request: TranslationRequest) -> str | None:
        tokens, limit = self.count_tokens(request), self.limits.max_input_tokens
        if tokens > limit:
            return f"segment has {tokens} tokens; the cost-model engine takes at most {limit}"
        return None

    def _start(self, request: TranslationRequest, done: Done) -> Any:
        """Start one request; ``done`` gets its output. Returns its handle for :meth:`abort`."""
        if self._gpu is None:
            raise EngineUnavailable("cost-model engine used before load() or after close()")
        if self.down_file and os.path.exists(self.down_file):
            raise EngineUnavailable(f"simulated outage ({self.down_file} exists)")
        if self.crash_on and self.crash_on in request.text:
            os._exit(70)
        if self.fail_on and self.fail_on in request.text:
            done(RuntimeError(f"injected fault on {self.fail_on!r}"))
            return None
        if self.hang_on and self.hang_on in request.text:
            return object()  # never finishes: only abort() ends it
        if self.stall_on and self.stall_on in request.text:
            self._gpu.stall()
        tokens = self.count_tokens(request)
        out = self.params.out_tokens(tokens)
        result = Translation(f"<{request.target}> {request.text.strip()}", tokens_out=out)
        if self.slow_on and self.slow_on in request.text:
            timer = threading.Timer(self.slow_s, done, args=(result,))
            timer.start()
            return timer
        return self._gpu.submit(tokens, out, result, request.priority, done)

    def submit(self, request: TranslationRequest, done: Done) -> Any:
        if not self.streaming:
            return super().submit(request, done)
        return self._start(request, done)

    def translate(self, requests: Sequence[TranslationRequest]) -> list[Translation]:
        if self.streaming:
            return [
                t if isinstance(t, Translation) else Translation(t) for t in collect(self, requests)
            ]
        with self._batch_lock:  # batch mode: one call at a time, interruptible
            futures: list[Future[Any]] = []
            handles = []
            for r in requests:
                fut: Future[Any] = Future()
                futures.append(fut)
                handles.append(self._start(r, partial(_settle, fut)))
            self._call = (requests, list(zip(futures, handles, strict=True)))
            try:
                return [f.result() for f in futures]
            finally:
                self._call = (None, [])

    def abort(self, handle: Any) -> None:
        if isinstance(handle, threading.Timer):
            handle.cancel()
        elif self._gpu is not None and isinstance(handle, _Seq):
            self._gpu.abort(handle)

    def interrupt(self, call: Sequence[TranslationRequest]) -> None:
        """Batch mode: the call given ``call`` raises, if in progress (its unfinished requests
        are dropped)."""
        running, pending = self._call
        if running is not call:
            return
        for fut, handle in pending:
            if not fut.done():
                self.abort(handle)
                _settle(fut, EngineError("interrupted"))

    def alive(self) -> bool:
        return self._gpu is not None and not self._gpu.stalled

    def stats(self) -> dict[str, float]:
        return self._gpu.stats() if self._gpu is not None else {}

    def close(self) -> None:
        gpu, self._gpu = self._gpu, None
        if gpu is not None:
            gpu.close()
