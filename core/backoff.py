"""How long to wait before trying again: every retry in the fleet takes its waits from here.

A :class:`Backoff` is a policy of waits that double from ``first_s`` up to ``max_s``; each
caller states its own in one line, with the jitter its situation asks for:

* ``"full"``: a random wait up to the ceiling. Webhook deliveries: many events can fail
  against one receiver at once, and their retries should reach it spread out, not together.
* ``"equal"``: half the ceiling, plus a random part up to the other half. A client's retries
  of a server that is restarting or overloaded (the SDK, the openai engine): never back at
  once, and callers that failed together do not come back in step.
* ``"none"``: the ceiling itself. A process retrying its own step (a worker restarted by the
  supervisor, a pub/sub listener reconnecting, a chunk that failed waiting aside): there is no
  crowd of callers to spread.

:func:`retry_after_s` reads a server's ``Retry-After`` (delta-seconds or an HTTP date), for
the callers that follow it when it asks for longer than their own wait.
"""

from __future__ import annotations

import email.utils
import random
import re
from dataclasses import dataclass
from datetime import UTC
from typing import Literal

Jitter = Literal["none", "full", "equal"]

# Past 2^62 the ceiling is max_s anyway; the cap keeps 2**n a float multiplication can take.
_MAX_DOUBLINGS = 62
_SECONDS = re.compile(r"\d+(\.\d+)?")


@dataclass(frozen=True)
class Backoff:
    """Waits of ``first_s`` doubling per retry, at most ``max_s``, with ``jitter``."""

    first_s: float
    max_s: float
    jitter: Jitter = "none"

    def wait_s(self, retry: int, rng: random.Random | None = None) -> float:
        """Seconds before retry ``retry`` (0: the first retry after one failure); ``rng``
        draws the jitter (default: the module's generator)."""
        ceiling = min(self.max_s, self.first_s * 2 ** min(max(retry, 0), _MAX_DOUBLINGS))
        draw = rng or random
        if self.jitter == "full":
            return draw.uniform(0, ceiling)
        if self.jitter == "equal":
            return ceiling / 2 + draw.uniform(0, ceiling / 2)
        return ceiling


def retry_after_s(value: str | None, now: float) -> float | None:
    """A ``Retry-After`` header as seconds from ``now`` (epoch seconds): delta-seconds, or an
    HTTP date (one in the past: 0); None when there is none or it reads as neither."""
    if not value:
        return None
    value = value.strip()
    if _SECONDS.fullmatch(value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


#: A Redis pub/sub listener that lost its connection (the job-done listener of
#: :mod:`mtfleet.core.events`, a worker's cancellation listener): 0.1 s doubling to 5 s, back to
#: 0.1 s once it hears again.
RECONNECT = Backoff(first_s=0.1, max_s=5.0)
