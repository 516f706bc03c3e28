"""Xcode String Catalogs (formats/xcstrings.py): the source language's strings are the
units, a translation becomes the target's localization, written as Xcode writes it.

Outputs are read back with ``json`` and compared with the input catalogue; plural variations are
checked against Babel's CLDR categories, and Xcode's layout against Python's own ``json.dumps``
with Xcode's separators (which reproduces a file Xcode wrote byte for byte, as the first test
shows), independently of the format's code. Fixtures: a real catalogue (English and Hungarian,
a ``""`` key, a plural with ``zero``, Markdown, ``stale``/``manual`` entries), a hand-written
one in Xcode's style (substitutions with ``%arg``, device variations, an existing ``ru``
localization, ``shouldTranslate: false``, an empty entry, Markdown links and code spans), one
a script wrote (4-space indent, ``": "``, ``\\uXXXX`` and ``\\/`` escapes, a final newline), and
a catalogue with nothing but a key."""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from babel import Locale

from mtfleet.formats.base import TAG, DocumentError, Unit, restore
from mtfleet.formats.xcstrings import XcstringsFormat

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents" / "xcstrings"
FILES = sorted(FIXTURES.iterdir())
REAL = FIXTURES / "ultimate-portfolio-app_Localizable.xcstrings"
FEATURES = FIXTURES / "Features.xcstrings"
SCRIPTED = FIXTURES / "Scripted.xcstrings"
FMT = XcstringsFormat()
TARGETS = ["ru", "ar", "ja", "pl"]
#: Apple's specifiers and a substitution's %arg, written here independently of the format's.
PLACEHOLDER = re.compile(r"%(?:\d+\$)?(?:#@\w+@|arg|l{0,2}[@dDuUxXoOfeEgGcCsSp]|%)")


def cldr(lang: str) -> set[str]:
    return set(Locale.parse(lang).plural_form.tags) | {"other"}


def several(lang: str, category: str) -> bool:
    """Whether the target's CLDR category covers more than one number (Russian ``one``: 1,
    21, 31…): a case that spells its number is then made from ``other``."""
    rule = Locale.parse(lang.replace("-", "_")).plural_form
    return sum(rule(n) == category for n in range(200)) > 1


def spells(case: Any, other: Any) -> bool:
    """Whether a plural case lacks a placeholder its ``other`` has (``1 issue``)."""
    return not set(PLACEHOLDER.findall(json.dumps(other))) <= set(
        PLACEHOLDER.findall(json.dumps(case))
    )


def xcode(data: Any) -> str:
    """JSON as Xcode writes a String Catalog."""
    return json.dumps(data, indent=2, separators=(",", " : "), ensure_ascii=False)


def shout(text: str) -> str:
    """Upper-case the text outside the tags."""
    pos, out = 0, []
    for m in TAG.finditer(text):
        out += [text[pos : m.start()].upper(), m.group(0)]
        pos = m.end()
    return "".join(out) + text[pos:].upper()


def loud(value: str) -> str:
    """What ``shout`` makes of a source value: its text upper-case, placeholders and Markdown
    link targets as they were."""
    keep = re.compile(PLACEHOLDER.pattern + r"|\]\([^)]*\)|`[^`]*`")
    pos, out = 0, []
    for m in keep.finditer(value):
        out += [value[pos : m.start()].upper(), m.group(0)]
        pos = m.end()
    return "".join(out) + value[pos:].upper()


def source_strings(data: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(key, path in the localization, value) of each source string with text, in order."""
    src = data["sourceLanguage"]
    out: list[tuple[str, str, Any]] = []

    def walk(key: str, loc: dict[str, Any], path: str) -> None:
        for name, value in loc.items():
            if name == "stringUnit":
                out.append((key, f"{path}/stringUnit".lstrip("/"), value["value"]))
            elif name == "variations":
                for kind, cases in value.items():
                    for case, sub in cases.items():
                        walk(key, sub, f"{path}/variations/{kind}/{case}")
            elif name == "substitutions":
                for var, sub in value.items():
                    walk(key, sub, f"{path}/substitutions/{var}")

    for key, entry in data["strings"].items():
        if entry.get("shouldTranslate") is False:
            continue
        loc = entry.get("localizations", {}).get(src)
        if loc:
            walk(key, loc, "")
        else:
            out.append((key, "", key))
    return [(k, p, v) for k, p, v in out if PLACEHOLDER.sub("", v).strip()]


def at(loc: Any, path: str) -> Any:
    for part in path.split("/"):
        loc = loc[part]
    return loc


def source_text(unit: Unit) -> str:
    return restore(unit.text, unit.codes).text


def render(path: Path, target: str | None, translate: Any = shout) -> tuple[Any, Any, str]:
    content = path.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [translate(u.text) for u in units], target_lang=target).decode()
    return json.loads(content), json.loads(out), out


def test_python_writes_the_real_catalogue_as_xcode_did() -> None:
    """The premise of the layout checks below: Xcode's style is json.dumps's, with " : "."""
    text = REAL.read_text("utf-8")
    assert xcode(json.loads(text)) == text


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_identity_round_trip_is_byte_equal(path: Path) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    for u in units:  # each code appears exactly once as a tag
        assert sorted(int(m.group(3)) for m in TAG.finditer(u.text)) == sorted(
            n for n, c in u.codes.items() for _ in range(2 if c.paired else 1)
        )
    assert FMT.render(content, [u.text for u in units]) == content
    source = json.loads(content)["sourceLanguage"]
    assert FMT.render(content, [u.text for u in units], target_lang=source) == content
    assert FMT.extract(content) == units


@pytest.mark.parametrize("path", [REAL, FEATURES, SCRIPTED], ids=lambda p: p.name)
def test_the_units_are_the_source_strings_and_never_keys(path: Path) -> None:
    data = json.loads(path.read_bytes())
    units = FMT.extract(path.read_bytes())
    assert [source_text(u) for u in units] == [v for _, _, v in source_strings(data)]


def test_the_real_catalogue_units() -> None:
    data = json.loads(REAL.read_bytes())
    units = FMT.extract(REAL.read_bytes())
    texts = [source_text(u) for u in units]
    assert len(data["strings"]) == 76 and len(units) == 77  # "" has nothing; a plural has 3
    assert "" not in texts
    assert texts[2:5] == ["1 issue", "%lld issues", "No issues"]
    modified = units[0]
    assert modified.text == "<g1>Modified:</g1> <x2/>"  # Markdown bold paired, %@ a code
    assert [(c.start, c.end) for c in modified.codes.values()] == [("**", "**"), ("%@", None)]
    assert all(u.path for u in units)


def test_markdown_substitutions_and_device_variations_are_codes_and_units() -> None:
    units = {u.path: u for u in FMT.extract(FEATURES.read_bytes())}
    main = units["%lld photos in %lld albums"]
    assert [c.start for c in main.codes.values()] == ["%#@photos@", "%#@albums@"]
    arg = units["%lld photos in %lld albums/substitutions/photos/variations/plural/other"]
    assert arg.text == "<x1/> photos" and arg.codes[1].start == "%arg"
    link = units["Read the [privacy policy](https://example.com/privacy) and *accept* it."]
    assert link.text == "Read the <g1>privacy policy</g1> and <g2>accept</g2> it."
    code = units["Use `git pull` to **update**"]
    assert code.text == "Use <x1/> to <g2>update</g2>"
    assert "settings.sync/variations/device/mac" in units
    assert not any(p.startswith("%@ (%@)") for p in units)  # shouldTranslate: false


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("path", [REAL, FEATURES, SCRIPTED], ids=lambda p: p.name)
def test_pseudo_translation_fills_the_target_with_its_plural_categories(
    path: Path, target: str
) -> None:
    before, after, _ = render(path, target)
    src = before["sourceLanguage"]
    assert after["sourceLanguage"] == src and after.get("version") == before.get("version")
    assert list(after["strings"]) == list(before["strings"])  # keys: same, in order
    translated = {k for k, _, _ in source_strings(before)}
    for key, old in before["strings"].items():
        new = after["strings"][key]
        # everything but the target's localization is as it was
        assert {k: v for k, v in new.items() if k != "localizations"} == {
            k: v for k, v in old.items() if k != "localizations"
        }
        old_locs = old.get("localizations", {})
        new_locs = new.get("localizations", {})
        assert {k: v for k, v in new_locs.items() if k != target} == {
            k: v for k, v in old_locs.items() if k != target
        }
        if key not in translated:
            assert target not in new_locs or new_locs[target] == old_locs.get(target)
            continue
        loc = new_locs[target]
        assert list(new_locs) == sorted(new_locs, key=str.casefold)  # where Xcode puts it
        source = old_locs.get(src) or {"stringUnit": {"value": key}}
        check_localization(source, loc, target)


def check_localization(source: dict[str, Any], loc: dict[str, Any], target: str) -> None:
    strings = {"stringUnit", "variations", "substitutions"}
    assert set(loc) & strings == set(source) & strings
    if "stringUnit" in source:
        value = source["stringUnit"]["value"]
        unit = loc["stringUnit"]
        assert unit == {"state": "translated", "value": loud(value)}
        assert PLACEHOLDER.findall(unit["value"]) == PLACEHOLDER.findall(value)
    for kind, cases in source.get("variations", {}).items():
        made = loc["variations"][kind]
        if kind == "plural":
            assert set(made) == cldr(target) | (set(cases) & {"zero"}), target
        else:
            assert set(made) == set(cases)
        for case, sub in made.items():
            origin = cases.get(case, cases["other"])
            if kind == "plural" and case != "zero" and several(target, case):
                origin = cases["other"] if spells(origin, cases["other"]) else origin
            check_localization(origin, sub, target)
    for var, sub in source.get("substitutions", {}).items():
        made = loc["substitutions"][var]
        assert {k: v for k, v in made.items() if k != "variations"} == {
            k: v for k, v in sub.items() if k != "variations"
        }  # argNum, formatSpecifier
        check_localization(sub, made, target)


@pytest.mark.parametrize("target", ["ja", "ru", "de", "zh-Hans"])
def test_the_real_catalogue_is_written_as_xcode_writes_it(target: str) -> None:
    before, after, out = render(REAL, target)
    assert out == xcode(after)  # Xcode's separators, indent and key order, no final newline
    old = REAL.read_text("utf-8").splitlines()
    ops = difflib.SequenceMatcher(None, old, out.splitlines(), autojunk=False).get_opcodes()
    assert {op for op, *_ in ops} == {"equal", "insert"}  # not a line of the file changes
    assert (
        after["strings"]["%lld issues"]["localizations"]["hu"]
        == (before["strings"]["%lld issues"]["localizations"]["hu"])
    )
    assert "state" in out and '"new"' in out  # the English "other" keeps its state
    assert target not in after["strings"][""].get("localizations", {})


def test_a_script_written_catalogue_keeps_its_own_style() -> None:
    _, after, out = render(SCRIPTED, "pl", translate=lambda t: "«" + t + "»")
    assert out == json.dumps(after, indent=4, ensure_ascii=True).replace("/", "\\/") + "\n"
    items = after["strings"]["items"]["localizations"]["pl"]["variations"]["plural"]
    assert set(items) == cldr("pl")
    assert items["few"]["stringUnit"]["value"] == "«%d items»"  # made from "other"
    assert items["one"]["stringUnit"]["value"] == "«%d item»"


def test_an_existing_target_localization_is_replaced_and_equal_texts_left_alone() -> None:
    _, after, out = render(FEATURES, "RU")  # the catalogue's own spelling is used
    ru = after["strings"]["settings.sync"]["localizations"]["ru"]["variations"]["device"]
    assert set(ru) == {"iphone", "mac", "other"}
    assert ru["mac"]["stringUnit"] == {
        "state": "translated",
        "value": "SYNC WITH ICLOUD ON THIS MAC",
    }
    assert "RU" not in out
    # rendering the same translations again changes nothing (states included)
    content = out.encode()
    units = FMT.extract(content)
    assert FMT.render(content, [shout(u.text) for u in units], target_lang="ru") == content
    # a new language gets Apple's spelling
    _, pt, _ = render(FEATURES, "pt_br")
    assert "pt-BR" in pt["strings"]["settings.sync"]["localizations"]


def test_without_a_target_the_translation_is_the_source_languages() -> None:
    before, after, _ = render(REAL, None)
    en = after["strings"]["%lld issues"]["localizations"]["en"]["variations"]["plural"]
    assert en["other"]["stringUnit"] == {"state": "translated", "value": "%lld ISSUES"}
    assert (
        after["strings"]["Actions"]["localizations"]["hu"]
        == (before["strings"]["Actions"]["localizations"]["hu"])
    )
    units = FMT.extract(REAL.read_bytes())
    again = FMT.extract(json.dumps(after).encode())
    assert [u.text for u in again] == [shout(u.text) for u in units]


@pytest.mark.parametrize("path", [REAL, FEATURES, SCRIPTED], ids=lambda p: p.name)
def test_hostile_engine_output_still_gives_a_catalogue(path: Path) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    hostile = []
    for i, u in enumerate(units):
        tags = [m.group(0) for m in TAG.finditer(u.text)]
        if i % 3 == 0:
            hostile.append('</g1><x9/> "quoted" \\ & <b>' + "".join(tags) * 2)
        elif i % 3 == 1:
            hostile.append("<script>alert(1)</script>\x00\u2028 }, {")
        else:
            hostile.append("  ")
    for target in ("ar", None):
        out = FMT.render(content, hostile, target_lang=target)
        before, after = json.loads(content), json.loads(out)
        assert list(after["strings"]) == list(before["strings"])
        lang = target or before["sourceLanguage"]
        for key, path_in, value in source_strings(before):
            if path_in:  # the variation or unit kept every placeholder of its source
                got = at(after["strings"][key]["localizations"][lang], path_in)["value"]
                for p in set(PLACEHOLDER.findall(value)):
                    assert p in got
        assert FMT.extract(out)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not json",
        b"[]",
        b'{"strings": {}}',
        b'{"sourceLanguage": "en"}',
        b'{"sourceLanguage": 1, "strings": {}}',
        b'{"sourceLanguage": "en", "strings": []}',
        b'{"sourceLanguage": "en", "strings": {"a": "b"}}',
        b'{"sourceLanguage": "en", "strings": {"a": {"localizations": []}}}',
        b'{"sourceLanguage": "en", "strings": {"a": {}, "a": {}}}',
        b'{"sourceLanguage": "en", "strings": {"a": {"x": NaN}}}',
        b'{"sourceLanguage": "en", "strings": {}',
        b'{"sourceLanguage": "en", "strings": {"\xff": {}}}',
        '{"sourceLanguage": "en", "strings": {}}'.encode("utf-16"),
        b"[" * 100_000 + b"]" * 100_000,
        b'{"sourceLanguage": "en", "strings": {"a": ' + b"[" * 200 + b"]" * 200 + b"}}",
        b"<plist><dict/></plist>",
    ],
)
def test_what_is_not_a_string_catalog_is_refused(content: bytes) -> None:
    with pytest.raises(DocumentError):
        FMT.extract(content)
    with pytest.raises(DocumentError):
        FMT.render(content, [], target_lang="fr")


def test_any_cut_of_the_real_catalogue_is_read_or_refused_never_a_crash() -> None:
    content = REAL.read_bytes()
    for end in range(0, len(content), 487):
        try:
            units = FMT.extract(content[:end])
        except DocumentError:
            continue
        FMT.render(content[:end], [u.text for u in units], target_lang="ru")


def test_a_wrong_number_of_translations_is_the_callers_bug() -> None:
    with pytest.raises(ValueError, match="translations"):
        FMT.render(REAL.read_bytes(), ["x"], target_lang="fr")


def test_a_key_alone_is_its_own_source() -> None:
    content = (FIXTURES / "Localizable.xcstrings").read_bytes()
    units = FMT.extract(content)
    assert [u.text for u in units] == ["Add to cart"]
    out = json.loads(FMT.render(content, ["In den Warenkorb"], target_lang="de"))
    entry = out["strings"]["Add to cart"]
    assert entry["extractionState"] == "manual"
    assert entry["localizations"] == {
        "de": {"stringUnit": {"state": "translated", "value": "In den Warenkorb"}}
    }


def test_the_format_names_itself() -> None:
    assert FMT.name == "xcstrings"
    assert FMT.extensions == (".xcstrings",)
    assert FMT.media_type == "application/json"
    assert not FMT.binary
