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
a standalone inline tag ``<xN/>`` (:mod:`formats.base`) numbered above every tag already
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

from mtfleet.core.glossary.matching import PLACEHOLDER, Matcher, Placed, Protected, Term
from mtfleet.core.glossary.store import GlossaryStore, visible
from mtfleet.core.glossary.terms import (
    Glossary,
    GlossaryInfo,
    GlossaryNotFound,
    UnknownGlossary,
    content_version,
    normalize_term,
    parse_tsv,
    term_key,
    validate,
)

__all__ = [
    "PLACEHOLDER",
    "Glossary",
    "GlossaryInfo",
    "GlossaryNotFound",
    "GlossaryStore",
    "Matcher",
    "Placed",
    "Protected",
    "Term",
    "UnknownGlossary",
    "content_version",
    "normalize_term",
    "parse_tsv",
    "term_key",
    "validate",
    "visible",
]
