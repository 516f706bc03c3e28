"""Each API key's bounded share of what an API process holds for requests: event streams and
``?wait=`` requests (:data:`Services.waits`), document processes
(:class:`mtfleet.api.parsing.DocumentPool`).

A key holding its whole share gets 429 with ``Retry-After`` for the next one, so one tenant's
flood is that tenant's problem: another key's requests find the process as they would anyway.
Shares are counted per API process (each process has its own connections and document
processes to protect); without API keys (``MT_AUTH=off``, owner ``''``) nothing is counted.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from mtfleet.core.errors import RateLimited


class KeyShares:
    """At most ``limit`` holds per API key at once (thread-safe: documents are read from the
    thread pool, streams held on the event loop)."""

    def __init__(self, limit: int, what: str, setting: str, retry_after: int = 2) -> None:
        self.limit = limit
        self.what = what  # "event streams and waiting requests", for the refusal
        self.setting = setting
        self.retry_after = retry_after
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}

    def held(self, owner: str) -> int:
        with self._lock:
            return self._held.get(owner, 0)

    def acquire(self, owner: str) -> Release:
        """Take one of ``owner``'s share (RateLimited when it holds all of it); the answer
        gives it back (once, however often it is called)."""
        if owner:
            with self._lock:
                held = self._held.get(owner, 0)
                if held >= self.limit:
                    raise RateLimited(
                        f"this API key already holds {held} {self.what} on this server "
                        f"({self.setting}={self.limit}); retry when one has ended",
                        retry_after=self.retry_after,
                    )
                self._held[owner] = held + 1
        return Release(self, owner)

    @contextlib.contextmanager
    def hold(self, owner: str) -> Iterator[None]:
        release = self.acquire(owner)
        try:
            yield
        finally:
            release()

    def _give_back(self, owner: str) -> None:
        with self._lock:
            left = self._held.get(owner, 0) - 1
            if left > 0:
                self._held[owner] = left
            else:
                self._held.pop(owner, None)


class Release:
    """Gives one hold back, the first time it is called."""

    def __init__(self, shares: KeyShares, owner: str) -> None:
        self._shares: KeyShares | None = shares if owner else None
        self._owner = owner

    def __call__(self) -> None:
        shares, self._shares = self._shares, None
        if shares is not None:
            shares._give_back(self._owner)
