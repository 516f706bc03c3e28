"""The one plural rule every format applies (``formats/plurals.py``): the target's CLDR
categories exactly, explicit forms kept, missing categories made from ``other``."""

from __future__ import annotations

import pytest
from babel import Locale

from mtfleet.formats import plurals

EN = [("one", "# item"), ("other", "# items")]


@pytest.mark.parametrize("lang", ["ru", "ar", "ja", "pl", "fr", "cy", "pt-BR", "zh_Hant"])
def test_the_target_gets_exactly_its_cldr_categories(lang: str) -> None:
    want = set(Locale.parse(lang.replace("-", "_")).plural_form.tags) | {"other"}
    got = plurals.for_target(EN, lang)
    assert {k for k, _ in got} == want
    assert got[-1][0] == "other"  # made categories go before other
    for key, value in got:
        assert value == ("# item" if key == "one" else "# items")


def test_explicit_forms_stay_and_a_source_without_one_still_gets_every_category() -> None:
    cases = [("=0", "none"), ("=1", "one item"), ("other", "# items")]
    got = dict(plurals.for_target(cases, "ru", explicit=lambda k: k.startswith("=")))
    assert got == {
        "=0": "none",
        "=1": "one item",
        "one": "# items",  # Russian's one covers 21, 31...: from other, never from =1
        "few": "# items",
        "many": "# items",
        "other": "# items",
    }
    zero = [("zero", "no days"), ("one", "every day"), ("other", "every %d days")]
    got_ja = plurals.for_target(zero, "ja", explicit=lambda k: k == "zero")
    assert got_ja == [("zero", "no days"), ("other", "every %d days")]


def test_ordinals_and_unknown_languages() -> None:
    ordinal = plurals.for_target([("one", "#st"), ("other", "#th")], "en", ordinal=True)
    assert [k for k, _ in ordinal] == ["one", "two", "few", "other"]
    assert plurals.for_target(EN, "tlh") == EN  # a language CLDR does not know: unchanged
    assert plurals.for_target(EN, None) == EN
    assert plurals.categories("ar") == ("zero", "one", "two", "few", "many", "other")
