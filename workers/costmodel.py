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


class BulkGovernor:
    """How many bulk requests a streaming engine may hold while interactive work runs.

    A continuous-batching engine runs every step over all its sequences, so each bulk request
    in flight slows every interactive one a little; past the point where the engine is
    compute-bound, more bulk buys no throughput, only slower steps. The governor watches the
    engine's time per generated token of *interactive* requests, keeps the lowest it has seen
    recently as the baseline, and steers the bulk cap by the gradient: when the recent median
    exceeds ``slowdown`` x baseline the cap shrinks in proportion (at most by half), otherwise
    it grows by at most 6 % (small steps: it hovers near the knee, not far below). Cutting bulk
    lowers the latency, which lowers the baseline until it sits at what the engine does
    unloaded, so the cap settles where interactive work runs at most ``slowdown`` x slower —
    the engine's knee. Without interactive work the cap grows back towards ``ceiling``: a
    bulk-only engine returns to full width. Every ``probe_every_s`` of interactive traffic the
    cap drops to ``floor`` for ``probe_s`` (as BBR probes its minimum RTT), so the baseline is
    learned even on an engine that has never been idle.
    """

    def __init__(
        self,
        *,
        ceiling: int,
        floor: int,
        slowdown: float = 1.3,
        window: int = 8,
        memory_s: float = 120.0,
        probe_every_s: float = 60.0,
        probe_s: float = 2.0,
    ) -> None:
        self.ceiling = max(1, ceiling)
        self.floor = max(1, min(floor, self.ceiling))
        self.slowdown = slowdown
        self.window = window
        self.memory_s = memory_s
        self.cap = self.ceiling
        self._recent: list[float] = []
        self._minima: deque[tuple[float, float]] = deque()  # (time, value), values increasing
        self._last = -math.inf
        self._grown = -math.inf
        self.probe_every_s, self.probe_s = probe_every_s, probe_s
        self._probed = -math.inf
        self._probe_until = -math.inf
        self._saved: int | None = None  # the cap to restore after a probe

    @property
    def baseline(self) -> float | None:
        return self._minima[0][1] if self._minima else None

    def observe(self, now: float, seconds_per_token: float, *, unloaded: bool = False) -> None:
        """One interactive request finished: its engine time per generated token.
        ``unloaded``: no bulk request was in the engine meanwhile (as good as a probe)."""
        if seconds_per_token <= 0 or not math.isfinite(seconds_per_token):
            return
        self._last = now
        if unloaded and self._saved is None:
            self._probed = now  # this sample is a baseline already: no probe needed
        if self._saved is not None and now >= self._probe_until:
            self.cap, self._saved = self._saved, None  # probe over: back to where it was
        elif self._saved is None and now - self._probed >= self.probe_every_s:
            # probe: bulk down to the floor for a moment, so the baseline is what the engine
            # does nearly unloaded even when it has been saturated all along
            self._saved, self.cap = self.cap, self.floor
            self._probed, self._probe_until = now, now + self.probe_s
            self._recent.clear()
        self._recent.append(seconds_per_token)
        if len(self._recent) < self.window:
            return
        median = sorted(self._recent)[len(self._recent) // 2]
        self._recent.clear()
        # the baseline is the lowest window *median* (one lucky request is not a baseline)
        while self._minima and self._minima[-1][1] >= median:
            self._minima.pop()  # a monotonic deque: the minimum is at the front
        self._minima.append((now, median))
        while self._minima[0][0] < now - self.memory_s:
            self._minima.popleft()
        # the gradient: far over the target cuts hard (at most by half), near it moves a little
        if self._saved is not None:
            return  # probing: measure only
        ratio = self._minima[0][1] * self.slowdown / median
        if ratio < 1:
            self.cap = max(self.floor, int(self.cap * max(0.5, ratio)))
        else:
            self.cap = min(self.ceiling, max(self.cap + 1, int(self.cap * min(1.06, ratio))))

    def limit(self, now: float) -> int:
        """The cap now. While no interactive work comes, it grows back 6 % per second of quiet
        (a bulk-only engine returns to full width in half a minute or so, while a short lull does
        not expose the next interactive request to a full engine)."""
        if self._saved is not None:
            if now - self._last < self.probe_s:
                return self.cap  # probing
            self.cap, self._saved = self._saved, None  # interactive work stopped mid-probe
        quiet = now - max(self._last, self._grown)
        if quiet >= 1.0 and self.cap < self.ceiling:
            self.cap = min(self.ceiling, max(self.cap + 1, int(self.cap * 1.06 ** int(quiet))))
            self._grown = now
        return self.cap
