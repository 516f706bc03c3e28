"""From a job's texts to the chunks its messages carry: grouped by normalised text (each
distinct text is translated once), each text's outer whitespace kept to put back."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from mtfleet.core.cache import keyed
from mtfleet.core.models import ChunkSegment


def outer_space(text: str, norm: str) -> tuple[str, str] | None:
    """The whitespace around ``text``'s normalised form ``norm``, or None when there is none."""
    if text == norm or not norm:
        return None
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()) :]
    return (lead, trail) if lead or trail else None


_SEGMENTS = TypeAdapter(list[ChunkSegment])


def plan_chunks(
    texts: list[str],
    norms: list[str],
    skip: set[int],
    chunk_size: int,
    contexts: list[str | None] | None = None,
) -> list[list[ChunkSegment]]:
    """The texts not in ``skip``, grouped by normalised text and context (each translated
    once, with the outer whitespace of every text kept to put back), cut into chunks of
    ``chunk_size`` distinct texts. ``contexts``: each text's neighbouring sentences (a
    document's, for an LLM), or None."""
    groups: dict[str, dict[str, Any]] = {}
    for i, norm in enumerate(norms):
        if skip and i in skip:
            continue
        context = contexts[i] if contexts is not None else None
        key = keyed(norm, context)
        seg = groups.get(key)
        if seg is None:
            seg = groups[key] = {"indices": [i], "text": norm}
            if context is not None:
                seg["context"] = context
        else:
            seg["indices"].append(i)
        text = texts[i]
        if text != norm:
            wrap = outer_space(text, norm)
            if wrap is not None:
                seg.setdefault("wraps", {})[i] = wrap
    segs = _SEGMENTS.validate_python(list(groups.values()))  # one call for the whole job
    return [segs[i : i + chunk_size] for i in range(0, len(segs), chunk_size)]
