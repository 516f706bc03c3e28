"""What a job's translation memory does for the segments of a chunk (:mod:`mtfleet.core.tm`).

For each segment, in order:

1. **served**: a pair whose source is the segment once the segment's placeables (numbers,
   prices, percentages, dates, placeholders, inline tags) are carried over
   (:meth:`mtfleet.core.tm.TMIndex.exact`) is the translation: its stored target with them,
   score 100, whatever the engine;
2. **a near match** (the best other pair scoring at least the job's threshold) is never served
   as stored, since it would change the request's meaning ("over $50" for "over $500"): an
   engine that follows instructions gets it to edit into the segment's translation (a
   fuzzy-match repair, :attr:`mtfleet.core.guidance.Guidance.memory_match`); another engine
   translates the segment, and the outcome names the match and its score (a
   ``memory_fuzzy_match`` warning);
3. **examples**: with no match, an engine that follows instructions gets the ``k`` most
   similar pairs above the floor.
"""

from __future__ import annotations

from typing import Any

from mtfleet.core.guidance import MemoryRef
from mtfleet.core.models import Finding, SegmentOutcome
from mtfleet.core.tm import TMIndex, TMLookup

#: Characters of a stored text a warning quotes.
QUOTED_CHARS = 80


def _quoted(text: str) -> str:
    return repr(text if len(text) <= QUOTED_CHARS else text[: QUOTED_CHARS - 1] + "…")


class ChunkMemory:
    """A job's memory (``ref``, at its version: ``index``) for one chunk's segments."""

    def __init__(self, index: TMIndex, ref: MemoryRef) -> None:
        self.index = index
        self.ref = ref
        self._found: dict[str, TMLookup] = {}

    def served(self, text: str) -> SegmentOutcome | None:
        """The segment's translation from the memory, when it has an exact one."""
        hit = self.index.exact(text)
        if hit is None:
            return None
        return SegmentOutcome(translation=hit.target, memory_score=hit.score)

    def _lookup(self, text: str) -> TMLookup:
        found = self._found.get(text)
        if found is None:
            k = self.ref.k if self.ref.examples else 0
            found = self._found[text] = self.index.lookup(text, self.ref.threshold, k=k)
        return found

    def guidance(self, text: str) -> dict[str, Any]:
        """What the prompt of an engine that follows instructions gets for the segment: the
        match to edit, or the examples (nothing for another engine)."""
        if not self.ref.examples:
            return {}
        found = self._lookup(text)
        if found.match is not None:
            return {"memory_match": (found.match.source, found.match.target)}
        if found.examples:
            return {"examples": tuple((m.source, m.target) for m in found.examples)}
        return {}

    def named(self, text: str, outcome: SegmentOutcome) -> SegmentOutcome:
        """An engine's outcome for the segment, with a warning naming the memory's near match
        when the engine could not be given it to edit."""
        if self.ref.examples or not outcome.ok:
            return outcome
        match = self._lookup(text).match
        if match is None:
            return outcome
        warning = {
            "type": Finding.memory_fuzzy_match.value,
            "message": (
                f"translation memory {self.ref.id} has a {match.score:.0f} % match for this "
                f"text, {_quoted(match.source)} -> {_quoted(match.target)}, that differs from "
                "it in more than numbers, placeholders and tags; this engine cannot edit a "
                "match, so it translated the text"
            ),
        }
        return outcome.model_copy(update={"warnings": [*outcome.warnings, warning]})
