"""HTML pages and fragments: a unit per block's text, and per translatable attribute.

Why not lxml.html or selectolax: both give a tree, and writing a tree back re-serialises the
whole page (entities become characters, attribute quoting and whitespace inside tags change,
a fragment gains ``<html><body>``, omitted end tags appear). This module tokenizes the source
itself (tags, attributes, comments, raw-text elements, character references, following the
HTML tokenizer's rules for what a tag is) and only replaces the spans of translated text and
attribute values, so a page whose translations equal its source comes back **byte for byte**,
and anything else the format does not touch (scripts, styles, comments, ``onerror=...``,
unusual markup) stays exactly as it was. The tests compare trees with lxml on top.

Units:

* a run of text and inline elements between block boundaries (``<p>``, ``<li>``, ``<td>``,
  ``<h1>``, ``<div>``, ``<button>``, ``<label>``, ``<option>``, ``<title>``... any element not
  listed as inline) is one unit; inline elements (``b i em strong a span sup sub small u mark
  abbr q s cite time...``) that open and close inside it are paired codes, their tags with
  all attributes as the code's markup; ``br``, ``img``, ``wbr``, ``input``, comments and
  unmatched tags are standalone codes;
* ``alt``, ``title``, ``placeholder``, ``aria-label``, ``aria-description``, ``label``, the
  ``value`` of submit/button/reset inputs, and the ``content`` of ``<meta name=description|
  keywords>`` and ``og:``/``twitter:`` title and description are units of their own;
* never translated: the content of ``script style pre code kbd samp template noscript textarea
  svg math iframe object canvas video audio`` and of any element with ``translate="no"`` or
  class ``notranslate`` (inside a unit, such an element is one standalone code).

Render escapes translated text (``<`` and ``&`` can only become text, never markup) and writes
each character the way the source wrote it where it can (``&nbsp;``, ``&copy;``, a raw ``&``).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html.entities import html5

from mtfleet.core.documents import register
from mtfleet.core.documents.base import TAG, DocumentFormat, Unit, UnitBuilder, restore
from mtfleet.core.documents.text import check_count, decode_document, pair_tags

WS = " \t\n\r\f"

#: Phrasing elements that wrap translatable text: paired codes inside a unit.
INLINE = {
    "a", "abbr", "b", "bdi", "bdo", "big", "cite", "data", "del", "dfn", "em", "font", "i",
    "ins", "mark", "nobr", "output", "q", "s", "small", "span", "strike", "strong",
    "sub", "sup", "time", "tt", "u",
}  # fmt: skip
#: Void elements that may sit inside a unit (standalone codes).
INLINE_VOID = {"br", "img", "wbr", "input", "embed", "area", "source", "track"}
VOID = INLINE_VOID | {"base", "col", "hr", "link", "meta", "param", "keygen", "basefont"}
#: Content never translated; inside a unit the whole element is one standalone code.
OPAQUE = {
    "script", "style", "code", "kbd", "samp", "template", "noscript", "textarea", "svg",
    "math", "iframe", "object", "canvas", "video", "audio", "xmp", "noembed", "noframes",
}  # fmt: skip
#: Blocks whose content is never translated and that always end a unit.
OPAQUE_BLOCK = {"pre", "listing", "plaintext"}
#: Raw text (no tags inside, no character references) and escapable raw text (references only).
RAW_TEXT = {"script", "style", "xmp", "iframe", "noembed", "noframes", "noscript"}
RCDATA = {"title", "textarea"}
TRANSLATABLE_ATTRS = {
    "alt", "title", "placeholder", "aria-label", "aria-description", "aria-placeholder",
}  # fmt: skip
META_NAMES = {
    "description", "keywords", "og:title", "og:description", "og:site_name",
    "twitter:title", "twitter:description", "twitter:image:alt", "og:image:alt",
}  # fmt: skip
#: An element's start implies the end of an open one (enough to bound a skipped element).
IMPLIED_END = {
    "p": None,  # None: any block-level start tag
    "li": {"li"}, "dt": {"dt", "dd"}, "dd": {"dt", "dd"}, "option": {"option", "optgroup"},
    "tr": {"tr", "tbody", "tfoot"}, "td": {"td", "th", "tr"}, "th": {"td", "th", "tr"},
}  # fmt: skip


@dataclass(frozen=True)
class TagRules:
    """What each element is to the scan: HTML's rules (:data:`HTML`, the html format), or a
    caller's (the DeepL surface's ``tag_handling`` with its ``ignore_tags``,
    ``non_splitting_tags`` and ``splitting_tags``: :mod:`mtfleet.core.documents.fragments`).

    ``splitting`` None is HTML's way: an element not inline (or void, or opaque) ends a unit.
    A set is XML's: only the elements it names end a unit, every other one is inline."""

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


#: The html format's rules.
HTML = TagRules()

# HTML's whitespace is WS alone: a regex's \s also takes U+0085, U+00A0 and the rest of
# Unicode's spaces, which inside a tag are part of a name or value (as browsers read them)
_TAG_NAME = re.compile(r"[A-Za-z][^ \t\n\r\f/>]*")
_ATTR_NAME = re.compile(r"[^ \t\n\r\f/>][^ \t\n\r\f/>=]*")
_UNQUOTED = re.compile(r"[^ \t\n\r\f>]+")
_CHARREF = re.compile(r"&(?:#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[A-Za-z][A-Za-z0-9]*;?)")
_LONGEST_ENTITY = max(len(k) for k in html5)


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

    def attr(self, name: str) -> str | None:
        return next((a.value for a in self.attrs if a.name == name), None)


def tokenize(text: str, rules: TagRules = HTML) -> list[Tok]:
    """The HTML tokenizer's view of ``text``: every character belongs to exactly one token
    (``rules`` say which elements hold raw text: none in XML)."""
    toks: list[Tok] = []
    n = len(text)
    pos = 0
    text_start = 0

    def add(tok: Tok) -> None:
        if text_start < tok.start:
            toks.append(Tok("text", text_start, tok.start))
        toks.append(tok)

    while True:
        lt = text.find("<", pos)
        if lt < 0 or lt + 1 >= n:
            break
        nxt = text[lt + 1]
        if text.startswith("<!--", lt):
            if text.startswith("<!-->", lt) or text.startswith("<!--->", lt):
                end = text.index(">", lt + 4) + 1
            else:
                close = text.find("-->", lt + 4)
                end = n if close < 0 else close + 3
            add(Tok("comment", lt, end))
        elif nxt in "!?":
            if text.startswith("<![CDATA[", lt):
                close = text.find("]]>", lt)
                end = n if close < 0 else close + 3
            else:
                close = text.find(">", lt)
                end = n if close < 0 else close + 1
            add(Tok("other", lt, end))
        elif nxt == "/":
            m = _TAG_NAME.match(text, lt + 2)
            close = text.find(">", lt + 2)
            end = n if close < 0 else close + 1
            if m:
                add(Tok("end", lt, end, m.group(0).lower()))
            elif text.startswith("</>", lt):
                add(Tok("other", lt, lt + 3))
            else:
                add(Tok("comment", lt, end))  # "</ ..." is a bogus comment
        elif nxt.isascii() and nxt.isalpha():
            tok = _start_tag(text, lt)
            add(tok)
            if tok.kind == "start" and (tok.name in rules.raw_text or tok.name in rules.rcdata):
                end = _raw_end(text, tok.end, tok.name)
                if end > tok.end:
                    kind = "text" if tok.name in rules.rcdata else "raw"
                    toks.append(Tok(kind, tok.end, end))
                pos = text_start = end
                continue
        else:
            pos = lt + 1  # a "<" that opens nothing is text
            continue
        pos = text_start = toks[-1].end
    if text_start < n:
        toks.append(Tok("text", text_start, n))
    return toks


def _start_tag(text: str, lt: int) -> Tok:
    n = len(text)
    m = _TAG_NAME.match(text, lt + 1)
    assert m
    tok = Tok("other", lt, n, m.group(0).lower())  # "other" until its ">" is found: a tag
    pos = m.end()  # cut off by the end of the file is dropped by parsers
    while pos < n:
        c = text[pos]
        if c in WS:
            pos += 1
        elif c == ">":
            tok.kind = "start"
            tok.end = pos + 1
            tok.selfclosing = text[pos - 1] == "/"
            break
        elif c == "/":
            pos += 1
        else:
            am = _ATTR_NAME.match(text, pos)
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
                    close = text.find(text[pos], pos + 1)
                    vend = n if close < 0 else close + 1
                    raw = text[pos + 1 : vend - 1]
                else:
                    vm = _UNQUOTED.match(text, pos)
                    vend = vm.end() if vm else pos
                    raw = text[pos:vend]
                tok.attrs.append(Attr(name, html.unescape(raw), pos, vend))
                pos = vend
            else:
                tok.attrs.append(Attr(name, None, pos, pos))
    return tok


def _raw_end(text: str, pos: int, name: str) -> int:
    """Where the content of a raw-text element that starts at ``pos`` ends."""
    if name == "plaintext":
        return len(text)
    pattern = re.compile(rf"</{re.escape(name)}(?=[ \t\n\r\f/>])", re.I)
    m = pattern.search(text, pos)
    return m.start() if m else len(text)


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


# --- units --------------------------------------------------------------------------------------


def _no_translate(tok: Tok) -> bool:
    return (tok.attr("translate") or "").strip().lower() == "no" or "notranslate" in (
        tok.attr("class") or ""
    ).split()


def _translatable_attrs(tok: Tok, rules: TagRules) -> list[Attr]:
    if not rules.translate_attrs:
        return []
    kind = (tok.attr("type") or "").lower()
    meta = (tok.attr("name") or tok.attr("property") or "").lower()

    def translatable(a: Attr) -> bool:
        if not a.value or not a.value.strip():
            return False
        if a.name == "label":
            return tok.name in ("option", "optgroup", "track")
        if a.name == "value":
            return tok.name == "input" and kind in ("submit", "button", "reset")
        if a.name == "content":
            return tok.name == "meta" and meta in META_NAMES
        return a.name in TRANSLATABLE_ATTRS

    return [a for a in tok.attrs if translatable(a)]


def _extent(toks: list[Tok], i: int, rules: TagRules) -> int:
    """Index of the last token of the element that starts at ``toks[i]``."""
    first = toks[i]
    if first.selfclosing or first.name in rules.void:
        return i
    implied = rules.implied_end.get(first.name, set())
    stack = [first.name]
    for k in range(i + 1, len(toks)):
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
            if not t.selfclosing and t.name not in rules.void:
                stack.append(t.name)
        elif t.kind == "end":
            if t.name in stack:
                while stack.pop() != t.name:
                    pass
                if not stack:
                    return k
            elif not rules.is_inline(t.name):
                return k - 1  # closes an element around this one
    return len(toks) - 1


@dataclass
class _Scan:
    """One pass over the document: the units in order, and (when rendering) the edits."""

    text: str
    translations: Sequence[str] | None
    rules: TagRules = HTML
    units: list[Unit] = field(default_factory=list)
    edits: list[tuple[int, int, str]] = field(default_factory=list)
    blocks: int = 0
    _doc_forms: dict[str, str] | None = None

    def doc_forms(self) -> dict[str, str]:
        """How the whole document writes escaped characters (a unit's own use comes first)."""
        if self._doc_forms is None:
            self._doc_forms = {}
            decode_text(self.text, self._doc_forms)
        return self._doc_forms

    def tag_markup(self, tok: Tok, translate_attrs: bool = True) -> str:
        """The start tag ``tok``; its translatable attributes become units, and when rendering
        their values are replaced by the translations."""
        raw = self.text[tok.start : tok.end]
        if not translate_attrs:
            return raw
        pieces: list[str] = []
        pos = tok.start
        for a in _translatable_attrs(tok, self.rules):
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
                pieces += [self.text[pos : a.start], attr_value(new)]
                pos = a.end
        if not pieces:
            return raw
        return "".join([*pieces, self.text[pos : tok.end]])

    def run(self) -> None:
        rules = self.rules
        toks = tokenize(self.text, rules)
        items: list[tuple[str, int, int, str]] = []  # kind, start, end, markup
        names: list[tuple[bool, str] | None] = []
        i = 0
        while i < len(toks):
            t = toks[i]
            if t.kind == "start" and (
                _no_translate(t) or t.name in rules.opaque or t.name in rules.opaque_block
            ):
                j = _extent(toks, i, rules)
                block = t.name in rules.opaque_block or not (
                    rules.is_inline(t.name) or t.name in rules.inline_void | rules.opaque
                )
                markup = self.tag_markup(t, not _no_translate(t) and not block)
                markup += self.text[t.end : toks[j].end]
                if block:
                    self.flush(items, names)
                else:
                    items.append(("code", t.start, toks[j].end, markup))
                    names.append(None)
                i = j + 1
                continue
            if t.kind == "text":
                items.append(("text", t.start, t.end, ""))
                names.append(None)
            elif t.kind in ("comment", "raw"):  # raw text outside a skipped element: kept as is
                items.append(("comment", t.start, t.end, self.text[t.start : t.end]))
                names.append(None)
            elif t.kind == "start" and (rules.is_inline(t.name) or t.name in rules.inline_void):
                markup = self.tag_markup(t)
                items.append(("tag", t.start, t.end, markup))
                void = t.selfclosing or t.name in rules.void
                names.append(None if void else (False, t.name))
            elif t.kind == "end" and rules.is_inline(t.name):
                items.append(("tag", t.start, t.end, self.text[t.start : t.end]))
                names.append((True, t.name))
            else:  # a block boundary
                self.flush(items, names)
                if t.kind == "start":
                    markup = self.tag_markup(t)
                    if markup != self.text[t.start : t.end]:
                        self.edits.append((t.start, t.end, markup))
            i += 1
        self.flush(items, names)

    def flush(
        self, items: list[tuple[str, int, int, str]], names: list[tuple[bool, str] | None]
    ) -> None:
        """End the current run of inline content: make it a unit if it has text."""
        try:
            self._flush(items, names)
        finally:
            items.clear()
            names.clear()

    def _flush(
        self, items: list[tuple[str, int, int, str]], names: list[tuple[bool, str] | None]
    ) -> None:
        text = self.text

        def significant(item: tuple[str, int, int, str]) -> bool:
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
                    self.edits.append((s, e, markup))
            return
        lo, hi = keep[0], keep[-1]
        for kind, s, e, markup in items[:lo] + items[hi + 1 :]:
            if kind in ("tag", "code") and markup != text[s:e]:
                self.edits.append((s, e, markup))
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
        if self.translations is not None:
            esc = text_escaper({**self.doc_forms(), **forms})
            self.edits.append((start, end, restore(self.translations[index], unit.codes, esc).text))


def units(text: str, rules: TagRules = HTML) -> list[Unit]:
    """The translatable units of the markup ``text`` under ``rules``."""
    scan = _Scan(text, None, rules)
    scan.run()
    return scan.units


def rendered(text: str, translations: Sequence[str], rules: TagRules = HTML) -> str:
    """``text`` with unit i's text replaced by ``translations[i]`` (tagged, as the engine
    returned it: :func:`restore` puts every code back)."""
    check_count("html", units(text, rules), translations)
    scan = _Scan(text, translations, rules)
    scan.run()
    out = []
    pos = 0
    for s, e, replacement in sorted(scan.edits):
        out.append(text[pos:s])
        out.append(replacement)
        pos = e
    out.append(text[pos:])
    return "".join(out)


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
        return (bom + rendered(text, translations)).encode("utf-8")


register(HtmlFormat())
