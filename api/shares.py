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
    thread pool, streams held on the event loop).

    With ``queue``, a key holding its whole share may have that many more calls *wait* for
    one of its own holds (up to ``wait_s``, in the calling thread) before the next is refused:
    several files uploaded at once are read one after another, within the key's share, while
    other keys find the rest free."""

    def __init__(
        self,
        limit: int,
        what: str,
        setting: str,
        *,
        retry_after: int = 2,
        queue: int = 0,
        wait_s: float = 0.0,
    ) -> None:
        self.limit = limit
        self.what = what  # "event streams and waiting requests", for the refusal
        self.setting = setting
        self.retry_after = retry_after
        self.queue = queue
        self.wait_s = wait_s
        self._changed = threading.Condition()
        self._held: dict[str, int] = {}
        self._waiting: dict[str, int] = {}

    def held(self, owner: str) -> int:
        with self._changed:
            return self._held.get(owner, 0)

    def acquire(self, owner: str) -> Release:
        """Take one of ``owner``'s share, waiting for one in its queue if it has one
        (RateLimited when it holds all of it and its queue is full, or the wait runs out);
        the answer gives it back (once, however often it is called)."""
        if owner:
            with self._changed:
                if self._held.get(owner, 0) >= self.limit:
                    self._wait(owner)
                self._held[owner] = self._held.get(owner, 0) + 1
        return Release(self, owner)

    def _wait(self, owner: str) -> None:
        waiting = self._waiting.get(owner, 0)
        if waiting < self.queue:
            self._waiting[owner] = waiting + 1
            try:
                if self._changed.wait_for(
                    lambda: self._held.get(owner, 0) < self.limit, timeout=self.wait_s
                ):
                    return
            finally:
                left = self._waiting[owner] - 1
                if left:
                    self._waiting[owner] = left
                else:
                    del self._waiting[owner]
        queued = f", and {waiting} more waiting for them" if self.queue else ""
        raise RateLimited(
            f"this API key already holds {self._held.get(owner, 0)} {self.what} on this "
            f"server{queued} ({self.setting}={self.limit}); retry when one has ended",
            retry_after=self.retry_after,
        )

    @contextlib.contextmanager
    def hold(self, owner: str) -> Iterator[None]:
        release = self.acquire(owner)
        try:
            yield
        finally:
            release()

    def _give_back(self, owner: str) -> None:
        with self._changed:
            left = self._held.get(owner, 0) - 1
            if left > 0:
                self._held[owner] = left
            else:
                self._held.pop(owner, None)
            self._changed.notify_all()


class Release:
    """Gives one hold back, the first time it is called."""

    def __init__(self, shares: KeyShares, owner: str) -> None:
        self._shares: KeyShares | None = shares if owner else None
        self._owner = owner

    def __call__(self) -> None:
        shares, self._shares = self._shares, None
        if shares is not None:
            shares._give_back(self._owner)
