"""From a document's units to the segments a job translates, and back.

``plan`` takes the units a format extracted and

1. **segments** each unit into sentences with sentencex (Wikimedia's rule-based segmenter:
   maintained, no model download, a pure-Python wheel with rules for the languages we serve),
   never splitting inside a paired tag, so markup stays within one segment, nor inside a
   *protected span* (:func:`protect`), so ``www.example.com`` or ``v1.2.3`` is never cut at
   its dots;
2. keeps the whitespace between sentences (and around a unit) out of the segments, so it comes
   back byte for byte.

Protected spans are spans no engine may touch: URLs, e-mail addresses, placeholders
(``{name}``, ``{{count}}``, ``%s``, ``%(name)s``, ``%1$s``), template syntax (Liquid, Jinja,
Handlebars: ``{{ page.title | escape }}``, ``{% if user %}``, ``{{#each items}}``, ``{# note
#}``, a ``{% raw %}...{% endraw %}`` block whole), command-line options (``--dry-run``), numbers
with units (``20 kg``, ``5.5 GHz``, ``$50``), SKU-like codes (``SKU-12345``, ``AB12-CD34``),
version numbers, and the matches of a job's protected patterns (:mod:`mtfleet.core.patterns`).
:func:`protect` turns them into standalone tags ``<xN/>``; the worker does that, once, for every
segment it translates (document sentences and plain texts alike) and puts them back after the
engine (:func:`mtfleet.workers.checks.prepare`). A unit or sentence with no letter outside its
tags and spans (``{{ page.title }}`` alone) is no segment: it stays as it is.

``assemble`` joins translated segments back into unit texts with the format's own tags left
for the format's ``render``. A segment without a translation (it failed, or an output check
withheld it) keeps its source text, and :func:`untranslated` names its unit, so a format whose
files can say "not translated" says so instead (gettext's empty ``msgstr``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import NamedTuple

from sentencex import segment as sentencex_segment

from mtfleet.formats.base import TAG, Code, Unit, too_large, x
from mtfleet.formats.templates import TEMPLATE

# One alternation, most specific first; matches are taken left to right without overlap. A URL
# stops at a brace: ``https://site/{{ page.url }}`` is a URL and a template output.
_SPANS = {
    "template": TEMPLATE,
    "url": r"""\b(?:https?|ftp)://[^\s<>"'\u00a0{]+[^\s<>"'\u00a0.,;:!?)\]}{]
        | \bwww\.[^\s<>"'\u00a0{]+[^\s<>"'\u00a0.,;:!?)\]}{]""",
    "email": r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b",
    "placeholder": r"""\{\{\s*[\w.-]+\s*\}\}|\{[\w.-]*\}|\$\{[\w.-]+\}|%%
        |%(?:\d+\$)?[-+\#0]*\d*(?:\.\d+)?[sdifxXeEgGcou](?![A-Za-z])|%\([\w.-]+\)[sdifr]""",
    # a command-line option (``--dry-run``, ``--format=json``), not a dash inside a word
    "flag": r"(?<![\w-])--[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*(?:=[\w./:@-]*[\w/])?",
    "sku": r"\b(?=[A-Z0-9-]*\d)(?=[A-Z0-9-]*[A-Z])[A-Z0-9]{2,}(?:-[A-Z0-9]+)+\b",
    "version": r"\bv?\d+(?:\.\d+){2,}\b",
    "money": r"[$€£¥]\s?\d[\d,.]*\b",
    "measure": r"""\b\d+(?:[.,]\d+)?\s?(?:kg|mg|g|lbs?|oz|mm|cm|km|m|in|ft|ml|l|L|GB|MB|KB|TB|GHz
        |MHz|Hz|kW|W|V|mAh|Wh|°C|°F|px|pt|%)(?![\w])""",
}


def _alternation(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?P<{n}>{_SPANS[n]})" for n in names), re.VERBOSE)


_PROTECT = _alternation(tuple(_SPANS))
# Where no wide trigger occurs (below), only the spans a digit announces can match: the same
# alternatives in the same order, without the ones that cannot (a third of the work).
_DIGIT_SPANS = _alternation(("sku", "version", "measure"))

_WORDLIKE = re.compile(r"[^\W\d_]", re.UNICODE)


@dataclass
class UnitPlan:
    """How one unit maps to segments: ``layout`` alternates literal text (whitespace and
    untranslatable pieces, kept as is) and segment indices (ints)."""

    unit: Unit
    layout: list[str | int] = field(default_factory=list)


@dataclass
class Plan:
    units: list[UnitPlan]
    segments: list[str]

    @property
    def unit_of(self) -> list[int]:
        """The unit each segment comes from (segments of a unit are consecutive): what
        :func:`surrounding` reads."""
        out = [0] * len(self.segments)
        for n, up in enumerate(self.units):
            for part in up.layout:
                if isinstance(part, int):
                    out[part] = n
        return out


class Cut(NamedTuple):
    """A document's segments and the unit each comes from (:attr:`Plan.unit_of`): what the
    API gets back from a document process."""

    segments: list[str]
    unit_of: list[int]


# Every protected span holds a digit or one of the "wide" triggers. Spans that only digits
# announce (SKUs, versions, numbers with units) start in the word of their first digit and end
# at most one word after their last: the expression need only run over that stretch of the
# text (most segments carry a number or two, or none). A wide trigger (a URL, an address, a
# placeholder, a currency sign) makes it run over the whole text. Plain ``in`` tests: a regex
# search for the same characters costs several times more on every segment.
_DIGIT = re.compile(r"\d")
_LAST_DIGIT = re.compile(r"\d(?=\D*\Z)")


def _wide(text: str) -> bool:
    return (
        "{" in text
        or "%" in text
        or "@" in text
        or "$" in text
        or "€" in text
        or "£" in text
        or "¥" in text
        or "://" in text
        or "www." in text
        or "--" in text
    )


def _digit_window(text: str) -> tuple[int, int]:
    """A stretch of ``text`` (without wide triggers) that holds every protected span (it may
    hold more)."""
    first = _DIGIT.search(text)
    if first is None:
        return 0, 0
    # a span starts in the word of its first digit: after the space before it (a tab or a
    # newline nearer the digit only makes the stretch longer, never too short)
    start = text.rfind(" ", 0, first.start()) + 1
    last = _LAST_DIGIT.search(text, first.start())
    after = (last or first).end()
    gap = text.find(" ", after)  # the word of the last digit ends here...
    if gap < 0:
        return start, len(text)
    nxt = text.find(" ", gap + 1)  # ...and the word after it (a unit) here
    return start, len(text) if nxt < 0 else nxt


#: Finds a caller's own spans in a piece of text without inline tags (a request's protected
#: patterns: :meth:`mtfleet.core.patterns.ProtectedPatterns.find`); they may overlap.
Extra = Callable[[str], list[tuple[int, int]]]


def spans(text: str, extra: Extra | None = None) -> list[tuple[int, int]]:
    """(start, end) of every protected span in ``text`` outside its inline tags; with
    ``extra``, its spans too (where spans overlap, the leftmost, then the longest, is kept)."""
    found = _builtin_spans(text)
    if extra is None:
        return found
    pos = 0
    for part in _split_keep_tags(text) if "<" in text else [text]:
        if not TAG.fullmatch(part):
            found += [(pos + a, pos + b) for a, b in extra(part) if part[a:b].strip()]
        pos += len(part)
    kept: list[tuple[int, int]] = []
    for start, end in sorted(found, key=lambda span: (span[0], -span[1])):
        if not kept or start >= kept[-1][1]:
            kept.append((start, end))
    return kept


def _builtin_spans(text: str) -> list[tuple[int, int]]:
    wide = _wide(text)
    start, end = (0, len(text)) if wide else _digit_window(text)
    if start == end:
        return []
    pattern = _PROTECT if wide else _DIGIT_SPANS
    if "<" not in text:
        return [
            (m.start(), m.end()) for m in pattern.finditer(text, start, end) if m.group(0).strip()
        ]
    found: list[tuple[int, int]] = []
    pos = 0
    for part in _split_keep_tags(text):
        lo, hi = max(start - pos, 0), min(end - pos, len(part))
        if lo < hi and not TAG.fullmatch(part):
            found += [
                (pos + m.start(), pos + m.end())
                for m in pattern.finditer(part, lo, hi)
                if m.group(0).strip()
            ]
        pos += len(part)
    return found


def protect(text: str, first: int, extra: Extra | None = None) -> tuple[str, dict[int, Code]]:
    """Replace protected spans (and ``extra``'s) outside existing tags by ``<xN/>`` tags
    numbered from ``first``."""
    found = spans(text, extra)
    if not found:
        return text, {}
    codes: dict[int, Code] = {}
    out: list[str] = []
    last = 0
    for n, (start, end) in enumerate(found, first):
        out.append(text[last:start])
        codes[n] = Code(text[start:end])
        out.append(x(n))
        last = end
    out.append(text[last:])
    return "".join(out), codes


def next_code(text: str) -> int:
    """The first tag number free in ``text``."""
    return max((int(m.group(3)) for m in TAG.finditer(text)), default=0) + 1


def _split_keep_tags(text: str) -> list[str]:
    parts: list[str] = []
    pos = 0
    for m in TAG.finditer(text):
        parts.append(text[pos : m.start()])
        parts.append(m.group(0))
        pos = m.end()
    parts.append(text[pos:])
    return [p for p in parts if p]


def sentences(text: str, lang: str) -> list[str]:
    """Split into sentences whose concatenation is ``text``; never inside a paired tag or a
    protected span (the segmenter sees each span as a run of ``x``, so its dots, digits and
    symbols cannot end a sentence, and cuts map back one to one)."""
    masked = text
    for start, end in spans(text):
        masked = f"{masked[:start]}{'x' * (end - start)}{masked[end:]}"
    cut = list(sentencex_segment(lang.split("-")[0], masked))
    if "".join(cut) != masked:  # the segmenter must not lose characters; if it did, do not split
        return [text]
    raw: list[str] = []
    pos = 0
    for piece in cut:
        raw.append(text[pos : pos + len(piece)])
        pos += len(piece)
    merged: list[str] = []
    depth = 0
    for s in raw:
        if merged and depth > 0:
            merged[-1] += s
        else:
            merged.append(s)
        for m in TAG.finditer(s):
            if m.group(2) == "g":
                depth += -1 if m.group(1) else 1
    return merged


def _translatable(text: str) -> bool:
    """Whether ``text`` has a letter outside its tags and protected spans (a unit holding only
    ``{{ page.title }}`` or a URL has nothing for an engine)."""
    if not _WORDLIKE.search(TAG.sub(" ", text)):
        return False
    gaps: list[str] = []
    pos = 0
    for start, end in spans(text):
        gaps.append(text[pos:start])
        pos = end
    if not gaps:
        return True
    gaps.append(text[pos:])
    return bool(_WORDLIKE.search(TAG.sub(" ", " ".join(gaps))))


def plan(units: Sequence[Unit], lang: str, *, split: bool = True, limit: int | None = None) -> Plan:
    """Segments to translate for ``units`` (source language ``lang``); ``split=False`` keeps
    each unit one segment (DeepL's ``split_sentences=0``). More than ``limit`` segments is
    :class:`~mtfleet.formats.base.DocumentTooLarge` (the units were read under a budget,
    :func:`~mtfleet.formats.base.unit_budget`: planning them all costs little)."""
    segments: list[str] = []
    plans: list[UnitPlan] = []
    for unit in units:
        text = unit.text
        up = UnitPlan(unit)
        cut = split and _translatable(text)
        for sentence in sentences(text, lang) if cut else [text]:
            core = sentence.strip()
            if not core or not _translatable(core):
                up.layout.append(sentence)
                continue
            lead = sentence[: len(sentence) - len(sentence.lstrip())]
            trail = sentence[len(sentence.rstrip()) :]
            if lead:
                up.layout.append(lead)
            up.layout.append(len(segments))
            segments.append(core)
            if trail:
                up.layout.append(trail)
        plans.append(up)
    if limit is not None and len(segments) > limit:
        raise too_large(limit, len(segments))
    return Plan(plans, segments)


#: UTF-8 bytes per token, to bound a context in tokens without the model's tokenizer (the API
#: has none): the BPE tokenizers of translation LLMs average 3.5-4.5 bytes a token on English
#: and close to 4 on other Latin-script text; a CJK character (3 bytes) is 0.7-1 token.
BYTES_PER_TOKEN = 4


def surrounding(segments: Sequence[str], unit_of: Sequence[int], tokens: int) -> list[str | None]:
    """For each segment, the other sentences of its unit nearest to it, in document order, up
    to about ``tokens`` tokens (:data:`BYTES_PER_TOKEN`): what an LLM gets as the segment's
    context, so a pronoun or a term is translated as its neighbours say. The sentence before
    is taken first, then the one after, alternating outwards (the one before matters more:
    what a pronoun refers to is mostly said earlier); a sentence that does not fit in what is
    left ends that side. None for a segment alone in its unit, and for all of them when
    ``tokens`` is 0."""
    out: list[str | None] = [None] * len(segments)
    if tokens <= 0:
        return out
    budget = tokens * BYTES_PER_TOKEN
    size = [len(s.encode("utf-8")) + 1 for s in segments]
    first = 0
    while first < len(segments):
        end = first
        while end < len(segments) and unit_of[end] == unit_of[first]:
            end += 1
        for i in range(first, end) if end - first > 1 else ():
            before, after, left = i - 1, i + 1, budget
            open_before, open_after = before >= first, after < end
            while open_before or open_after:
                if open_before:
                    if size[before] <= left:
                        left -= size[before]
                        before -= 1
                        open_before = before >= first
                    else:
                        open_before = False
                if open_after:
                    if size[after] <= left:
                        left -= size[after]
                        after += 1
                        open_after = after < end
                    else:
                        open_after = False
            kept = [*segments[before + 1 : i], *segments[i + 1 : after]]
            out[i] = " ".join(kept) if kept else None
        first = end
    return out


def untranslated(p: Plan, translations: Sequence[str | None]) -> set[int]:
    """The units a sentence of which has no translation (None): what a format's
    :meth:`~mtfleet.formats.base.DocumentFormat.render_result` is told."""
    return {
        n
        for n, up in enumerate(p.units)
        if any(isinstance(part, int) and translations[part] is None for part in up.layout)
    }


def units_of(p: Plan, segments: AbstractSet[int]) -> set[int]:
    """The units a sentence of which is in ``segments`` (segment indices): the units a format
    marks for review when those sentences' translations are (a low quality estimate)."""
    return {
        n
        for n, up in enumerate(p.units)
        if any(isinstance(part, int) and part in segments for part in up.layout)
    }


def assemble(p: Plan, translations: Sequence[str | None]) -> list[str]:
    """Unit texts (tagged with the format's own tags) from segment translations (None: keep
    the source segment)."""
    return [
        "".join(
            part
            if isinstance(part, str)
            else (translations[part] if translations[part] is not None else p.segments[part])
            or p.segments[part]
            for part in up.layout
        )
        for up in p.units
    ]
