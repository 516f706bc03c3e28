"""Plural forms as each platform's runtime selects them, and a source's plural cases made into
the target's.

Languages name their plural forms by category: English has ``one`` and ``other``, Russian
``one``/``few``/``many``/``other`` (``one`` covers 1, 21, 31…), Arabic all six, Japanese only
``other``. A plural message written for English carries English's categories; its translation
must carry the ones the app's runtime selects for the target, or the app shows the wrong form
(or nothing) for some numbers. Which those are depends on the runtime (the table is in
``docs/documents.md``, "Plurals"):

* Android, iOS (``.stringsdict``, ``.xcstrings``), ICU MessageFormat (JSON, ARB, YAML, XLIFF)
  and i18next (``Intl.PluralRules``) select CLDR's categories: :func:`categories`, from Babel's
  CLDR data;
* Rails (``rules="rails"``) selects rails-i18n's (:data:`RAILS_I18N`);
* gettext selects a form by the catalogue's ``Plural-Forms`` formula; a new catalogue gets the
  conventional one for its language (:func:`gettext_rule`, Weblate's language data).

:func:`for_target` is the one rule the formats with named categories apply:

* a category the target has and the source has is kept (translated from the source's case),
  unless the target's category covers more than one number (Russian ``one``: 1, 21, 31…;
  French ``one``: 0 and 1) and the source's case lacks a placeholder its ``other`` case has
  (``1 minute`` beside ``%d minutes``: the number spelled, or left out): then it is made from
  ``other``, so 21 never reads "1 minute" (Android lint's ImpliedQuantity);
* a category the target has and the source lacks is made from the source's ``other`` case (its
  ``#`` or ``%d`` kept: the number is written, so the wording holds for any count);
* a category the source has and the target lacks is dropped;
* an *explicit* form the runtime reads in every language (ICU's ``=0``/``=1``, the ``zero`` of
  ``.stringsdict``, ``.xcstrings``, i18next and Rails) stays as it is.

A language the rules do not know keeps the source's categories (nothing is invented).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from decimal import Decimal
from functools import lru_cache
from typing import Literal, TypeVar

from babel import Locale, UnknownLocaleError
from babel.messages.plurals import get_plural
from weblate_language_data.languages import LANGUAGES

from mtfleet.formats.base import Unit

#: CLDR's categories, in CLDR's order.
CATEGORIES = ("zero", "one", "two", "few", "many", "other")

#: Whose rules a runtime follows: CLDR's, or rails-i18n's.
Rules = Literal["cldr", "rails"]

#: rails-i18n's plural keys, from its ``rails/pluralization/*.rb`` (svenfuchs/rails-i18n at
#: 34be758a, June 2026; a region's file, ``es-419`` or ``pt-BR``, has its language's keys). It
#: is a Ruby gem, so its keys are written here. A language it does not list gets Ruby I18n's
#: default rule: ``one`` for 1, ``other`` for every other count.
RAILS_I18N: dict[tuple[str, ...], str] = {
    ("zero", "one", "two", "few", "many", "other"): "ar",
    ("one", "few", "many", "other"): "be pl ru uk",
    ("one", "two", "few", "other"): "gd hsb sl",
    ("one", "few", "other"): "bs cs hr lt ro sk sr",
    ("one", "other"): "bg bn ca da de el en eo es et eu fi fr fy gl he hi hu is it ka kk lv mg mk "
    "ml mn mr nb ne nl nn oc or pa pt sc st sv sw ta tl tr ur",
    ("other",): "az fa id ja km kn ko lo ms pap th vi wo zh",
}
_RAILS = {lang: keys for keys, langs in RAILS_I18N.items() for lang in langs.split()}

#: gettext's conventional formula per language: (nplurals, plural expression), from Weblate's
#: language data (the ``weblate-language-data`` package, as Weblate and translate-toolkit give
#: them: Spanish, French, Italian and Portuguese two forms, as their catalogues have, where
#: CLDR adds a ``many`` for millions).
_GETTEXT = {code: (n, expr) for code, _, n, expr in LANGUAGES}

#: The numbers a category is tried on, to tell whether it covers one number or more.
_SAMPLES = (
    *(Decimal(n) for n in range(1001)),
    *(Decimal(n) for n in (10_000, 100_000, 1_000_000, 2_000_000)),
    *(Decimal(f"{n}.{d}") for n in range(31) for d in (0, 5)),
)

#: A code that stands for a value (``%d``, ``%1$s``, ``{{count}}``, ``%{count}``, ``{0}``, ICU's
#: ``#``), not markup, an escape or an entity.
_VALUE_CODE = re.compile(r"[%{#$]")

T = TypeVar("T")


def placeholders(unit: Unit | None) -> frozenset[str]:
    """The standalone codes of ``unit`` that stand for a value: what a plural case writes its
    number with (a unit-less case writes none)."""
    if unit is None:
        return frozenset()
    return frozenset(
        c.start
        for c in unit.codes.values()
        if c.end is None and _VALUE_CODE.search(c.start) and not c.start.startswith("&")
    )


def _locale(lang: str) -> Locale | None:
    tag = lang.replace("-", "_")
    for candidate in (tag, tag.split("_")[0]):
        try:
            return Locale.parse(candidate)
        except (UnknownLocaleError, ValueError):
            continue
    return None


def categories(
    lang: str, *, ordinal: bool = False, rules: Rules = "cldr"
) -> tuple[str, ...] | None:
    """The plural categories ``lang``'s runtime selects (cardinal, or ``ordinal`` for ICU's
    ``selectordinal`` and i18next's ``_ordinal_`` keys), in CLDR's order: CLDR's, or with
    ``rules="rails"`` rails-i18n's. None for a language CLDR does not know."""
    if rules == "rails":
        return _RAILS.get(lang.replace("_", "-").split("-")[0].lower(), ("one", "other"))
    loc = _locale(lang)
    if loc is None:
        return None
    tags = (loc.ordinal_form if ordinal else loc.plural_form).tags | {"other"}
    return tuple(c for c in CATEGORIES if c in tags)


@lru_cache(maxsize=256)
def _single(lang: str, ordinal: bool) -> frozenset[str]:
    """The CLDR categories of ``lang`` that cover a single number (English ``one``: 1; Arabic
    ``zero``, ``one``, ``two``), tried on integers and decimals."""
    loc = _locale(lang)
    if loc is None:
        return frozenset()
    rule = loc.ordinal_form if ordinal else loc.plural_form
    numbers: dict[str, set[Decimal]] = defaultdict(set)
    for n in _SAMPLES:
        numbers[rule(n)].add(n)  # Decimal("1.0") == Decimal("1"): one number
    return frozenset(c for c, found in numbers.items() if len(found) == 1)


def gettext_rule(lang: str) -> tuple[int, str]:
    """The conventional ``Plural-Forms`` of a gettext catalogue in ``lang``: (nplurals, plural
    expression), from Weblate's language data (``pt_BR`` before ``pt``); for a language it
    does not list, Babel's (CLDR's forms; two forms, ``n != 1``, for one CLDR does not know)."""
    tag = lang.replace("-", "_")
    for code in (tag, tag.split("_")[0].lower()):
        if code in _GETTEXT:
            return _GETTEXT[code]
    rule = get_plural(tag)
    return rule.num_plurals, rule.plural_expr


def for_target(
    cases: Sequence[tuple[str, T]],
    target: str | None,
    *,
    explicit: Callable[[str], bool] = lambda key: False,
    ordinal: bool = False,
    rules: Rules = "cldr",
    placeholders: Callable[[T], Collection[str]] | None = None,
) -> list[tuple[str, T]]:
    """``cases`` (a plural message's (key, value) pairs, in the file's order) with exactly the
    target's categories, under the rule in the module's docstring: a pair whose value is not
    the source's case of that key is made (from ``other``). ``placeholders`` gives a case's
    placeholders (the codes that write a number), to tell a case that spells its number; without
    it no kept case is remade. Keys that are neither categories nor ``explicit`` are kept as
    they are (a format's own forms). Kept cases stay in their order; made ones go before
    ``other`` (or last), in CLDR order. Without a target, or for a language CLDR does not know,
    the cases come back unchanged."""
    wanted = categories(target, ordinal=ordinal, rules=rules) if target else None
    if target is None or wanted is None:
        return list(cases)
    have = {key for key, _ in cases}
    other = next((v for k, v in cases if k == "other"), None)
    source_other = other
    if source_other is None:  # no "other" to make forms from: use the last category case
        source_other = next(
            (v for k, v in reversed(cases) if k in CATEGORIES), cases[-1][1] if cases else None
        )
    single = _single(target, ordinal)
    needs = set(placeholders(other)) if placeholders is not None and other is not None else set()

    def remade(key: str, value: T) -> bool:
        """A kept case that spells its number where the target's category covers several."""
        if placeholders is None or other is None or key == "other" or explicit(key):
            return False
        return key in CATEGORIES and key not in single and not needs <= set(placeholders(value))

    kept = [
        (k, other if other is not None and remade(k, v) else v)
        for k, v in cases
        if explicit(k) or k not in CATEGORIES or k in wanted
    ]
    if source_other is None:
        return kept
    made = [(c, source_other) for c in wanted if c not in have]
    at = next((i for i, (k, _) in enumerate(kept) if k == "other"), len(kept))
    return kept[:at] + made + kept[at:]
