"""The engine contract: a batch of segments in, a same-length list of translations out.

An engine is loaded once per serving process (``load()``), after any fork. ``translate`` may get
requests for several language pairs at once and must return one string per request, in order;
the caller checks the length (:class:`core.errors.EngineOutputMismatch`) and isolates failures.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TranslationRequest:
    text: str
    source: str
    target: str
    priority: int = 0  # lower runs first (interactive 0, bulk 1); engines may ignore it


@dataclass(frozen=True)
class Translation:
    """An engine's output with what it knows about it (engines may also return plain str)."""

    text: str
    truncated: bool = False  # generation hit its token limit: the text is probably cut off


@dataclass(frozen=True)
class EngineLimits:
    max_sequences: int  # segments the engine takes in one call
    max_batch_tokens: int  # tokens (input) it takes in one call
    max_input_tokens: int  # longest single segment, in tokens, that still leaves room to answer


class Engine(ABC):
    name: str = "engine"

    @abstractmethod
    def load(self) -> None:
        """Load weights / start helper processes. Called once, in the serving process."""

    @property
    @abstractmethod
    def model(self) -> str:
        """Human-readable model name (for the registry and metrics)."""

    @property
    @abstractmethod
    def fingerprint(self) -> str:
        """Identity of everything that shapes the output (phrase-cache key component)."""

    @property
    @abstractmethod
    def limits(self) -> EngineLimits: ...

    @abstractmethod
    def pairs(self) -> list[tuple[str, str]]:
        """Language pairs (our codes) this engine translates."""

    def check(self, request: TranslationRequest) -> str | None:
        """Why this segment cannot be translated (e.g. too long), or None."""
        return None

    @abstractmethod
    def translate(self, requests: Sequence[TranslationRequest]) -> Sequence[str | Translation]:
        """One translation per request, same order."""

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release processes and memory (worker shutdown)."""
