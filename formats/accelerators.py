"""Menu accelerators in UI strings: GTK's ``_File`` and ``S_witch``, Qt's and KDE's ``&File``.

The marker goes before the letter a user presses with Alt. An engine given ``S_witch`` reads a
word it does not know, and puts the marker anywhere or nowhere; so the marker is taken out
before the engine (:func:`take`) and put back into the translation (:func:`put`) on the same
letter, as translate-toolkit places an access key (``translate.convert.accesskey.combine``):
the letter in the same case, else in the other case, preferring one that starts a word; where
the translation has no such letter, before its first letter, and the caller says so.

What marker a catalogue uses is read from it (:func:`marker_of`): its ``X-Accelerator-Marker``
header (KDE's and pology's convention; empty: none), else the marker GNOME's and Qt's
catalogues show by starting labels with it (``_Cancel``, ``&Open``). A text has an accelerator
when exactly one marker stands before a letter or digit, at a word's start or inside a
capitalised word, outside placeholders, markup and character references (``__`` and ``&&``
are the literal character; ``notify_interval`` and ``imp_gallon,imp_gal`` are names, not
menu items).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: The markers read without a header saying which.
MARKERS = ("_", "&")
_REFERENCE = r"&(?:[A-Za-z][\w.-]*|#[0-9]+|#[xX][0-9A-Fa-f]+);"
#: Markup and character references, never an accelerator's place.
_MARKUP = re.compile(rf"<[^<>]*>|{_REFERENCE}")
_STARTS_LABEL = {m: re.compile(rf"^{re.escape(m)}(?!{_REFERENCE})\w") for m in MARKERS}


def marker_of(header: str | None, msgids: Iterable[str]) -> str | None:
    """The catalogue's accelerator marker: ``header`` (the ``X-Accelerator-Marker`` value,
    None when the catalogue has none) names it; else the marker at least one label starts
    with, the commoner of the two."""
    if header is not None:
        return header.strip()[:1] or None
    starts = dict.fromkeys(MARKERS, 0)
    for msgid in msgids:
        for m, pattern in _STARTS_LABEL.items():
            if pattern.match(msgid):
                starts[m] += 1
    best = max(MARKERS, key=lambda m: starts[m])
    return best if starts[best] else None


def _free(text: str, skip: re.Pattern[str] | None) -> list[bool]:
    """Per character of ``text``: outside markup, references and ``skip`` (placeholders)."""
    free = [True] * len(text)
    for pattern in (_MARKUP, skip):
        if pattern is not None:
            for m in pattern.finditer(text):
                free[m.start() : m.end()] = [False] * (m.end() - m.start())
    return free


def _labelled(text: str, at: int) -> bool:
    """Whether a marker at ``at`` sits where a label puts one: at a word's start (``_File``,
    ``Close _All``) or inside a capitalised word (``S_witch``, ``Re_do``); not inside a word
    of small letters (``notify_interval``, ``imp_gal``: a name, not an accelerator)."""
    start = at
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    return start == at or text[start].isupper()


def _markers(
    text: str, marker: str, skip: re.Pattern[str] | None, *, labels: bool = True
) -> list[int]:
    """Where a marker stands before a letter or digit (with ``labels``: only where a label
    puts one, :func:`_labelled`)."""
    free = _free(text, skip)
    found: list[int] = []
    i = 0
    while (i := text.find(marker, i)) >= 0:
        if text.startswith(marker * 2, i):  # the literal character
            i += 2
            continue
        letter = free[i] and i + 1 < len(text) and free[i + 1] and text[i + 1].isalnum()
        if letter and (not labels or _labelled(text, i)):
            found.append(i)
        i += 1
    return found


def take(text: str, marker: str, skip: re.Pattern[str] | None = None) -> tuple[str, str | None]:
    """``text`` without its accelerator marker, and the accelerator's character (None, and
    ``text`` as it is, when it has none or more than one)."""
    found = _markers(text, marker, skip)
    if len(found) != 1:
        return text, None
    at = found[0]
    return text[:at] + text[at + 1 :], text[at + 1]


def put(text: str, marker: str, key: str, skip: re.Pattern[str] | None = None) -> tuple[str, bool]:
    """``text`` with ``marker`` before the letter ``key``, and whether that letter was there
    (False: the marker went before the first letter; ``text`` as it is if it has none). A
    text that has an accelerator already (a translation memory's) keeps it."""
    if _markers(text, marker, skip, labels=False):
        return text, True
    free = _free(text, skip)
    places = [i for i, c in enumerate(text) if free[i] and c.isalnum()]
    if not places:
        return text, False

    def starts_word(i: int) -> bool:
        return i == 0 or not text[i - 1].isalnum()

    for wanted in (key, key.swapcase()):
        hits = [i for i in places if text[i] == wanted]
        if hits:
            at = next((i for i in hits if starts_word(i)), hits[0])
            return text[:at] + marker + text[at:], True
    return text[: places[0]] + marker + text[places[0] :], False
