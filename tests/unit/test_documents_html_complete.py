"""HTML and Markdown complete: every text a reader or a browser can show is a unit (fallback
content, templates, SVG text, titles, attributes, front matter), and nothing a browser runs or
reads as code ever is.

The fixtures ``html/complete-page.html`` and ``markdown/complete-guide.md`` hold one of each
case. A pseudo-translation (text upper-cased, tags kept) must change every translatable text
and attribute as the format's reference parser reads them (lxml for HTML, markdown-it and a
YAML parser for Markdown), and leave every never-translated piece byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lxml.etree as etree
import lxml.html
import pytest
from markdown_it import MarkdownIt
from ruamel.yaml import YAML

from mtfleet.formats.base import TAG, DocumentError, Unit
from mtfleet.formats.html import HtmlFormat, rendered, units
from mtfleet.formats.markdown import MarkdownFormat

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"
PAGE = FIXTURES / "html" / "complete-page.html"
GUIDE = FIXTURES / "markdown" / "complete-guide.md"
HTML = HtmlFormat()
MD = MarkdownFormat()


def shout(tagged: str) -> str:
    """Pseudo-translation: upper-case the text, keep every tag where it is."""
    out: list[str] = []
    pos = 0
    for m in TAG.finditer(tagged):
        out += [tagged[pos : m.start()].upper(), m.group(0)]
        pos = m.end()
    return "".join([*out, tagged[pos:].upper()])


def plain(u: Unit) -> str:
    """A unit's text without its tags (what the engine may change)."""
    return TAG.sub("", u.text)


def tree(content: bytes) -> Any:
    return etree.fromstring(content, lxml.html.HTMLParser(encoding="utf-8"))


def md_parse(content: bytes) -> tuple[list[Any], dict[str, Any]]:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    env: dict[str, Any] = {}
    text = content.decode("utf-8-sig")
    if text.startswith("---\n"):  # the front matter, blanked as a static site generator does
        end = text.index("\n---\n", 4) + 5
        text = "\n" * text.count("\n", 0, end) + text[end:]
    return md.parse(text, env), env


def md_children(tokens: list[Any]) -> list[Any]:
    out: list[Any] = []
    for t in tokens:
        out.append(t)
        out += md_children(t.children or [])
    return out


def front_matter(content: bytes) -> dict[str, Any]:
    text = content.decode("utf-8-sig")
    loaded = YAML(typ="safe", pure=True).load(text[4 : text.index("\n---\n", 4)])
    assert isinstance(loaded, dict)
    return loaded


# --- HTML: what is translated ---------------------------------------------------------------

#: Each text a reader or a browser can show, as it sits in a unit of complete-page.html.
PAGE_TEXTS = [
    "Storm Jacket – Outdoor Shop",  # <title>
    "A light storm jacket for wet hikes.",  # <meta name=description>
    "jacket, rain, hiking",  # keywords
    "Stays dry in any weather.",  # og:description
    "Sale ends Sunday.",  # twitter:description
    "New arrivals feed",  # <link rel=alternate title>
    "Turn on JavaScript to see prices.",  # <noscript> in <body>
    "Main menu",  # aria-label
    "Back to the start page",  # title
    "Share this page",  # a button's aria-label
    "Share icon",  # an inline SVG's aria-label, the SVG inside a sentence
    "Share",  # the SVG's <title>
    "A blue jacket on a hook",  # alt
    "Our best seller this autumn.",  # <figcaption>
    "Chart of sizes against chest width",  # SVG <desc>
    "Chest width in centimetres",  # SVG <text> with <tspan>
    "Jacket video",  # <video title>
    "English captions",  # <track label>
    "Your browser cannot play this video. Download it instead.",  # video fallback
    "Your browser cannot play the rain sound.",  # audio fallback
    "A diagram of how the jacket fits.",  # canvas fallback
    "The care guide could not be shown.",  # object fallback
    "Map of our store",  # iframe title
    "Frames are off: see the address below.",  # iframe fallback
    "A review will appear here.",  # <template> content
    "Care instructions",  # <summary>
    "Wash cold and hang to dry.",  # the rest of <details>
    "Sizes and chest widths",  # <table summary>
    "Size guide",  # <caption>
    "Size",  # <th abbr>
    "Dark colours",  # <optgroup label>
    "Navy blue",  # <option label>
    "Navy",  # <option> text
    "Gift message",  # placeholder
    "Printed on the card",  # aria-description
    "Very warm",  # aria-valuetext
    "Warmth slider",  # aria-roledescription
    "Write a note",  # aria-placeholder
    "Editable note text",  # contenteditable: translated like any text
    "Delivery notes",  # a <textarea>'s placeholder
    "Add to basket",  # <input type=submit value>
    "Start over",  # <input type=reset value>
    "Buy now",  # <button>
    "Opening hours\n  Monday to Friday  9 to 18",  # <pre> that is not code, its spacing kept
    "But this sentence is translated.",  # translate="yes" inside translate="no"
]

#: What no unit's text may hold: code, data, scripts, styles, URLs, handlers, untranslated.
PAGE_NEVER = [
    "New!",  # <style>
    "Structured data stays as it is",  # JSON-LD
    "nested words",  # a script's content after <!--<script>: still script
    "Hello from the script",
    "Body handler text",  # onload=
    "Handler alt text",  # onerror=
    "Data tooltip words",  # data-*
    "StormCo",  # class=notranslate, translate="no" (its alt too)
    "svg script words",  # SVG <script> with CDATA
    "font: 12px",  # SVG <style>
    "shop --size M",  # <code>
    "Enter",  # <kbd>
    "Done",  # <samp>
    "square units",  # <math> (<mtext> too)
    "curl",  # <pre><code>
    "highlighted code words",  # <div class="highlight"><pre>
    "Gift text typed by the user",  # a text input's value: data
    "Text the customer typed",  # a <textarea>'s content: data
    "buy-now",  # a button's value: data
    "care-guide.pdf",  # download=
    "Default theme",  # a style sheet set's name
    "SJ-42",  # hidden input
    "device-width",  # viewport
    "en_US",
]


def test_every_text_a_reader_or_browser_can_show_is_a_unit() -> None:
    texts = [plain(u).strip() for u in HTML.extract(PAGE.read_bytes())]
    for expected in PAGE_TEXTS:
        assert expected in texts, expected


def test_nothing_a_browser_runs_or_reads_as_code_is_a_unit() -> None:
    texts = "\n".join(plain(u) for u in HTML.extract(PAGE.read_bytes()))
    for never in PAGE_NEVER:
        assert never not in texts, never


def test_pseudo_translation_changes_each_text_and_keeps_the_rest_byte_for_byte() -> None:
    content = PAGE.read_bytes()
    found = HTML.extract(content)
    out = HTML.render(content, [shout(u.text) for u in found])
    assert HTML.render(content, [u.text for u in found]) == content  # identity, byte for byte
    root, text = tree(out), out.decode()
    # what a parser sees changed
    assert root.findtext(".//title") == "STORM JACKET – OUTDOOR SHOP"
    meta = {m.get("name") or m.get("property"): m.get("content") for m in root.iter("meta")}
    assert meta["description"] == "A LIGHT STORM JACKET FOR WET HIKES."
    assert meta["og:title"] == "STORM JACKET"
    assert meta["twitter:title"] == "STORM JACKET ON SALE"
    assert meta["viewport"] == "width=device-width, initial-scale=1"
    assert meta["og:locale"] == "en_US"  # no target language given: nothing declared
    attrs = {
        ("nav", "aria-label"): "MAIN MENU",
        ("img", "alt"): "A BLUE JACKET ON A HOOK",
        ("img", "title"): "PHOTO BY THE SHOP",
        ("track", "label"): "ENGLISH CAPTIONS",
        ("optgroup", "label"): "DARK COLOURS",
        ("option", "label"): "NAVY BLUE",
        ("th", "abbr"): "SIZE",
        ("table", "summary"): "SIZES AND CHEST WIDTHS",
        ("textarea", "placeholder"): "DELIVERY NOTES",
        ("iframe", "title"): "MAP OF OUR STORE",
    }
    for (tag, name), value in attrs.items():
        assert root.find(f".//{tag}[@{name}]").get(name) == value, (tag, name)
    values = [i.get("value") for i in root.iter("input")]
    assert values == ["Gift text typed by the user", None, "ADD TO BASKET", "START OVER", "SJ-42"]
    assert root.findtext(".//textarea") == "Text the customer typed"
    assert root.find(".//button[@name='go']").get("value") == "buy-now"
    for shown in (
        "TURN ON <strong>JAVASCRIPT</strong> TO SEE PRICES.",
        "<title>SHARE</title>",
        "<desc>CHART OF SIZES AGAINST CHEST WIDTH</desc>",
        'CHEST WIDTH <tspan font-weight="bold">IN CENTIMETRES</tspan>',
        "YOUR BROWSER CANNOT PLAY THIS VIDEO.",
        ">A DIAGRAM OF HOW THE JACKET FITS.</canvas>",
        ">FRAMES ARE OFF: SEE THE ADDRESS BELOW.</iframe>",
        '<li class="review">A REVIEW WILL APPEAR HERE.</li>',
        "<pre>OPENING HOURS\n  MONDAY TO FRIDAY  9 TO 18</pre>",
        '<p translate="yes">BUT THIS SENTENCE IS TRANSLATED.</p>',
        "RUN <code>shop --size M</code>, PRESS <kbd>Enter</kbd>",
    ):
        assert shown in text, shown
    # what must not change: every such piece of the source is in the output as it was
    source = content.decode()
    for kept in (
        r"<style title=\"Default theme\">.*?</style>",
        r"<script type=\"application/ld\+json\">.*?</script>",
        r"<script>\n    // <!--.*?</script>",
        r"<svg viewBox[^>]*>.*?(<style>.*?</svg>)",
        r"<div translate=\"no\">\s*<p>Brand line: StormCo Weatherproof</p>",
        r"<img src=\"/logo.png\" alt=\"StormCo logo\">",
        r"<math>.*?</math>",
        r"<pre><code class=\"language-bash\">.*?</pre>",
        r"<div class=\"highlight\">.*?</div>",
        r"<a href=\"/sale\" class=\"notranslate\">.*?</a>",
        r" onload=\"[^\"]*\"",
        r" onerror=\"[^\"]*\"",
        r" data-tooltip=\"[^\"]*\"",
        r" download=\"[^\"]*\"",
        r"<link rel=\"stylesheet\" href=\"/site.css\" title=\"Default theme\">",
    ):
        m = re.search(kept, source, re.S)
        assert m is not None, kept
        piece = m.group(m.lastindex or 0)
        assert piece in text, kept
    # and the parsed page has every element it had, no script more or less
    assert [e.tag for e in root.iter()] == [e.tag for e in tree(content).iter()]


def test_translate_yes_inside_translate_no_turns_translation_back_on() -> None:
    doc = (
        '<div translate="no"><p>Kept <b>here</b></p><p translate="yes">Back <span '
        'title="Tip">on</span> <code translate="no">x()</code></p><img alt="Logo">'
        '<span class="notranslate">A <em translate="">be</em></span></div>'
        '<p><code translate="yes">opt in</code> <kbd>Esc</kbd></p>'
    )
    found = units(doc)
    assert [u.text for u in found] == ["Tip", "Back <g1>on</g1> <x2/>", "be", "opt in"]
    out = rendered(doc, [shout(u.text) for u in found])
    assert (
        '<p translate="yes">BACK <span title="TIP">ON</span> <code translate="no">x()</code>' in out
    )
    assert "<p>Kept <b>here</b></p>" in out and 'alt="Logo"' in out
    assert 'A <em translate="">BE</em>' in out and '<code translate="yes">OPT IN</code>' in out


@pytest.mark.parametrize(
    "doc",
    [
        # the tokenizer's escape states: after "<!--<script>" the first </script> is content
        '<script><!--<script></script> alert("escaped words") --></script>',
        '<script>if (a<!--b) x("words after a comment")</script>',
        # SVG is foreign content: CDATA hides an end tag, a comment too
        '<svg><script><![CDATA[ x("</script>") ; say("cdata words") ]]></script></svg>',
        '<svg><script><!-- </script> say("comment words") --></script></svg>',
        '<svg><style><!-- </style> --> p::after { content: "style words" }</style></svg>',
        # an HTML tag that breaks out of SVG makes the next <script> HTML's again
        '<svg><p>Shown</p><script>var s = "<b>html script words</b>";</script>',
        # a browser that ignores <svg> in <select> reads the script as HTML: both readings hold
        '<select><svg><script>if (a<b) go("select words </div>")</script></svg></select>',
        # "<![CDATA[" in HTML is a comment up to the first ">": the script after it is real
        '<p><![CDATA[ > <script> ]]> var s = "hidden words"; </script></p>',
        # noscript is read as HTML, bounded by where a scripting browser ends it
        "<noscript><p title=\"</noscript><script>go('attr words')</script>\">x</p></noscript>",
        '<script type="application/ld+json">{"name": "json words"}</script>',
        "<p onclick=\"say('handler words')\" style=\"content: 'style words'\">Shown</p>",
    ],
)
def test_script_and_style_content_is_never_a_unit(doc: str) -> None:
    doc += "<p>Shown</p>"
    found = units(doc)
    texts = " ".join(plain(u) for u in found)
    assert "Shown" in texts
    assert "words" not in texts
    out = rendered(doc, [shout(u.text) for u in found])
    assert "SHOWN" in out and "WORDS" not in out
    assert rendered(doc, [u.text for u in found]) == doc


def test_pre_is_text_unless_it_is_a_code_block() -> None:
    doc = (
        "<pre>Line one\n  line two</pre>"
        "<pre><code>code one</code></pre>"
        '<pre class="language-python">code two</pre>'
        '<pre data-lang="sh">code three</pre>'
        '<div class="codehilite"><!-- x --> <pre><span class="k">code four</span></pre></div>'
        '<pre class="sourceCode">code five</pre>'
        '<pre translate="yes" class="hljs">Opted in</pre>'
        "<pre>Run <code>ls</code> here</pre>"
    )
    assert [u.text for u in units(doc)] == [
        "Line one\n  line two",
        "Opted in",
        "Run <x1/> here",
    ]


def test_textarea_keeps_its_content_and_translates_its_placeholder() -> None:
    doc = '<textarea placeholder="Your note">Prefilled &amp; typed</textarea>'
    found = units(doc)
    assert [u.text for u in found] == ["Your note"]
    assert rendered(doc, ["Ihre Notiz"]) == doc.replace("Your note", "Ihre Notiz")


@pytest.mark.parametrize(
    ("target", "html_tag", "body_tag"),
    [
        ("ar", '<html lang="ar" dir="rtl">', '<body dir="rtl" class'),
        ("he", '<html lang="he" dir="rtl">', '<body dir="rtl" class'),
        ("fa", '<html lang="fa" dir="rtl">', '<body dir="rtl" class'),
        ("de", '<html lang="de" dir="ltr">', '<body dir="ltr" class'),
        ("pt_BR", '<html lang="pt-BR" dir="ltr">', '<body dir="ltr" class'),
    ],
)
def test_render_declares_the_target_language_and_direction(
    target: str, html_tag: str, body_tag: str
) -> None:
    content = PAGE.read_bytes()
    found = HTML.extract(content)
    out = HTML.render(content, [u.text for u in found], target_lang=target).decode()
    assert out.count(html_tag) == 1 and out.count(body_tag) == 1
    meta = {m.get("name") or m.get("property") or m.get("http-equiv"): m.get("content")
            for m in tree(out.encode()).iter("meta")}  # fmt: skip
    assert meta["content-language"] == target.replace("_", "-")
    assert meta["og:locale"] == target.replace("-", "_")
    # nothing else changed
    strip = re.compile(r'(lang|dir|content)="[^"]*"')
    assert strip.sub("", out) == strip.sub("", content.decode())


def test_a_page_without_lang_gets_one_and_a_fragment_gets_nothing() -> None:
    page = b"<!doctype html><HTML><body><p>Hi</p></body></HTML>"
    out = HTML.render(page, ["Hallo"], target_lang="ar")
    assert out == b'<!doctype html><HTML dir="rtl" lang="ar"><body><p>Hallo</p></body></HTML>'
    assert HTML.render(page, ["Hallo"], target_lang="de") == (
        b'<!doctype html><HTML lang="de"><body><p>Hallo</p></body></HTML>'
    )
    auto = b'<html lang=en dir=auto xml:lang="en"><p>Hi</p>'
    assert HTML.render(auto, ["Hi"], target_lang="ar") == (
        b'<html lang="ar" dir=auto xml:lang="ar"><p>Hi</p>'
    )
    fragment = b'<p lang="en" dir="ltr">Hi</p>'
    assert HTML.render(fragment, ["Hi"], target_lang="ar") == fragment
    assert HTML.render(page, ["Hi"], target_lang='x" onload="y') == page.replace(b"Hi", b"Hi")


def test_hostile_translations_of_fallback_and_attributes_stay_text() -> None:
    doc = (
        '<noscript><p>Turn on scripts</p></noscript><iframe src="/m" title="Map">Frames off'
        "</iframe><template><p>Row</p></template><svg><title>Icon</title></svg>"
        '<img alt="Logo"><p>Tail</p>'
    )
    found = units(doc)
    evil = '</noscript></iframe></template></svg><script>alert(1)</script>" onload="x() & &amp;'
    out = rendered(doc, [evil + "\n\n" for _ in found])
    root = tree(out.encode())
    assert root.findall(".//script") == []
    assert not any(e.get("onload") for e in root.iter() if isinstance(e.tag, str))
    assert [e.tag for e in root.iter()] == [e.tag for e in tree(doc.encode()).iter()]
    again = units(out)
    assert len(again) == len(found)
    assert all(plain(u).strip() == evil for u in again)


def test_deep_nesting_is_kept_and_never_crashes() -> None:
    for doc in (
        "<template>" * 300 + "Deep",
        '<span translate="no"><span translate="yes">' * 300 + "Deep",
        "<svg>" * 300 + "<text>Deep</text>",
        "<noscript>" * 300 + "Deep",
    ):
        found = units(doc)
        assert rendered(doc, [u.text for u in found]) == doc
    with pytest.raises(DocumentError):
        HTML.extract(b"\xff not UTF-8")


# --- Markdown --------------------------------------------------------------------------------

GUIDE_TEXTS = [
    "Caring for your storm jacket",  # front matter title
    "How to wash, dry and store it",  # front matter description (its comment left out)
    "Jacket care",  # front matter sidebar_label
    "Caring for your jacket ",  # heading (its {#care .guide} is a code)
    "What the symbols mean",  # inline link title
    "Wash at 30 degrees",  # inline image title
    "Frequently asked questions",  # inline HTML attribute
    "Empty the pockets.",  # ordered list
    "the pocket zips.",  # nested list (its footnote reference is a code)
    " Check the care label",  # task item (its box is a code)
    "Tip: a cold wash keeps the membrane working.\nSee the membrane page for details.",
    "Cold, gentle cycle",  # table cell
    "Wash tub",  # image title in a cell
    "Hanging symbol",  # inline HTML attribute in a cell
    "Good to know",  # HTML block: attribute
    "Never use fabric softener: it blocks the membrane.",  # HTML block: text
    "No softener symbol",  # HTML block: alt
    "Why no softener?",  # <summary> in an HTML block
    "Softener leaves a film that stops the fabric breathing.",
    "Open zips can scratch the drum.",  # footnote (its label is a code)
    "How the membrane works",  # reference definition title
]

GUIDE_NEVER = [
    "jacket-care",  # front matter slug
    "2024-05-01",
    "care, jackets",
    "Ctrl",  # <kbd>
    "StormCo",  # translate="no"
    "jacket --wash",  # code span
    "example.com",  # URLs, autolinks, destinations
    "script text stays",  # HTML block <script>
    "wash --cold",  # fence
    "indented code",
    "#care",
    "[ ]",
    "[^zips]",  # footnote label
]


def test_markdown_every_shown_text_is_a_unit_and_no_code_is() -> None:
    found = MD.extract(GUIDE.read_bytes())
    texts = [plain(u) for u in found]
    for expected in GUIDE_TEXTS:
        assert expected in texts, expected
    joined = "\n".join(texts)
    for never in GUIDE_NEVER:
        assert never not in joined, never


def test_markdown_pseudo_translation_as_markdown_it_and_yaml_read_it() -> None:
    content = GUIDE.read_bytes()
    found = MD.extract(content)
    assert MD.render(content, [u.text for u in found]) == content  # byte for byte
    out = MD.render(content, [shout(u.text) for u in found])
    before, env_before = md_parse(content)
    after, env_after = md_parse(out)
    assert [t.type for t in md_children(after)] == [t.type for t in md_children(before)]
    for a, b in zip(md_children(before), md_children(after), strict=True):
        if a.type in ("fence", "code_block", "code_inline"):
            assert b.content == a.content
        if a.type in ("link_open", "image"):
            assert b.attrs.get("href") == a.attrs.get("href")
            assert b.attrs.get("src") == a.attrs.get("src")
            title = a.attrs.get("title")
            assert b.attrs.get("title") == (title.upper() if title else title)
        if a.type in ("html_block", "html_inline"):
            # the same elements, with their shown text and attributes changed
            assert re.findall(r"</?[\w-]+", b.content) == re.findall(r"</?[\w-]+", a.content)
    refs_a, refs_b = env_before["references"], env_after["references"]
    assert refs_b["MEMBRANE"]["title"] == refs_a["MEMBRANE"]["title"].upper()
    assert refs_b["MEMBRANE"]["href"] == refs_a["MEMBRANE"]["href"]
    fm_a, fm_b = front_matter(content), front_matter(out)
    assert fm_b == {
        **fm_a,
        "title": fm_a["title"].upper(),
        "description": fm_a["description"].upper(),
        "sidebar_label": fm_a["sidebar_label"].upper(),
    }
    text = out.decode()
    for kept in (
        "<kbd>Ctrl</kbd>+<kbd>P</kbd>",
        '<span translate="no">StormCo</span>',
        "`jacket --wash`",
        "{#care .guide}",
        "- [ ] CHECK THE CARE LABEL",
        "[^zips]: OPEN ZIPS",
        '<script>\n  window.careGuide = { step: "script text stays" };\n</script>',
        "```bash\nwash --cold --gentle\n```",
        "<https://shop.example.com/help>",
        "slug: jacket-care\ndate: 2024-05-01\ntags: [care, jackets]",
        '<div class="callout" title="GOOD TO KNOW">',
        '<img src="/img/no-softener.png" alt="NO SOFTENER SYMBOL">',
    ):
        assert kept in text, kept


@pytest.mark.parametrize(
    ("source", "title_of"),
    [
        (b'See [the docs](https://x.example/a "T") now.\n', lambda t: t[1].attrs["title"]),
        (b"See ![pic](/p.png 'T') now.\n", lambda t: t[1].attrs["title"]),
        (b"See [it](/p (T)) now.\n", lambda t: t[1].attrs["title"]),
        (b'| a |\n|---|\n| [x](/p "T") |\n', lambda t: t[1].attrs["title"]),
        (b'See ![*pic*](/p.png "T") now.\n', lambda t: t[1].attrs["title"]),
    ],
)
def test_markdown_titles_take_any_translation_as_text(
    source: bytes, title_of: Callable[[list[Any]], str]
) -> None:
    found = MD.extract(source)
    index = next(k for k, u in enumerate(found) if u.text == "T")
    evil = "Say \"hi\" \\ (x) 'y' & &amp; | z"
    translations = [u.text for u in found]
    translations[index] = evil + "\nnext"
    out = MD.render(source, translations)
    tokens = md_children(md_parse(out)[0])
    inline = [t for t in tokens if t.type in ("link_open", "image")]
    assert title_of([None, inline[0]]) == evil + " next"
    assert [t.type for t in tokens] == [t.type for t in md_children(md_parse(source)[0])]


def test_markdown_front_matter_takes_any_translation_as_a_yaml_string() -> None:
    source = b'---\ntitle: Plain title\ndescription: "Quoted"\nslug: kept\n---\n\nBody.\n'
    found = MD.extract(source)
    assert [u.text for u in found] == ["Plain title", "Quoted", "Body."]
    evil = 'a: b # "c" \\ \n--- \u2028 \x85 {x} [y](javascript:z) & *z <script>alert(1)</script>'
    out = MD.render(source, [evil, evil, "Body."])
    fm = front_matter(out)
    assert fm == {"title": evil, "description": evil, "slug": "kept"}
    assert out.endswith(b"\n---\n\nBody.\n")
    # a renderer that does not know front matter shows it as Markdown: no markup there
    naive = MarkdownIt("commonmark", {"html": True}).render(out.decode())
    assert "<script" not in naive and "<a " not in naive


def test_markdown_front_matter_fields_that_are_not_one_line_strings_are_kept() -> None:
    source = (
        b"---\ntitle: >\n  Folded\ndescription: 2024\nsummary: A plain value\n  over lines\n"
        b"excerpt: &a anchored\nsubtitle: [a, b]\n---\n\n+++\n"
    )
    assert [u.path for u in MD.extract(source)] == ["line 11"]
    toml = b'+++\ntitle = "TOML title"\n+++\n\nBody.\n'
    assert [u.text for u in MD.extract(toml)] == ["Body."]


def test_markdown_html_block_stays_one_block_whatever_the_translation() -> None:
    source = b'<div class="note">\n  <p title="Hint">Keep it dry.</p>\n</div>\n\nAfter.\n'
    found = MD.extract(source)
    assert [u.text for u in found] == ["Hint", "Keep it dry.", "After."]
    out = MD.render(source, ["A\n\nB", "\n\nC\n\n\n<script>x()</script>\n\nD\n\n", "After."])
    tokens, _ = md_parse(out)
    assert [t.type for t in tokens] == [t.type for t in md_parse(source)[0]]
    assert "<script>" not in out.decode()


def test_markdown_raw_text_left_open_is_never_translated() -> None:
    source = (
        b'Intro <script>\nvar a = "first words";\n\nmore("second words") </script> tail.\n\n'
        b'<div><style>\n\np { content: "style words" }\n</style>\n\nShown again.\n'
    )
    texts = " ".join(plain(u) for u in MD.extract(source))
    assert "Intro" in texts and "Shown again." in texts
    assert "words" not in texts


def test_markdown_literal_brackets_footnotes_and_tasks_are_codes() -> None:
    for source, text in [
        (b"Press [Enter] (the big key) now.\n", "Press <x1/> (the big key) now."),
        (b"See note[^1] here.\n", "See note<x1/> here."),
        (b"[^1]: The note.\n", "<x1/>The note."),
        (b"- [x] Done item\n", "<x1/> Done item"),
        (b"## Setup {#setup}\n", "Setup <x1/>"),
        (b"Escaped \\[not a link\\] stays.\n", "Escaped \\[not a link\\] stays."),
    ]:
        (unit,) = MD.extract(source)
        assert unit.text == text
        assert MD.render(source, [unit.text]) == source
        out = MD.render(source, [shout(unit.text)])
        assert [t.type for t in md_children(md_parse(out)[0])] == [
            t.type for t in md_children(md_parse(source)[0])
        ]
