"""Plural categories of a target language, from CLDR (through Babel), and a source's plural
cases made into the target's.

Languages name their plural forms by CLDR category: English has ``one`` and ``other``, Russian
``one``/``few``/``many``/``other`` (``one`` covers 1, 21, 31…), Arabic all six, Japanese only
``other``. A plural message written for English (an ICU ``plural``, an Android ``<plurals>``, a
``.stringsdict`` or ``.xcstrings`` variation) carries English's categories; its translation
must carry the target's, or the app shows the wrong form (or nothing) for some numbers.

:func:`for_target` is the one rule every format applies:

* a category the target has and the source has is kept (translated from the source's case);
* a category the target has and the source lacks is made from the source's ``other`` case (its
  ``#`` or ``%d`` kept: the number is written, so the wording holds for any count);
* a category the source has and the target lacks is dropped;
* an *explicit* form the format keeps in every language (ICU's ``=0``/``=1``, the ``zero`` of
  ``.stringsdict`` and ``.xcstrings``) stays as it is.

The categories come from Babel's CLDR data, never a table of our own. A language CLDR does not
know keeps the source's categories (nothing is invented).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from babel import Locale, UnknownLocaleError

#: CLDR's categories, in CLDR's order.
CATEGORIES = ("zero", "one", "two", "few", "many", "other")

T = TypeVar("T")


def _locale(lang: str) -> Locale | None:
    tag = lang.replace("-", "_")
    for candidate in (tag, tag.split("_")[0]):
        try:
            return Locale.parse(candidate)
        except (UnknownLocaleError, ValueError):
            continue
    return None


def categories(lang: str, *, ordinal: bool = False) -> tuple[str, ...] | None:
    """The CLDR plural categories of ``lang`` (cardinal, or ``ordinal`` for ICU's
    ``selectordinal``), in CLDR's order; None for a language CLDR does not know."""
    loc = _locale(lang)
    if loc is None:
        return None
    tags = (loc.ordinal_form if ordinal else loc.plural_form).tags | {"other"}
    return tuple(c for c in CATEGORIES if c in tags)


def for_target(
    cases: Sequence[tuple[str, T]],
    target: str | None,
    *,
    explicit: Callable[[str], bool] = lambda key: False,
    ordinal: bool = False,
) -> list[tuple[str, T]]:
    """``cases`` (a plural message's (key, value) pairs, in the file's order) with exactly the
    target's categories, under the rule in the module's docstring. Keys that are neither CLDR
    categories nor ``explicit`` are kept as they are (a format's own forms). Kept cases stay in
    their order; made ones go before ``other`` (or last), in CLDR order. Without a target, or
    for a language CLDR does not know, the cases come back unchanged."""
    wanted = categories(target, ordinal=ordinal) if target else None
    if wanted is None:
        return list(cases)
    have = {key for key, _ in cases}
    source_other = next((v for k, v in cases if k == "other"), None)
    if source_other is None:  # no "other" to make forms from: use the last category case
        source_other = next(
            (v for k, v in reversed(cases) if k in CATEGORIES), cases[-1][1] if cases else None
        )
    kept = [(k, v) for k, v in cases if explicit(k) or k not in CATEGORIES or k in wanted]
    if source_other is None:
        return kept
    made = [(c, source_other) for c in wanted if c not in have]
    at = next((i for i, (k, _) in enumerate(kept) if k == "other"), len(kept))
    return kept[:at] + made + kept[at:]
