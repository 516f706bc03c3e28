"""Android string resources (formats/android_strings.py): strings, array items and plural
cases as units, Android's escapes decoded for the engine and written back the way aapt reads
them, plurals in the target's CLDR categories, everything else byte for byte.

Outputs are read back with lxml, and each value's text is decoded by a small reference reader
of aapt2's string rules written here (quotes, backslash escapes, white space, the unescaped
apostrophe aapt refuses), independently of the format's code; plural categories come from
Babel's CLDR data."""

from __future__ import annotations

import html
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from babel import Locale
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from mtfleet.formats.android_strings import AndroidStringsFormat
from mtfleet.formats.base import TAG, DocumentError, x

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents" / "android"
FILES = sorted(FIXTURES.glob("*.xml"))
ETAR = FIXTURES / "etar_calendar_strings.xml"
EDGE = FIXTURES / "edge_cases.xml"
CRLF = FIXTURES / "crlf_bom_tabs.xml"
FMT = AndroidStringsFormat()
XLIFF_G = "{urn:oasis:names:tc:xliff:document:1.2}g"
TOOLS_LOCALE = "{http://schemas.android.com/tools}locale"


def parse(content: bytes) -> Any:
    return etree.fromstring(content, etree.XMLParser(resolve_entities=False))


def pseudo(text: str) -> str:
    """Upper-case the text outside the inline tags."""
    out, pos = [], 0
    for m in TAG.finditer(text):
        out += [text[pos : m.start()].upper(), m.group(0)]
        pos = m.end()
    return "".join([*out, text[pos:].upper()])


def content_text(el: Any) -> str:
    """An element's character data (text, CDATA, child elements' text), comments left out."""
    parts = [el.text or ""]
    for child in el:
        if isinstance(child.tag, str):
            parts.append(content_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


def aapt(raw: str) -> str:
    """What aapt2 makes of a value's character data: double quotes toggle a quoted section
    (white space kept, apostrophes allowed), backslash escapes decoded, white space outside
    quotes collapsed and trimmed; an apostrophe outside quotes is an error."""
    out: list[tuple[str, bool]] = []  # (char, collapsible space)
    quoted = False
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\":
            nxt = raw[i + 1 : i + 2]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", raw[i + 2 : i + 6]):
                out.append((chr(int(raw[i + 2 : i + 6], 16)), False))
                i += 6
                continue
            out.append(({"n": "\n", "t": "\t"}.get(nxt, nxt), False))
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c == "'" and not quoted:
            raise AssertionError(f"unescaped apostrophe in {raw!r}")
        elif c in " \t\r\n" and not quoted:
            if not out or not out[-1][1]:
                out.append((" ", True))
        else:
            out.append((c, False))
        i += 1
    while out and out[0][1]:
        out.pop(0)
    while out and out[-1][1]:
        out.pop()
    return "".join(c for c, _ in out)


def starts_as_reference(raw: str) -> bool:
    return raw.lstrip(' \t\r\n"')[:1] in ("@", "?")


def translatable(el: Any) -> bool:
    node = el
    while node is not None:
        if node.get("translatable") == "false":
            return False
        node = node.getparent()
    return True


def values(root: Any) -> list[tuple[str, Any]]:
    """(where, element) for every <string>, array <item> and plural <item>, in order."""
    out = []
    for el in root:
        if not isinstance(el.tag, str):
            continue
        key = f"{el.tag}:{el.get('name')}:{el.get('product')}"
        if el.tag == "string":
            out.append((key, el))
        elif el.tag in ("string-array", "plurals"):
            for k, item in enumerate(el.iterchildren("item")):
                out.append((f"{key}/{item.get('quantity') or k}", item))
    return out


def structure(root: Any) -> list[tuple[object, ...]]:
    """Every element's tag and attributes, in document order (plural items apart)."""
    return [
        (el.tag, sorted(el.attrib.items()))
        for el in root.iter()
        if isinstance(el.tag, str)
        and not any(a.tag == "item" and a.get("quantity") for a in el.iterancestors())
        and not (el.tag == "item" and el.get("quantity"))
    ]


def identity(path: Path, target: str | None = None) -> bytes:
    content = path.read_bytes()
    return FMT.render(content, [u.text for u in FMT.extract(content)], target_lang=target)


# --- round trip ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_identity_round_trip_is_byte_equal(path: Path) -> None:
    content = path.read_bytes()
    assert FMT.extract(content), "a fixture with nothing to translate tests nothing"
    assert identity(path) == content


def test_the_real_file_yields_its_strings_array_items_and_plural_cases() -> None:
    content = ETAR.read_bytes()
    root = parse(content)
    units = FMT.extract(content)
    wanted = [
        (key, el)
        for key, el in values(root)
        if translatable(el) and content_text(el).strip() and not starts_as_reference(el.text or "")
    ]
    assert len(units) == len(wanted)
    assert len([u for u in units if "[product=" in u.path]) == len(root.findall("string[@product]"))
    # every xliff:g is one standalone code holding the whole element, never text
    for unit in units:
        assert "xliff:g" not in TAG.sub("", unit.text)
    codes = [c.start for u in units for c in u.codes.values()]
    assert len([c for c in codes if c.startswith("<xliff:g")]) == len(
        [g for _, el in wanted for g in el.iter(XLIFF_G)]
    )
    # Android's escapes are decoded into natural text
    text = " ".join(TAG.sub("", u.text) for u in units)
    assert "can't" in text and "Go to…" in text and "\\" not in text
    assert not any(u.text.startswith('"') or u.text.endswith('"') for u in units)


# --- what the engine sees -----------------------------------------------------------------------


def by_path(path: Path) -> dict[str, Any]:
    return {u.path: u for u in FMT.extract(path.read_bytes())}


def test_escapes_markup_and_placeholders_in_a_value() -> None:
    units = by_path(EDGE)
    plain = {p: TAG.sub("", u.text) for p, u in units.items()}
    assert plain["quotes"] == 'Say "hello" to the world'
    assert plain["apostrophe_in_quotes"] == "Don't stop, it's fine"
    assert plain["unicode_char"] == "Naïve café"
    assert plain["at_sign"] == "@mention someone"
    assert plain["backslash"] == "Path C:\\temp"
    assert plain["entities"] == "Fish & chips <3 © — done"
    assert plain["wrapped_lines"] == "This text is wrapped over three lines"
    starts = lambda p: [c.start for c in units[p].codes.values()]  # noqa: E731
    assert starts("newline_tab") == ["\\n", "\\t"]
    assert starts("unicode_space") == ["\\u0020"]
    assert starts("formats") == ["%1$s", "%2$d", "%.2f", "%%", "%s", "%d"]
    assert [c.start for c in units["xliff_example"].codes.values()] == [
        '<xliff:g id="user" example="Bob">%1$s</xliff:g>',
        '<xliff:g id="app">Shop</xliff:g>',
    ]
    html = units["html_markup"]
    assert {c.start: c.end for c in html.codes.values()} == {
        "<b>": "</b>",
        "<i>": "</i>",
        '<a href="https://example.com/?a=1&amp;b=2">': "</a>",
        "<u>": "</u>",
    }
    cdata = units["cdata"]
    paired = [(c.start, c.end) for c in cdata.codes.values() if c.paired]
    assert paired[0] == ("<![CDATA[", "]]>")
    assert "Bold" in cdata.text and "<b>" not in TAG.sub("", cdata.text)
    escaped = units["escaped_html"]  # HTML for Html.fromHtml written escaped: codes too
    assert [(c.start, c.end) for c in escaped.codes.values()] == [
        ("&lt;b>", "&lt;/b>"),
        ("&lt;br/>", None),
    ]
    assert plain["escaped_html"] == "Tap Save now100% sure, 50 % off"  # a % before a space is text
    assert plain["typed_item"] == "Typed string item"
    assert {"variant[product=tablet]", "variant[product=default]"} <= set(units)
    for absent in ("empty", "blank", "only_code", "reference", "theme_attr", "codes[0]"):
        assert absent not in units
    assert [p for p in units if p.startswith("planets")] == ["planets[0]", "planets[2]"]
    assert not [p for p in units if p.startswith("fixed")]


# --- a pseudo-translation -----------------------------------------------------------------------


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_pseudo_translation_reads_back_as_the_same_strings_in_upper_case(path: Path) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [pseudo(u.text) for u in units])
    before, after = parse(content), parse(out)
    assert structure(after) == structure(before)
    assert [str(c) for c in after.iter(etree.Comment)] == [
        str(c) for c in before.iter(etree.Comment)
    ]
    old, new = values(before), values(after)
    assert [k for k, _ in new] == [k for k, _ in old]
    changed = 0
    for (key, src), (_, dst) in zip(old, new, strict=True):
        assert [etree.tostring(g, with_tail=False) for g in dst.iter(XLIFF_G)] == [
            etree.tostring(g, with_tail=False) for g in src.iter(XLIFF_G)
        ], key
        if not translatable(src):
            assert etree.tostring(dst) == etree.tostring(src), key
            continue
        raw_src, raw_dst = content_text(src), content_text(dst)
        assert aapt(raw_dst).casefold() == aapt(raw_src).casefold(), key
        assert starts_as_reference(dst.text or "") == starts_as_reference(src.text or ""), key
        # (a "%" before a space is text: "100% sure")
        for spec in re.findall(r"%(?:\d+\$)?[-#+0,(]*\d*(?:\.\d+)?[a-zA-Z%]", raw_src):
            assert spec in raw_dst, (key, spec)
        changed += aapt(raw_dst) != aapt(raw_src)
    assert changed > len(units) // 2


def test_translated_text_is_escaped_the_way_aapt_requires() -> None:
    content = EDGE.read_bytes()
    units = FMT.extract(content)
    wanted = {
        "at_sign": "@you and ?me",
        "quotes": 'Il a dit "bonjour" à l\'équipe \\o/',
        "apostrophe_in_quotes": "C'est  bon",
        "newline_tab": "Première ligne<x1/>Seconde<x2/>ligne\nencore",
        "entities": "Poisson & frites <3",
        "unicode_char": "Naïve … café",
    }
    translations = [wanted.get(u.path, u.text) for u in units]
    root = parse(FMT.render(content, translations))
    read = {el.get("name"): aapt(content_text(el)) for el in root.iter("string")}
    assert read["at_sign"] == "@you and ?me"
    assert read["quotes"] == 'Il a dit "bonjour" à l\'équipe \\o/'
    assert read["apostrophe_in_quotes"] == "C'est  bon"  # inside quotes: spaces kept
    assert read["newline_tab"] == "Première ligne\nSeconde\tligne\nencore"
    assert read["entities"] == "Poisson & frites <3"
    assert read["unicode_char"] == "Naïve … café"
    raw = {el.get("name"): content_text(el) for el in root.iter("string")}
    assert raw["at_sign"].startswith("\\@")  # else aapt reads a resource reference
    assert raw["unicode_char"] == "Na\\u00efve … caf\\u00e9"  # the file's own spelling


def test_a_character_the_file_wrote_as_an_escape_is_written_so_again() -> None:
    content = ETAR.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [pseudo(u.text) for u in units]).decode()
    assert '<string name="goto_date">GO TO\\u2026</string>' in out
    assert '<string name="foreground_notification_title">SCHEDULING NEW REMINDERS…</string>' in out
    assert "CAN\\'T MAKE IT. WE\\'LL HAVE TO RESCHEDULE." in out


# --- plurals ------------------------------------------------------------------------------------


def cldr(lang: str) -> set[str]:
    return set(Locale.parse(lang).plural_form.tags) | {"other"}


def spells(case: str, other: str, target: str, category: str) -> bool:
    """Whether a plural item must be made from ``other``: the target's category covers more
    than one number (Russian ``one``: 1, 21, 31…) and the item lacks a specifier ``other``
    has (``1 minute`` beside ``%d minutes``; Android lint's ImpliedQuantity)."""
    several = sum(Locale.parse(target).plural_form(n) == category for n in range(200)) > 1
    specifiers = lambda s: set(re.findall(r"%(?:\d+\$)?[-#+ 0,(]*\d*(?:\.\d+)?[a-zA-Z%]", s))  # noqa: E731
    return several and not specifiers(other) <= specifiers(case)


@pytest.mark.parametrize("target", ["ru", "ar", "ja", "pl"])
@pytest.mark.parametrize("path", [ETAR, EDGE, CRLF], ids=lambda p: p.name)
def test_plurals_get_exactly_the_targets_categories(path: Path, target: str) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    # each translation says which source unit it came from
    marked = [f"[{i}] {pseudo(u.text)}" for i, u in enumerate(units)]
    out = FMT.render(content, marked, target_lang=target)
    before, after = parse(content), parse(out)
    index = {u.path: i for i, u in enumerate(units)}
    assert structure(after)[1:] == structure(before)[1:]  # the root: tools:locale apart
    for src, dst in zip(before.iter("plurals"), after.iter("plurals"), strict=True):
        name = src.get("name")
        src_q = [i.get("quantity") for i in src.iterchildren("item")]
        dst_q = [i.get("quantity") for i in dst.iterchildren("item")]
        if src.get("translatable") == "false":
            assert etree.tostring(dst) == etree.tostring(src)
            continue
        assert sorted(dst_q) == sorted(cldr(target)), name
        from_case = "other" if "other" in src_q else src_q[-1]
        texts = {i.get("quantity"): content_text(i) for i in src.iterchildren("item")}
        for item in dst.iterchildren("item"):
            q = item.get("quantity")
            source_case = q if q in src_q else from_case
            if q in src_q and "other" in texts and spells(texts[q], texts["other"], target, q):
                source_case = "other"  # "1 minute" where Russian's one covers 21, 31…
            text = aapt(content_text(item))
            assert text.startswith(f"[{index[f'{name}#{source_case}']}] "), (name, q, text)
    # the rest of the file is untouched
    strings = lambda root: [etree.tostring(s) for s in root.iter("string", "string-array")]  # noqa: E731
    assert strings(after) == strings(parse(FMT.render(content, marked)))


def test_made_plural_items_are_laid_out_like_the_source_items() -> None:
    out = identity(ETAR, "ru").decode()
    source_lines = [ln for ln in ETAR.read_text().splitlines() if "<item quantity=" in ln]
    lines = [ln for ln in out.splitlines() if "<item quantity=" in ln]
    indents = {ln[: len(ln) - len(ln.lstrip())] for ln in source_lines}
    assert len(indents) == 1
    indent = indents.pop()
    assert all(ln.startswith(f"{indent}<item") and ln.count("<item") == 1 for ln in lines)
    assert len(lines) > len(source_lines)
    crlf = identity(CRLF, "pl")
    assert b'\r\n\t\t<item quantity="few">%d days</item>\r\n' in crlf
    assert b'\r\n\t\t<item quantity="many">%d days</item>\r\n' in crlf
    assert crlf.startswith(b"\xef\xbb\xbf") and b"\n" not in crlf.replace(b"\r\n", b"")


def test_without_a_target_plurals_keep_their_categories() -> None:
    for path in FILES:
        before, after = parse(path.read_bytes()), parse(identity(path))
        assert [[i.get("quantity") for i in p] for p in after.iter("plurals")] == [
            [i.get("quantity") for i in p] for p in before.iter("plurals")
        ]


def test_the_target_language_is_written_where_the_file_names_its_language() -> None:
    assert parse(identity(EDGE, "pt-BR")).get(TOOLS_LOCALE) == "pt-rBR"
    assert parse(identity(EDGE, "ja")).get(TOOLS_LOCALE) == "ja"
    assert parse(identity(EDGE)).get(TOOLS_LOCALE) == "en"


# --- hostile translations and bad input ---------------------------------------------------------

HOSTILE = [
    "<script>alert('x')</script> & \"quoted\" ",
    "@home ]]> <x1/><x1/><g1>a</g1><g1>b</g1></g2> <x99/>",
    "?\\ back\\slash \\n \\u0041 &amp; &#0; <![CDATA[ x ]]>",
    "",
    "</g1> it's <g2><x3/>",
]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("target", [None, "ar"])
def test_a_hostile_translation_still_gives_a_file_aapt_reads(path: Path, target: str) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(
        content, [HOSTILE[i % len(HOSTILE)] for i in range(len(units))], target_lang=target
    )
    before, after = parse(content), parse(out)
    assert not list(after.iter("script"))
    assert [el.get("name") for el in after] == [el.get("name") for el in before]
    old, new = dict(values(before)), dict(values(after))
    for key, src in old.items():
        dst = new.get(key)
        if dst is None:  # a plural case the target does not have
            continue
        # every xliff:g survives (once), every placeholder too
        assert sorted(etree.tostring(g, with_tail=False) for g in dst.iter(XLIFF_G)) == sorted(
            etree.tostring(g, with_tail=False) for g in src.iter(XLIFF_G)
        ), key
        aapt(content_text(dst))  # no unescaped apostrophe
        assert starts_as_reference(dst.text or "") == starts_as_reference(src.text or ""), key


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"", "not well-formed"),
        (b"just some text", "not well-formed"),
        (b"<resources><string name='a'>b</str", "not well-formed"),
        (b"<foo><string name='a'>b</string></foo>", "root is <foo>, not Android string resources"),
        (b"<html><body>Hi</body></html>", "root is <html>"),
        (b"<x:resources xmlns:x='urn:x'/>", "root is <x:resources>"),
        (
            b'<!DOCTYPE r [<!ENTITY a "aaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
            b"<resources><string name='a'>&b;</string></resources>",
            "refers to entities",
        ),
        (b"<resources><string name='a'>&nbsp;</string></resources>", "not well-formed"),
        (b"<resources><string name='a'>caf\xe9</string></resources>", "not well-formed"),
        (b"PK\x03\x04\x00\x00binary", "not well-formed"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(content: bytes, says: str) -> None:
    with pytest.raises(DocumentError, match=re.escape(says)):
        FMT.extract(content)
    with pytest.raises(DocumentError):
        FMT.render(content, [])


# --- entities a file declares -------------------------------------------------------------------

ENTITIES = FIXTURES / "entities_app_name.xml"


def test_a_declared_entity_is_a_code_and_its_doctype_comes_back_as_written() -> None:
    """``&app_name;`` never reaches the engine as text (neither its name nor its value), is
    never translated, and stands where the translation puts it; the DOCTYPE declaring it comes
    back byte for byte, so aapt expands it in the translated file as in the source."""
    content = ENTITIES.read_bytes()
    units = FMT.extract(content)
    assert not [u.path for u in units if "NewPipe" in u.text or "app_name" in u.text]
    refs = Counter(c.start for u in units for c in u.codes.values() if c.start.startswith("&"))
    assert refs == {"&app_name;": 8, "&website;": 2}
    translations = [pseudo(u.text) for u in units]
    at = [u.path for u in units].index("welcome_title")
    assert units[at].text == f"Welcome to {x(1)}"
    translations[at] = f"{x(1)}: WELCOME"  # the engine moves the name first
    out = FMT.render(content, translations, target_lang="ru")
    doctype = content[: content.index(b"<resources")]
    assert out.startswith(doctype) and out.count(b"<!DOCTYPE") == 1
    assert out.count(b"&app_name;") == content.count(b"&app_name;") + 2  # ru: few and many
    assert out.count(b"&website;") == content.count(b"&website;")
    # read as aapt reads it: the entities expanded
    expanded = etree.fromstring(out, etree.XMLParser(resolve_entities=True))
    read = {el.get("name"): "".join(el.itertext()) for el in expanded.iter("string")}
    assert read["app_name"] == read["app_title"] == "NewPipe"
    assert read["welcome_title"] == "NewPipe: WELCOME"
    assert read["crash_report"].startswith("SORRY, NewPipe STOPPED.")
    assert read["crash_report"].endswith("AT newpipe.net?")
    assert read["donate_summary"] == "NewPipe IS MADE BY VOLUNTEERS. VISIT newpipe.net TO HELP."


@pytest.mark.parametrize(
    ("doctype", "says"),
    [
        (b'<!DOCTYPE resources SYSTEM "https://example.com/r.dtd">', "external DTD"),
        (
            b'<!DOCTYPE resources [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>',
            "external entity (SYSTEM or PUBLIC)",
        ),
        (
            b'<!DOCTYPE resources [<!ENTITY xxe PUBLIC "-//X//Y" "https://example.com/x">]>',
            "external entity (SYSTEM or PUBLIC)",
        ),
        (
            b"<!DOCTYPE resources [<!ENTITY % p \"<!ENTITY app_name 'x'>\"> %p;]>",
            "parameter entity (<!ENTITY % …>)",
        ),
        (
            b'<!DOCTYPE resources [<!ENTITY app_name "%p;">]>',
            "parameter-entity reference",
        ),
        (  # billion laughs
            b'<!DOCTYPE resources [<!ENTITY lol "lol">'
            + b"".join(
                b'<!ENTITY lol%d "%s">' % (k, (b"&lol%d;" % (k - 1) if k > 1 else b"&lol;") * 10)
                for k in range(1, 10)
            )
            + b'<!ENTITY app_name "&lol9;">]>',
            "refers to entities (an expansion bomb",
        ),
        (b"<!DOCTYPE resources [<!ELEMENT resources ANY>]>", "ELEMENT declaration"),
    ],
)
def test_entities_that_reach_outside_the_file_or_expand_are_refused(
    doctype: bytes, says: str
) -> None:
    content = doctype + b'<resources><string name="a">Welcome to &app_name;</string></resources>'
    with pytest.raises(DocumentError, match=re.escape(says)):
        FMT.extract(content)


def test_an_entity_the_file_does_not_declare_is_refused() -> None:
    with pytest.raises(DocumentError, match="Entity 'app_name' not defined"):
        FMT.extract(b'<resources><string name="a">Welcome to &app_name;</string></resources>')


def test_mangled_files_raise_document_error_or_round_trip() -> None:
    rnd = random.Random(7)
    sources = [EDGE.read_bytes(), ETAR.read_bytes()[:6000] + b"</resources>"]
    pieces = [b"<", b">", b"&", b'"', b"'", b"\\", b"<![CDATA[", b"]]>", b"<!--", b"<b>", b"\xff"]
    read = 0
    for _ in range(200):
        content = bytearray(rnd.choice(sources))
        pos = rnd.randrange(len(content))
        if rnd.random() < 0.5:
            content[pos:pos] = rnd.choice(pieces)
        else:
            del content[pos : pos + rnd.randint(1, 8)]
        try:
            units = FMT.extract(bytes(content))
        except DocumentError:
            continue
        read += 1
        assert FMT.render(bytes(content), [u.text for u in units]) == bytes(content)
        parse(FMT.render(bytes(content), [pseudo(u.text) for u in units], target_lang="ru"))
    assert read  # some mutations stay well-formed (inside text): those round-trip


def test_other_encodings_come_back_in_their_own() -> None:
    latin1 = (
        '<?xml version="1.0" encoding="ISO-8859-1"?>\n<resources>\n'
        "  <string name=\"a\">Caf\xe9 \\'ok\\'</string>\n</resources>\n"
    ).encode("latin-1")
    units = FMT.extract(latin1)
    assert [u.text for u in units] == ["Café 'ok'"]
    assert FMT.render(latin1, [u.text for u in units]) == latin1
    out = FMT.render(latin1, ["Café € 日本"])
    assert aapt(content_text(parse(out).find("string"))) == "Café € 日本"
    utf16 = (
        '<?xml version="1.0" encoding="utf-16"?>\n'
        '<resources><string name="a">Hi</string></resources>'
    )
    content = utf16.encode("utf-16")
    assert FMT.render(content, ["Hi"]) == content
    assert parse(FMT.render(content, ["Hé"])).find("string").text == "Hé"
    utf32 = utf16.replace("utf-16", "utf-32").encode("utf-32")
    assert FMT.render(utf32, ["Hi"]) == utf32
    assert parse(FMT.render(utf32, ["Hé"])).find("string").text == "Hé"


def test_markup_moved_across_a_cdata_boundary_keeps_its_kind() -> None:
    content = EDGE.read_bytes()
    units = FMT.extract(content)
    mixed = next(u for u in units if u.path == "mixed")
    xml_b = next(n for n, c in mixed.codes.items() if c.start == "<b>")
    section = next(n for n, c in mixed.codes.items() if c.start == "<![CDATA[")
    html_i = next(n for n, c in mixed.codes.items() if c.start == "<i>")
    moves = [
        # the XML <b> moved into the CDATA section, the HTML <i> out of it
        f"<g{section}>Voir <g{xml_b}>ceci</g{xml_b}> &</g{section}> <g{html_i}>cela</g{html_i}>",
        f"<g{html_i}>cela</g{html_i}> <g{section}><g{xml_b}>ceci</g{xml_b}></g{section}>",
    ]
    for move in moves:
        out = FMT.render(content, [move if u is mixed else u.text for u in units])
        string = next(s for s in parse(out).iter("string") if s.get("name") == "mixed")
        assert [b.text for b in string.iter("b")] == ["ceci"]  # still an element
        assert not list(string.iter("i"))  # still HTML text for Html.fromHtml
        assert "<i>cela</i>" in content_text(string)


# --- any text the engine returns ----------------------------------------------------------------

PLAIN = st.lists(
    st.one_of(
        st.sampled_from(["'", '"', "\\", "@", "?", "&", "<", ">", "]]>", "%", "…", "\n", "\t"]),
        st.sampled_from(["l'été", "Größe", "日本語", "مرحبا", "👍🏽", "ok", "42", " "]),
        st.sampled_from(["\\n", "\\u0041", "  ", "<b>", "&amp;", "\\'"]),
    ),
    min_size=1,
    max_size=12,
).map("".join)
TEMPLATE = (
    b'<?xml version="1.0" encoding="utf-8"?>\n<resources>\n'
    b'    <string name="plain">Plain text</string>\n'
    b'    <string name="wrapped">"Wrapped text"</string>\n'
    b'    <string name="cdata"><![CDATA[Html text]]></string>\n'
    b'    <string-array name="list">\n        <item>Array text</item>\n    </string-array>\n'
    b"</resources>\n"
)


@settings(max_examples=150, deadline=None)
@given(st.lists(PLAIN, min_size=4, max_size=4))
def test_any_plain_text_reads_back_as_written(texts: list[str]) -> None:
    """What aapt reads from the rendered file is the translation itself: outside quotes with
    runs of spaces collapsed and trimmed (as aapt does; a line break or tab is written as its
    escape, so it survives), inside CDATA once Html.fromHtml decodes its entities."""
    units = FMT.extract(TEMPLATE)
    # the text between the unit's own leading and trailing tags (the CDATA's <g1>…</g1>)
    lead = [re.match(f"(?:{TAG.pattern})*", u.text).group(0) for u in units]  # type: ignore[union-attr]
    tail = [u.text[len(TAG.sub("", u.text)) + len(a) :] for u, a in zip(units, lead, strict=True)]
    out = FMT.render(TEMPLATE, [a + t + b for a, t, b in zip(lead, texts, tail, strict=True)])
    root = parse(out)
    els = [*root.iter("string"), root.find("string-array/item")]
    for el, text in zip(els, texts, strict=True):
        read = aapt(content_text(el))
        if el.get("name") == "wrapped":
            assert read == text
            continue
        if el.get("name") == "cdata":
            read = html.unescape(read)
        assert read == re.sub(" +", " ", text).strip(" ")
    again = FMT.extract(out)
    assert FMT.render(out, [u.text for u in again]) == out
