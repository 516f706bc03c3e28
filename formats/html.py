"""HTML pages and fragments: a unit per block's text, and per translatable attribute.

Why not lxml.html or selectolax: both give a tree, and writing a tree back re-serialises the
whole page (entities become characters, attribute quoting and whitespace inside tags change,
a fragment gains ``<html><body>``, omitted end tags appear). This module tokenizes the source
itself (tags, attributes, comments, raw-text elements, character references, following the
HTML tokenizer's rules for what a tag is, and the tree builder's for where SVG and MathML
begin and end) and only replaces the spans of translated text and attribute values, so a page
whose translations equal its source comes back **byte for byte**, and anything else the
format does not touch (scripts, styles, comments, ``onerror=...``, unusual markup) stays
exactly as it was. The tests compare trees with lxml on top.

**Translated** (every text a reader or a browser can show):

* the text of every element, a unit per run of text and inline elements between block
  boundaries (``<p>``, ``<li>``, ``<td>``, ``<th>``, ``<caption>``, ``<figcaption>``,
  ``<h1>``, ``<div>``, ``<button>``, ``<label>``, ``<legend>``, ``<summary>`` and the rest
  of ``<details>``, ``<option>``, ``<title>``, custom elements... any element not listed as
  inline); inline elements (``a abbr b bdi bdo cite data del dfn em i ins mark q s small span
  strong sub sup time u picture ruby rt rp tspan``...) that open and close inside a unit are
  paired codes, their tags with all attributes as the code's markup; ``br``, ``img``,
  ``wbr``, ``input``, comments and unmatched tags are standalone codes;
* ``<pre>`` (its line breaks and spaces kept as they are), unless it is a code block (below);
* fallback content, shown where what it stands in for is not: ``<noscript>`` (read as the
  HTML a browser without scripts shows), ``<iframe>``, ``<noembed>``, ``<noframes>``,
  ``<object>``, ``<video>``, ``<audio>``, ``<canvas>``; the content of ``<template>``
  (scripts put it on the page); the text of inline ``<svg>`` (``<text>``, ``<tspan>``,
  ``<title>``, ``<desc>``, HTML in ``<foreignObject>``). Inside a unit such an element is
  one standalone code (the sentence around an icon stays whole) and its own text makes
  units of its own;
* attributes: ``alt``, ``title``, ``placeholder``, ``aria-label``, ``aria-description``,
  ``aria-placeholder``, ``aria-roledescription``, ``aria-valuetext``, ``aria-braillelabel``,
  ``aria-brailleroledescription``; ``label`` of ``<option>``, ``<optgroup>`` and
  ``<track>``; ``abbr`` of ``<th>``; ``summary`` of ``<table>``; ``value`` of
  ``<input type=button|submit|reset>``; ``content`` of ``<meta>`` named (``name`` or
  ``property``) ``description``, ``keywords``, ``og:title``, ``og:description``,
  ``og:site_name``, ``og:image:alt``, ``twitter:title``, ``twitter:description``,
  ``twitter:image:alt``. Each is a unit of its own;
* ``translate="yes"`` (or ``translate=""``) on an element inside an untranslated one turns
  translation back on for it and its content, as HTML's inheritance of ``translate`` says
  (and on ``<code>``, ``<kbd>``, ``<samp>``, ``<var>`` or ``<pre>`` itself it opts in).

**Never translated** (kept byte for byte):

* what a browser runs or reads as code: ``<script>`` (JSON-LD and templates in scripts too;
  where its content ends follows the tokenizer's escape states, ``<!--<script>`` included),
  ``<style>``, SVG's ``<script>`` and ``<style>`` (SVG is read as foreign content: its CDATA
  sections, and where HTML elements break out of it), every attribute not listed above:
  event handlers (``on*``), URLs (``href``, ``src``, ``action``, ``srcset``...), ``srcdoc``,
  ``style``, ``class``, ``id``, ``data-*``, ``download`` (a file name), ``value`` of other
  inputs and of ``<button>``/``<option>`` (submitted data), ``content`` of other ``<meta>``
  (``http-equiv=refresh``, ``viewport``...), ``title`` of ``<link rel=stylesheet>`` (a style
  sheet set's name); where a document holds ``<svg>`` or ``<math>``, text that a reading
  without foreign content would put inside a script or a style is not translated either;
* ``<code>``, ``<kbd>``, ``<samp>``, ``<var>``, ``<math>`` (MathML markup, ``<mtext>``
  included), ``<xmp>``, ``<listing>``, ``<plaintext>``, and ``<pre>`` code blocks: a
  ``<pre>`` whose class says code (``language-*``, ``lang-*``, ``highlight``, ``hljs``,
  ``sourceCode``, ``prettyprint``, ``brush:``...) or with ``data-lang``, or right inside an
  element whose class says so (Pygments' ``<div class="highlight"><pre>``); ``<pre><code>``
  holds no text outside its ``<code>``;
* the content of ``<textarea>`` (the field's initial value: data the form submits, not
  interface text; its ``placeholder`` is translated);
* any element with ``translate="no"`` or class ``notranslate`` (Google's and Crowdin's
  marker), its attributes included,
  unless a descendant says ``translate="yes"``; inside a unit such an element is one
  standalone code;
* ``contenteditable`` changes nothing: its text is translated like any other;
* content nested more than :data:`MAX_DEPTH` embedded or re-enabled regions deep is kept.

A unit whose translation equals its text keeps its source bytes (a page that writes one
character two ways, ``R&D`` beside ``AT&amp;T``, comes back byte for byte too).

With ``target_lang``, render sets the language the page declares: ``lang`` (and
``xml:lang``) of ``<html>`` (added when missing), ``dir`` of ``<html>`` (``rtl`` for a
right-to-left target such as ar, he, fa, ur, added when missing; an existing ``dir`` becomes
``rtl`` or ``ltr``; ``auto`` is kept) and of ``<body>`` where it has one, and ``content`` of
``<meta http-equiv=content-language>`` and ``<meta property=og:locale>``. A fragment without
``<html>`` gets nothing added; ``lang`` and ``dir`` of other elements (a quotation in another
language, an LTR code sample) are kept.

Render escapes translated text (``<`` and ``&`` can only become text, never markup) and writes
each character the way the source wrote it where it can (``&nbsp;``, ``&copy;``, a raw ``&``).
"""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html.entities import html5

from babel import Locale, UnknownLocaleError

from mtfleet.formats import register
from mtfleet.formats.base import TAG, DocumentFormat, Unit, UnitBuilder, restore
from mtfleet.formats.text import check_count, decode_document, pair_tags

WS = " \t\n\r\f"

#: Phrasing elements that wrap translatable text: paired codes inside a unit.
INLINE = {
    "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "data", "del", "dfn", "em",
    "font", "i", "ins", "mark", "nobr", "output", "picture", "q", "rb", "rp", "rt", "rtc",
    "ruby", "s", "small", "span", "strike", "strong", "sub", "sup", "textpath", "time",
    "tspan", "tt", "u",
}  # fmt: skip
#: Void elements that may sit inside a unit (standalone codes).
INLINE_VOID = {"br", "img", "wbr", "input", "embed", "area", "source", "track"}
VOID = INLINE_VOID | {"base", "col", "hr", "link", "meta", "param", "keygen", "basefont"}
#: Content never translated; inside a unit the whole element is one standalone code.
OPAQUE = {
    "script", "style", "code", "kbd", "samp", "var", "textarea", "math", "xmp",
}  # fmt: skip
#: Of those, the ones whose content ``translate="yes"`` on the element itself opts in.
OPT_IN = {"code", "kbd", "samp", "var", "pre"}
#: Blocks whose content is never translated and that always end a unit.
OPAQUE_BLOCK = {"listing", "plaintext"}
#: Blocks never translated when they look like code (their class, or their parent's).
CODE_BLOCKS = {"pre"}
#: Elements that are one standalone code inside a unit, while their own content (fallback
#: content, a template's content, an SVG's text) makes units of its own.
EMBEDDED = {
    "audio", "canvas", "iframe", "noembed", "noframes", "noscript", "object", "svg",
    "template", "video",
}  # fmt: skip
#: Raw text (no tags inside, no character references) and escapable raw text (references only).
RAW_TEXT = {"script", "style", "xmp", "iframe", "noembed", "noframes", "noscript"}
RCDATA = {"title", "textarea"}
#: Raw-text elements whose content is what a browser without scripts, frames or plugins shows:
#: read as HTML (within the raw text's bounds, so nothing can end them early).
FALLBACK_RAW = {"iframe", "noembed", "noframes", "noscript"}
TRANSLATABLE_ATTRS = {
    "alt", "title", "placeholder", "aria-label", "aria-description", "aria-placeholder",
    "aria-roledescription", "aria-valuetext", "aria-braillelabel",
    "aria-brailleroledescription",
}  # fmt: skip
META_NAMES = {
    "description", "keywords", "og:title", "og:description", "og:site_name",
    "twitter:title", "twitter:description", "twitter:image:alt", "og:image:alt",
}  # fmt: skip
#: Elements whose attributes are never translated.
NO_ATTRS = {"script", "style"}
#: Start tags that close an open ``<p>`` (HTML's "in body" rules).
P_CLOSERS = {
    "address", "article", "aside", "blockquote", "center", "details", "dialog", "dir", "div",
    "dl", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5",
    "h6", "header", "hgroup", "hr", "listing", "main", "menu", "nav", "ol", "p", "plaintext",
    "pre", "search", "section", "summary", "table", "ul", "xmp", "li", "dd", "dt",
}  # fmt: skip
#: An element's start implies the end of an open one (enough to bound a skipped element).
IMPLIED_END: dict[str, set[str] | None] = {
    "p": P_CLOSERS,
    "li": {"li"}, "dt": {"dt", "dd"}, "dd": {"dt", "dd"}, "option": {"option", "optgroup"},
    "tr": {"tr", "tbody", "tfoot"}, "td": {"td", "th", "tr"}, "th": {"td", "th", "tr"},
}  # fmt: skip
#: Embedded and re-enabled regions nest at most this deep; deeper content is kept as it is.
MAX_DEPTH = 64
#: A class that says "this is code" (on a ``<pre>`` or the element right around it).
_CODE_CLASS = re.compile(
    r"(?:language|lang|brush|highlight|src)[-:]|^(?:code|codehilite|highlight|hljs|prettyprint"
    r"|sourcecode|syntax|chroma|shiki|console|terminal|shell|listing)$",
    re.I,
)


@dataclass(frozen=True)
class TagRules:
    """What each element is to the scan: HTML's rules (:data:`HTML`, the html format), or a
    caller's (the DeepL surface's ``tag_handling`` with its ``ignore_tags``,
    ``non_splitting_tags`` and ``splitting_tags``: :mod:`mtfleet.formats.fragments`).

    ``splitting`` None is HTML's way: an element not inline (or void, or opaque) ends a unit,
    and HTML's own elements (embedded content, code blocks, foreign content, fallback raw
    text) are what HTML says. A set is XML's: only the elements it names end a unit, every
    other one is inline, and no element is special."""

    inline: frozenset[str] = frozenset(INLINE)
    inline_void: frozenset[str] = frozenset(INLINE_VOID)
    void: frozenset[str] = frozenset(VOID)
    opaque: frozenset[str] = frozenset(OPAQUE)
    opaque_block: frozenset[str] = frozenset(OPAQUE_BLOCK)
    raw_text: frozenset[str] = frozenset(RAW_TEXT | {"plaintext"})
    rcdata: frozenset[str] = frozenset(RCDATA)
    implied_end: dict[str, set[str] | None] = field(default_factory=lambda: dict(IMPLIED_END))
    translate_attrs: bool = True
    splitting: frozenset[str] | None = None
    embedded: frozenset[str] = frozenset(EMBEDDED)
    code_blocks: frozenset[str] = frozenset(CODE_BLOCKS)
    fallback_raw: frozenset[str] = frozenset(FALLBACK_RAW)
    #: Backtick code spans in text are code (an HTML block in Markdown, where a writer's
    #: `` `jekyll serve` `` is code although the block is HTML: :data:`IN_MARKDOWN`).
    code_spans: bool = False

    @property
    def html(self) -> bool:
        """HTML's rules (not XML's): embedded content, code blocks, SVG and MathML apply."""
        return self.splitting is None

    def is_inline(self, name: str) -> bool:
        """Whether ``name`` is a paired code inside a unit (not a unit's boundary)."""
        if name in self.inline:
            return True
        return (
            self.splitting is not None
            and name not in self.splitting
            and name not in self.opaque
            and name not in self.opaque_block
        )

    def is_embedded(self, name: str) -> bool:
        """Whether ``name`` is one code inside a unit with units of its own inside."""
        return self.html and name in self.embedded and name not in self.inline


#: The html format's rules.
HTML = TagRules()
#: HTML's rules for an HTML block of a Markdown document: its backtick code spans are code.
IN_MARKDOWN = TagRules(code_spans=True)
#: A backtick code span as CommonMark reads one: a run of backticks, then the same run.
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)[\s\S]+?(?<!`)\1(?!`)")

# HTML's whitespace is WS alone: a regex's \s also takes U+0085, U+00A0 and the rest of
# Unicode's spaces, which inside a tag are part of a name or value (as browsers read them)
_TAG_NAME = re.compile(r"[A-Za-z][^ \t\n\r\f/>]*")
_ATTR_NAME = re.compile(r"[^ \t\n\r\f/>][^ \t\n\r\f/>=]*")
_UNQUOTED = re.compile(r"[^ \t\n\r\f>]+")
_CHARREF = re.compile(r"&(?:#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[A-Za-z][A-Za-z0-9]*;?)")
_LONGEST_ENTITY = max(len(k) for k in html5)
_FOREIGN = re.compile(r"<(?:svg|math)[ \t\n\r\f/>]", re.I)
_LANG_TAG = re.compile(r"[A-Za-z]{1,8}(?:[-_][A-Za-z0-9]{1,8})*")


# --- tokenizer ----------------------------------------------------------------------------------


@dataclass
class Attr:
    name: str  # lower case
    value: str | None  # decoded; None for an attribute without a value
    start: int  # span of the raw value, quotes included (start == end when there is none)
    end: int


@dataclass
class Tok:
    kind: str  # "text", "start", "end", "comment", "other" (doctype, CDATA, PI), "raw"
    start: int
    end: int
    name: str = ""
    attrs: list[Attr] = field(default_factory=list)
    selfclosing: bool = False
    #: For a fallback raw-text element (``<noscript>``...): where its raw text ends (the tokens
    #: up to there are its content, read as HTML).
    raw_end: int | None = None

    def attr(self, name: str) -> str | None:
        return next((a.value for a in self.attrs if a.name == name), None)


#: HTML start tags that end SVG or MathML content (the tree builder's "breakout" list).
_BREAKOUT = {
    "b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em",
    "embed", "h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing",
    "menu", "meta", "nobr", "ol", "p", "pre", "ruby", "s", "small", "span", "strong", "strike",
    "sub", "sup", "table", "tt", "u", "ul", "var",
}  # fmt: skip

#: HTML's "special" elements: an end tag that meets one of them before its own is ignored.
_SPECIAL = {
    "address", "applet", "area", "article", "aside", "base", "basefont", "bgsound",
    "blockquote", "body", "br", "button", "caption", "center", "col", "colgroup", "dd",
    "details", "dir", "div", "dl", "dt", "embed", "fieldset", "figcaption", "figure", "footer",
    "form", "frame", "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "head", "header",
    "hgroup", "hr", "html", "iframe", "img", "input", "keygen", "li", "link", "listing",
    "main", "marquee", "menu", "meta", "nav", "noembed", "noframes", "noscript", "object",
    "ol", "p", "param", "plaintext", "pre", "script", "search", "section", "select", "source",
    "style", "summary", "table", "tbody", "td", "template", "textarea", "tfoot", "th",
    "thead", "title", "tr", "track", "ul", "wbr", "xmp",
}  # fmt: skip

#: An open SVG or MathML element (or an HTML one inside their integration points): name,
#: namespace ("svg", "math", "html"), and whether HTML start tags are HTML inside it ("html"
#: for HTML integration points, "text" for MathML text integration points, "" otherwise).
_Open = tuple[str, str, str]


def _integration(name: str, ns: str, tok: Tok) -> str:
    if ns == "svg" and name in ("foreignobject", "desc", "title"):
        return "html"
    if ns == "math" and name in ("mi", "mo", "mn", "ms", "mtext"):
        return "text"
    if ns == "math" and name == "annotation-xml":
        encoding = (tok.attr("encoding") or "").strip().lower()
        return "html" if encoding in ("text/html", "application/xhtml+xml") else ""
    return ""


def _foreign_start(stack: list[_Open], tok: Tok) -> bool:
    """Track a start tag in SVG/MathML content; True when HTML's rules read it as an HTML
    element (so it may start raw text)."""
    name = tok.name
    if stack and stack[-1][1] != "html":
        top, ns, point = stack[-1]
        as_html = (
            point == "html"
            or (point == "text" and name not in ("mglyph", "malignmark"))
            or (ns == "math" and top == "annotation-xml" and name == "svg")
        )
        if not as_html:
            if name in _BREAKOUT or (
                name == "font" and any(a.name in ("color", "face", "size") for a in tok.attrs)
            ):
                while stack and stack[-1][1] != "html" and not stack[-1][2]:
                    stack.pop()
                return _foreign_start(stack, tok)
            if not tok.selfclosing:
                stack.append((name, ns, _integration(name, ns, tok)))
            return False
    if name in ("svg", "math"):
        if not tok.selfclosing:
            stack.append((name, name, ""))
        return False
    if stack and name not in VOID:
        stack.append((name, "html", ""))
    return True


def _foreign_end(stack: list[_Open], name: str) -> None:
    """Track an end tag in SVG/MathML content."""
    if not stack:
        return
    if stack[-1][1] != "html" and name in ("br", "p"):
        while stack and stack[-1][1] != "html" and not stack[-1][2]:
            stack.pop()
        if not stack:
            return
    if stack[-1][1] == "html":  # HTML's rules: up to a special element (it ignores the tag)
        for k in range(len(stack) - 1, -1, -1):
            open_name, ns, point = stack[k]
            if ns == "html" and open_name == name:
                del stack[k:]
                return
            if point or (ns == "html" and open_name in _SPECIAL):
                return
        return
    for k in range(len(stack) - 1, -1, -1):
        if stack[k][0] == name:
            del stack[k:]
            return
    if not any(point for _, _, point in stack):
        stack.clear()  # it closes an HTML element around the SVG, and the SVG with it


def tokenize(text: str, rules: TagRules = HTML, *, foreign: bool = True) -> list[Tok]:
    """The HTML tokenizer's view of ``text``: every character belongs to exactly one token
    (``rules`` say which elements hold raw text: none in XML). The content of a fallback
    raw-text element (``<noscript>``...) is tokenized as HTML up to where its raw text ends.
    ``foreign``: follow SVG and MathML content (no raw text in it, CDATA sections); without
    it, every element is read as HTML's."""
    toks: list[Tok] = []
    limits = [len(text)]  # the end of each fallback raw text being read, innermost last
    depths = [0]  # the foreign stack's depth where each began
    stack: list[_Open] = []
    track = foreign and rules.html
    pos = 0
    text_start = 0

    def add(tok: Tok) -> None:
        if text_start < tok.start:
            toks.append(Tok("text", text_start, tok.start))
        toks.append(tok)

    while True:
        n = limits[-1]
        lt = text.find("<", pos, n)
        if lt < 0 or lt + 1 >= n:
            if text_start < n:
                toks.append(Tok("text", text_start, n))
            if len(limits) == 1:
                break
            limits.pop()
            del stack[depths.pop() :]
            pos = text_start = n
            continue
        nxt = text[lt + 1]
        if text.startswith("<!--", lt, n):
            if text.startswith("<!-->", lt, n) or text.startswith("<!--->", lt, n):
                end = text.index(">", lt + 4) + 1
            else:
                close = text.find("-->", lt + 4, n)
                end = n if close < 0 else close + 3
            add(Tok("comment", lt, end))
        elif nxt in "!?":
            cdata = text.startswith("<![CDATA[", lt, n) and (
                not rules.html or (bool(stack) and stack[-1][1] != "html")
            )  # in HTML content, "<![CDATA[" is a bogus comment that ends at the first ">"
            close = text.find("]]>", lt, n) if cdata else text.find(">", lt, n)
            end = n if close < 0 else close + (3 if cdata else 1)
            add(Tok("other", lt, end))
        elif nxt == "/":
            m = _TAG_NAME.match(text, lt + 2, n)
            close = text.find(">", lt + 2, n)
            end = n if close < 0 else close + 1
            if m:
                add(Tok("end", lt, end, m.group(0).lower()))
                if track:
                    _foreign_end(stack, toks[-1].name)
            elif text.startswith("</>", lt, n):
                add(Tok("other", lt, lt + 3))
            else:
                add(Tok("comment", lt, end))  # "</ ..." is a bogus comment
        elif nxt.isascii() and nxt.isalpha():
            tok = _start_tag(text, lt, n)
            add(tok)
            if tok.kind == "start":
                as_html = _foreign_start(stack, tok) if track else True
                if as_html and (tok.name in rules.raw_text or tok.name in rules.rcdata):
                    if tok.name == "script":
                        end = _script_end(text, tok.end, n)
                    else:
                        end = _raw_end(text, tok.end, tok.name, n)
                    if rules.html and tok.name in rules.fallback_raw:
                        tok.raw_end = end
                        limits.append(end)
                        depths.append(len(stack))
                        pos = text_start = tok.end
                        continue
                    if end > tok.end:
                        kind = "text" if tok.name in rules.rcdata else "raw"
                        toks.append(Tok(kind, tok.end, end))
                    pos = text_start = end
                    continue
        else:
            pos = lt + 1  # a "<" that opens nothing is text
            continue
        pos = text_start = toks[-1].end
    return toks


def _start_tag(text: str, lt: int, n: int) -> Tok:
    m = _TAG_NAME.match(text, lt + 1, n)
    assert m
    tok = Tok("other", lt, n, m.group(0).lower())  # "other" until its ">" is found: a tag
    pos = m.end()  # cut off by the end of the file is dropped by parsers
    slash = False  # a "/" right before the ">" makes a self-closing tag
    while pos < n:
        c = text[pos]
        if c in WS:
            pos += 1
            slash = False
        elif c == ">":
            tok.kind = "start"
            tok.end = pos + 1
            tok.selfclosing = slash
            break
        elif c == "/":
            pos += 1
            slash = True
        else:
            slash = False
            am = _ATTR_NAME.match(text, pos, n)
            assert am
            name = am.group(0).lower()
            pos = am.end()
            while pos < n and text[pos] in WS:
                pos += 1
            if pos < n and text[pos] == "=":
                pos += 1
                while pos < n and text[pos] in WS:
                    pos += 1
                if pos < n and text[pos] in "\"'":
                    close = text.find(text[pos], pos + 1, n)
                    vend = n if close < 0 else close + 1
                    raw = text[pos + 1 : vend - 1]
                else:
                    vm = _UNQUOTED.match(text, pos, n)
                    vend = vm.end() if vm else pos
                    raw = text[pos:vend]
                tok.attrs.append(Attr(name, html.unescape(raw), pos, vend))
                pos = vend
            else:
                tok.attrs.append(Attr(name, None, pos, pos))
    return tok


def _raw_end(text: str, pos: int, name: str, n: int) -> int:
    """Where the content of a raw-text element that starts at ``pos`` ends (``n`` at most)."""
    if name == "plaintext":
        return n
    pattern = re.compile(rf"</{re.escape(name)}(?=[ \t\n\r\f/>])", re.I)
    m = pattern.search(text, pos, n)
    return m.start() if m else n


_DELIM = r"(?=[ \t\n\r\f/>])"
_SCRIPT_DATA = re.compile(rf"<!--|</script{_DELIM}", re.I)
_SCRIPT_ESCAPED = re.compile(rf"-->|</script{_DELIM}|<script{_DELIM}", re.I)
_SCRIPT_DOUBLE = re.compile(rf"-->|</script{_DELIM}", re.I)


def _script_end(text: str, pos: int, n: int) -> int:
    """Where a ``<script>``'s content that starts at ``pos`` ends, by the tokenizer's script
    data states: after ``<!--``, a ``<script>`` makes the next ``</script>`` part of the
    content (``<!--<script>...</script>-->`` is all script)."""
    state = "data"
    while True:
        pattern = {"data": _SCRIPT_DATA, "escaped": _SCRIPT_ESCAPED}.get(state, _SCRIPT_DOUBLE)
        m = pattern.search(text, pos, n)
        if m is None:
            return n
        found = m.group(0)
        if state == "data":
            if found != "<!--":
                return m.start()
            state, pos = "escaped", m.start() + 2  # its own dashes may close it: "<!-->"
        elif found == "-->":
            state, pos = "data", m.end()
        elif state == "escaped":
            if found[1] == "/":
                return m.start()
            state, pos = "double", m.end() + 1
        else:
            state, pos = "escaped", m.end() + 1


# --- character references -----------------------------------------------------------------------


def decode_text(raw: str, forms: dict[str, str]) -> str:
    """Text with its character references decoded; ``forms`` learns how the source wrote each
    character it escaped (first time seen), and whether ``&``, ``<``, ``>`` were raw."""
    out: list[str] = []
    pos = 0
    for m in _CHARREF.finditer(raw):
        ref, decoded = _charref(m.group(0))
        if decoded is None:
            continue
        plain = raw[pos : m.start()]
        _learn_raw(plain, forms)
        out.append(plain)
        out.append(decoded)
        if len(decoded) == 1:
            forms.setdefault(decoded, ref)
        pos = m.start() + len(ref)
    _learn_raw(raw[pos:], forms)
    out.append(raw[pos:])
    return "".join(out)


def _learn_raw(plain: str, forms: dict[str, str]) -> None:
    for c in plain:
        if c not in forms:
            forms[c] = c


def _charref(s: str) -> tuple[str, str | None]:
    """The reference at the start of ``s`` as the HTML parser reads it: (its text, the
    character(s)), or (s, None) if it is not one."""
    if s[1] == "#":  # a code point the parser drops decodes to "": leave it as text
        return s, html.unescape(s) or None
    body = s[1:]
    if body.endswith(";") and body in html5:
        return s, html5[body]
    for k in range(min(len(body), _LONGEST_ENTITY), 1, -1):  # legacy names without ";"
        if body[:k] in html5 and not body[:k].endswith(";"):
            return s[: k + 1], html5[body[:k]]
    return s, None


def text_escaper(forms: dict[str, str]) -> Callable[[str], str]:
    """Escape translated text for an HTML text node: ``<`` and ``&`` never become markup;
    other characters are written the way the source wrote them (``&nbsp;``, ``&copy;``)."""

    def esc(s: str) -> str:
        out: list[str] = []
        for i, c in enumerate(s):
            nxt = s[i + 1] if i + 1 < len(s) else ""
            if c == "&":
                m = _CHARREF.match(s, i)
                raw_ok = forms.get("&") == "&" and (
                    m is None or (m.group(0)[1] != "#" and _charref(m.group(0))[1] is None)
                )
                out.append("&" if raw_ok else "&amp;")
            elif c == "<":
                raw_ok = forms.get("<") == "<" and not (nxt.isalpha() or (nxt and nxt in "/!?"))
                out.append("<" if raw_ok else "&lt;")
            else:
                out.append(forms.get(c, c))
        return "".join(out)

    return esc


def attr_value(value: str) -> str:
    """A translated attribute value, quoted."""
    return '"' + value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;") + '"'


_BLANK_LINES = re.compile(r"(?:\r\n|\r|\n)(?:[ \t]*(?:\r\n|\r|\n))+")


def no_blank_lines(s: str) -> str:
    """``s`` with each run of blank lines made one line break (an HTML block in Markdown ends
    at a blank line: a translation must not end it)."""
    return _BLANK_LINES.sub("\n", s)


# --- units --------------------------------------------------------------------------------------


def _no_translate(tok: Tok) -> bool:
    return (tok.attr("translate") or "").strip().lower() == "no" or "notranslate" in (
        tok.attr("class") or ""
    ).split()


def _translate_yes(tok: Tok) -> bool:
    """``translate="yes"`` (or the empty value, the same state), and no ``notranslate``."""
    value = tok.attr("translate")
    return (
        value is not None
        and value.strip().lower() in ("yes", "")
        and "notranslate" not in (tok.attr("class") or "").split()
    )


def _translatable_attrs(tok: Tok, rules: TagRules) -> list[Attr]:
    if not rules.translate_attrs or tok.name in NO_ATTRS:
        return []
    kind = (tok.attr("type") or "").strip().lower()
    meta = (tok.attr("name") or tok.attr("property") or "").strip().lower()
    rel = (tok.attr("rel") or "").lower().split()

    def translatable(a: Attr) -> bool:
        if not a.value or not a.value.strip():
            return False
        if a.name == "label":
            return tok.name in ("option", "optgroup", "track")
        if a.name == "value":
            return tok.name == "input" and kind in ("submit", "button", "reset")
        if a.name == "content":
            return tok.name == "meta" and meta in META_NAMES
        if a.name == "abbr":
            return tok.name == "th"
        if a.name == "summary":
            return tok.name == "table"
        if a.name == "title":
            return not (tok.name == "link" and "stylesheet" in rel)
        return a.name in TRANSLATABLE_ATTRS

    seen: set[str] = set()
    out: list[Attr] = []
    for a in tok.attrs:
        if a.name in seen:  # a repeated attribute is dropped by parsers
            continue
        seen.add(a.name)
        if translatable(a):
            out.append(a)
    return out


def start_tag(markup: str) -> Tok | None:
    """The start tag ``markup`` begins with (HTML inside another format: Markdown's inline
    HTML), or None."""
    toks = tokenize(markup, foreign=False)
    return toks[0] if toks and toks[0].kind == "start" else None


def translatable_attrs(tok: Tok) -> list[Attr]:
    """The attributes of the start tag ``tok`` that HTML's rules translate."""
    return _translatable_attrs(tok, HTML)


def no_translate(tok: Tok) -> bool:
    """Whether the element ``tok`` starts says ``translate="no"`` (or class ``notranslate``)."""
    return _no_translate(tok)


def never_translated(tok: Tok) -> bool:
    """Whether the element ``tok`` starts keeps its content as it is under HTML's rules
    (``<script>``, ``<code>``, ``translate="no"``...; a ``<pre>`` is judged by its context,
    which a tag alone does not give: it is translated)."""
    if _no_translate(tok):
        return True
    if tok.name in OPAQUE or tok.name in OPAQUE_BLOCK:
        return not (tok.name in OPT_IN and _translate_yes(tok))
    return False


def _extent(toks: list[Tok], i: int, rules: TagRules, hi: int | None = None) -> int:
    """Index of the last token of the element that starts at ``toks[i]`` (before ``hi``)."""
    hi = len(toks) if hi is None else hi
    first = toks[i]
    # "<video/>" opens a video (HTML ignores the slash); "<svg/>" is closed (SVG does not)
    ignored_slash = rules.html and first.name in rules.embedded and first.name != "svg"
    if (first.selfclosing and not ignored_slash) or first.name in rules.void:
        return i
    implied = rules.implied_end.get(first.name, set())
    stack = [first.name]
    k = i
    while k + 1 < hi:
        k += 1
        t = toks[k]
        if t.kind == "start":
            if len(stack) == 1 and (
                (
                    implied is None
                    and not rules.is_inline(t.name)
                    and t.name not in rules.void | rules.opaque
                )
                or (implied and t.name in implied)
            ):
                return k - 1
            if t.raw_end is not None:  # fallback raw text: nothing in it closes anything
                stack.append(t.name)
                while k + 1 < hi and toks[k + 1].start < t.raw_end:
                    k += 1
            elif not t.selfclosing and t.name not in rules.void:
                stack.append(t.name)
        elif t.kind == "end":
            if t.name in stack:
                while stack.pop() != t.name:
                    pass
                if not stack:
                    return k
            elif not rules.is_inline(t.name):
                return k - 1  # closes an element around this one
    return hi - 1


def _code_like(tok: Tok) -> bool:
    """An element whose class (or ``data-lang``) says it holds code."""
    if tok.attr("data-lang") is not None or tok.attr("data-language") is not None:
        return True
    return any(_CODE_CLASS.search(c) for c in (tok.attr("class") or "").split())


def _text_direction(lang: str) -> str:
    tag = lang.replace("-", "_")
    for candidate in (tag, tag.split("_")[0]):
        try:
            return str(Locale.parse(candidate).text_direction)
        except (UnknownLocaleError, ValueError, TypeError):
            continue
    return "ltr"


_Item = tuple[str, int, int, str]  # kind, start, end, markup
_Edit = tuple[int, int, str]


@dataclass
class _Scan:
    """One pass over the document: the units in order, and (when rendering) the edits."""

    text: str
    translations: Sequence[str] | None
    rules: TagRules = HTML
    target_lang: str | None = None
    post: Callable[[str], str] | None = None  # applied to translated text and attribute values
    units: list[Unit] = field(default_factory=list)
    edits: list[_Edit] = field(default_factory=list)
    blocks: int = 0
    toks: list[Tok] = field(default_factory=list)
    _starts: list[int] = field(default_factory=list)
    _unsafe: list[tuple[int, int]] = field(default_factory=list)
    _first_html: Tok | None = None
    _doc_forms: dict[str, str] | None = None

    def doc_forms(self) -> dict[str, str]:
        """How the whole document writes escaped characters (a unit's own use comes first)."""
        if self._doc_forms is None:
            self._doc_forms = {}
            decode_text(self.text, self._doc_forms)
        return self._doc_forms

    def run(self) -> None:
        self.toks = tokenize(self.text, self.rules)
        self._starts = [t.start for t in self.toks]
        self._first_html = next(
            (t for t in self.toks if t.kind == "start" and t.name == "html"), None
        )
        self._unsafe = self._unsafe_spans()
        self.region(0, len(self.toks), self.edits, 0)

    # -- what is never translated ---------------------------------------------------------

    def _unsafe_spans(self) -> list[tuple[int, int]]:
        """Where SVG or MathML could be read otherwise (a browser that ignores an ``<svg>``
        inside ``<select>``, say): the raw text of every script and style as HTML alone
        reads them. Text there is never translated, whichever reading is right."""
        if not self.rules.html or not _FOREIGN.search(self.text):
            return []
        return [(t.start, t.end) for t in tokenize(self.text, self.rules, foreign=False)
                if t.kind == "raw"]  # fmt: skip

    def unsafe(self, start: int, end: int) -> bool:
        spans = self._unsafe
        if not spans:
            return False
        k = bisect.bisect_left(spans, (end, end)) - 1
        return k >= 0 and spans[k][1] > start

    def frozen(self, i: int) -> bool:
        t = self.toks[i]
        rules = self.rules
        if _no_translate(t):
            return True
        if t.name in rules.opaque or t.name in rules.opaque_block:
            return not (t.name in OPT_IN and _translate_yes(t) and rules.html)
        return (
            rules.html
            and t.name in rules.code_blocks
            and not rules.is_inline(t.name)
            and not _translate_yes(t)
            and (_code_like(t) or self._inside_code(i))
        )

    def _inside_code(self, i: int) -> bool:
        """The element right around ``toks[i]`` (nothing but blanks and comments between)
        says it holds code (Pygments' ``<div class="highlight"><pre>``)."""
        k = i - 1
        while k >= 0 and (
            self.toks[k].kind == "comment"
            or (
                self.toks[k].kind == "text"
                and not self.text[self.toks[k].start : self.toks[k].end].strip(WS)
            )
        ):
            k -= 1
        return k >= 0 and self.toks[k].kind == "start" and _code_like(self.toks[k])

    # -- extents and nested regions --------------------------------------------------------

    def extent(self, i: int, hi: int) -> int:
        t = self.toks[i]
        if t.raw_end is not None:  # its content ends where the browser's raw text does
            k = bisect.bisect_left(self._starts, t.raw_end, i + 1, hi)
            if k < hi and self.toks[k].kind == "end" and self.toks[k].name == t.name:
                return k
            return k - 1
        return _extent(self.toks, i, self.rules, hi)

    def inner(self, i: int, j: int) -> int:
        """Where the content of the element ``toks[i..j]`` ends (exclusive): before its end
        tag, if ``toks[j]`` is one."""
        t, last = self.toks[i], self.toks[j]
        return j if j > i and last.kind == "end" and last.name == t.name else j + 1

    def sub(self, lo: int, hi: int, depth: int) -> str:
        """The source of ``toks[lo:hi]``, scanned as a region of its own (its units are made
        now), with its translations in place when rendering."""
        if lo >= hi:
            return ""
        start, end = self.toks[lo].start, self.toks[hi - 1].end
        if depth > MAX_DEPTH:
            return self.text[start:end]
        edits: list[_Edit] = []
        self.region(lo, hi, edits, depth)
        return _apply(self.text, start, end, edits)

    def frozen_inner(self, i: int, j: int, depth: int) -> str:
        """The source after the start tag of the untranslated element ``toks[i..j]``, with
        the content of descendants that say ``translate="yes"`` translated."""
        text, toks = self.text, self.toks
        out: list[str] = []
        pos = toks[i].end
        k = i + 1
        while k <= j:
            t = toks[k]
            if t.kind == "start" and _translate_yes(t) and depth < MAX_DEPTH:
                e = self.extent(k, j + 1)
                stop = self.inner(k, e)
                out += [text[pos : t.start], self.tag_markup(t), self.sub(k + 1, stop, depth + 1)]
                pos = toks[stop - 1].end if stop > k + 1 else t.end
                k = stop
                continue
            k += 1
        out.append(text[pos : toks[j].end])
        return "".join(out)

    def region(self, lo: int, hi: int, edits: list[_Edit], depth: int) -> None:
        rules, toks, text = self.rules, self.toks, self.text
        items: list[_Item] = []
        names: list[tuple[bool, str] | None] = []
        i = lo
        while i < hi:
            t = toks[i]
            if t.kind == "start" and self.frozen(i):
                j = self.extent(i, hi)
                block = (
                    t.name in rules.opaque_block
                    or (rules.html and t.name in rules.code_blocks)
                    or not (
                        rules.is_inline(t.name)
                        or t.name in rules.inline_void
                        or t.name in rules.opaque
                        or rules.is_embedded(t.name)
                    )
                )
                markup = self.tag_markup(t, not _no_translate(t))
                markup += self.frozen_inner(i, j, depth) if j > i else ""
                if block:
                    self.flush(items, names, edits)
                    if markup != text[t.start : toks[j].end]:
                        edits.append((t.start, toks[j].end, markup))
                else:
                    items.append(("code", t.start, toks[j].end, markup))
                    names.append(None)
                i = j + 1
                continue
            if t.kind == "start" and rules.is_embedded(t.name):
                j = self.extent(i, hi)
                stop = self.inner(i, j)
                markup = self.tag_markup(t) + self.sub(i + 1, stop, depth + 1)
                if stop == j:
                    markup += text[toks[j].start : toks[j].end]
                items.append(("code", t.start, toks[j].end, markup))
                names.append(None)
                i = j + 1
                continue
            if t.kind == "text":
                kind = "comment" if self.unsafe(t.start, t.end) else "text"
                items.append((kind, t.start, t.end, text[t.start : t.end]))
                names.append(None)
            elif t.kind in ("comment", "raw"):  # raw text outside a skipped element: kept as is
                items.append(("comment", t.start, t.end, text[t.start : t.end]))
                names.append(None)
            elif t.kind == "start" and (rules.is_inline(t.name) or t.name in rules.inline_void):
                markup = self.tag_markup(t)
                items.append(("tag", t.start, t.end, markup))
                void = t.selfclosing or t.name in rules.void
                names.append(None if void else (False, t.name))
            elif t.kind == "end" and rules.is_inline(t.name):
                items.append(("tag", t.start, t.end, text[t.start : t.end]))
                names.append((True, t.name))
            else:  # a block boundary
                self.flush(items, names, edits)
                if t.kind == "start":
                    markup = self.tag_markup(t)
                    if markup != text[t.start : t.end]:
                        edits.append((t.start, t.end, markup))
            i += 1
        self.flush(items, names, edits)

    # -- attributes ------------------------------------------------------------------------

    def tag_markup(self, tok: Tok, translate_attrs: bool = True) -> str:
        """The start tag ``tok``; its translatable attributes become units, and when rendering
        their values are replaced by the translations (and the language it declares set)."""
        text = self.text
        changes: list[_Edit] = []
        if translate_attrs:
            for a in _translatable_attrs(tok, self.rules):
                if self.unsafe(a.start, a.end):
                    continue
                assert a.value is not None
                b = UnitBuilder(f"<{tok.name} {a.name}>")
                b.text(a.value)
                unit = b.build()
                index = len(self.units)
                self.units.append(unit)
                if self.translations is None:
                    continue
                new = restore(self.translations[index], unit.codes).text
                if new != a.value:
                    value = attr_value(new)
                    changes.append((a.start, a.end, self.post(value) if self.post else value))
        if self.translations is not None and self.target_lang:
            changes += self.lang_changes(tok)
        if not changes:
            return text[tok.start : tok.end]
        return _apply(text, tok.start, tok.end, changes)

    def lang_changes(self, tok: Tok) -> list[_Edit]:
        """Set what names the page's language: ``<html lang dir>``, ``<body dir>``,
        ``<meta http-equiv=content-language>``, ``<meta property=og:locale>``."""
        assert self.target_lang
        lang = self.target_lang.replace("_", "-")
        rtl = _text_direction(lang) == "rtl"
        first: dict[str, Attr] = {}
        for a in tok.attrs:
            first.setdefault(a.name, a)
        changes: list[_Edit] = []

        def put(name: str, value: str, add: bool) -> None:
            a = first.get(name)
            if a is None:
                if add:
                    at = tok.start + 1 + len(tok.name)
                    changes.append((at, at, f" {name}={attr_value(value)}"))
            elif a.value is None:
                changes.append((a.start, a.end, "=" + attr_value(value)))
            elif a.value != value:
                changes.append((a.start, a.end, attr_value(value)))

        direction = first.get("dir")
        keep_dir = direction is not None and (direction.value or "").strip().lower() == "auto"
        if tok is self._first_html:
            put("lang", lang, True)
            if "xml:lang" in first:
                put("xml:lang", lang, False)
            if not keep_dir:
                put("dir", "rtl" if rtl else "ltr", rtl)
        elif tok.name == "body" and direction is not None and not keep_dir:
            put("dir", "rtl" if rtl else "ltr", False)
        elif tok.name == "meta" and "content" in first:
            equiv = (tok.attr("http-equiv") or "").strip().lower()
            prop = (tok.attr("property") or tok.attr("name") or "").strip().lower()
            if equiv == "content-language":
                put("content", lang, False)
            elif prop == "og:locale":
                put("content", lang.replace("-", "_"), False)
        return changes

    # -- units -----------------------------------------------------------------------------

    def flush(
        self, items: list[_Item], names: list[tuple[bool, str] | None], edits: list[_Edit]
    ) -> None:
        """End the current run of inline content: make it a unit if it has text."""
        try:
            self._flush(items, names, edits)
        finally:
            items.clear()
            names.clear()

    def _flush(
        self, items: list[_Item], names: list[tuple[bool, str] | None], edits: list[_Edit]
    ) -> None:
        text = self.text

        def significant(item: _Item) -> bool:
            kind, s, e, _ = item
            return kind in ("tag", "code") or (kind == "text" and bool(text[s:e].strip(WS)))

        keep = [k for k, item in enumerate(items) if significant(item)]
        has_text = any(
            items[k][0] == "text" and decode_text(text[items[k][1] : items[k][2]], {}).strip()
            for k in keep
        )
        if not has_text:
            for kind, s, e, markup in items:  # attributes translated in tags outside units
                if kind in ("tag", "code") and markup != text[s:e]:
                    edits.append((s, e, markup))
            return
        lo, hi = keep[0], keep[-1]
        for kind, s, e, markup in items[:lo] + items[hi + 1 :]:
            if kind in ("tag", "code") and markup != text[s:e]:
                edits.append((s, e, markup))
        region = items[lo : hi + 1]
        start = region[0][1] + (
            len(text[region[0][1] : region[0][2]])
            - len(text[region[0][1] : region[0][2]].lstrip(WS))
            if region[0][0] == "text"
            else 0
        )
        end = region[-1][2] - (
            len(text[region[-1][1] : region[-1][2]])
            - len(text[region[-1][1] : region[-1][2]].rstrip(WS))
            if region[-1][0] == "text"
            else 0
        )
        partner = pair_tags(names[lo : hi + 1])
        closers = set(partner.values())
        self.blocks += 1
        b = UnitBuilder(f"block {self.blocks}")
        forms: dict[str, str] = {}
        pending: list[str] = []

        def add_text() -> None:
            raw = "".join(pending)
            pending.clear()
            pos = 0
            if self.rules.code_spans and "`" in raw:
                for m in _CODE_SPAN.finditer(raw):  # as its source says: one code each
                    add_raw(raw[pos : m.start()])
                    b.standalone(m.group(0))
                    pos = m.end()
            add_raw(raw[pos:])

        def add_raw(raw: str) -> None:
            pos = 0
            for m in _CHARREF.finditer(raw):
                if m.group(0)[1] == "#" and _charref(m.group(0))[1] is None:
                    # a reference to a code point parsers drop or replace: kept as it is
                    add_decoded(decode_text(raw[pos : m.start()], forms))
                    b.standalone(m.group(0))
                    pos = m.end()
            add_decoded(decode_text(raw[pos:], forms))

        def add_decoded(decoded: str) -> None:
            # a literal "<x1/>" in the text (written &lt;x1/&gt;) is protected as a code whose
            # markup is the escaped text, so it can never come back as a tag
            pos = 0
            for m in TAG.finditer(decoded):
                b.text(decoded[pos : m.start()])
                b.standalone(text_escaper(forms)(m.group(0)))
                pos = m.end()
            b.text(decoded[pos:])

        for k, (kind, s, e, markup) in enumerate(region):
            if kind == "text":
                pending.append(text[max(s, start) : min(e, end)])
                continue
            if pending:
                add_text()
            if k in partner:
                b.open(markup, region[partner[k]][3])
            elif k in closers:
                b.close()
            else:
                b.standalone(markup)
        if pending:
            add_text()
        unit = b.build()
        index = len(self.units)
        self.units.append(unit)
        if self.translations is None:
            return
        translation = self.translations[index]
        if translation == unit.text and all(
            markup == text[s:e] for kind, s, e, markup in region if kind in ("tag", "code")
        ):
            return  # nothing changed: the source's bytes stay (its mix of escapes included)
        escape = text_escaper({**self.doc_forms(), **forms})
        post = self.post
        esc = escape if post is None else (lambda s: post(escape(s)))
        edits.append((start, end, restore(translation, unit.codes, esc).text))


def _apply(text: str, start: int, end: int, edits: list[_Edit]) -> str:
    """``text[start:end]`` with the edits (non-overlapping spans inside it) made."""
    out: list[str] = []
    pos = start
    for s, e, replacement in sorted(edits):
        out.append(text[pos:s])
        out.append(replacement)
        pos = e
    out.append(text[pos:end])
    return "".join(out)


def units(text: str, rules: TagRules = HTML) -> list[Unit]:
    """The translatable units of the markup ``text`` under ``rules``."""
    scan = _Scan(text, None, rules)
    scan.run()
    return scan.units


def rendered(
    text: str,
    translations: Sequence[str],
    rules: TagRules = HTML,
    *,
    target_lang: str | None = None,
    post: Callable[[str], str] | None = None,
) -> str:
    """``text`` with unit i's text replaced by ``translations[i]`` (tagged, as the engine
    returned it: :func:`restore` puts every code back). ``target_lang``: the language the
    page then declares (``<html lang>``...). ``post``: applied to each translated text and
    attribute value after escaping (:func:`no_blank_lines` for an HTML block in Markdown)."""
    check_count("html", units(text, rules), translations)
    if target_lang is not None and not _LANG_TAG.fullmatch(target_lang):
        target_lang = None  # not a language tag: nothing to declare
    scan = _Scan(text, translations, rules, target_lang, post)
    scan.run()
    return _apply(text, 0, len(text), scan.edits)


class HtmlFormat(DocumentFormat):
    name = "html"
    extensions = (".html", ".htm")
    media_type = "text/html; charset=utf-8"

    def extract(self, content: bytes) -> list[Unit]:
        _, text = decode_document(content, "HTML")
        return units(text)

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        bom, text = decode_document(content, "HTML")
        return (bom + rendered(text, translations, target_lang=target_lang)).encode("utf-8")


register(HtmlFormat())
