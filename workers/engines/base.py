"""The engine contract: a batch of segments in, a same-length list of translations out.

An engine is loaded once per serving process (``load()``), after any fork. Two kinds exist:

* **batch engines** (``streaming = False``, e.g. Apertium) translate one call at a time:
  ``translate`` may get requests for several language pairs at once and must return one string
  per request, in order; the caller checks the length
  (:class:`core.errors.EngineOutputMismatch`) and isolates failures. The worker's scheduler
  sizes their batches with an online cost model.
* **streaming engines** (``streaming = True``, e.g. vLLM's async engine) batch continuously on
  their own: ``submit`` takes one request at any time, from any thread, with a ``done``
  callback it calls once (from any thread) with the translation or the exception that failed
  it, and returns a handle that ``abort`` takes to stop the request. A callback, not a future:
  a future costs a lock and a condition per request and per look, which at thousands of
  segments a second is most of what the scheduler spends (measured with ``make bench``).
  The scheduler keeps them fed and leaves batching to them. ``translate`` still works
  (:func:`collect`: submit all, wait for all) for callers that want one batch.

Every call has a deadline (:mod:`mtfleet.workers.scheduler`): a batch engine may implement
``interrupt`` to end a call that outlived it, that call alone (the call is named by the very
sequence ``translate`` was given: a call of another lane, or the next one, runs on); ``alive``
tells a hung request from a dead engine. Requests arrive normalised (NFC, no outer
whitespace): engines never see the whitespace around a segment.

``count_tokens`` is what budgets are measured in (the engine's own tokens where it has a
tokenizer, a word-based estimate otherwise).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from mtfleet.core.guidance import Guidance


class TranslationRequest(NamedTuple):
    """One segment for the engine (immutable; a tuple because one is made per segment)."""

    text: str
    source: str
    target: str
    priority: int = 0  # lower runs first (interactive 0, bulk 1); engines may ignore it
    adapter: str | None = None  # a LoRA adapter the engine serves (:meth:`Engine.adapters`)
    # context, instructions, formality for the prompt (core/guidance.py); only an engine that
    # follows instructions is given one
    guidance: Guidance | None = None


class Translation(NamedTuple):
    """An engine's output with what it knows about it (engines may also return plain str)."""

    text: str
    truncated: bool = False  # generation hit its token limit: the text is probably cut off
    tokens_out: int | None = None  # generated tokens, when the engine counts them


@dataclass(frozen=True)
class EngineLimits:
    max_sequences: int  # segments the engine takes in one call
    max_batch_tokens: int  # tokens (input) it takes in one call
    max_input_tokens: int  # longest single segment, in tokens, that still leaves room to answer


#: What a streaming engine calls once per request: its output, or why it failed.
Done = Callable[["str | Translation | BaseException"], None]


def collect(
    engine: Engine, requests: Sequence[TranslationRequest], timeout: float | None = None
) -> list[str | Translation]:
    """A streaming engine's :meth:`Engine.translate`: every request in flight together, the
    outputs in order (the first failure raises)."""
    results: list[str | Translation | BaseException | None] = [None] * len(requests)
    left = [len(requests)]
    lock = threading.Lock()
    finished = threading.Event()
    if not requests:
        return []

    def done_at(i: int) -> Done:
        def done(out: str | Translation | BaseException) -> None:
            with lock:
                if results[i] is None:
                    results[i] = out
                    left[0] -= 1
                    if not left[0]:
                        finished.set()

        return done

    for i, request in enumerate(requests):
        engine.submit(request, done_at(i))
    if not finished.wait(timeout):
        raise TimeoutError(f"engine {engine.name} did not finish in time")
    for out in results:
        if isinstance(out, BaseException):
            raise out
    return results  # type: ignore[return-value]


@lru_cache(maxsize=1 << 14)
def estimate_tokens(text: str) -> int:
    """Subword tokens of a text without a tokenizer: about 4/3 per word, at least one
    (remembered: a segment is counted when it is checked, queued and sent)."""
    return max(1, (len(text.split()) * 4 + 2) // 3)


class Engine(ABC):
    name: str = "engine"
    streaming: bool = False  # True: submit() per request; the engine batches continuously
    #: Batch engines: ``translate`` may run an interactive call (every request priority 0)
    #: while a bulk call runs, on its own instance (Apertium: a pipeline per lane), so
    #: interactive work never waits behind a bulk batch. False: one call at a time.
    parallel_lanes: bool = False
    #: The engine can run once per lane on one host (a CPU engine whose instances hold nothing
    #: one host cannot have twice: Apertium): ``mtfleet worker`` without --gpus then runs each
    #: lane in a worker process of its own by default (``MT_PROCESS_PER_LANE=auto``). Off for
    #: an engine that would load its model once per process.
    lane_processes: bool = False

    @property
    def follows_instructions(self) -> bool:
        """The engine follows instructions in its prompt (an LLM): it takes a request's
        context, custom instructions, style rule and formality (:mod:`mtfleet.core.guidance`)."""
        return False

    @property
    def terms_in_prompt(self) -> bool:
        """A glossary's terms go into the engine's prompt rather than into the text as inline
        tags (:func:`mtfleet.workers.prompts.terms_in_prompt`)."""
        return False

    def preflight(self) -> list[str]:
        """What would make every :meth:`load` fail, found without loading (missing packages,
        programs, model files): one line each saying what to install or fix. ``mtfleet
        worker`` asks before its first start, so a worker that cannot run exits with the
        reason instead of restarting forever."""
        return []

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

    def adapters(self) -> dict[str, str]:
        """LoRA adapters the engine serves beside its base model: name -> the fingerprint of
        the base model with that adapter (a request names one in ``adapter``)."""
        return {}

    def fingerprint_for(self, adapter: str | None) -> str | None:
        """The phrase-cache fingerprint of the base model (``adapter`` None) or of one of its
        adapters; None for an adapter it does not serve."""
        return self.fingerprint if adapter is None else self.adapters().get(adapter)

    @abstractmethod
    def pairs(self) -> list[tuple[str, str]]:
        """Language pairs (our codes) this engine translates."""

    def check(self, request: TranslationRequest) -> str | None:
        """Why this segment cannot be translated (e.g. too long), or None."""
        return None

    def count_tokens(self, request: TranslationRequest) -> int:
        """Input tokens of one request (budgets and the cost model are measured in these)."""
        return estimate_tokens(request.text)

    @abstractmethod
    def translate(self, requests: Sequence[TranslationRequest]) -> Sequence[str | Translation]:
        """One translation per request, same order."""

    def submit(self, request: TranslationRequest, done: Done) -> Any:
        """Streaming engines: start one request now; ``done`` gets its translation (or the
        exception that failed it) once. Returns a handle for :meth:`abort`."""
        raise NotImplementedError(f"engine {self.name} is a batch engine (streaming = False)")

    def abort(self, handle: Any) -> None:  # noqa: B027 - streaming engines implement it
        """Streaming engines: stop a request :meth:`submit` started (its deadline passed, or
        its job was cancelled). ``done`` may still be called for it; callers ignore that."""

    def interrupt(self, call: Sequence[TranslationRequest]) -> None:  # noqa: B027 - optional
        """Batch engines: make the :meth:`translate` call that was given ``call`` (this very
        sequence object) raise soon, if it is still in progress (it outlived its deadline);
        every other call, running beside it or after it, runs on. An engine that cannot leaves
        this out; a call that does not return then makes the worker restart the engine."""

    def alive(self) -> bool:
        """Whether the engine can still serve (a streaming engine's background process or
        thread is up). Asked when a request outlives its deadline."""
        return True

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release processes and memory (worker shutdown)."""
