"""Run one batch through an engine so that one bad segment fails alone.

Pure logic over the engine contract (no Redis): segments that cannot fit are refused before the
call; a batch that raises is split in halves until the failing segment is isolated
(O(log n) extra calls for one bad segment); outer whitespace is kept around each translation;
empty output for non-empty input is a failed segment; output the engine cut off at its token
limit is delivered with a ``truncated`` warning. Neither is ever cached.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from core.errors import EngineError, EngineOutputMismatch, EngineUnavailable, SegmentTooLong
from core.models import SegmentOutcome
from workers.engines.base import Engine, Translation, TranslationRequest

log = logging.getLogger(__name__)

TRUNCATED = {
    "type": "truncated",
    "message": "the engine stopped at its token limit; the translation may be cut off",
}


def _split_outer_space(text: str) -> tuple[str, str, str]:
    core = text.strip()
    if not core:
        return text, "", ""
    start = text.index(core)
    return text[:start], core, text[start + len(core) :]


def translate_isolated(
    engine: Engine, requests: Sequence[TranslationRequest]
) -> list[SegmentOutcome]:
    """One outcome per request, same order; never raises for a segment's own failure."""
    outcomes: list[SegmentOutcome | None] = [None] * len(requests)
    runnable: list[int] = []
    stripped: list[TranslationRequest] = []
    spaces: list[tuple[str, str]] = []
    for i, req in enumerate(requests):
        lead, core, trail = _split_outer_space(req.text)
        spaces.append((lead, trail))
        if not core:
            outcomes[i] = SegmentOutcome(translation=req.text)
            stripped.append(req)
            continue
        core_req = TranslationRequest(core, req.source, req.target, req.priority)
        stripped.append(core_req)
        reason = engine.check(core_req)
        if reason:
            outcomes[i] = SegmentOutcome(error=SegmentTooLong(reason).as_dict())
        else:
            runnable.append(i)

    def run(idxs: list[int]) -> None:
        if not idxs:
            return
        batch = [stripped[i] for i in idxs]
        try:
            texts = engine.translate(batch)
            if len(texts) != len(batch):
                raise EngineOutputMismatch(
                    f"engine {engine.name} returned {len(texts)} outputs for {len(batch)} inputs"
                )
        except EngineUnavailable:
            raise  # nothing can succeed on this engine: the chunk goes back to the queue
        except Exception as exc:  # noqa: BLE001 - isolate, then report per segment
            if len(idxs) == 1:
                err = (
                    exc
                    if isinstance(exc, EngineError)
                    else EngineError(f"{type(exc).__name__}: {exc}")
                )
                log.warning("segment failed in %s: %s", engine.name, err.message)
                outcomes[idxs[0]] = SegmentOutcome(error=err.as_dict())
                return
            mid = len(idxs) // 2
            run(idxs[:mid])
            run(idxs[mid:])
            return
        for i, out in zip(idxs, texts, strict=True):
            text = out.text if isinstance(out, Translation) else out
            warnings = []
            if isinstance(out, Translation) and out.truncated:
                warnings.append(TRUNCATED)
            if not text.strip():
                outcomes[i] = SegmentOutcome(
                    error={"type": "empty_output", "message": "the engine returned no text"}
                )
            else:
                lead, trail = spaces[i]
                outcomes[i] = SegmentOutcome(
                    translation=f"{lead}{text.strip()}{trail}", warnings=warnings
                )

    run(runnable)
    return [
        o if o is not None else SegmentOutcome(error={"type": "internal", "message": "lost"})
        for o in outcomes
    ]
