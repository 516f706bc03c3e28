"""A glossary's content: its models, how terms are checked and normalised, its version."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence

from pydantic import BaseModel

from mtfleet.core import languages, patterns
from mtfleet.core.errors import InvalidInput, JobNotFound
from mtfleet.core.markup import script_schemes
from mtfleet.formats.base import TAG

#: Bump when matching rules change: it is part of every glossary's version (the cache key).
MATCH_VERSION = "1"
MAX_NAME_CHARS = 100

_WORD = re.compile(r"\w")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class GlossaryNotFound(JobNotFound):
    """No such glossary, or another key's (HTTP 404, word for word the same)."""

    code = "glossary_not_found"


class UnknownGlossary(InvalidInput):
    """A job names a glossary that does not exist or that its key may not use (HTTP 422)."""

    code = "unknown_glossary"


class GlossaryInfo(BaseModel):
    """A glossary without its terms (what lists show and what a job submission reads)."""

    id: str
    name: str
    source_lang: str
    target_lang: str
    owner: str = ""
    created_at: float
    version: str
    entry_count: int
    protected_count: int
    pattern_count: int = 0


class Glossary(GlossaryInfo):
    entries: dict[str, str]
    protected: list[str]
    #: Regular expressions whose matches are kept as they are (:mod:`mtfleet.core.patterns`).
    protected_patterns: list[str] = []


def normalize_term(term: str) -> str:
    """NFC, outer whitespace removed, inner whitespace runs as one space."""
    return " ".join(unicodedata.normalize("NFC", term).split())


def term_key(term: str) -> str:
    """What two terms that match the same text have in common (case-insensitive)."""
    return normalize_term(term).casefold()


def parse_tsv(text: str) -> list[tuple[str, str]]:
    """``source<TAB>target`` lines (blank lines skipped) as pairs; InvalidInput names the line."""
    pairs: list[tuple[str, str]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) != 2:
            raise InvalidInput(
                f"entries_tsv line {n}: expected 'source<TAB>target', got {len(cols)} column(s)"
            )
        pairs.append((cols[0], cols[1]))
    return pairs


def _check_term(term: str, what: str, max_chars: int) -> str:
    norm = normalize_term(term)
    if not norm:
        raise InvalidInput(f"{what} is empty")
    if len(norm) > max_chars:
        raise InvalidInput(
            f"{what} {norm[:40]!r}... has {len(norm)} characters; the limit is "
            f"{max_chars} (MT_GLOSSARY_MAX_TERM_CHARS)"
        )
    if _CONTROL.search(norm):
        raise InvalidInput(f"{what} {norm!r} contains a control character")
    if TAG.search(norm) or "<" in norm or ">" in norm:
        raise InvalidInput(f"{what} {norm!r} may not contain '<' or '>'")
    schemes = script_schemes(norm)
    if schemes:
        raise InvalidInput(
            f"{what} {norm!r} carries a script URL ({', '.join(sorted(schemes))}); a glossary "
            "term is text, never a link to run"
        )
    if not _WORD.search(norm):
        raise InvalidInput(f"{what} {norm!r} has no letter or digit")
    return norm


def validate(
    *,
    name: str,
    source_lang: str,
    target_lang: str,
    entries: Iterable[tuple[str, str]],
    protected: Iterable[str],
    max_terms: int,
    max_term_chars: int,
    protected_patterns: Iterable[str] = (),
) -> Glossary:
    """The glossary these inputs make (id, owner and created_at left blank), or InvalidInput:
    bad languages, an empty, over-long or tag-like term, more than ``max_terms`` terms, two
    terms that match the same text (duplicates, or one term both translated and protected),
    or a protected pattern RE2 does not read or that breaks a bound
    (:func:`mtfleet.core.patterns.check`)."""
    name = name.strip()
    if not name or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise InvalidInput(f"a glossary name is 1-{MAX_NAME_CHARS} printable characters")
    source = languages.normalize(source_lang)
    target = languages.normalize(target_lang)
    if source == target:
        raise InvalidInput(f"source_lang and target_lang are both {source!r}")
    pairs = list(entries)
    kept = list(protected)
    kept_patterns = patterns.check(protected_patterns)
    if not pairs and not kept and not kept_patterns:
        raise InvalidInput(
            "a glossary needs at least one entry, protected term or protected pattern"
        )
    if len(pairs) + len(kept) > max_terms:
        raise InvalidInput(
            f"{len(pairs) + len(kept)} terms; a glossary holds at most {max_terms} "
            "(MT_GLOSSARY_MAX_TERMS)"
        )
    seen: dict[str, str] = {}

    def claim(term: str, what: str) -> str:
        norm = _check_term(term, what, max_term_chars)
        other = seen.get(term_key(norm))
        if other is not None:
            raise InvalidInput(
                f"{what} {norm!r} matches the same text as {other!r}; a term may appear once "
                "(case does not matter), either as an entry or as protected"
            )
        seen[term_key(norm)] = norm
        return norm

    out_entries: dict[str, str] = {}
    for src, tgt in pairs:
        s = claim(src, "entry source term")
        out_entries[s] = _check_term(tgt, f"target term of {s!r}", max_term_chars)
    out_protected = [claim(t, "protected term") for t in kept]
    return Glossary(
        id="",
        name=name,
        source_lang=source,
        target_lang=target,
        created_at=0.0,
        version=content_version(source, target, out_entries, out_protected, kept_patterns),
        entry_count=len(out_entries),
        protected_count=len(out_protected),
        pattern_count=len(kept_patterns),
        entries=out_entries,
        protected=out_protected,
        protected_patterns=kept_patterns,
    )


def content_version(
    source: str,
    target: str,
    entries: dict[str, str],
    protected: Sequence[str],
    protected_patterns: Sequence[str] = (),
) -> str:
    """Short hash of what shapes translations (the phrase-cache key component); a glossary
    without patterns keeps the version it had before glossaries carried them."""
    content: list[object] = [MATCH_VERSION, source, target, sorted(entries.items())]
    content.append(sorted(protected))
    if protected_patterns:
        content.append(sorted(protected_patterns))
    body = json.dumps(content, ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()[:16]
