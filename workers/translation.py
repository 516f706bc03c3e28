"""Run one batch through an engine so that one bad segment fails alone.

Pure logic over the engine contract (no Redis): a batch that raises is split in halves until the
failing segment is isolated (O(log n) extra calls for one bad segment); empty output for
non-empty input is a failed segment; output the engine cut off at its token
limit is delivered with a ``truncated`` warning, and output carrying markup its source did not
(a tag, an ``on*`` event handler, a ``javascript:`` URL in a tag or a Markdown link:
:mod:`mtfleet.core.markup`, what a model talked into injecting ``<script>`` would produce) with a
``markup_mismatch`` warning, which the checks treat as a failed segment
(:mod:`mtfleet.workers.checks`). Neither is ever cached.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from mtfleet.core.errors import EngineError, EngineOutputMismatch, EngineUnavailable, MTError
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


def run_isolated(
    name: str,
    call: Callable[[Sequence[TranslationRequest]], Sequence[str | Translation]],
    requests: Sequence[TranslationRequest],
) -> list[str | Translation | SegmentOutcome]:
    """One output of engine ``name`` (``call``: one engine call) per request, or the failed
    outcome of a request that broke its batch.

    Raises :class:`EngineUnavailable` (nothing can succeed on this engine). A batch that raises
    anything else is split in halves until the failing request is alone.
    """
    results: list[str | Translation | SegmentOutcome | None] = [None] * len(requests)

    def run(idxs: list[int]) -> None:
        if not idxs:
            return
        batch = [requests[i] for i in idxs]
        try:
            texts = call(batch)
            if len(texts) != len(batch):
                raise EngineOutputMismatch(
                    f"engine {name} returned {len(texts)} outputs for {len(batch)} inputs"
                )
        except EngineUnavailable:
            raise  # nothing can succeed on this engine: the chunk goes back to the queue
        except Exception as exc:  # noqa: BLE001 - isolate, then report per segment
            if len(idxs) == 1:
                outcome = error_outcome(exc)
                log.warning("segment failed in %s: %s", name, outcome.error)
                results[idxs[0]] = outcome
                return
            mid = len(idxs) // 2
            run(idxs[:mid])
            run(idxs[mid:])
            return
        for i, out in zip(idxs, texts, strict=True):
            results[i] = out

    run(list(range(len(requests))))
    return [
        r if r is not None else SegmentOutcome(error={"type": "internal", "message": "lost"})
        for r in results
    ]
