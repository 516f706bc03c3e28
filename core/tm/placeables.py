"""What a translation memory carries over from a request into a stored target: its placeables.

A **placeable** is a part of a text that a translation keeps (or only re-formats) rather than
translates: the fleet's inline tags (``<g1>``, ``</g1>``, ``<x2/>``), the spans every engine
gets protected (:func:`mtfleet.formats.pipeline.spans`: URLs, e-mail addresses,
placeholders such as ``{n}``, ``{{x}}``, ``%s``, ``%1$d``, prices, numbers with units and
percentages, SKU codes, versions) and any other number (a count, a date, a time: digits with
the separators between them).

:func:`carry` is the auto-substitution of CAT tools: when a segment and a stored source differ
only in their placeables (the text around them is the same, character for character), each
placeable of the stored source that differs from the segment's is replaced in the stored target
by the segment's, found there

* as it is, exactly once ("{n}" -> "{count}", "<x1/>" -> "<x3/>", a tag only by a tag of its
  own kind), or else
* for a number written the same way but for its digits ("$50" -> "$500", "20%" -> "30%"), each
  differing run of digits, exactly once as a whole number ("50 $" -> "500 $", "20 %" -> "30 %").

Anything else (a placeable the target does not hold, or holds twice; texts that differ in a
word) is no exact match, and the stored target is not served as the segment's translation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mtfleet.formats.base import TAG
from mtfleet.formats.pipeline import spans

# A number the protected spans leave out: digits with the separators inside them
# ("1,500", "12/03/2024", "10:30").
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_DIGITS = re.compile(r"\d+")


def _tag_kind(text: str) -> str | None:
    m = TAG.fullmatch(text)
    if m is None:
        return None
    return "close" if m.group(1) else "x" if m.group(4) else "open"


def split(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The text between the placeables (one more piece than placeables) and the placeables,
    in order."""
    found = [(m.start(), m.end()) for m in TAG.finditer(text)] if "<" in text else []
    found += spans(text)
    found.sort()
    taken = list(found)
    for m in _NUMBER.finditer(text):
        if not any(a < m.end() and m.start() < b for a, b in taken):
            found.append((m.start(), m.end()))
    found.sort()
    pieces: list[str] = []
    placeables: list[str] = []
    pos = 0
    for start, end in found:
        pieces.append(text[pos:start])
        placeables.append(text[start:end])
        pos = end
    pieces.append(text[pos:])
    return tuple(pieces), tuple(placeables)


def _occurrences(needle: str, text: str) -> list[int]:
    """Where ``needle`` stands in ``text`` as a whole (not inside a longer word or number)."""
    pattern = re.escape(needle)
    if needle[:1].isalnum():
        pattern = r"(?<![^\W_])" + pattern
    if needle[-1:].isalnum():
        pattern += r"(?![^\W_])"
    return [m.start() for m in re.finditer(pattern, text)]


def _edits(old: str, new: str, target: str) -> list[tuple[int, int, str]] | None:
    """Where ``old`` (a placeable of the stored source) is in ``target`` and what replaces it
    there, or None when it cannot be told."""
    old_tag, new_tag = _tag_kind(old), _tag_kind(new)
    if old_tag or new_tag:
        found = target.count(old) if old_tag == new_tag else 0
        return [(target.index(old), len(old), new)] if found == 1 else None
    whole = _occurrences(old, target)
    if len(whole) == 1:
        return [(whole[0], len(old), new)]
    if _DIGITS.sub("0", old) != _DIGITS.sub("0", new):
        return None
    edits = []
    for a, b in zip(_DIGITS.findall(old), _DIGITS.findall(new), strict=True):
        if a != b:
            at = [m.start() for m in re.finditer(rf"(?<!\d){a}(?!\d)", target)]
            if len(at) != 1:
                return None
            edits.append((at[0], len(a), b))
    return edits


def carry(segment: str, source: str, target: str) -> str | None:
    """``target`` with ``segment``'s placeables in place of ``source``'s, when the two texts
    differ only in their placeables and each differing one is found in ``target`` (see the
    module's docstring); None otherwise. ``segment`` and ``source`` are normalized
    (:func:`mtfleet.core.tm.text.normalize`)."""
    pieces, mine = split(segment)
    theirs_pieces, theirs = split(source)
    if pieces != theirs_pieces:
        return None
    return substitute(target, theirs, mine)


def substitute(target: str, old: Sequence[str], new: Sequence[str]) -> str | None:
    """``target`` with each placeable of ``old`` that differs from ``new``'s at its place
    replaced (None: one cannot be, or two replacements would overlap)."""
    edits: list[tuple[int, int, str]] = []
    for a, b in zip(old, new, strict=True):
        if a == b:
            continue
        found = _edits(a, b, target)
        if found is None:
            return None
        edits += found
    edits.sort()
    out = []
    pos = 0
    for start, size, text in edits:
        if start < pos:
            return None
        out.append(target[pos:start])
        out.append(text)
        pos = start + size
    out.append(target[pos:])
    return "".join(out)
