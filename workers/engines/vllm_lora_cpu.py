"""Base-model requests stay base-model requests beside LoRA ones on vLLM's CPU platform.

vLLM marks the tokens of a request that names no adapter with LoRA index ``-1``. Its GPU kernels
skip those tokens; the plain-PyTorch ops its CPU platform uses instead (``bgmv_shrink``,
``bgmv_expand``, ``bgmv_expand_slice``, and the ``sgmv_*`` prefill ops built on them) gather the
adapter weights with that index, and ``-1`` picks the *last* loaded adapter. So on a CPU worker
a plain request that shares an engine step with an adapted one is silently translated with the
adapter (measured on vLLM 0.32: both of two base prompts batched beside adapted copies came back
exactly as the adapted ones). Upstream: vllm-project/vllm#48421 (open when this was written).

mtfleet serves adapters beside the base model, so mixed steps are its normal case, not a corner.
:func:`register` is a vLLM general plugin (entry point ``vllm.general_plugins`` in
pyproject.toml): vLLM runs it in every process it starts — the engine core and its workers
included — before any model runs. It first checks the installed ops on a three-row example; only
if a ``-1`` row is changed does it wrap them so such rows are left exactly as they were (what the
GPU kernels do). On a vLLM whose ops are fixed it changes nothing; GPU platforms never call
these ops.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

#: The ops that take ``(inputs, weights, output, lora_indices, ...)`` and gather by index.
GATHERING_OPS = ("bgmv_shrink", "bgmv_expand", "bgmv_expand_slice")


def leaves_base_rows_alone(bgmv_expand: Callable[..., Any]) -> bool:
    """Whether ``bgmv_expand`` leaves the output row of a ``-1`` (no adapter) token untouched."""
    import torch

    inputs = torch.ones(3, 4)
    weights = torch.ones(1, 1, 2, 4)  # one adapter, stacked as vLLM stacks them
    out = torch.zeros(3, 2)
    bgmv_expand(inputs, weights, out, torch.tensor([0, -1, 0]), True)
    return bool(torch.all(out[1] == 0)) and bool(torch.all(out[0] != 0))


def skipping_base_rows(op: Callable[..., Any]) -> Callable[..., Any]:
    """``op`` with the output rows of ``-1`` tokens restored to what they were before it ran."""

    @functools.wraps(op)
    def wrapped(
        inputs: Any, weights: Any, output: Any, lora_indices: Any, *args: Any, **kwargs: Any
    ) -> Any:
        base = lora_indices < 0
        if not bool(base.any()):
            return op(inputs, weights, output, lora_indices, *args, **kwargs)
        rows = min(base.shape[0], output.shape[0])
        keep = base.new_zeros(output.shape[0])
        keep[:rows] = base[:rows]
        saved = output[keep].clone()
        result = op(inputs, weights, output, lora_indices.clamp(min=0), *args, **kwargs)
        output[keep] = saved
        return result

    wrapped.__mtfleet_skips_base_rows__ = True  # type: ignore[attr-defined]
    return wrapped


def register() -> None:
    """vLLM general plugin: wrap the CPU LoRA ops where they apply an adapter to base tokens.
    Safe to run more than once (vLLM may load plugins several times in one process)."""
    try:
        from vllm.lora.ops import torch_ops
        from vllm.lora.ops.torch_ops import lora_ops
    except ImportError:  # a vLLM without these ops: nothing to mend
        return
    if getattr(lora_ops.bgmv_expand, "__mtfleet_skips_base_rows__", False):
        return
    try:
        if leaves_base_rows_alone(lora_ops.bgmv_expand):
            return
    except Exception:  # ops of another shape: leave vLLM as it is, and say so
        log.warning("could not check vLLM's CPU LoRA ops; left them as they are", exc_info=True)
        return
    modules = [lora_ops, torch_ops]
    try:
        from vllm.lora.punica_wrapper import punica_cpu

        modules.append(punica_cpu)
    except ImportError:
        pass
    for name in GATHERING_OPS:
        original = getattr(lora_ops, name, None)
        if original is None:
            continue
        fixed = skipping_base_rows(original)
        for module in modules:  # the sgmv_* ops call these through lora_ops' globals
            if getattr(module, name, None) is original:
                setattr(module, name, fixed)
    log.info("vLLM's CPU LoRA ops applied adapters to base-model tokens; wrapped to skip them")
