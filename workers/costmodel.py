"""Online cost model of an engine and the throughput a worker achieves: pure code, no I/O.

:class:`CostModel` fits ``seconds = fixed + per_token x tokens`` to observed batches by weighted
least squares with exponential forgetting (old batches fade, so the fit follows a warming or
throttled engine), in the spirit of BentoML's adaptive batcher. It answers the two questions the
scheduler asks of a batch engine: how many tokens fit in a time budget (so a bulk batch never
makes interactive work wait longer than its share of the latency target), and how many tokens a
batch needs before the fixed cost stops mattering.

:class:`ThroughputMeter` is the worker's measured segments per second of engine-busy time; the
pull window follows it.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass


@dataclass
class CostModel:
    fixed_s: float = 0.005  # prior: what an engine call costs before any data
    per_token_s: float = 0.0005
    decay: float = 0.97  # weight of the past per observation (~33 batches of memory)
    min_samples: int = 3  # observations before the fit replaces the prior

    def __post_init__(self) -> None:
        self._sw = self._sx = self._sy = self._sxx = self._sxy = 0.0
        self.samples = 0

    def observe(self, tokens: int, seconds: float) -> None:
        """One engine call: ``tokens`` input tokens took ``seconds`` of wall time."""
        if tokens <= 0 or seconds < 0 or not math.isfinite(seconds):
            return
        d = self.decay
        self._sw = self._sw * d + 1.0
        self._sx = self._sx * d + tokens
        self._sy = self._sy * d + seconds
        self._sxx = self._sxx * d + tokens * tokens
        self._sxy = self._sxy * d + tokens * seconds
        self.samples += 1
        if self.samples >= self.min_samples:
            self._refit()

    def _refit(self) -> None:
        mean_x = self._sx / self._sw
        mean_y = self._sy / self._sw
        var_x = self._sxx / self._sw - mean_x * mean_x
        if var_x > 1e-9 * max(mean_x * mean_x, 1.0):
            slope = (self._sxy / self._sw - mean_x * mean_y) / var_x
            intercept = mean_y - slope * mean_x
        else:  # every batch had the same size: the split between the terms is unknowable
            slope, intercept = mean_y / mean_x, 0.0
        if slope <= 0:  # noise made time fall with size: all cost is fixed
            slope, intercept = 1e-9, mean_y
        elif intercept < 0:  # cannot be negative: refit through the origin
            slope, intercept = self._sxy / self._sxx, 0.0
        self.fixed_s, self.per_token_s = intercept, slope

    def predict(self, tokens: int) -> float:
        return self.fixed_s + self.per_token_s * max(tokens, 0)

    def tokens_within(self, seconds: float) -> int:
        """Most tokens one call can take and still finish within ``seconds`` (at least 1)."""
        room = seconds - self.fixed_s
        if room <= 0:
            return 1
        return max(1, int(room / self.per_token_s + 1e-9))

    def tokens_for_efficiency(self, efficiency: float) -> int:
        """Tokens per call at which per-token work is ``efficiency`` of the call's time."""
        efficiency = min(max(efficiency, 0.0), 0.999)
        if self.fixed_s <= 0:
            return 1
        tokens = efficiency * self.fixed_s / ((1 - efficiency) * self.per_token_s)
        return max(1, math.ceil(tokens - 1e-9))  # 1e-9: float noise must not add a token


class ThroughputMeter:
    """Segments per second of engine-busy time over the last ``horizon_s`` of busy time."""

    def __init__(self, horizon_s: float = 30.0) -> None:
        self.horizon_s = horizon_s
        self._window: deque[tuple[int, float]] = deque()
        self._segments = 0
        self._seconds = 0.0

    def add(self, segments: int, busy_s: float) -> None:
        if segments <= 0 or busy_s <= 0:
            return
        self._window.append((segments, busy_s))
        self._segments += segments
        self._seconds += busy_s
        while len(self._window) > 1 and self._seconds - self._window[0][1] >= self.horizon_s:
            n, s = self._window.popleft()
            self._segments -= n
            self._seconds -= s

    def rate(self) -> float | None:
        """Segments per busy second, or None before anything was measured."""
        if self._seconds <= 0:
            return None
        return self._segments / self._seconds
