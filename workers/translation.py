"""Run one batch through an engine so that one bad segment fails alone.

Pure logic over the engine contract (no Redis): a batch that raises is split in halves until the
failing segment is isolated (O(log n) extra calls for one bad segment), and a segment that
wedges the engine is narrowed down within a bounded time (:func:`run_isolated`); empty output for
non-empty input is a failed segment; output the engine cut off at its token
limit is delivered with a ``truncated`` warning, and output carrying markup its source did not
(a tag, an ``on*`` event handler, a ``javascript:`` URL in a tag or a Markdown link:
:mod:`mtfleet.core.markup`, what a model talked into injecting ``<script>`` would produce) with a
``markup_mismatch`` warning, which the checks treat as a failed segment
(:mod:`mtfleet.workers.checks`). Neither is ever cached.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from mtfleet.core.errors import (
    Cancelled,
    EngineError,
    EngineOutputMismatch,
    EngineTimeout,
    EngineUnavailable,
    MTError,
)
from mtfleet.core.markup import markup
from mtfleet.core.models import Finding, SegmentOutcome
from mtfleet.workers.engines.base import Translation, TranslationRequest

log = logging.getLogger(__name__)

TRUNCATED = {
    "type": Finding.truncated.value,
    "message": "the engine stopped at its token limit; the translation may be cut off",
}


MARKUP_MISMATCH = Finding.markup_mismatch.value


def markup_warning(source: str, output: str) -> dict[str, str] | None:
    """A ``markup_mismatch`` warning when the output has markup its source does not (the
    output's markup must be a subset of the source's), else None."""
    extra = markup(output)
    if extra:
        extra -= markup(source)
    if not extra:
        return None
    return {
        "type": MARKUP_MISMATCH,
        "message": "the translation has markup its source does not: " + ", ".join(sorted(extra)),
    }


def seconds(s: float) -> str:
    """A deadline for messages: whole seconds, tenths below ten."""
    return f"{s:.0f}s" if s >= 10 else f"{s:.1f}s"


def outcome_of(out: str | Translation, *, source: str) -> SegmentOutcome:
    """An engine's output for ``source`` as a segment outcome: stripped of outer whitespace
    (the worker puts the submitted text's own back), empty output an error, markup the source
    does not have a warning."""
    text = out.text if isinstance(out, Translation) else out
    stripped = text.strip()
    if not stripped:
        return SegmentOutcome(
            error={"type": Finding.empty_output.value, "message": "the engine returned no text"}
        )
    warnings = [TRUNCATED] if isinstance(out, Translation) and out.truncated else []
    mismatch = markup_warning(source, stripped)
    if mismatch is not None:
        warnings.append(mismatch)
    return SegmentOutcome(translation=stripped, warnings=warnings)


def error_outcome(exc: BaseException) -> SegmentOutcome:
    """A failed segment: our own errors keep their type (``engine_timeout``, ``cancelled``...),
    anything else is an ``engine_error`` naming the exception."""
    err = exc if isinstance(exc, MTError) else EngineError(f"{type(exc).__name__}: {exc}")
    return SegmentOutcome(error=err.as_dict())


#: The shortest time a part of a wedged call may get, as a share of the first call's deadline
#: (:func:`run_isolated`): what a wedged segment costs per halving once the halves are short.
MIN_PART_SHARE = 1 / 16


def run_isolated(
    name: str,
    call: Callable[[Sequence[TranslationRequest], float], Sequence[str | Translation]],
    requests: Sequence[TranslationRequest],
    *,
    deadline_of: Callable[[Sequence[TranslationRequest]], float],
    factor: float = 10.0,
    on_result: Callable[[int, str | Translation | SegmentOutcome], None] | None = None,
    waiting: Callable[[int], bool] | None = None,
) -> list[str | Translation | SegmentOutcome]:
    """One output of engine ``name`` per request, or the failed outcome of a request that broke
    its batch. ``call(batch, limit_s)`` is one engine call that raises
    :class:`EngineTimeout` once it outlives ``limit_s``; ``deadline_of(batch)`` is a call's own
    deadline (:class:`~mtfleet.workers.scheduler.Deadlines`); ``factor`` the deadlines' factor;
    ``on_result(index, result)`` is told each request's result as soon as it is known (while a
    wedged call is narrowed down, what the other calls finished need not wait for it);
    ``waiting(index)`` says whether anyone still waits for a request's result (None: always).

    Raises :class:`EngineUnavailable` (nothing can succeed on this engine). A call that raises
    anything else is split in halves, both halves are tried, and a half that fails is split
    again, until the failing request is alone and fails alone.

    A call that *timed out* holds a request that wedges the engine (or the engine is slow).
    Were each half given a full deadline again, one wedged request among n would cost
    log2(n) + 1 deadlines. So the halves of a timed-out call get half its time, and so on down
    (a part without the wedge needs far less than its share of a call that never returned),
    never more than a part's own deadline, never less than ``MIN_PART_SHARE`` of the first
    call's deadline nor ``factor`` x what a call of the part's size took meanwhile (the
    quickest call at least as big that returned: measured just now, on this engine). One
    wedged request among n then costs at most (2 + log2(n) / 16) first deadlines plus the
    other calls' own time (while a call takes under a sixteenth of a deadline / ``factor``):
    within three for any batch an engine takes, the rest translated. If *both* halves of a
    timed-out call time out, it held no single wedge (a slow engine, or several): their parts
    get their own full deadlines again (``deadline_of``), as every call does.

    No call is made for requests no one waits for any more (their chunk was cancelled or ran
    out of its budget, their job was cancelled: ``waiting``): a part is tried with the
    requests still waited for only, and not at all when none is; the others get a
    ``cancelled`` outcome. So a slow engine's bisection ends when its waiters give up, not
    after 2n - 1 calls that each time out.
    """
    results: list[str | Translation | SegmentOutcome | None] = [None] * len(requests)
    succeeded: list[tuple[int, float]] = []  # (size, seconds) of the calls that returned

    def measured(size: int) -> float:
        """What a call of ``size`` takes, by the quickest call at least as big that returned
        (the longest of all when none is)."""
        bigger = [t for n, t in succeeded if n >= size]
        return min(bigger) if bigger else max((t for _, t in succeeded), default=0.0)

    def gone(i: int) -> None:
        """No one waits for request ``i``: it is not sent again."""
        outcome = error_outcome(Cancelled("no one waits for this segment any more"))
        results[i] = outcome
        if on_result is not None:
            on_result(i, outcome)

    def attempt(idxs: list[int], limit: float) -> Exception | None:
        if waiting is not None:
            for i in idxs:
                if not waiting(i):
                    gone(i)
            idxs = [i for i in idxs if results[i] is None]
            if not idxs:
                return None
        batch = [requests[i] for i in idxs]
        t0 = time.monotonic()
        try:
            texts = call(batch, limit)
            if len(texts) != len(batch):
                raise EngineOutputMismatch(
                    f"engine {name} returned {len(texts)} outputs for {len(batch)} inputs"
                )
        except EngineUnavailable:
            raise  # nothing can succeed on this engine: the chunk goes back to the queue
        except Exception as exc:  # noqa: BLE001 - isolate, then report per segment
            return exc
        succeeded.append((len(idxs), time.monotonic() - t0))
        for i, out in zip(idxs, texts, strict=True):
            results[i] = out
            if on_result is not None:
                on_result(i, out)
        return None

    first_limit = 0.0

    def part_limit(part: list[int], parent: float, narrowing: bool) -> float:
        own = deadline_of([requests[i] for i in part])
        if not narrowing:
            return own
        floor = max(first_limit * MIN_PART_SHARE, factor * measured(len(part)))
        return min(own, max(parent / 2, floor))

    def settle(idxs: list[int], limit: float, exc: Exception, slow: bool) -> None:
        """The call over ``idxs`` failed with ``exc`` within ``limit``; ``slow``: two halves
        of one call timed out on the way here (no single wedge)."""
        idxs = [i for i in idxs if results[i] is None]  # those no one waits for are settled
        if not idxs:
            return
        timed_out = isinstance(exc, EngineTimeout)
        if len(idxs) == 1:
            if timed_out and len(requests) > 1:
                exc = EngineTimeout(
                    f"the engine did not finish within {seconds(limit)} on this segment "
                    f"alone, after a call of {len(requests)} segments holding it outlived its "
                    f"{seconds(first_limit)} deadline"
                )
            outcome = error_outcome(exc)
            log.warning("segment failed in %s: %s", name, outcome.error)
            results[idxs[0]] = outcome
            if on_result is not None:
                on_result(idxs[0], outcome)
            return
        mid = len(idxs) // 2
        narrowing = timed_out and not slow
        tried = []
        for part in (idxs[:mid], idxs[mid:]):
            part_lim = part_limit(part, limit, narrowing)
            tried.append((part, part_lim, attempt(part, part_lim)))
        if narrowing and all(isinstance(e, EngineTimeout) for _, _, e in tried):
            slow = True  # both halves: no single wedge; full deadlines from here
        for part, part_lim, failure in tried:
            if failure is not None:
                settle(part, part_lim, failure, slow)

    everything = list(range(len(requests)))
    if everything:
        first_limit = deadline_of(requests)
        failure = attempt(everything, first_limit)
        if failure is not None:
            settle(everything, first_limit, failure, False)
    lost = SegmentOutcome(error={"type": "internal", "message": "lost"})
    for i, r in enumerate(results):
        if r is None:
            results[i] = lost
            if on_result is not None:
                on_result(i, lost)
    return results  # type: ignore[return-value]  # every slot is set now
