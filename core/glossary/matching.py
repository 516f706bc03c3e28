"""How a glossary's terms are found in a segment and carried through the engine.

Every match becomes a standalone inline tag ``<xN/>`` numbered above every tag already in the
segment; :meth:`Protected.restore` puts the target term (entries) or the canonical protected
term back and leaves the document's own tags alone. Matching is case-insensitive, on word
boundaries (Unicode-aware), longest term first at a position, and never inside an inline tag, a
markup tag or a placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from mtfleet.core.glossary.terms import Glossary, term_key
from mtfleet.formats.base import TAG, Code, restore, x

#: Placeholders in UI strings: ``{{name}}``, ``{name}``, ``{0}``, ``{}``, ``%s``, ``%d``,
#: ``%(name)s``, ``%1$s``, ``%.2f``. Terms never match inside them; the output check counts them.
PLACEHOLDER = re.compile(
    r"\{\{\s*[\w.\-]+\s*\}\}|\{[\w.:\-]*\}|%(?:\([\w.\-]+\)|\d+\$)?[-+#0]?\d*(?:\.\d+)?[sdif@](?![A-Za-z])"
)
# What terms never match inside: inline tags, markup tags, placeholders.
_SKIP = re.compile(rf"{TAG.pattern}|</?[A-Za-z][^<>]*>|{PLACEHOLDER.pattern}")
_WORD = re.compile(r"\w")


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

    def protect(self, text: str, *, tags: bool = True) -> Protected:
        """``text`` with every match replaced by ``<xN/>``, N above the segment's own tags;
        with ``tags=False``, ``text`` as it is with its matches listed (``placed``, numbered
        0: no tag), for a model given the terms in its prompt
        (:func:`mtfleet.workers.prompts.terms_in_prompt`)."""
        matches = self.find(text)
        if not matches:
            return Protected(text)
        n = max((int(m.group(3)) for m in TAG.finditer(text)), default=0)
        out: list[str] = []
        codes: dict[int, Code] = {}
        placed: list[Placed] = []
        pos = 0
        for start, end, term in matches:
            replacement = term.target
            matched = text[start:end]
            if not term.protected and matched[:1].isupper() and not term.source[:1].isupper():
                replacement = replacement[:1].upper() + replacement[1:]
            if not tags:
                placed.append(Placed(0, term, replacement))
                continue
            n += 1
            out += [text[pos:start], x(n)]
            codes[n] = Code(replacement)
            placed.append(Placed(n, term, replacement))
            pos = end
        if not tags:
            return Protected(text, placed=placed)
        out.append(text[pos:])
        return Protected("".join(out), codes, placed)

    @staticmethod
    def listed(placed: Iterable[Placed]) -> tuple[tuple[str, str], ...]:
        """The terms ``placed`` names, once each, as (source, target) pairs for a prompt."""
        return tuple(dict.fromkeys((p.term.source, p.replacement) for p in placed))
