"""Protected patterns: regular expressions whose matches no engine may touch.

What no format can know is a customer's own: a game's colour codes (``§a``, ``&l``), a shop's
tokens (``[NAME]``, ``##ORDER##``), a ticket number. A request names such patterns
(``protected_patterns``) and a glossary can carry them for every job that names it
(docs/glossaries.md); the worker turns every match into a protected span, as it does URLs and
placeholders (:func:`mtfleet.formats.pipeline.protect`): the engine sees a standalone tag
and the match goes back byte for byte.

Why RE2 (``google-re2``, in the ``server`` extra) rather than Python's ``re``: a pattern comes
from a customer and runs over every segment of every job that names it, in a worker shared by
every tenant. ``re`` backtracks: ``(a+)+$`` takes exponential time on a line of ``a``s, and no
timeout can interrupt a C-level match without killing the worker. RE2 matches in time linear in
the text, whatever the pattern, refuses what needs backtracking (backreferences, lookaround)
and bounds the memory a pattern's program may use (:data:`MAX_MEM`). A pattern it cannot
compile is refused with RE2's own reason. The SDK never compiles one (RE2 is imported only
here, when a pattern is checked or used).

Bounds: at most :data:`MAX_PATTERNS` patterns of at most :data:`MAX_PATTERN_CHARS` characters;
a pattern that matches the empty text (``x*``) protects nothing and is refused too.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

from mtfleet.core.errors import InvalidInput

#: Patterns one request (or one glossary) may name.
MAX_PATTERNS = 20
#: Characters one pattern may have.
MAX_PATTERN_CHARS = 200
#: Bytes RE2 may spend on one pattern's compiled program (RE2's default is 8 MiB).
MAX_MEM = 1 << 20


class BadPattern(InvalidInput):
    """A protected pattern that is not a regular expression RE2 reads, or breaks a bound."""


def _options() -> Any:
    import re2  # (the server extra; the SDK never gets here)

    options = re2.Options()
    options.log_errors = False
    options.max_mem = MAX_MEM
    return options


def _compiled(pattern: str, where: str) -> Any:
    import re2

    if not pattern:
        raise BadPattern(f"{where} is empty")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise BadPattern(
            f"{where} {pattern[:40]!r}... has {len(pattern)} characters; the limit is "
            f"{MAX_PATTERN_CHARS}"
        )
    try:
        compiled = re2.compile(pattern, _options())
    except re2.error as exc:
        why = exc.args[0] if exc.args else "invalid"
        why = why.decode(errors="replace") if isinstance(why, bytes) else str(why)
        raise BadPattern(
            f"{where} {pattern!r} is not a regular expression RE2 reads ({why}); RE2's syntax "
            "is Python's without backreferences and lookaround"
        ) from None
    if compiled.fullmatch("") is not None:
        raise BadPattern(f"{where} {pattern!r} matches the empty text; it would protect nothing")
    return compiled


def check(patterns: Iterable[str], what: str = "protected_patterns") -> list[str]:
    """``patterns`` (duplicates dropped, order kept) if every one is a bounded RE2 pattern that
    matches something; else :class:`BadPattern` (422 ``invalid_input``) naming the first bad
    one as ``what[i]``."""
    kept = list(dict.fromkeys(patterns))
    if len(kept) > MAX_PATTERNS:
        raise BadPattern(f"{what}: {len(kept)} patterns; the limit is {MAX_PATTERNS}")
    for i, p in enumerate(kept):
        _compiled(p, f"{what}[{i}]")
    return kept


def digest(patterns: Sequence[str]) -> str:
    """Short hash of a set of patterns (order and repeats do not change what they protect):
    part of the phrase-cache key of the translations made with them."""
    body = json.dumps(sorted(set(patterns)), ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


class ProtectedPatterns:
    """Patterns compiled for matching: :meth:`find` is what
    :func:`mtfleet.formats.pipeline.spans` takes as ``extra``."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(check(patterns))
        self._compiled = [_compiled(p, "protected pattern") for p in self.patterns]

    def find(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of every match of every pattern in ``text`` (they may overlap; the
        caller keeps the leftmost, longest first)."""
        return [m.span() for c in self._compiled for m in c.finditer(text) if m.end() > m.start()]


@functools.lru_cache(maxsize=256)
def compiled(patterns: tuple[str, ...]) -> ProtectedPatterns | None:
    """``patterns`` compiled once per process (a worker meets the same ones chunk after chunk);
    None for none."""
    return ProtectedPatterns(patterns) if patterns else None
