"""Property tests for the text, Markdown, HTML, JSON and SRT formats (hypothesis).

Random text, heavy with each format's own syntax (``*``, ``[``, ``<``, ``&``, ``{``, ``%``, line
breaks, literal ``<x1/>`` tags, emoji, RTL text), is put into a template document per format:

* extracting and rendering the units unchanged gives the document back (byte-equal; HTML: an
  equal tree);
* plain translations of a fixed document land where they belong: extracting the rendered
  document gives them back;
* whatever an engine returns (random text and tags), render gives a document of the same format.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable

import lxml.etree as etree
import lxml.html
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mtfleet.formats import for_name
from mtfleet.formats.base import TAG

SYNTAX = [
    "*", "**", "_", "[", "]", "(", ")", "<", ">", "&", "#", "`", "```", "\\", "|", "!", "~",
    "{", "}", "%", "$", "'", '"', "/", "=", "+", "-", "1.", "\n", "\n\n", "\r\n", "\t", "  ",
    "<b>", "</b>", "<i>", "</i>", "<br>", "<p>", "</p>", "<script>", "</script>", "<!--", "-->",
    "&amp;", "&nbsp;", "&#8364;", "&copy", "<x1/>", "<g1>", "</g1>", "](http://x.example)",
    "![", "> ", "- ", "{name}", "{{count}}", "%s", "%1$s", "'{'", "''", "$t(key)",
    "{n, plural, one {# item} other {# items}}", "{\\an8}", " --> ",
]  # fmt: skip
WORDS = ["shoe", "Größe", "café", "日本語", "مرحبا", "שלום", "👍🏽", "👨‍👩‍👧", "ok", "42", " "]
CHARS = st.characters(min_codepoint=1, exclude_categories=("Cs",))
PIECE = st.one_of(st.sampled_from(SYNTAX), st.sampled_from(WORDS), CHARS)
RANDOM_TEXT = st.lists(PIECE, max_size=25).map("".join)
PLAIN_TEXT = st.from_regex(
    r"[A-Za-zÀ-ÖØ-öø-ÿ一-龥][A-Za-zÀ-ÖØ-öø-ÿ一-龥0-9 ,.!?'-]{0,30}[A-Za-z.!?]", fullmatch=True
)
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def html_tree(content: bytes) -> object:
    root = etree.fromstring(content, lxml.html.HTMLParser(encoding="utf-8"))

    def walk(el: etree._Element) -> object:
        if not isinstance(el.tag, str):
            return (str(el.tag), el.text, el.tail)
        return (el.tag, sorted(el.attrib.items()), el.text, el.tail, [walk(c) for c in el])

    return None if root is None else walk(root)


def text_doc(t: list[str]) -> bytes:
    return f"Title: {t[0]}\n\n{t[1]}\r\n\r\n  {t[2]}\n\t{t[3]}".encode()


def markdown_doc(t: list[str]) -> bytes:
    return (
        f"---\ntitle: {t[0]}\n---\n# {t[1]}\n\n{t[2]}\n\n- {t[3]}\n  - {t[4]}\n\n> {t[5]}\n"
        f"> {t[6]}\n\n| h | {t[7]} |\n|---|---|\n| {t[8]} | x |\n\n```\n{t[9]}\n```\n\n"
        f"[{t[0]}](http://example.com/{t[1]}) {t[2]}\n"
    ).encode()


def html_doc(t: list[str]) -> bytes:
    a = [html.escape(s, quote=True) for s in t]
    return (
        f'<!DOCTYPE html><html><head><title>{a[0]}</title><meta name="description" '
        f'content="{a[1]}"></head><body><h1>{t[2]}</h1><p>{t[3]} <a href="/x" title="{a[4]}">'
        f'{a[5]}</a></p><ul><li>{t[6]}<li>{a[7]}</ul><img alt="{a[8]}"><script>var s = '
        f'"{t[9]}";</script><pre>{a[0]}</pre><p translate="no">{a[1]}</p></body></html>'
    ).encode()


def json_doc(t: list[str], ascii_only: bool) -> bytes:
    doc = {
        "title": t[0],
        "nested": {"a": [t[1], 1, True, None, t[2]], "b": {t[3]: t[4]}},
        "@title": {"description": t[5]},
        "count": 3.5,
    }
    return json.dumps(doc, ensure_ascii=ascii_only, indent=2).encode()


def srt_doc(t: list[str]) -> bytes:
    cues = []
    for n, s in enumerate(t[:6], start=1):
        lines = [line.strip() for line in s.replace("\r", "").split("\n") if line.strip()]
        text = "\n".join(lines) or "…"
        cues.append(f"{n}\n00:00:{n:02d},000 --> 00:00:{n:02d},900\n{text}\n")
    return "\n".join(cues).encode()


TEMPLATES: dict[str, Callable[[list[str]], bytes]] = {
    "text": text_doc,
    "markdown": markdown_doc,
    "html": html_doc,
    "srt": srt_doc,
}


def assert_identity(fmt: str, doc: bytes) -> None:
    f = for_name(fmt)
    units = f.extract(doc)
    out = f.render(doc, [u.text for u in units])
    if fmt == "html":
        assert html_tree(out) == html_tree(doc)
        assert f.extract(out) == units
    else:
        assert out == doc


@PROPERTY
@given(st.lists(RANDOM_TEXT, min_size=10, max_size=10))
def test_text_identity(texts: list[str]) -> None:
    assert_identity("text", text_doc(texts))


@PROPERTY
@given(st.lists(RANDOM_TEXT, min_size=10, max_size=10))
def test_markdown_identity(texts: list[str]) -> None:
    assert_identity("markdown", markdown_doc(texts))


@PROPERTY
@given(st.lists(RANDOM_TEXT, min_size=10, max_size=10))
def test_html_identity(texts: list[str]) -> None:
    assert_identity("html", html_doc(texts))


@PROPERTY
@given(st.lists(RANDOM_TEXT, min_size=6, max_size=6), st.booleans())
def test_json_identity(texts: list[str], ascii_only: bool) -> None:
    assert_identity("json", json_doc(texts, ascii_only))


@PROPERTY
@given(st.lists(RANDOM_TEXT.filter(lambda s: "-->" not in s), min_size=6, max_size=6))
def test_srt_identity(texts: list[str]) -> None:
    assert_identity("srt", srt_doc(texts))


FIXED = ["Red shoes", "Size guide", "Free returns", "Care", "Wet trails", "Colours", "Ships fast"]
FIXED += ["Soft", "Light", "Warm"]


@PROPERTY
@given(st.sampled_from(["text", "markdown", "html", "json", "srt"]), st.data())
def test_plain_translations_land_in_their_units(fmt: str, data: st.DataObject) -> None:
    doc = json_doc(FIXED, False) if fmt == "json" else TEMPLATES[fmt](FIXED)
    f = for_name(fmt)
    units = f.extract(doc)
    assert all(not u.codes for u in units if u.text in FIXED)
    translations = [
        data.draw(PLAIN_TEXT) if not u.codes else u.text.replace("Red", "Rojo") for u in units
    ]
    out = f.render(doc, translations)
    assert [u.text for u in f.extract(out)] == translations


@PROPERTY
@given(st.sampled_from(["text", "markdown", "html", "json", "srt"]), st.data())
def test_any_engine_output_renders_a_valid_document(fmt: str, data: st.DataObject) -> None:
    doc = json_doc(FIXED, True) if fmt == "json" else TEMPLATES[fmt](FIXED)
    doc = doc.replace(b"Red shoes", b"Red <b>shoes</b> {name} %s" if fmt != "text" else b"Red")
    f = for_name(fmt)
    units = f.extract(doc)
    translations = []
    for u in units:
        tags = [m.group(0) for m in TAG.finditer(u.text)] + ["<x9/>", "</g1>", "<g2>"]
        pieces = data.draw(st.lists(st.one_of(PIECE, st.sampled_from(tags)), max_size=15))
        translations.append("".join(pieces))
    out = f.render(doc, translations)
    again = f.extract(out)  # the result is a document of the same format
    if fmt == "json":
        assert set(json.loads(out)) == set(json.loads(doc))
    if fmt == "srt":
        assert len(again) == len(units)
    if fmt == "html":
        assert html_tree(out) is not None
