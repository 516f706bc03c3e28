"""Batch planning and the pull window: pure functions the scheduler calls, tested on their own.

* :func:`bulk_token_budget` — how many tokens a batch-engine call may carry: the engine's own
  limit, cut so one call never takes longer than the share of the interactive latency target
  that interactive work may spend waiting behind it (when this worker serves interactive work),
  but never so small that the engine's fixed cost per call dominates.
* :func:`plan_batch` — which buffered items go into the next call: lanes in priority order,
  first in first out inside a lane, within the sequence and token budgets. An item that alone
  exceeds the token budget still runs (alone): the engine checked it fits the model.
* :func:`pull_window` — how many chunks a worker may hold: enough to keep the engine full and
  cover ``pull_ahead_s`` of measured throughput, never more than it can finish well inside the
  broker's visibility timeout, never more than its execution slots.
* :func:`split_by_length` — a call's segments in padded batches for an engine that runs them
  as tensors (the transformers engine): sorted by length, so little of each batch is padding,
  each within a padded-token budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from mtfleet.workers.costmodel import CostModel
from mtfleet.workers.engines.base import EngineLimits


class Sized(Protocol):
    @property
    def tokens(self) -> int: ...


@dataclass(frozen=True)
class BatchPlan:
    take: tuple[int, ...]  # items taken from the front of each lane, lanes in priority order
    tokens: int

    @property
    def size(self) -> int:
        return sum(self.take)


def bulk_token_budget(
    limits: EngineLimits,
    cost: CostModel,
    *,
    latency_target_s: float | None,
    wait_share: float = 0.5,
    min_efficiency: float = 0.8,
) -> int:
    """Token budget of one batch-engine call.

    ``latency_target_s`` is None for a worker that serves no interactive work: then only the
    engine's limit applies. Otherwise a call may last ``wait_share`` of the target — interactive
    work that arrives while it runs waits at most that long — unless that is too small a batch
    to reach ``min_efficiency`` (the fixed cost would eat the engine), which wins.
    """
    cap = limits.max_batch_tokens
    if latency_target_s is None:
        return cap
    by_latency = cost.tokens_within(latency_target_s * wait_share)
    floor = cost.tokens_for_efficiency(min_efficiency)
    return max(1, min(cap, max(by_latency, floor)))


def plan_batch(
    lanes: Sequence[Sequence[Sized]], *, max_sequences: int, max_tokens: int
) -> BatchPlan:
    """The next call's items: a prefix of each lane, higher-priority lanes first."""
    take: list[int] = []
    count = tokens = 0
    blocked = False
    for lane in lanes:
        n = 0
        if not blocked:
            for item in lane:
                if count >= max_sequences:
                    blocked = True
                    break
                if count and tokens + item.tokens > max_tokens:
                    blocked = True  # FIFO: a big item is not overtaken, it goes first next time
                    break
                n += 1
                count += 1
                tokens += item.tokens
        take.append(n)
    return BatchPlan(tuple(take), tokens)


def pull_window(
    *,
    chunk_size: int,
    max_chunks: int,
    keep_full_segments: int,
    rate: float | None,
    pull_ahead_s: float,
    visibility_timeout_s: float,
    hold_share: float = 0.25,
) -> int:
    """Chunks this worker may hold (Celery prefetch count), between 1 and ``max_chunks``.

    ``keep_full_segments`` is what the engine needs buffered to never idle (two batches, or its
    concurrent sequences twice over); ``rate`` is measured segments per second (None before any
    measurement: then only the keep-full term applies). Held work must finish within
    ``hold_share`` of the visibility timeout, or the broker would hand it to a second worker.
    """
    wanted = float(keep_full_segments)
    if rate is not None and rate > 0:
        wanted = max(wanted, rate * pull_ahead_s)
        wanted = min(wanted, rate * visibility_timeout_s * hold_share)
    chunks = math.ceil(wanted / chunk_size) if wanted > 0 else 1
    return max(1, min(max_chunks, chunks))


def split_by_length(
    lengths: Sequence[int], *, max_tokens: int, max_sequences: int
) -> list[list[int]]:
    """Indices into ``lengths`` in batches, shortest segments first: each batch at most
    ``max_sequences`` long and at most ``max_tokens`` once padded (its size x its longest
    length); a segment longer than the budget runs alone."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        # sorted: the newcomer is the batch's longest, so the batch pads to its length
        if current and (
            len(current) >= max_sequences or (len(current) + 1) * lengths[i] > max_tokens
        ):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches
