""".stringsdict plural rules (formats/stringsdict.py): every string value a unit,
keys and layout byte for byte, plural rules in exactly the target's CLDR categories.

Outputs are read back with ``plistlib`` (the standard library's property-list reader) and the
categories checked against Babel's CLDR data, independently of the format's code. Fixtures: a
real file (MacPass: tabs, DOCTYPE, ``zero`` forms, keys holding specifiers), a hand-written one
(two variables in one format, device and width variants, entities, CDATA, a comment, 4-space
indentation), and a rule whose only value is codes."""

from __future__ import annotations

import plistlib
import re
from pathlib import Path
from typing import Any

import pytest
from babel import Locale

from mtfleet.formats.base import TAG, DocumentError, Unit, restore
from mtfleet.formats.stringsdict import StringsdictFormat

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents" / "stringsdict"
FILES = sorted(FIXTURES.iterdir())
REAL = FIXTURES / "macpass_Localizable.stringsdict"
SHARED = FIXTURES / "Shared.stringsdict"
FMT = StringsdictFormat()
TARGETS = ["ru", "ar", "ja", "pl"]
CATEGORIES = {"zero", "one", "two", "few", "many", "other"}
STRUCTURAL = {"NSStringFormatSpecTypeKey", "NSStringFormatValueTypeKey"}
#: Apple's specifiers, written here independently of the format's own pattern.
SPECIFIER = re.compile(r"%(?:\d+\$)?(?:#@\w+@|l{0,2}[@dDuUxXoOfeEgGcCsSp]|%)")


def cldr(lang: str) -> set[str]:
    return set(Locale.parse(lang).plural_form.tags) | {"other"}


def several(lang: str, category: str) -> bool:
    """Whether the target's CLDR category covers more than one number (Russian ``one``: 1,
    21, 31…): a case that spells its number is then made from ``other``."""
    rule = Locale.parse(lang.replace("-", "_")).plural_form
    return sum(rule(n) == category for n in range(200)) > 1


def shout(text: str) -> str:
    """Upper-case the text outside the tags."""
    parts = re.split(f"({TAG.pattern})", text)
    out: list[str] = []
    skip = 0
    for part in parts:
        if skip:
            skip -= 1
            continue
        if TAG.fullmatch(part or "-"):
            out.append(part)
            skip = TAG.groups  # re.split also returns the pattern's groups
        else:
            out.append(part.upper())
    return "".join(out)


def loud(value: str) -> str:
    """What ``shout`` makes of a source value: its text upper-case, its specifiers as they were."""
    pos, out = 0, []
    for m in SPECIFIER.finditer(value):
        out += [value[pos : m.start()].upper(), m.group(0)]
        pos = m.end()
    return "".join(out) + value[pos:].upper()


def strings_of(plist: Any, path: str = "", top: bool = True) -> list[tuple[str, str]]:
    """(path, value) of every string value that is text, as an app's translator sees them."""
    out: list[tuple[str, str]] = []
    for key, value in plist.items():
        where = f"{path}/{key}" if path else key
        if isinstance(value, dict):
            out += strings_of(value, where, top=False)
        elif (
            isinstance(value, str)
            and (top or key not in STRUCTURAL)
            and SPECIFIER.sub("", value).strip()
        ):
            out.append((where, value))
    return out


def rules(plist: Any) -> list[tuple[str, dict[str, Any]]]:
    """Every plural rule's dict, with its path."""
    out: list[tuple[str, dict[str, Any]]] = []

    def walk(d: dict[str, Any], path: str) -> None:
        if d.get("NSStringFormatSpecTypeKey") == "NSStringPluralRuleType":
            out.append((path, d))
        for key, value in d.items():
            if isinstance(value, dict):
                walk(value, f"{path}/{key}")

    walk(plist, "")
    return out


def source_text(unit: Unit) -> str:
    return restore(unit.text, unit.codes).text


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_identity_round_trip_is_byte_equal(path: Path) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    for u in units:  # each code appears exactly once as a tag
        assert sorted(int(m.group(3)) for m in TAG.finditer(u.text)) == sorted(
            n for n, c in u.codes.items() for _ in range(2 if c.paired else 1)
        )
    out = FMT.render(content, [u.text for u in units])
    assert out == content
    assert FMT.extract(out) == units


def test_the_units_are_the_string_values_and_never_keys() -> None:
    for path in (REAL, SHARED):
        content = path.read_bytes()
        units = FMT.extract(content)
        expected = strings_of(plistlib.loads(content))
        assert [(u.path, source_text(u)) for u in units] == expected
        keys = set(re.findall(r"<key>([^<]*)</key>", content.decode()))
        assert not {source_text(u) for u in units} & keys
    real = FMT.extract(REAL.read_bytes())
    assert len(real) == 17
    assert all(not u.codes or set(c.start for c in u.codes.values()) == {"%ld"} for u in real)


def test_format_variables_and_specifiers_are_codes() -> None:
    units = {u.path: u for u in FMT.extract(SHARED.read_bytes())}
    fmt = units["%1$d files in %2$d folders/NSStringLocalizedFormatKey"]
    assert [c.start for c in fmt.codes.values()] == ["%1$#@files@", "%2$#@folders@"]
    assert "#@" not in TAG.sub("", fmt.text) and "&" in fmt.text  # &amp; decoded as text
    assert units["Welcome/NSStringVariableWidthRuleType/50"].codes[1].start == "%@"
    assert "%#@messages@" not in [source_text(u) for u in units.values()]  # only codes


@pytest.mark.parametrize("target", [*TARGETS, None])
@pytest.mark.parametrize("path", [REAL, SHARED], ids=lambda p: p.name)
def test_pseudo_translation_gives_the_targets_plural_categories(
    path: Path, target: str | None
) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [shout(u.text) for u in units], target_lang=target)
    before, after = plistlib.loads(content), plistlib.loads(out)
    assert list(after) == list(before)  # keys: same, in order
    for key in before:
        assert set(after[key]) == set(before[key])
    old_rules, new_rules = rules(before), rules(after)
    assert [p for p, _ in new_rules] == [p for p, _ in old_rules]
    for (where, old), (_, new) in zip(old_rules, new_rules, strict=True):
        for key in STRUCTURAL:
            assert new[key] == old[key], where
        had = set(old) & CATEGORIES
        want = had if target is None else cldr(target) | (had & {"zero"})
        assert set(new) & CATEGORIES == want, (where, target)
        for category in want:
            spelled = not set(SPECIFIER.findall(old["other"])) <= set(
                SPECIFIER.findall(old.get(category, ""))
            )
            remade = target and category != "zero" and spelled and several(target, category)
            kept = category in had and not remade
            origin = old[category] if kept else old["other"]
            if SPECIFIER.sub("", origin).strip():
                assert new[category] == loud(origin), (where, category)
            else:
                assert new[category] == origin  # only codes: not a unit, copied
            assert SPECIFIER.findall(new[category]) == SPECIFIER.findall(origin)
    # every other value is the shouted source, its placeholders intact
    rule_paths = {p for p, _ in old_rules}
    shouted = dict(strings_of(after))
    for where, value in strings_of(before):
        if "/" + where.rsplit("/", 1)[0] not in rule_paths:
            assert shouted[where] == loud(value)
            assert SPECIFIER.findall(shouted[where]) == SPECIFIER.findall(value)


def test_the_real_file_keeps_its_layout_and_its_zero_forms() -> None:
    content = REAL.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [shout(u.text) for u in units], target_lang="ru")
    text, original = out.decode(), content.decode()
    assert text.splitlines()[:3] == original.splitlines()[:3]  # declaration, DOCTYPE, <plist>
    lines = text.splitlines()
    assert all(re.fullmatch(r"\t*(<[^\t]*)?", line) for line in lines)  # tabs, as the file
    for i, line in enumerate(lines):  # inserted pairs: indented as the pair they stand beside
        if line.strip() in ("<key>few</key>", "<key>many</key>"):
            assert line == "\t\t\t" + line.strip()
            assert lines[i + 1].startswith("\t\t\t<string>")
    plist = plistlib.loads(out)
    days = plist["EVERY_%ld_DAYS"]["days"]
    assert days["zero"] == "AFTER EACH UNLOCK"  # wording, not a number: explicit, kept
    assert days["few"] == days["many"] == days["other"] == "EVERY %ld DAYS"
    assert "zero" not in plist["DUPLICATE_GROUPS_ACTION_NAME"]["groups"]
    # Japanese: one category; "one" goes with the whitespace before it
    ja = FMT.render(content, [u.text for u in units], target_lang="ja").decode()
    assert "<key>one</key>" not in ja
    assert "\n\n" not in ja and "\t\n" not in ja
    assert ja.count("<key>zero</key>") == original.count("<key>zero</key>")
    assert ja.count("<key>other</key>") == original.count("<key>other</key>")


def test_shared_layout_is_four_spaces_and_untranslated_bytes_stay() -> None:
    content = SHARED.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [shout(u.text) for u in units], target_lang="ar").decode()
    assert "<!-- Hand-written" in out
    for line in out.splitlines():
        assert not line.startswith("\t")
    folders = re.search(r"<key>folders</key>.*?</dict>", out, re.S)
    assert folders is not None
    assert "\n            <key>few</key>\n            <string>%d FOLDERS</string>" in folders.group(
        0
    )
    # a value that stays (codes only) keeps its bytes; the empty device variant too
    assert "<string>%#@messages@</string>" in out and "<string/>" in out
    # no target, identity but one value: only that value's bytes change
    tr = [u.text for u in units]
    tr[1] = "un fichier"
    one = FMT.render(content, tr)
    assert one == content.replace(b"<string>one file</string>", b"<string>un fichier</string>")


def test_translated_text_is_escaped_for_xml() -> None:
    content = SHARED.read_bytes()
    units = FMT.extract(content)
    tr = [u.text for u in units]
    tr[0] = 'Borró <x1/> de <x2/> & vació la "Papelera" <script>x</script> ]]>'
    out = FMT.render(content, tr, target_lang="es")
    plist = plistlib.loads(out)
    assert plist["%1$d files in %2$d folders"]["NSStringLocalizedFormatKey"] == (
        'Borró %1$#@files@ de %2$#@folders@ & vació la "Papelera" <script>x</script> ]]>'
    )
    assert b"<script>" not in out


@pytest.mark.parametrize("path", [REAL, SHARED], ids=lambda p: p.name)
def test_hostile_engine_output_still_gives_a_property_list(path: Path) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    hostile = []
    for i, u in enumerate(units):
        tags = [m.group(0) for m in TAG.finditer(u.text)]
        if i % 3 == 0:
            hostile.append("</g1><x9/> & <b>\"'" + "".join(tags) * 2)  # repeated, unknown
        elif i % 3 == 1:
            hostile.append("<script>alert(1)</script> \x00\x1f")  # every tag dropped
        else:
            hostile.append("   ")  # emptied: the source stays
    for target in ("de", "ar", None):
        out = FMT.render(content, hostile, target_lang=target)
        before, after = plistlib.loads(content), plistlib.loads(out)
        assert list(after) == list(before)
        old = dict(strings_of(before))
        for where, value in strings_of(after):
            if where in old:  # every placeholder of the source is still there
                for spec in set(SPECIFIER.findall(old[where])):
                    assert spec in value, (where, value)
        assert len(FMT.extract(out)) >= 1


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE plist [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
<plist version="1.0"><dict><key>k</key><string>&b;</string></dict></plist>"""


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not xml at all",
        b"bplist00\xd1\x01\x02",
        b'{"a": {"NSStringLocalizedFormatKey": "%#@x@"}}',
        BILLION_LAUGHS,
        b'<?xml version="1.0"?><!DOCTYPE plist SYSTEM "file:///etc/passwd"><plist><dict>'
        b"<key>k</key><string>&xxe;</string></dict></plist>",
        b"<plist><array><string>x</string></array></plist>",
        b"<plist><dict><key>a</key><key>b</key></dict></plist>",
        b"<plist><dict><key>a</key></dict></plist>",
        b"<notaplist><dict/></notaplist>",
        b"<plist><dict><key>a</key><string>unclosed</dict></plist>",
        "<plist><dict><key>a</key><string>é</string></dict></plist>".encode("utf-16"),
        b"<plist><dict><key>a</key><string>\xff\xfe</string></dict></plist>",
        b'<?xml version="1.0" encoding="no-such-codec"?><plist><dict/></plist>',
    ],
)
def test_what_is_not_a_stringsdict_is_refused(content: bytes) -> None:
    with pytest.raises(DocumentError):
        FMT.extract(content)
    with pytest.raises(DocumentError):
        FMT.render(content, [], target_lang="fr")


def test_any_cut_of_the_real_file_is_read_or_refused_never_a_crash() -> None:
    content = REAL.read_bytes()
    for end in range(0, len(content), 61):
        try:
            units = FMT.extract(content[:end])
        except DocumentError:
            continue
        FMT.render(content[:end], [u.text for u in units], target_lang="ru")


def test_a_wrong_number_of_translations_is_the_callers_bug() -> None:
    content = REAL.read_bytes()
    with pytest.raises(ValueError, match="translations"):
        FMT.render(content, ["x"])


def test_a_rule_with_nothing_to_translate_comes_back_as_it_was() -> None:
    content = (FIXTURES / "Localizable.stringsdict").read_bytes()
    assert FMT.extract(content) == []
    for target in ("ja", "ru", None):
        assert FMT.render(content, [], target_lang=target) == content


def test_the_format_names_itself() -> None:
    assert FMT.name == "stringsdict"
    assert FMT.extensions == (".stringsdict",)
    assert FMT.media_type == "application/x-plist"
    assert not FMT.binary
