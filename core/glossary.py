"""Glossaries: terms that must come out as the customer says, and terms never translated.

A glossary belongs to one language pair and one API key (``owner``; '' when the API runs with
``MT_AUTH=off``). It holds

* **entries**: source term -> target term ("case" -> "funda");
* **protected** terms: brands and product names kept untranslated, always in their canonical
  casing ("iphone" in a text comes out as "iPhone").

Glossaries are immutable: changing one means creating another. ``version`` is a short hash of
the content (pair, entries, protected terms, matching rules), and is part of the phrase-cache
key, so a translation made with one glossary is never served for another.

**How terms are applied** (the worker, :meth:`Matcher.protect`): every match in a segment becomes
a standalone inline tag ``<xN/>`` (:mod:`core.documents.base`) numbered above every tag already
in the segment; the engine keeps tags in place; :meth:`Protected.restore` puts the target term
(entries) or the canonical protected term back and leaves the document's own tags alone.
Matching is case-insensitive, on word boundaries (Unicode-aware: a term that starts or ends with
a letter or digit never matches inside a word), longest term first at a position, and never
inside an inline tag, a markup tag or a placeholder (``{name}``, ``%s``). A match that starts
with a capital where the entry's source term does not ("Case costs...") gets a capitalised
target term ("Funda...").

Deleting a glossary hides it at once; its terms are kept for ``MT_RESULT_TTL_S`` so jobs
accepted before the delete still finish with it.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import redis
from pydantic import BaseModel

from core import keys, languages
from core.documents.base import TAG, Code, restore, x
from core.errors import InvalidInput, JobNotFound

#: Bump when matching rules change: it is part of every glossary's version (the cache key).
MATCH_VERSION = "1"
MAX_NAME_CHARS = 100
_MATCHERS_KEPT = 32

#: Placeholders in UI strings: ``{{name}}``, ``{name}``, ``{0}``, ``{}``, ``%s``, ``%d``,
#: ``%(name)s``, ``%1$s``, ``%.2f``. Terms never match inside them; the output check counts them.
PLACEHOLDER = re.compile(
    r"\{\{\s*[\w.\-]+\s*\}\}|\{[\w.:\-]*\}|%(?:\([\w.\-]+\)|\d+\$)?[-+#0]?\d*(?:\.\d+)?[sdif@](?![A-Za-z])"
)
# What terms never match inside: inline tags, markup tags, placeholders.
_SKIP = re.compile(rf"{TAG.pattern}|</?[A-Za-z][^<>]*>|{PLACEHOLDER.pattern}")
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


class Glossary(GlossaryInfo):
    entries: dict[str, str]
    protected: list[str]


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
) -> Glossary:
    """The glossary these inputs make (id, owner and created_at left blank), or InvalidInput:
    bad languages, an empty, over-long or tag-like term, more than ``max_terms`` terms, or two
    terms that match the same text (duplicates, or one term both translated and protected)."""
    name = name.strip()
    if not name or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise InvalidInput(f"a glossary name is 1-{MAX_NAME_CHARS} printable characters")
    source = languages.normalize(source_lang)
    target = languages.normalize(target_lang)
    if source == target:
        raise InvalidInput(f"source_lang and target_lang are both {source!r}")
    pairs = list(entries)
    kept = list(protected)
    if not pairs and not kept:
        raise InvalidInput("a glossary needs at least one entry or protected term")
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
        version=content_version(source, target, out_entries, out_protected),
        entry_count=len(out_entries),
        protected_count=len(out_protected),
        entries=out_entries,
        protected=out_protected,
    )


def content_version(
    source: str, target: str, entries: dict[str, str], protected: Sequence[str]
) -> str:
    """Short hash of what shapes translations (the phrase-cache key component)."""
    body = json.dumps(
        [MATCH_VERSION, source, target, sorted(entries.items()), sorted(protected)],
        ensure_ascii=False,
    )
    return hashlib.sha256(body.encode()).hexdigest()[:16]


# --- matching ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Term:
    source: str  # the glossary's spelling of the source term
    target: str  # what replaces it: the target term, or the protected term itself
    protected: bool


@dataclass(frozen=True)
class Placed:
    """One match in a segment: its tag number, the term and the text that goes back."""

    number: int
    term: Term
    replacement: str


@dataclass
class Protected:
    """A segment with its glossary matches turned into standalone tags."""

    text: str
    codes: dict[int, Code] = field(default_factory=dict)
    placed: list[Placed] = field(default_factory=list)

    def restore(self, translation: str) -> str:
        """The translation with each term put back where its tag is (a term whose tag the
        engine dropped goes at the end); the document's own tags stay untouched."""
        if not self.codes:
            return translation
        present = {int(m.group(3)) for m in TAG.finditer(translation) if m.group(2) == "x"}
        missing = [n for n in self.codes if n not in present]
        if missing:  # each on its own word at the end, not glued to the last one
            translation = translation.rstrip() + "".join(f" {x(n)}" for n in missing)
        return restore(translation, self.codes, keep_other=True).text


def _char_key(ch: str) -> str:
    low = ch.lower()
    return low if len(low) == 1 else ch


_Trie = dict[str, "_Trie"]


def _trie_pattern(terms: Iterable[str]) -> str:
    """One regex for all terms: a trie (shared prefixes) so matching costs the same with 10 or
    10,000 terms; continuations are tried before a term may end (longest first), and each end
    carries its own word-boundary check."""
    end = ""  # marks "a term ends here" in the trie
    root: _Trie = {}
    for term in terms:
        node = root
        for ch in term:
            node = node.setdefault(_char_key(ch), {})
        node[end] = {}

    def emit(node: _Trie, last: str) -> str:
        alts = []
        for ch in sorted(k for k in node if k != end):
            piece = r"\s+" if ch == " " else re.escape(ch)
            alts.append(piece + emit(node[ch], ch))
        if end in node:
            alts.append(r"(?!\w)" if _WORD.match(last) else "")
        if len(alts) == 1:
            return alts[0]
        return "(?:" + "|".join(alts) + ")"

    firsts = []
    for ch in sorted(root):
        lead = r"(?<!\w)" if _WORD.match(ch) else ""
        piece = r"\s+" if ch == " " else re.escape(ch)
        firsts.append(lead + piece + emit(root[ch], ch))
    return "|".join(firsts) if firsts else r"(?!)"


class Matcher:
    """A glossary compiled for matching (built once per glossary version per process)."""

    def __init__(self, glossary: Glossary) -> None:
        self.glossary = glossary
        self.terms: dict[str, Term] = {}
        for src, tgt in glossary.entries.items():
            self.terms[term_key(src)] = Term(src, tgt, protected=False)
        for t in glossary.protected:
            self.terms[term_key(t)] = Term(t, t, protected=True)
        sources = [t.source for t in self.terms.values()]
        self.pattern = re.compile(_trie_pattern(sources), re.IGNORECASE)

    def find(self, text: str) -> list[tuple[int, int, Term]]:
        """Every match ``(start, end, term)`` in order, outside tags and placeholders."""
        found: list[tuple[int, int, Term]] = []
        gaps: list[tuple[int, int]] = []
        pos = 0
        for m in _SKIP.finditer(text):
            gaps.append((pos, m.start()))
            pos = m.end()
        gaps.append((pos, len(text)))
        for start, end in gaps:
            if start == end:
                continue
            for m in self.pattern.finditer(text, start, end):
                term = self.terms.get(term_key(m.group(0)))
                if term is not None:
                    found.append((m.start(), m.end(), term))
        return found

    def protect(self, text: str) -> Protected:
        """``text`` with every match replaced by ``<xN/>``, N above the segment's own tags."""
        matches = self.find(text)
        if not matches:
            return Protected(text)
        n = max((int(m.group(3)) for m in TAG.finditer(text)), default=0)
        out: list[str] = []
        codes: dict[int, Code] = {}
        placed: list[Placed] = []
        pos = 0
        for start, end, term in matches:
            n += 1
            replacement = term.target
            matched = text[start:end]
            if not term.protected and matched[:1].isupper() and not term.source[:1].isupper():
                replacement = replacement[:1].upper() + replacement[1:]
            out += [text[pos:start], x(n)]
            codes[n] = Code(replacement)
            placed.append(Placed(n, term, replacement))
            pos = end
        out.append(text[pos:])
        return Protected("".join(out), codes, placed)


_matchers: OrderedDict[tuple[str, str], Matcher] = OrderedDict()
_matchers_lock = threading.Lock()


# --- storage -----------------------------------------------------------------------------------
# Create atomically, refusing an owner past its glossary limit.
_CREATE = """
-- KEYS: glossary hash, terms, owner index   ARGV: max per owner, created_at, id, terms json,
--        then hash field/value pairs -> 1 created, 0 over the limit
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 5))
redis.call('SET', KEYS[2], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
return 1
"""

# Hide at once, keep the terms for jobs already accepted: 1 deleted, 0 no such glossary.
_DELETE = """
-- KEYS: glossary hash, terms, owner index   ARGV: id, retention seconds
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HGET', KEYS[1], 'deleted') == '1' then
  return 0
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[1], 'deleted', '1')
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[2]))
return 1
"""

_INFO_FIELDS = tuple(GlossaryInfo.model_fields)


def visible(info: GlossaryInfo, owner: str) -> bool:
    """A glossary is usable only by the key that made it ('' owner: the API runs without
    keys, and every glossary is visible)."""
    return not owner or info.owner == owner


class GlossaryStore:
    """Glossaries on the durable Redis (``MT_REDIS_URL``); ``r`` must decode responses."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r
        self._create = r.register_script(_CREATE)
        self._delete = r.register_script(_DELETE)

    def create(self, draft: Glossary, *, owner: str, max_per_owner: int) -> Glossary:
        """Store a :func:`validate`-d glossary under a new id for ``owner``."""
        g = draft.model_copy(
            update={"id": secrets.token_hex(16), "owner": owner, "created_at": time.time()}
        )
        fields: list[str] = []
        for name in _INFO_FIELDS:
            fields += [name, str(getattr(g, name))]
        terms = json.dumps({"entries": g.entries, "protected": g.protected}, ensure_ascii=False)
        ok = self._create(
            keys=[keys.glossary(g.id), keys.glossary_terms(g.id), keys.glossaries(owner)],
            args=[max_per_owner, repr(g.created_at), g.id, terms, *fields],
        )
        if not ok:
            raise InvalidInput(
                f"this key has {max_per_owner} glossaries, the most it may keep "
                "(MT_GLOSSARY_MAX_PER_KEY); delete one first"
            )
        return g

    def get(self, glossary_id: str) -> GlossaryInfo | None:
        """A live glossary's metadata (None: none, or deleted)."""
        raw = self.r.hgetall(keys.glossary(glossary_id))
        if not raw or raw.get("deleted") == "1":
            return None
        return GlossaryInfo.model_validate({k: raw[k] for k in _INFO_FIELDS if k in raw})

    def get_full(self, glossary_id: str) -> Glossary | None:
        """A live glossary with its terms (None: none, or deleted)."""
        info = self.get(glossary_id)
        if info is None:
            return None
        return self._with_terms(info)

    def _with_terms(self, info: GlossaryInfo) -> Glossary | None:
        raw = self.r.get(keys.glossary_terms(info.id))
        if raw is None:
            return None
        terms = json.loads(raw)
        return Glossary(**info.model_dump(), entries=terms["entries"], protected=terms["protected"])

    def list_for(self, owner: str) -> list[GlossaryInfo]:
        """The owner's live glossaries, oldest first."""
        ids = [str(i) for i in self.r.zrange(keys.glossaries(owner), 0, -1)]
        pipe = self.r.pipeline(transaction=False)
        for gid in ids:
            pipe.hgetall(keys.glossary(gid))
        out = []
        for raw in pipe.execute():
            if raw and raw.get("deleted") != "1":
                out.append(GlossaryInfo.model_validate({k: raw[k] for k in _INFO_FIELDS}))
        return out

    def delete(self, glossary_id: str, *, owner: str, retention_s: int) -> bool:
        """Hide a glossary now; its data expires after ``retention_s`` (jobs accepted before
        may still use it). False when there was no such live glossary."""
        return bool(
            self._delete(
                keys=[
                    keys.glossary(glossary_id),
                    keys.glossary_terms(glossary_id),
                    keys.glossaries(owner),
                ],
                args=[glossary_id, retention_s],
            )
        )

    def for_job(self, glossary_id: str, *, owner: str, source: str, target: str) -> GlossaryInfo:
        """The glossary a job names, checked: 422 when it is unknown to this key or made for
        another language pair."""
        info = self.get(glossary_id)
        if info is None or not visible(info, owner):
            raise UnknownGlossary(f"unknown glossary {glossary_id!r}")
        if (info.source_lang, info.target_lang) != (source, target):
            raise InvalidInput(
                f"glossary {glossary_id} is for {info.source_lang}->{info.target_lang}; "
                f"this job is {source}->{target}"
            )
        return info

    def matcher(self, glossary_id: str, version: str) -> Matcher:
        """The compiled glossary a chunk names (deleted ones too, while their data is kept),
        built once per version in this process. GlossaryNotFound when it is gone or its
        version differs."""
        key = (glossary_id, version)
        with _matchers_lock:
            found = _matchers.get(key)
            if found is not None:
                _matchers.move_to_end(key)
                return found
        raw = self.r.hgetall(keys.glossary(glossary_id))
        g = None
        if raw and raw.get("version") == version:
            g = self._with_terms(
                GlossaryInfo.model_validate({k: raw[k] for k in _INFO_FIELDS if k in raw})
            )
        if g is None:
            raise GlossaryNotFound(
                f"glossary {glossary_id} (version {version}) is gone; it was deleted longer "
                "than MT_RESULT_TTL_S ago"
            )
        built = Matcher(g)
        with _matchers_lock:
            _matchers[key] = built
            while len(_matchers) > _MATCHERS_KEPT:
                _matchers.popitem(last=False)
        return built
