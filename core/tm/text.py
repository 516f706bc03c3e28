"""What a translation memory compares: normalized text, its tokens, the score, and the checks a
pair passes before it is stored.

**The score** of a segment against a stored source (0-100) is built from rapidfuzz's
``fuzz.ratio``, the normalized Indel similarity ``100 * 2 * LCS / (len(a) + len(b))``,
computed over **word tokens** rather than characters: ``ratio(A, B) = 100 * 2 * common /
(len(A) + len(B))`` where ``common`` is the length of the longest common subsequence of the two
token lists. The score is the mean of that ratio with case and without it::

    score(a, b) = (ratio(tokens(a), tokens(b)) + ratio(fold(tokens(a)), fold(tokens(b)))) / 2

(``fold``: each token casefolded), so a token that differs only in case costs half of a token
that differs. Both texts are normalized first (:func:`normalize`: Unicode NFC, whitespace runs
as one space, none at either end) and cut by :func:`tokens`:

* a run of letters, digits and combining marks is one token ("files", "3", "naïve", "नमस्ते");
* each punctuation mark or symbol is a token of its own ("don't" is ``don``, ``'``, ``t``);
* each character of a script written without spaces (Han, kana, Thai, Lao, Khmer, Myanmar,
  Tibetan) is a token of its own;
* an inline tag of the fleet (``<g1>``, ``</g1>``, ``<x2/>``) is one token;
* a token that follows a space carries it (" world" is not "world"),

so two texts score 100 exactly when their normalized forms are identical. One word of ten
changed scores ``100 * 2 * 9 / 20 = 90``, one of four ``75``; "Save File" against "Save file"
``(50 + 100) / 2 = 75``; "Save the file" against "Save the files" ``100 * 2 * 2 / 6 = 67``.
Words rather than characters, because a match at or above the threshold is served verbatim and
characters call "the file is open" and "the file isn't open" 91 % alike (words: 60), and
because a word index finds every pair above the threshold among 100,000 in well under a
millisecond (:mod:`mtfleet.core.tm.index`), which no character-level filter can at 75 %.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence

from rapidfuzz import fuzz

from mtfleet.core import languages
from mtfleet.core.errors import InvalidInput
from mtfleet.formats.base import TAG

#: Bump when :func:`tokens` or the score change: it is part of every memory's version (the
#: phrase-cache key), so translations made under the old rules are not served under the new.
MATCH_VERSION = "1"
MAX_NAME_CHARS = 100

# Scripts written without spaces between words: one token per character.
_UNSPACED = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u0f00-\u0fff"  # Tibetan
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u2e80-\u2fdf"  # CJK radicals
    "\u3040-\u31ff"  # kana, bopomofo, CJK strokes
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # halfwidth katakana
    "\U00020000-\U0003134f"  # CJK extensions B-H
)
# Punctuation and symbols: one token per character.
_PUNCT = (
    "!-/:-@\\[-`{-~"  # ASCII
    "\u00a1-\u00bf\u00d7\u00f7"  # Latin-1 punctuation and signs
    "\u2000-\u2bff"  # general punctuation, symbols, arrows, maths, boxes, dingbats
    "\u2e00-\u2e7f"  # supplemental punctuation
    "\u3000-\u303f"  # CJK punctuation
    "\ufe30-\ufe4f\ufe50-\ufe6f"  # CJK compatibility forms, small forms
    "\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"  # fullwidth punctuation
)
_TOKEN = re.compile(rf"{TAG.pattern}|[^\s{_PUNCT}{_UNSPACED}]+|\S")
# What a stored text may not hold: C0 controls but tab and line breaks, DEL.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def normalize(text: str) -> str:
    """NFC, whitespace runs (any Unicode space or line break) as one space, none at the ends."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def tokens(normalized: str) -> list[str]:
    """The tokens of a :func:`normalize`-d text, each with its leading space when it has one."""
    out = []
    for m in _TOKEN.finditer(normalized):
        start = m.start()
        out.append(" " + m.group() if start and normalized[start - 1] == " " else m.group())
    return out


def fold(toks: list[str]) -> list[str]:
    """Tokens without case (casefolded one by one: as many as before)."""
    return [t.casefold() for t in toks]


def similarity(a: str, b: str) -> float:
    """The score of ``a`` against ``b`` (0-100, symmetric; 100 exactly when their normalized
    forms are equal): the definition every lookup agrees with (see the module's docstring)."""
    ta, tb = tokens(normalize(a)), tokens(normalize(b))
    if not ta and not tb:
        return 100.0
    return combined(fuzz.ratio(ta, tb), fuzz.ratio(fold(ta), fold(tb)))


def combined(with_case: float, without_case: float) -> float:
    """The score from its two ratios (one expression, so every caller rounds alike)."""
    return (float(with_case) + float(without_case)) / 2


def content_version(source: str, target: str, pairs: Sequence[tuple[str, str]]) -> str:
    """A new memory's version: a short hash of the match rules, the pair and the pairs in their
    order (the order breaks ties between equal scores, so it is content too)."""
    body = json.dumps([MATCH_VERSION, source, target, list(pairs)], ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def next_version(previous: str, changes: Sequence[tuple[str, str]]) -> str:
    """The version after ``changes`` (pairs added or replaced) on top of ``previous``: a hash of
    the memory's history, so two different contents never share a version."""
    body = json.dumps([previous, list(changes)], ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def check_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise InvalidInput(f"a translation memory name is 1-{MAX_NAME_CHARS} printable characters")
    return name


def check_pair_languages(source_lang: str, target_lang: str) -> tuple[str, str]:
    source = languages.normalize(source_lang)
    target = languages.normalize(target_lang)
    if source == target:
        raise InvalidInput(f"source_lang and target_lang are both {source!r}")
    return source, target


def _check_text(text: str, what: str, where: str, max_bytes: int) -> None:
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInput(f"{where}: the {what} is not valid Unicode (a lone surrogate)") from None
    if size > max_bytes:
        raise InvalidInput(
            f"{where}: the {what} ({text[:40]!r}...) has {size:,} bytes; a segment may have "
            f"{max_bytes:,} (MT_TM_MAX_SEGMENT_BYTES)"
        )
    bad = _CONTROL.search(text)
    if bad:
        raise InvalidInput(
            f"{where}: the {what} {text[:40]!r} holds the control character "
            f"U+{ord(bad.group()):04X}"
        )


def check_pair(source: str, target: str, *, max_bytes: int, where: str) -> tuple[str, str]:
    """A pair as it is stored: the source normalized, the target exactly as given (a match
    serves those bytes); InvalidInput naming ``where`` for an empty side, an over-long one, a
    control character or a lone surrogate."""
    if not isinstance(source, str) or not isinstance(target, str):
        raise InvalidInput(f"{where}: source and target must be strings")
    norm = normalize(source)
    if not norm:
        raise InvalidInput(f"{where}: the source is empty")
    if not target.strip():
        raise InvalidInput(f"{where}: the target of {norm[:40]!r} is empty")
    _check_text(norm, "source", where, max_bytes)
    _check_text(target, "target", where, max_bytes)
    return norm, target


def dedupe(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Checked pairs, one per (normalized) source: a later pair replaces an earlier one and
    takes its place at the end (the newer pair wins a tie between equal scores)."""
    out: dict[str, str] = {}
    for source, target in pairs:
        out.pop(source, None)
        out[source] = target
    return list(out.items())


def unique_pairs(pairs: Iterable[tuple[str, str]], *, max_bytes: int) -> list[tuple[str, str]]:
    """``{source, target}`` entries from a request, checked (:func:`check_pair`, naming the
    entry) and :func:`dedupe`-d."""
    return dedupe(
        check_pair(s, t, max_bytes=max_bytes, where=f"entry {n}")
        for n, (s, t) in enumerate(pairs, 1)
    )
