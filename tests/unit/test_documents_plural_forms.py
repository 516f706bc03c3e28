"""Plural forms as each platform's runtime selects them (issue 40 items 1 and 2): the table in
docs/documents.md ("Plurals") checked row by row against Babel's CLDR data and gettext's
conventional formulas (Weblate's language data), and every plural format rendered into Russian,
Polish, Arabic, Japanese and Spanish through the steps a document job takes (the format's
extract, the pipeline's plan and assemble, the format's render), with a source whose ``one``
spells its number ("1 minute"): the target's forms exactly, none missing, and a form that covers
more than one number (Russian ``one``: 1, 21, 31...) carries the count's placeholder."""

from __future__ import annotations

import json
import plistlib
import re

import polib
import pytest
import yaml
from babel import Locale
from lxml import etree
from weblate_language_data.languages import LANGUAGES

from mtfleet import formats as documents
from mtfleet.formats import plurals
from mtfleet.formats.pipeline import assemble, plan
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "documents"
DOCS = ROOT / "docs" / "documents.md"
TARGETS = ["ru", "pl", "ar", "ja", "es"]
ORDER = ("zero", "one", "two", "few", "many", "other")
WEBLATE = {code: (n, expr) for code, _, n, expr in LANGUAGES}


def translate(fmt_name: str, content: bytes, target: str, source: str = "en") -> bytes:
    """The document through a job's steps with an identity engine: every segment comes back
    as it was sent, so each form shows the source case it was made from."""
    fmt = documents.for_name(fmt_name)
    p = plan(fmt.extract(content), source)
    return fmt.render(content, assemble(p, list(p.segments)), target_lang=target)


def cldr(lang: str, *, ordinal: bool = False) -> tuple[str, ...]:
    loc = Locale.parse(lang)
    tags = (loc.ordinal_form if ordinal else loc.plural_form).tags | {"other"}
    return tuple(c for c in ORDER if c in tags)


def several(lang: str, category: str) -> bool:
    """The target's CLDR category covers more than one number (Russian ``one``: 1, 21...)."""
    rule = Locale.parse(lang).plural_form
    return sum(rule(n) == category for n in range(200)) > 1


# --- the table -----------------------------------------------------------------------------------


def table() -> dict[str, dict[str, str]]:
    """The docs' plural table: runtime (first cell, up to its first space) -> language -> cell."""
    text = DOCS.read_text("utf-8")
    lines = text[text.index("<!-- plural-table") :].splitlines()[1:]
    rows = [ln for ln in lines[: lines.index("")] if ln.startswith("|")]
    head = [c.strip() for c in rows[0].strip("|").split("|")]
    out = {}
    for row in rows[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        out[cells[0].split()[0]] = dict(zip(head[2:], cells[2:], strict=True))
    return out


def test_the_table_names_each_runtime_and_the_five_languages_and_french() -> None:
    rows = table()
    assert list(rows) == ["Android", "iOS", "ICU", "i18next", "gettext", "Rails"]
    assert all(list(cells) == [*TARGETS, "fr"] for cells in rows.values())


@pytest.mark.parametrize("runtime", ["Android", "iOS", "ICU", "i18next"])
def test_the_cldr_rows_are_babels_cldr_categories(runtime: str) -> None:
    for lang, cell in table()[runtime].items():
        assert tuple(cell.split()) == cldr(lang) == plurals.categories(lang), (runtime, lang)


def test_the_gettext_row_is_the_conventional_formula_and_agrees_with_cldr_below_a_million() -> None:
    import gettext

    for lang, cell in table()["gettext"].items():
        count, expr = WEBLATE[lang]
        assert cell == f"nplurals={count}", lang
        assert plurals.gettext_rule(lang) == (count, expr)
        # two numbers share a gettext form exactly when they share a CLDR category, for every
        # integer below a million: the conventional formulas leave out only CLDR's millions
        form, rule = gettext.c2py(expr), Locale.parse(lang).plural_form
        numbers = range(0, 1200)
        others = (0, 1, 2, 5, 21, 22, 25, 101, 111)
        same = {(form(a) == form(b)) == (rule(a) == rule(b)) for a in numbers for b in others}
        assert same == {True}, lang
    assert WEBLATE["es"][0] == len(cldr("es")) - 1  # CLDR's many (millions) is not gettext's


def test_the_rails_row_is_rails_i18n_cldr_without_the_millions() -> None:
    for lang, cell in table()["Rails"].items():
        rails = plurals.categories(lang, rules="rails")
        assert tuple(cell.split()) == rails, lang
        rule = Locale.parse(lang).plural_form
        millions = {n for n in range(0, 3_000_001, 1000) if rule(n) == "many"}
        drop = {"many"} if millions and all(n % 1_000_000 == 0 for n in millions) else set()
        assert rails == tuple(c for c in cldr(lang) if c not in drop), lang
    assert plurals.categories("tlh", rules="rails") == ("one", "other")  # Ruby I18n's default


# --- every plural format, five targets -----------------------------------------------------------

ANDROID = b"""<?xml version="1.0" encoding="utf-8"?>
<resources>
    <plurals name="minutes">
        <item quantity="one">1 minute</item>
        <item quantity="other">%d minutes</item>
    </plurals>
</resources>
"""

STRINGSDICT = b"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
    <key>%d minutes</key>
    <dict>
        <key>NSStringLocalizedFormatKey</key>
        <string>%#@minutes@</string>
        <key>minutes</key>
        <dict>
            <key>NSStringFormatSpecTypeKey</key>
            <string>NSStringPluralRuleType</string>
            <key>NSStringFormatValueTypeKey</key>
            <string>d</string>
            <key>one</key>
            <string>1 minute</string>
            <key>other</key>
            <string>%d minutes</string>
        </dict>
    </dict>
</dict>
</plist>
"""

XCSTRINGS = json.dumps(
    {
        "sourceLanguage": "en",
        "strings": {
            "%lld minutes": {
                "localizations": {
                    "en": {
                        "variations": {
                            "plural": {
                                "one": {"stringUnit": {"state": "new", "value": "1 minute"}},
                                "other": {"stringUnit": {"state": "new", "value": "%lld minutes"}},
                            }
                        }
                    }
                }
            }
        },
        "version": "1.0",
    },
    indent=2,
).encode()

ICU_JSON = b'{"minutes": "{n, plural, one {1 minute} other {# minutes}}"}\n'
ARB = b'{\n  "@@locale": "en",\n  "minutes": "{n, plural, one {1 minute} other {{n} minutes}}"\n}\n'
I18NEXT = b'{\n  "minutes_one": "1 minute",\n  "minutes_other": "{{count}} minutes"\n}\n'
RAILS = b'en:\n  minutes:\n    one: "1 minute"\n    other: "%{count} minutes"\n'
PO = b"""msgid ""
msgstr ""
"Language: en\\n"
"Content-Type: text/plain; charset=UTF-8\\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\\n"

#, c-format
msgid "One minute"
msgid_plural "%d minutes"
msgstr[0] ""
msgstr[1] ""
"""


def _icu_cases(message: str) -> dict[str, str]:
    return dict(re.findall(r"(\S+) \{((?:[^{}]|\{\w+\})*)\}", message.split(",", 2)[2]))


def forms(fmt: str, out: bytes, target: str) -> dict[str, str]:
    """The plural's cases in the rendered file: category -> text."""
    if fmt == "android":
        items = etree.fromstring(out).iter("item")
        return {i.get("quantity"): i.text for i in items}
    if fmt == "stringsdict":
        rule = plistlib.loads(out)["%d minutes"]["minutes"]
        return {k: v for k, v in rule.items() if k in ORDER}
    if fmt == "xcstrings":
        loc = json.loads(out)["strings"]["%lld minutes"]["localizations"][target]
        return {k: v["stringUnit"]["value"] for k, v in loc["variations"]["plural"].items()}
    if fmt in ("json", "arb"):
        return _icu_cases(json.loads(out)["minutes"])
    if fmt == "i18next":
        return {k.split("_", 1)[1]: v for k, v in json.loads(out).items()}
    if fmt == "yaml":
        return yaml.safe_load(out)[target]["minutes"]
    raise AssertionError(fmt)


CASES = [
    ("android", ANDROID, "1 minute", "%d minutes"),
    ("stringsdict", STRINGSDICT, "1 minute", "%d minutes"),
    ("xcstrings", XCSTRINGS, "1 minute", "%lld minutes"),
    ("json", ICU_JSON, "1 minute", "# minutes"),
    ("arb", ARB, "1 minute", "{n} minutes"),
    ("i18next", I18NEXT, "1 minute", "{{count}} minutes"),
    ("yaml", RAILS, "1 minute", "%{count} minutes"),
]
RUNTIME = {
    "android": "Android",
    "stringsdict": "iOS",
    "xcstrings": "iOS",
    "json": "ICU",
    "arb": "ICU",
    "i18next": "i18next",
    "yaml": "Rails",
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("fmt", "content", "one", "other"), CASES, ids=[c[0] for c in CASES])
def test_every_plural_format_gets_the_forms_its_runtime_selects(
    fmt: str, content: bytes, one: str, other: str, target: str
) -> None:
    out = translate("json" if fmt == "i18next" else fmt, content, target)
    got = forms(fmt, out, target)
    assert tuple(c for c in ORDER if c in got) == tuple(table()[RUNTIME[fmt]][target].split())
    for category, text in got.items():
        if category == "one" and not several(target, "one"):
            assert text == one, (category, text)  # 1 alone: the source's own "1 minute"
        else:  # covers many numbers: the count's placeholder, made from other
            assert text == other, (category, text)


@pytest.mark.parametrize("target", TARGETS)
def test_a_po_plural_gets_the_conventional_forms_and_a_singular_only_where_it_fits(
    target: str,
) -> None:
    po = polib.pofile(translate("po", PO, target).decode())
    count, expr = WEBLATE[target]
    assert po.metadata["Plural-Forms"] == f"nplurals={count}; plural={expr};"
    assert f"nplurals={count}" == table()["gettext"][target]
    import gettext

    form = gettext.c2py(expr)
    (entry,) = po
    for i, text in entry.msgstr_plural.items():
        numbers = {n for n in range(1200) if form(n) == i}
        # "One minute" spells its number: only a form for 1 alone may read so
        assert text == ("One minute" if numbers == {1} else "%d minutes"), (i, numbers)


def test_a_po_catalogue_already_in_the_target_language_keeps_its_own_plural_forms() -> None:
    own = (
        "nplurals=4; plural=(n==1) ? 0 : (n%10>=2 && n%10<=4) && (n%100<12 || n%100>14) ? 1"
        " : n!=0 ? 2 : 3;"
    )
    content = PO.replace(b"Language: en", b"Language: pl").replace(
        b"nplurals=2; plural=(n != 1);", own.encode()
    )
    po = polib.pofile(translate("po", content, "pl").decode())
    assert po.metadata["Plural-Forms"] == own
    assert len(po[0].msgstr_plural) == 4


def test_for_target_remakes_a_spelled_case_only_where_the_category_covers_several_numbers() -> None:
    cases = [("one", "1 file"), ("other", "%d files")]
    writes = lambda text: set(re.findall(r"%d", text))  # noqa: E731
    assert dict(plurals.for_target(cases, "ru", placeholders=writes))["one"] == "%d files"
    assert dict(plurals.for_target(cases, "fr", placeholders=writes))["one"] == "%d files"
    assert dict(plurals.for_target(cases, "pl", placeholders=writes))["one"] == "1 file"
    assert dict(plurals.for_target(cases, "es", placeholders=writes))["one"] == "1 file"
    assert (
        dict(plurals.for_target([("one", "%d file"), cases[1]], "ru", placeholders=writes))["one"]
        == "%d file"
    )  # it writes the number: kept
    es = plurals.for_target(cases, "es", rules="rails", placeholders=writes)
    assert [k for k, _ in es] == ["one", "other"]  # rails-i18n: no CLDR "many" for millions


# --- i18next suffix plurals ---------------------------------------------------------------------


def test_i18next_plurals_gain_and_lose_keys_and_ordinals_get_ordinal_categories() -> None:
    content = json.dumps(
        {
            "files_zero": "No files",
            "files_one": "{{count}} file",
            "files_other": "{{count}} files",
            "place_ordinal_one": "{{count}}st",
            "place_ordinal_two": "{{count}}nd",
            "place_ordinal_few": "{{count}}rd",
            "place_ordinal_other": "{{count}}th",
            "cardinality_one": "Cardinality (one)",
            "cardinality_many": "Cardinality (many)",
        },
        indent=2,
    ).encode()
    for target in TARGETS:
        out = json.loads(translate("json", content, target))
        files = [k[len("files_") :] for k in out if k.startswith("files_")]
        assert set(files) == {"zero", *cldr(target)}, target  # _zero: i18next reads it for 0
        place = [k[len("place_ordinal_") :] for k in out if k.startswith("place_ordinal_")]
        assert set(place) == set(cldr(target, ordinal=True)), target
        # keys that only end like a category (no "_other" beside them) are ordinary keys
        assert out["cardinality_one"] == "Cardinality (one)"
        assert out["cardinality_many"] == "Cardinality (many)"
        for key, value in out.items():
            if key.startswith("files_") and key != "files_zero":
                assert value == ("{{count}} file" if key == "files_one" else "{{count}} files")


def test_a_japanese_i18next_file_keeps_only_other_and_stays_valid_json() -> None:
    content = b'{\n  "a": {\n    "x_other": "{{count}} x",\n    "x_one": "1 x"\n  },\n'
    content += b'  "b": "B"\n}\n'
    out = translate("json", content, "ja")
    assert json.loads(out) == {"a": {"x_other": "{{count}} x"}, "b": "B"}
    assert out == b'{\n  "a": {\n    "x_other": "{{count}} x"\n  },\n  "b": "B"\n}\n'


# --- real files ---------------------------------------------------------------------------------


def _spec(text: str) -> set[str]:
    return set(re.findall(r"%(?:\d+\$)?[a-z]", text))


def test_newpipe_to_russian_never_says_one_where_21_reads_it() -> None:
    content = (FIXTURES / "android" / "newpipe_strings.xml").read_bytes()
    out = etree.fromstring(translate("android", content, "ru"))
    groups = list(out.iter("plurals"))
    assert len(groups) == 14
    for group in groups:
        items = {i.get("quantity"): i.text or "" for i in group.iter("item")}
        assert set(items) == {"one", "few", "many", "other"}, group.get("name")
        for q, text in items.items():  # each form covers many numbers: it writes the count
            assert _spec(text) == _spec(items["other"]), (group.get("name"), q, text)
    finished = next(g for g in groups if g.get("name") == "download_finished_notification")
    assert next(i.text for i in finished.iter("item")) == "%s downloads finished"


@pytest.mark.parametrize(("target", "count"), [("ru", 3), ("es", 2), ("ja", 1), ("ar", 6)])
def test_gnome_calculator_plural_entries_get_the_targets_gettext_forms(
    target: str, count: int
) -> None:
    content = (FIXTURES / "po" / "gnome-calculator_de.po").read_bytes()
    po = polib.pofile(translate("po", content, target, source="en").decode())
    assert po.metadata["Plural-Forms"].startswith(f"nplurals={count};")
    entries = [e for e in po if e.msgid_plural and not e.obsolete]
    assert len(entries) == 2
    for e in entries:
        assert sorted(e.msgstr_plural) == list(range(count))
        singular_form = {"ru": 0, "es": 0, "ar": 1}.get(target)  # the form 1 falls in
        for i, text in e.msgstr_plural.items():
            assert text == (e.msgid if i == singular_form else e.msgid_plural), (i, text)


def test_lemmy_to_russian_and_japanese() -> None:
    content = (FIXTURES / "json" / "lemmy_frontend_en.json").read_bytes()
    ru = json.loads(translate("json", content, "ru"))
    assert {k: v for k, v in ru.items() if k.startswith("max_invites_allowed_")} == {
        f"max_invites_allowed_{c}": "{{count}} invites allowed"
        for c in ("one", "few", "many", "other")
    }
    ja = json.loads(translate("json", content, "ja"))
    assert [k for k in ja if k.startswith("max_invites_allowed_")] == ["max_invites_allowed_other"]
    source = json.loads(content)
    assert {k for k in ja} == {k for k in source} - {"max_invites_allowed_one"}


def test_rails_activemodel_to_russian_writes_the_count_in_every_form() -> None:
    content = (FIXTURES / "yaml" / "rails_activemodel_en.yml").read_bytes()
    messages = yaml.safe_load(translate("yaml", content, "ru"))["ru"]["errors"]["messages"]
    plural = {k: v for k, v in messages.items() if isinstance(v, dict)}
    assert set(plural) == {"too_long", "too_short", "wrong_length"}
    for name, cases in plural.items():
        assert set(cases) == {"one", "few", "many", "other"}, name
        assert all("%{count}" in text for text in cases.values()), (name, cases)
