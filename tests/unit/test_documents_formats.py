"""Text, Markdown, HTML, JSON i18n, SRT, WebVTT and Java properties documents on the shared
contract.

Every file under tests/fixtures/documents/<format>/ goes through: (a) an identity round trip,
(b) a pseudo-translation (text upper-cased, tags kept) whose output must parse with the same
structure, (c) a hostile engine (tags dropped and repeated, ``<script>`` and ``&`` as text),
and the formats' invalid inputs must be DocumentErrors, never crashes.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import javaproperties
import lxml.etree as etree
import lxml.html
import pytest
import srt as srt_lib
from markdown_it import MarkdownIt

from mtfleet import formats as documents
from mtfleet.api import parsing
from mtfleet.core.errors import InvalidInput
from mtfleet.formats import DocumentError, for_name, for_upload
from mtfleet.formats.base import TAG, Unit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"
FORMATS = {
    "text": "text",
    "markdown": "markdown",
    "html": "html",
    "json": "json",
    "arb": "arb",
    "srt": "srt",
    "webvtt": "webvtt",
    "properties": "properties",
    "strings": "strings",
}
CORPUS = [
    pytest.param(fmt, path, id=f"{folder}/{path.name}")
    for fmt, folder in FORMATS.items()
    for path in sorted((FIXTURES / folder).iterdir())
]
#: HTML that writes one character two ways in one block ("R&D" beside "AT&amp;T"): a re-render
#: writes it one way, so the tree is equal but the bytes are not.
HTML_MIXED_ESCAPES = {"newsletter-email.html"}
#: ICU select cases whose key is the placeholder they show (``artist{artist}``).
ICU_SELF_CASES = re.compile(r"\b(\w+)\{\1\}")
HOSTILE = ' <script>alert("x")</script> Tom & Jerry &amp; 5 < 6'


# --- helpers ------------------------------------------------------------------------------------


def as_text(content: bytes) -> str:
    """A document's text: UTF-16 after its byte-order mark, UTF-8, or ISO-8859-1."""
    if content.startswith((b"\xff\xfe", b"\xfe\xff")):
        return content.decode("utf-16")
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return content.decode("latin-1")


def shout(tagged: str) -> str:
    """Pseudo-translation: upper-case the text, keep every tag where it is."""
    out: list[str] = []
    pos = 0
    for m in TAG.finditer(tagged):
        out += [tagged[pos : m.start()].upper(), m.group(0)]
        pos = m.end()
    return "".join([*out, tagged[pos:].upper()])


def tags(tagged: str) -> list[str]:
    return [m.group(0) for m in TAG.finditer(tagged)]


def hostile(unit: Unit) -> str:
    """An engine that drops the first tag, repeats the last one, and adds markup as text."""
    found = tags(unit.text)
    text = unit.text
    if found:
        text = text.replace(found[0], "", 1)
        text += found[-1]
    return text + HOSTILE


def html_tree(content: bytes) -> Any:
    root = etree.fromstring(content, lxml.html.HTMLParser(encoding="utf-8"))

    def walk(el: Any) -> Any:
        if not isinstance(el.tag, str):  # comment, processing instruction
            return (str(el.tag), el.text, el.tail)
        return (el.tag, sorted(el.attrib.items()), el.text, el.tail, [walk(c) for c in el])

    return walk(root)


def html_root(content: bytes) -> Any:
    return etree.fromstring(content, lxml.html.HTMLParser(encoding="utf-8"))


def md_tokens(content: bytes) -> list[Any]:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    return md.parse(content.decode("utf-8-sig"))


def md_html(content: bytes) -> str:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    return md.render(content.decode("utf-8-sig"))


def json_shape(value: Any, under_meta: bool = False) -> Any:
    """Keys, non-string values and metadata strings; other strings as a marker."""
    if isinstance(value, dict):
        return {k: json_shape(v, under_meta or k.startswith("@")) for k, v in value.items()}
    if isinstance(value, list):
        return [json_shape(v, under_meta) for v in value]
    if isinstance(value, str) and not under_meta:
        return str
    return value


# --- the corpus ---------------------------------------------------------------------------------


def test_every_format_has_a_corpus_and_is_found_by_name_and_extension() -> None:
    for fmt, folder in FORMATS.items():
        assert len(list((FIXTURES / folder).iterdir())) >= 4, folder
        assert for_name(fmt).name == fmt
    for filename, fmt in [
        ("a.txt", "text"),
        ("a.md", "markdown"),
        ("a.markdown", "markdown"),
        ("a.HTML", "html"),
        ("a.htm", "html"),
        ("en.json", "json"),
        ("app_en.arb", "arb"),
        ("movie.srt", "srt"),
        ("captions.en.VTT", "webvtt"),
        ("Messages_fr.properties", "properties"),
        ("Localizable.strings", "strings"),
    ]:
        assert for_upload(b"", filename).name == fmt  # the name says it, whatever the bytes


@pytest.mark.parametrize(("fmt", "path"), CORPUS)
def test_identity_round_trip(fmt: str, path: Path) -> None:
    content = path.read_bytes()
    f = for_name(fmt)
    units = f.extract(content)
    assert units, "every corpus file has something to translate"
    for u in units:  # each code appears exactly once as a tag
        assert sorted(int(m.group(3)) for m in TAG.finditer(u.text)) == sorted(
            n for n, c in u.codes.items() for _ in range(2 if c.paired else 1)
        )
    out = f.render(content, [u.text for u in units])
    if fmt == "html":
        assert html_tree(out) == html_tree(content)
    if not (fmt == "html" and path.name in HTML_MIXED_ESCAPES):
        assert out == content
    assert f.extract(out) == units


@pytest.mark.parametrize(("fmt", "path"), CORPUS)
def test_pseudo_translation_keeps_every_code_and_the_structure(fmt: str, path: Path) -> None:
    content = path.read_bytes()
    f = for_name(fmt)
    units = f.extract(content)
    out = f.render(content, [shout(u.text) for u in units])
    again = f.extract(out)
    assert len(again) == len(units)
    for before, after in zip(units, again, strict=True):
        assert after.text == shout(before.text)
        assert tags(after.text) == tags(before.text)
        if fmt not in ("html", "markdown"):  # their codes carry translated attributes, titles
            assert after.codes == before.codes
    assert out != content
    STRUCTURE[fmt](content, out)


def _text_structure(content: bytes, out: bytes) -> None:
    # every byte of whitespace and line ending is where it was
    assert re.sub(rb"[^\s]+", b"", out) == re.sub(rb"[^\s]+", b"", content)
    assert out.startswith(b"\xef\xbb\xbf") == content.startswith(b"\xef\xbb\xbf")


_CONTAINER = r"<(?:table|div|p|ul|ol|dl|section|tr|td)\b"
_END_CONTAINER = r"</(?:table|div|p|ul|ol|dl|section|tr|td)\b"


def _markdown_structure(content: bytes, out: bytes) -> None:
    before, after = md_tokens(content), md_tokens(out)
    assert [t.type for t in after] == [t.type for t in before]
    open_tags = 0  # elements an HTML block left open: kramdown reads on to their end tags
    for a, b in zip(before, after, strict=True):
        if a.type == "code_block" and open_tags > 0:  # text inside an open element
            assert _tags(b.content) == _tags(a.content)
        elif a.type in ("fence", "code_block"):
            assert b.content == a.content
        if a.type in ("html_block", "code_block") and (open_tags or a.type == "html_block"):
            opens, closes = (len(re.findall(p, a.content)) for p in (_CONTAINER, _END_CONTAINER))
            open_tags = max(0, open_tags + opens - closes)
        elif a.level == 0 and a.type.endswith("_open"):
            open_tags = 0
        if a.type == "html_block":  # the same elements (its text and attributes translated)
            assert _tags(b.content) == _tags(a.content)
        if a.type == "inline":
            assert _inline_shape(b) == _inline_shape(a)  # same links, images, emphasis, html
            codes_a = [k.content for k in a.children or [] if k.type == "code_inline"]
            assert [k.content for k in b.children or [] if k.type == "code_inline"] == codes_a
    if content.lstrip(b"\xef\xbb\xbf").startswith(b"---"):  # front matter: display fields only
        shown = re.compile(
            rb"^(?:title|subtitle|description|summary|excerpt|linktitle|sidebar_label):.*$",
            re.M | re.I,
        )
        before_fm, after_fm = (d[: d.index(b"---", 4) + 3] for d in (content, out))
        assert shown.sub(b"", after_fm) == shown.sub(b"", before_fm)


def _inline_shape(tok: Any) -> list[Any]:
    return [
        (
            k.type,
            k.attrs.get("href"),
            k.attrs.get("src"),
            _tags(k.content) if k.type == "html_inline" else [],
        )
        for k in tok.children or []
        if k.type not in ("text", "text_special")
    ]


def _tags(markup: str) -> list[str]:
    return re.findall(r"</?[\w-]+", markup)


TRANSLATED_ATTRS = {"alt", "title", "placeholder", "aria-label", "label", "content", "value"}
TRANSLATED_ATTRS |= {"aria-description", "aria-placeholder", "aria-roledescription"}
TRANSLATED_ATTRS |= {"aria-valuetext", "aria-braillelabel", "aria-brailleroledescription"}
TRANSLATED_ATTRS |= {"abbr", "summary"}


def _html_structure(content: bytes, out: bytes) -> None:
    before, after = html_root(content), html_root(out)
    els_a, els_b = list(before.iter()), list(after.iter())
    assert [str(e.tag) for e in els_b] == [str(e.tag) for e in els_a]
    for a, b in zip(els_a, els_b, strict=True):
        if not isinstance(a.tag, str):
            continue
        assert set(b.attrib) == set(a.attrib)
        for name, value in a.attrib.items():
            if name in TRANSLATED_ATTRS and value.strip() and any(c.isalpha() for c in value):
                assert b.attrib[name] in (value, value.upper()), name
            else:
                assert b.attrib[name] == value, name
        code_block = a.tag == "pre" and a.find(".//code") is not None
        no = a.get("translate") == "no" or "notranslate" in (a.get("class") or "").split()
        reenabled = a.find('.//*[@translate="yes"]') is not None  # HTML's inheritance
        frozen = (
            code_block
            or a.tag in ("script", "style", "code", "kbd", "samp", "textarea")
            or (no and not reenabled)
        )
        if frozen:  # the content; a textarea's placeholder is still translated
            assert [b.text, *map(etree.tostring, b)] == [a.text, *map(etree.tostring, a)]


def _json_structure(content: bytes, out: bytes) -> None:
    before, after = json.loads(content.decode("utf-8-sig")), json.loads(out.decode("utf-8-sig"))
    assert json_shape(after) == json_shape(before)
    escaped = b"\\u00" in content and not re.search(
        rb"[\x80-\xff]", content.lstrip(b"\xef\xbb\xbf")
    )
    if escaped:  # the file's style: non-ASCII text stays \u-escaped
        assert not re.search(rb"[\x80-\xff]", out)


def _srt_structure(content: bytes, out: bytes) -> None:
    before = list(srt_lib.parse(content.decode("utf-8-sig")))
    after = list(srt_lib.parse(out.decode("utf-8-sig")))
    assert [(s.index, s.start, s.end, s.proprietary) for s in after] == [
        (s.index, s.start, s.end, s.proprietary) for s in before
    ]
    strip = re.compile(r"<[^>]+>|\{\\[^}]*\}")
    for a, b in zip(before, after, strict=True):
        assert strip.sub("", b.content) == strip.sub("", a.content).upper()
        assert strip.findall(b.content) == strip.findall(a.content)


def vtt_blocks(content: bytes) -> list[list[str]]:
    """A WebVTT file's blocks, read independently of the format as the WebVTT parser collects
    them: lines between blank lines, a line holding "-->" that cannot be its block's timing
    (any in the header, from a block's third line, a second one) beginning the next block."""
    text = content.decode("utf-8-sig").replace("\r\n", "\n")
    blocks: list[list[str]] = []
    for n, lines in enumerate(b.split("\n") for b in re.split(r"\n{2,}", text.strip("\n"))):
        block: list[str] = []
        arrow = n == 0  # the header: WEBVTT and its lines
        for line in lines:
            if "-->" in line and block and (arrow or len(block) >= 2):
                blocks.append(block)
                block, arrow = [], False
            arrow = arrow or "-->" in line
            block.append(line)
        blocks.append(block)
    return blocks


def _webvtt_structure(content: bytes, out: bytes) -> None:
    before, after = vtt_blocks(content), vtt_blocks(out)
    assert len(after) == len(before)
    strip = re.compile(r"<[^>]+>|&[^;\s]+;")
    for a, b in zip(before, after, strict=True):
        timing = next((i for i, line in enumerate(a[:2]) if "-->" in line), None)
        if timing is None:  # the header, NOTE, STYLE, REGION: as they were
            assert b == a
            continue
        assert b[: timing + 1] == a[: timing + 1]  # its id, timing and settings
        assert strip.sub("", "\n".join(b[timing + 1 :])) == (
            strip.sub("", "\n".join(a[timing + 1 :])).upper()
        )
        assert strip.findall("".join(b)) == strip.findall("".join(a))


def read_properties(content: bytes) -> dict[str, str]:
    """Keys and values as ``java.util.Properties.load`` reads them (javaproperties), UTF-8 or,
    for bytes that are not, ISO-8859-1."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = content.decode("latin-1")
    return dict(javaproperties.loads(text))


def _properties_structure(content: bytes, out: bytes) -> None:
    before, after = read_properties(content), read_properties(out)
    assert list(after) == list(before)  # every key, in its order
    args = re.compile(r"\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}")
    for key, value in before.items():
        unquoted = re.compile(r"'[^']*'")  # '' and quoted literals ('{') are no arguments
        assert args.findall(unquoted.sub("", after[key])) == args.findall(
            unquoted.sub("", value)
        ), key  # MessageFormat arguments where they were
        markup = re.compile(r"<[^<>]+>")  # HTML in a value: kept as it was
        assert markup.findall(after[key]) == markup.findall(value), key
        if not args.search(value):
            assert markup.sub("", after[key]) == markup.sub("", value).upper(), key
    # comments and blank lines where they were
    kept = re.compile(rb"^[ \t\f]*(?:[#!].*)?$", re.M)
    assert [m.group(0) for m in kept.finditer(out)] == [m.group(0) for m in kept.finditer(content)]
    if re.fullmatch(rb"[\x00-\x7f]*", content):  # an ASCII file stays ASCII (\\uXXXX)
        assert re.fullmatch(rb"[\x00-\x7f]*", out)


_STRINGS_VALUE = re.compile(r'(=\s*)"((?:[^"\\]|\\.)*)"', re.S)


def _strings_structure(content: bytes, out: bytes) -> None:
    before, after = as_text(content), as_text(out)
    # keys, comments, layout: everything but the values, as it was
    assert _STRINGS_VALUE.sub(r'\1""', after) == _STRINGS_VALUE.sub(r'\1""', before)
    assert out[:2] == content[:2]  # the same byte-order mark (or none)
    specifier = re.compile(r"%(?:\d+\$)?[-.\d]*(?:ll|l|q)?[@dfsu%]")
    for a, b in zip(_STRINGS_VALUE.findall(before), _STRINGS_VALUE.findall(after), strict=True):
        assert specifier.findall(b[1]) == specifier.findall(a[1])


STRUCTURE: dict[str, Callable[[bytes, bytes], None]] = {
    "text": _text_structure,
    "markdown": _markdown_structure,
    "html": _html_structure,
    "json": _json_structure,
    "arb": _json_structure,
    "srt": _srt_structure,
    "webvtt": _webvtt_structure,
    "properties": _properties_structure,
    "strings": _strings_structure,
}


def _carries_text(fmt: str, code: Any) -> bool:
    """A code whose markup holds a translated attribute or title (it changes with it)."""
    if fmt not in ("html", "markdown"):
        return False
    if "<" in code.start and "=" in code.start:
        return True
    title = r"""\s(?:"[^"]*"|'[^']*'|\([^()]*\))\)$"""
    return fmt == "markdown" and bool(re.search(title, code.end or code.start))


@pytest.mark.parametrize(("fmt", "path"), CORPUS)
def test_hostile_engine_cannot_lose_markup_or_inject_it(fmt: str, path: Path) -> None:
    content = path.read_bytes()
    f = for_name(fmt)
    units = f.extract(content)
    out = f.render(content, [hostile(u) for u in units])
    again = f.extract(out)  # still a document of its format
    assert len(again) >= len(units)
    text_out, text_in = as_text(out), as_text(content)
    for u in units:  # no code is lost (html: tags with translated attributes are checked below)
        for code in u.codes.values():
            if _carries_text(fmt, code):
                continue
            if not code.start.strip():  # a line break the engine moved to a cue's end is trimmed
                continue
            # an ICU select case such as artist{artist}: its body is translated text that spells
            # the placeholder's name, so the name's count may drop with no code lost
            if fmt in ("json", "arb") and code.start.strip("{}") in ICU_SELF_CASES.findall(text_in):
                continue
            assert text_out.count(code.start) >= text_in.count(code.start), code
            if code.end:
                assert text_out.count(code.end) >= text_in.count(code.end), code
    if fmt == "html":  # every element is still there (a dropped tag's element moves to the end)
        before, after = html_root(content), html_root(out)
        assert len(after.findall(".//script")) == len(before.findall(".//script"))
        assert Counter(e.tag for e in after.iter() if isinstance(e.tag, str)) == Counter(
            e.tag for e in before.iter() if isinstance(e.tag, str)
        )
        assert "<script>alert" in after.text_content()
    if fmt == "markdown":
        assert md_html(out).count("<script") == md_html(content).count("<script")
        assert "&lt;script&gt;alert" in md_html(out)
    if fmt in ("json", "arb"):
        assert json_shape(json.loads(out.decode("utf-8-sig"))) == json_shape(
            json.loads(content.decode("utf-8-sig"))
        )
    if fmt == "webvtt":  # every cue's id, timing and settings where they were
        timings = [[ln for ln in b[:2] if "-->" in ln] for b in vtt_blocks(content)]
        assert [[ln for ln in b[:2] if "-->" in ln] for b in vtt_blocks(out)] == timings
        # the engine's markup is text: "<" escaped, "&amp;" kept as the four characters it was
        assert '&lt;script>alert("x")&lt;/script> Tom & Jerry &amp;amp; 5 &lt; 6' in out.decode()
    if fmt == "srt":
        after_subs = list(srt_lib.parse(out.decode("utf-8-sig")))
        before_subs = list(srt_lib.parse(content.decode("utf-8-sig")))
        assert [(s.start, s.end) for s in after_subs] == [(s.start, s.end) for s in before_subs]


# --- invalid input ------------------------------------------------------------------------------

INVALID = [
    *[
        (fmt, b"caf\xe9 au lait", "not valid UTF-8: byte 0xe9 at offset 3")
        for fmt in FORMATS
        if fmt not in ("properties", "strings")  # ISO-8859-1; UTF-16 (below)
    ],
    *[(fmt, b"\xff\xfeh\x00i\x00", "UTF-16") for fmt in FORMATS if fmt != "strings"],
    ("strings", b"caf\xe9", "not valid UTF-8 or UTF-16 (with its byte-order mark): byte 0xe9"),
    ("strings", b'"a" = "b"\n"c" = "d";', "line 2: expected ';'"),
    ("strings", b'"a" = "never closed;', "line 1: a string is never closed"),
    ("strings", b'/* never closed\n"a" = "b";', "a /* comment is never closed"),
    ("arb", b'{"a": }', "invalid JSON"),
    *[(fmt, b"binary\x00\x01\x02", "NUL") for fmt in FORMATS],
    ("json", b'{"a": }', "invalid JSON"),
    ("json", b'{"a": NaN}', "NaN"),
    ("json", b'["a", "b"', "invalid JSON"),
    ("json", b'{"a": "x"} {"b": 1}', "invalid JSON"),
    ("json", b"[" * 65 + b"]" * 65, "more than 64 levels"),
    ("json", b"[" * 100_000 + b"]" * 100_000, "more than 64 levels"),
    ("srt", b"hello world, not subtitles", "not a valid SRT"),
    ("srt", b"1\n00:00:01,000 -> 00:00:02,000\nA broken arrow\n", "not a valid SRT"),
    ("properties", b"a=broken \\u00g9 escape", "line 1 has a malformed \\uxxxx escape"),
    ("properties", b"\xef\xbb\xbfa=caf\xe9", "BOM but is not UTF-8"),
    ("webvtt", b"hello world, not captions", "it must start with the line WEBVTT"),
    ("webvtt", b"WEBVTTX\n\n00:01.000 --> 00:02.000\nHi\n", "must start with the line WEBVTT"),
    ("webvtt", b"WEBVTT\n\n00:00:01.000 -> 00:00:02.000\nA broken arrow\n", "line 3"),
    ("webvtt", b"WEBVTT\n\n1\n00:00:01,000 --> 00:00:02,000\nSRT's comma\n", "line 4"),
]


@pytest.mark.parametrize(("fmt", "content", "message"), INVALID)
def test_invalid_input_is_a_document_error(fmt: str, content: bytes, message: str) -> None:
    f = for_name(fmt)
    for call in (lambda: f.extract(content), lambda: f.render(content, [])):
        with pytest.raises(DocumentError) as exc:
            call()
        assert message in exc.value.message
        assert isinstance(exc.value, InvalidInput)
        assert exc.value.as_dict()["type"] == "invalid_document"


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_render_says_so_when_the_translation_count_is_wrong(fmt: str) -> None:
    path = sorted((FIXTURES / FORMATS[fmt]).iterdir())[0]
    content = path.read_bytes()
    units = for_name(fmt).extract(content)
    with pytest.raises(ValueError, match=f"got {len(units) + 1} translations for {len(units)}"):
        for_name(fmt).render(content, [u.text for u in units] + ["extra"])


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_empty_documents_have_no_units(fmt: str) -> None:
    f = for_name(fmt)
    content = b"{}" if fmt in ("json", "arb") else b""
    assert f.extract(content) == []
    assert f.render(content, []) == content


# --- format specifics ---------------------------------------------------------------------------


def test_text_is_a_unit_per_line_and_line_i_comes_back_as_line_i() -> None:
    f = for_name("text")
    # a catalogue: one product per line, CRLF, a BOM, indentation, a blank line, a form feed
    content = (
        b"\xef\xbb\xbfRed cotton shirt\r\n  blue denim jeans \r\n\r\nGreen wool hat\x0cPage two"
    )
    units = f.extract(content)
    assert [u.text for u in units] == [
        "Red cotton shirt",
        "  blue denim jeans ",
        "Green wool hat",
        "Page two",
    ]
    out = f.render(content, ["Camisa roja\nde algodón", "  vaqueros azules ", "Gorro", "Dos"])
    assert out == (
        "\ufeffCamisa roja de algodón\r\n  vaqueros azules \r\n\r\nGorro\x0cDos".encode()
    )
    assert f.render(content, [u.text for u in units]) == content


def test_text_protects_literal_tags() -> None:
    f = for_name("text")
    (unit,) = f.extract(b"Type <x1/> or </g2> here")
    assert unit.text == "Type <x1/> or <x2/> here"
    assert f.render(b"Type <x1/> or </g2> here", ["Escribe <x2/> o <x1/>"]) == (
        b"Escribe </g2> o <x1/>"
    )


def test_markdown_code_and_front_matter_are_never_units() -> None:
    content = (FIXTURES / "markdown" / "returns-help-article.md").read_bytes()
    texts = " ".join(u.text for u in for_name("markdown").extract(content))
    for frozen in ("slug", "curl", "indented code", "A-1001", "[help]:"):
        assert frozen not in texts


def test_markdown_translation_cannot_create_blocks_or_html() -> None:
    f = for_name("markdown")
    content = b"> A quoted\n> paragraph.\n\n| a | b |\n|---|---|\n| cell | x |\n"
    units = f.extract(content)
    assert [u.text for u in units] == ["A quoted\nparagraph.", "a", "b", "cell", "x"]
    out = f.render(
        content,
        ["# Not a heading\n- not a list\n1. nor this\n---", "a", "b", "x | y <b>z</b>", "x"],
    )
    assert [t.type for t in md_tokens(out)] == [t.type for t in md_tokens(content)]
    assert b"> \\# Not a heading\n> \\- not a list\n> 1\\. nor this\n> \\---" in out
    assert b"| x \\| y &lt;b>z&lt;/b> | x |" in out


def test_markdown_link_is_a_paired_code_with_its_url_in_the_end_markup() -> None:
    unit, title = for_name("markdown").extract(b'See [the docs](https://x.example/a "T") now.')
    assert title.text == "T"  # the title is a unit of its own
    assert unit.text == "See <g1>the docs</g1> now."
    assert unit.codes[1].start == "["
    assert unit.codes[1].end == '](https://x.example/a "T")'


def test_html_translation_is_escaped_and_attributes_are_units() -> None:
    f = for_name("html")
    content = b'<p title="Tip">Save <b>10%</b> today</p><img src="a.png" alt="A red shoe">'
    units = f.extract(content)
    assert [u.text for u in units] == ["Tip", "Save <g1>10%</g1> today", "A red shoe"]
    out = f.render(
        content, ['Consejo "1"', "Ahorra <g1>10 %</g1> hoy <script>x()</script> & más", "Zapato"]
    )
    root = html_root(out)
    assert root.find(".//script") is None
    assert root.find(".//p").text_content() == "Ahorra 10 % hoy <script>x()</script> & más"
    assert root.find(".//p").get("title") == 'Consejo "1"'
    assert root.find(".//img").get("alt") == "Zapato"
    assert out.startswith(b'<p title="Consejo &quot;1&quot;">Ahorra <b>10 %</b> hoy &lt;script')


def test_html_never_translates_scripts_code_or_notranslate() -> None:
    content = (FIXTURES / "html" / "product-page.html").read_bytes()
    texts = " ".join(u.text for u in for_name("html").extract(content))
    for frozen in ("dataLayer", "color: #c00", "TRAIL10", "TrailCo", "129.00", "onerror"):
        assert frozen not in texts


def test_json_skips_metadata_keys_and_keeps_non_strings() -> None:
    content = b'{"@@locale": "en", "a": "Hi", "@a": {"description": "Greeting"}, "n": [1, true]}'
    f = for_name("json")
    assert [(u.path, u.text) for u in f.extract(content)] == [("/a", "Hi")]
    assert f.render(content, ["Hola"]) == content.replace(b'"Hi"', b'"Hola"')


def test_json_icu_plural_cases_are_units_of_their_own_and_keep_their_number() -> None:
    """Each case of an ICU plural is its own segment (an engine cannot move words across
    them); a translation that drops the case's ``#`` still gets it back."""
    content = b'{"n": "{count, plural, one {# item} other {# items}}"}'
    f = for_name("json")
    assert [(u.path, u.text) for u in f.extract(content)] == [
        ("/n/plural:one", "<x1/> item"),
        ("/n/plural:other", "<x1/> items"),
    ]
    out = f.render(content, ["<x1/> art\u00edculo", "<x1/> art\u00edculos"])
    assert json.loads(out)["n"] == "{count, plural, one {# art\u00edculo} other {# art\u00edculos}}"
    dropped = json.loads(f.render(content, ["un art\u00edculo", "art\u00edculos"]))["n"]
    assert dropped.count("#") == 2 and "un art\u00edculo" in dropped


def test_json_keeps_the_files_escaping_style() -> None:
    f = for_name("json")
    escaped = b'{"a": "caf\\u00e9"}'
    assert f.render(escaped, ["th\u00e9 \U0001f375"]) == b'{"a": "th\\u00e9 \\ud83c\\udf75"}'
    raw = '{"a": "café"}'.encode()
    assert f.render(raw, ["thé"]) == '{"a": "thé"}'.encode()


def test_srt_line_breaks_are_codes_and_added_breaks_cannot_split_a_cue() -> None:
    f = for_name("srt")
    content = (
        b"1\n00:00:01,000 --> 00:00:02,000\nTwo <i>lines</i>\nof text\n\n"
        b"2\n00:00:03,000 --> 00:00:04,000\nNext\n"
    )
    units = f.extract(content)
    assert units[0].text == "Two <g1>lines</g1><x2/>of text"
    out = f.render(content, ["Dos <g1>l\u00edneas</g1><x2/>de texto\n\n3\n00:00:09,000", "Sig"])
    subs = list(srt_lib.parse(out.decode()))
    assert [s.content for s in subs] == ["Dos <i>l\u00edneas</i>\nde texto 3 00:00:09,000", "Sig"]


def test_webvtt_translates_cue_text_only_and_names_the_target_language() -> None:
    f = for_name("webvtt")
    content = (FIXTURES / "webvtt" / "edge-cases.vtt").read_bytes()
    units = f.extract(content)
    # ids, timings, settings, NOTE, STYLE and REGION blocks are never units
    assert all("-->" not in u.text and "::cue" not in u.text for u in units)
    intro = units[0]
    assert intro.path == "cue intro"
    assert [c.start for c in intro.codes.values()] == ["<v Ana>", "<c.brand>", "&amp;"]
    price = units[1]  # a voice closed by </v>, a timestamp tag, references as codes
    assert price.codes[1].start == "<v.loud Ben>" and price.codes[1].end == "</v>"
    assert "<00:00:03.500>" in [c.start for c in price.codes.values()]
    out = f.render(content, [shout(u.text) for u in units], target_lang="es").decode()
    assert "WEBVTT - Product tour, edge cases\nLanguage: es\n" in out
    assert "intro\n00:00.000 --> 00:02.500 region:fred align:left\n<v Ana>WELCOME" in out
    assert "<c.brand>ACME</c> SHOP &amp; CAFÉ!" in out
    assert "\nNOTE\nmulti-line\ncomment\n" in out
    # a line break the engine adds cannot end a cue, nor can a timing arrow it writes
    broken = f.render(content, ["Line one\n\nline two --> x", *[u.text for u in units[1:]]])
    assert b"\nLine one line two --&gt; x<v Ana><c.brand></c>&amp;\n" in broken  # codes kept
    assert [u.path for u in f.extract(broken)] == [u.path for u in units]


def test_a_timing_right_after_cue_text_starts_a_new_cue() -> None:
    """youtube-dl's captions (glut23/webvtt-py's sample): a timing line follows a cue's text
    with no blank line; the WebVTT parser starts a new cue there (issue 40 item 4)."""
    f = for_name("webvtt")
    content = (FIXTURES / "webvtt" / "webvtt-py_youtube_dl.vtt").read_bytes()
    units = f.extract(content)
    assert [u.path for u in units] == [f"cue at line {n}" for n in (12, 16, 19, 22)]
    assert all("-->" not in u.text for u in units)
    assert f.render(content, [u.text for u in units]) == content
    karaoke = units[2]  # timestamp tags and colour classes are codes
    assert "<00:05:04.199>" in [c.start for c in karaoke.codes.values()]
    assert ("<c.colorE5E5E5>", "</c>") in [(c.start, c.end) for c in karaoke.codes.values()]
    out = f.render(content, [shout(u.text) for u in units], target_lang="es").decode()
    assert "--&gt;" not in out
    assert "\nLanguage: es\nStyle:\n::cue(c.colorCCCCCC) {" in out  # the header kept, named
    assert "<c.colorCCCCCC>WHAT</c>\n00:05:04.080 --> 00:05:05.069 align:start position:0%\n" in out
    assert [u.path for u in f.extract(out.encode())] == [u.path for u in units]
    # a header followed by a timing, no blank line between: the timing starts the first cue
    bare = b"WEBVTT\n00:00:01.000 --> 00:00:02.000\nNo blank line\n"
    assert [u.text for u in f.extract(bare)] == ["No blank line"]
    assert (
        f.render(bare, ["Sin l\u00ednea"])
        == "WEBVTT\n00:00:01.000 --> 00:00:02.000\nSin l\u00ednea\n".encode()
    )


def test_a_nameless_webvtt_upload_is_read_as_webvtt() -> None:
    content = (FIXTURES / "webvtt" / "captions.vtt").read_bytes()
    assert documents.for_upload(content).name == "webvtt"
    assert documents.for_upload(content, "file").name == "webvtt"


def test_properties_translations_are_written_in_the_files_own_style() -> None:
    f = for_name("properties")
    # an ASCII file with \u escapes: a translation's non-ASCII is escaped (lower-case as it was)
    ascii_file = (FIXTURES / "properties" / "checkout_ascii_crlf.properties").read_bytes()
    units = f.extract(ascii_file)
    paths = [u.path for u in units]
    assert "empty.value" not in paths  # nothing to translate
    by_key = dict(zip(paths, units, strict=True))
    note = by_key["checkout.note"]  # MessageFormat: '' is an apostrophe, '{' a code
    assert note.text.startswith("It's quick: <x1/>braces<x2/> stay")
    assert [c.start for c in note.codes.values()] == ["'{'", "'}'", "{1}", "{2,date,short}"]
    translations = [u.text for u in units]
    translations[paths.index("checkout.title")] = "Caisse du café"
    translations[paths.index("checkout.note")] = (
        "C'est rapide : <x1/>accolades<x2/> restent, {x} <x3/> arrive le <x4/>."
    )
    translations[paths.index("checkout.long")] = "Une ligne longue — traduite"
    out = f.render(ascii_file, translations)
    assert re.fullmatch(rb"[\x00-\x7f]*", out)
    text = out.decode("ascii")
    assert "checkout.title = Caisse du caf\\u00e9\r\n" in text
    assert (
        "checkout.note=C''est rapide : '{'accolades'}' restent, '{'x'}' {1} arrive le "
        "{2,date,short}.\r\n" in text
    )
    assert "checkout.long=Une ligne longue \\u2014 traduite\r\n" in text  # one line now
    assert read_properties(out)["checkout.long"] == "Une ligne longue — traduite"
    # an ISO-8859-1 file stays ISO-8859-1: Latin-1 raw, beyond it \uXXXX
    latin = (FIXTURES / "properties" / "menu_latin1.properties").read_bytes()
    out = f.render(latin, ["Fichier récent — ouvert", "Quitter", "Aide <x1/>"])
    assert b"menu.file=Fichier r\xe9cent \\u2014 ouvert\n" in out
    assert read_properties(out)["menu.help"] == "Aide {0}"
    # a UTF-8 file with non-ASCII text gets raw UTF-8; a value after "=\" stays on its line
    jenkins = (FIXTURES / "properties" / "jenkins_hudson_Messages.properties").read_bytes()
    units = f.extract(jenkins)
    key = "FilePath.validateAntFileMask.whitespaceSeparator"
    at = [u.path for u in units].index(key)
    out = f.render(
        jenkins,
        [*(u.text for u in units[:at]), "Ya no se usa ‘,’", *(u.text for u in units[at + 1 :])],
    )
    assert f"{key}=\\\n  Ya no se usa ‘,’\n".encode() in out


def test_properties_values_the_engine_returned_unchanged_keep_their_bytes() -> None:
    """Through the cut and the render the document processes run (api/parsing.py): a value the
    engine gave back as it got it is written as it was, its quoting and escapes included
    (issue 40 item 4); a changed one in the file's style."""
    content = b"a={0}'s file\nb=\\u00a7aGold {0} coins\nc=It's {1} o''clock\nd=Caf\\u00e9 open\n"
    segments = parsing._cut("properties", content, "en", False, 1_000)[1].segments
    assert "Café open" in segments
    translations = ["Café ouvert" if s == "Café open" else s for s in segments]
    out = parsing._render("properties", content, "en", translations, "fr").content
    assert out == (
        b"a={0}'s file\nb=\\u00a7aGold {0} coins\nc=It's {1} o''clock\nd=Caf\\u00e9 ouvert\n"
    )


@pytest.mark.timeout(60)  # read in linear time: about a second; quadratically, many minutes
def test_properties_a_value_of_megabytes_is_read_in_linear_time() -> None:
    f = for_name("properties")
    # 2 MiB of continuation lines (each physical line once, not the logical line so far again)
    line = "word word \\\n"
    continued = ("key = " + line * (2 * 1024 * 1024 // len(line)) + "end\n").encode()
    (unit,) = f.extract(continued)
    assert unit.text == "word word " * (continued.count(b"\\\n")) + "end"
    assert f.render(continued, [unit.text]) == continued
    # 4 MiB of quoted apostrophes in a MessageFormat value, a tag at its end (each
    # expression looked for again only once passed, not at every quote)
    quotes = ("key = {0} " + "it''s ok " * (4 * 1024 * 1024 // 9) + "<b>x</b>\n").encode()
    (unit,) = f.extract(quotes)
    assert unit.text.startswith("<x1/> it's ok it's ok") and unit.text.endswith("<g2>x</g2>")
    assert f.render(quotes, [unit.text]) == quotes


def test_arb_metadata_is_kept_and_locale_names_the_target() -> None:
    f = for_name("arb")
    content = (FIXTURES / "arb" / "intl_en.arb").read_bytes()
    units = f.extract(content)
    assert [u.path for u in units] == [
        "/greeting",
        "/gender/select:male",
        "/gender/select:female",
        "/gender/select:other",
        "/cafe",
        "/html",
    ]
    out = f.render(content, [shout(u.text) for u in units], target_lang="pl")
    before, after = json.loads(content), json.loads(out)
    assert after["@@locale"] == "pl" and list(after) == list(before)
    for key in ("@@last_modified", "@greeting", "@gender"):
        assert after[key] == before[key]
    assert after["greeting"] == "HELLO {name}, WELCOME BACK!"
    assert after["gender"].startswith("{sex, select, male{HE BOUGHT IT}")
    assert b'"CAF\\u00c9 \\u2014 OPEN"' in out  # the file's escaping style
    # a file without @@locale gets one, first, in its own layout
    for name in ("finamp_app_en.arb", "compact_bom_en.arb"):
        content = (FIXTURES / "arb" / name).read_bytes()
        units = f.extract(content)
        out = f.render(content, [u.text for u in units], target_lang="ja")
        assert next(iter(json.loads(out.decode("utf-8-sig")))) == "@@locale"
        assert out.startswith(b'\xef\xbb\xbf{"@@locale": "ja","title"') or out.startswith(
            b'{\n  "@@locale": "ja",\n  "startupError"'
        )
        assert f.render(content, [u.text for u in units]) == content  # no target: as it was


def test_a_nameless_arb_upload_is_read_as_arb() -> None:
    content = (FIXTURES / "arb" / "app_en.arb").read_bytes()
    assert documents.for_upload(content).name == "arb"


def test_strings_values_are_read_as_the_app_reads_them_and_written_back_quoted() -> None:
    f = for_name("strings")
    content = (FIXTURES / "strings" / "edge-cases.strings").read_bytes()
    units = f.extract(content)
    by_key = {u.path: u for u in units}
    assert set(by_key) == {
        "alert.body",
        "welcome_title",
        "items.count",
        "price",
        "octal",
        "multi.line",
    }
    assert by_key["alert.body"].text == 'Tap "Buy" to pay.\nC:\\Shop is your folder.'
    assert by_key["octal"].text == "Café and é"
    assert [c.start for c in by_key["items.count"].codes.values()] == ["%1$lld", "%2$@", "%%"]
    translations = [u.text for u in units]
    translations[0] = 'Pulsa "Comprar" para pagar.\nC:\\Tienda es tu carpeta.'
    out = f.render(content, translations).decode()
    assert '"alert.body" = "Pulsa \\"Comprar\\" para pagar.\\nC:\\\\Tienda es tu carpeta.";' in out
    assert '"octal" = "Caf\\351 and \\U00e9";' in out  # unchanged: as it was written
    # a UTF-16 file comes back UTF-16, with its byte-order mark
    utf16 = (FIXTURES / "strings" / "facebook-ios-sdk_FacebookSDK.strings").read_bytes()
    units = f.extract(utf16)
    assert (
        units[0].path == "DeviceLogin.LogInPrompt"
        and units[0].text == "Visit <x1/> and enter your code."
    )
    out = f.render(utf16, ["Visita <x1/> e introduce tu código.", *(u.text for u in units[1:])])
    assert out.startswith(b"\xff\xfe")
    assert '"DeviceLogin.LogInPrompt" = "Visita %@ e introduce tu código.";' in out.decode("utf-16")
