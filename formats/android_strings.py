"""Android string resources (``res/values*/strings.xml``): a unit per string, array item and
plural case; everything else written back byte for byte.

Units, in document order (``translatable="false"`` on a ``<string>``, ``<string-array>`` or
``<plurals>`` leaves it alone, and so does a value that is a resource reference such as
``@string/other`` or ``?attr/x``):

* each ``<string>`` (``product=`` variants are a unit each: the path names the product), and
  each ``<item type="string" name=…>`` (the same resource spelled as an item);
* each ``<item>`` of a ``<string-array>``;
* each ``<item quantity=…>`` of a ``<plurals>``.

Comments, ``<skip/>``, ``<eat-comment/>``, other resources (``<dimen>``, ``<integer-array>``…),
whitespace and the XML declaration are never units and come back as they were: the file is read
by offsets and the translated values are spliced into the original text, so an identity render
is byte-equal (the hardened lxml parser of :mod:`xliff` checks the XML first and gives each
element its namespace).

Inside a value:

* Android's escapes: ``\\'``, ``\\"``, ``\\@``, ``\\?``, ``\\\\`` and ``\\uXXXX`` (a printable
  character) are decoded into the text the engine sees; ``\\n``, ``\\t``, a ``\\uXXXX`` that is
  white space or not printable, and any other escape are standalone codes. A value wrapped in
  double quotes (``"…"``, where white space and apostrophes are literal) is a unit without its
  quotes; an unescaped double quote anywhere else is a standalone code (aapt reads it as a
  quoting toggle). Outside quotes a run of white space (a value wrapped over lines) is one space.
* ``<xliff:g …>…</xliff:g>`` is ONE standalone code (its content is a placeholder or an example,
  not to be translated); ``<b>``, ``<i>``, ``<u>``, ``<a href>``, ``<annotation>`` and any other
  element with content are paired codes around their text, an empty element (``<br/>``) a
  standalone one, and so are comments.
* A CDATA section is a paired code around its text; the HTML tags inside it (for
  ``Html.fromHtml``) are codes too, paired where they pair.
* ``java.util.Formatter`` specifiers (``%1$s``, ``%d``, ``%s``, ``%%``, ``%.2f``, ``%n``) are
  standalone codes, and so are HTML tags written escaped in the text (``&lt;b>``, markup for
  ``Html.fromHtml``), paired where they pair.
* A reference to an entity the file declares (``&app_name;``) is a standalone code: never
  expanded into the text, never translated, written back as it was.

Entities: a file may declare its own in its DOCTYPE (``<!DOCTYPE resources [<!ENTITY app_name
"NewPipe">]>``: an app that names itself once, aapt expanding it); the DOCTYPE comes back byte
for byte. An external DTD or entity, a parameter entity and an entity defined by other entities
(an expansion bomb) are refused (:func:`xliff.check_internal_entities`).

On render a value the translation leaves unchanged is written as the file wrote it; a
translated one is escaped the way aapt requires: ``\\``, ``"`` and ``'`` get a backslash (valid
inside quotes too), a line break or tab becomes ``\\n``/``\\t``, a leading ``@`` or ``?`` is
escaped (else aapt takes a reference), ``&``, ``<`` and ``>`` become entities (inside CDATA too,
where ``Html.fromHtml`` decodes them: translated text never becomes markup), and a character
the value wrote as a ``\\uXXXX`` escape is written with that escape again.

Plurals: with ``target_lang`` a ``<plurals>`` gets exactly the target's CLDR categories
(:func:`plurals.for_target`): a missing category is made from the source's ``other`` item
(same start tag and layout, its translation), an extra one is dropped with its line, and an
item that spells its number (``1 minute``) where the target's category covers several numbers
(Russian ``one``: 1, 21, 31…) is made from ``other`` too. Units
come only from the source's items. ``tools:locale`` on ``<resources>`` (the language the file
is in) is set to the target. Without ``target_lang`` nothing structural changes.

The XML must be UTF-8 (with or without a byte-order mark), UTF-16 or UTF-32 with a BOM, or the
encoding its declaration names (written back in it); the root must be ``<resources>``: any
other XML sent as ``.xml`` is refused, naming its root.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mtfleet.formats import register
from mtfleet.formats.base import (
    DocumentError,
    DocumentFormat,
    Unit,
    UnitBuilder,
)
from mtfleet.formats.plurals import for_target, placeholders
from mtfleet.formats.text import check_count, pair_tags
from mtfleet.formats.xliff import (
    parse_untrusted_xml,
    restore_markers,
    walk_markers,
    xml_text,
)

_XLIFF_NS = "urn:oasis:names:tc:xliff:document:1.2"
_TOOLS_NS = "http://schemas.android.com/tools"

#: java.util.Formatter specifiers (what String.format / getString(id, args) read), and ``%``
#: before any other letter: an app's own placeholder (ZXing's search URL takes ``%s``, ``%f``
#: and ``%t``), never a word the engine may change.
_SPECIFIER = re.compile(r"%(?:\d+\$|<)?[-#+0,(]*\d*(?:\.\d+)?(?:[tT][a-zA-Z]|[a-zA-Z%])")

#: In a value's text: a specifier, or an HTML tag written escaped (``&lt;b>``: markup for
#: ``Html.fromHtml``).
_IN_TEXT = re.compile(
    rf"{_SPECIFIER.pattern}|<(?P<close>/?)(?P<name>[A-Za-z][\w:.-]*)(?:\s[^<>]*?)?(?P<void>/?)>"
)


def _escaped_tag(m: re.Match[str]) -> tuple[bool, str] | None:
    name = m.group("name")
    if not name or m.group("void") or name.lower() in _HTML_VOID:
        return None
    return bool(m.group("close")), name.lower()


#: XML markup as the scanner meets it (the document is well-formed: lxml checked it first).
_MARKUP = re.compile(
    r"<!--.*?-->"
    r"|<!\[CDATA\[(?P<cdata>.*?)\]\]>"
    r"|<\?.*?\?>"
    r"|<!(?:[^\[>]|\[(?:<!--.*?-->|\"[^\"]*\"|'[^']*'|<(?!!--)|[^\]\"'<])*+\])*>"
    r"|</(?P<end>[^\s>]+)\s*>"
    r"|<(?P<start>[^\s/>!?]+)(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*\s*(?P<empty>/?)>",
    re.S,
)
#: A character of XML text (an entity or character reference, or one character).
_XML_CHAR = re.compile(r"&(?:#[0-9]+|#x[0-9a-fA-F]+|[A-Za-z_:][\w.:-]*);|.", re.S)
_ENTITIES = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
#: Inside CDATA (HTML for Html.fromHtml): a tag, an entity, or one character.
_HTML_TOKEN = re.compile(
    r"<(?P<close>/?)(?P<name>[A-Za-z][\w:.-]*)(?:\s[^<>]*?)?(?P<void>/?)>"
    r"|&(?:#[0-9]+|#x[0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);"
    r"|.",
    re.S,
)
_HTML_VOID = {"br", "img", "hr", "input", "meta", "link", "wbr", "source", "area", "col"}
_QUANTITY = re.compile(r"""(\squantity\s*=\s*)(["'])(.*?)\2""", re.S)
_WS = " \t\r\n"


# --- reading the XML by offsets ----------------------------------------------------------------


@dataclass
class _Node:
    """An element: its name as written, its offsets, its lxml element, its children."""

    name: str
    start: int  # offset of its "<"
    inner_start: int  # offset after its start tag
    inner_end: int  # offset of its end tag ("/>": inner_start)
    end: int  # offset after its end tag
    first: int  # index of its start tag in the token list
    last: int  # index of its end tag (== first for an empty element)
    el: Any = None
    children: list[_Node] = field(default_factory=list)

    @property
    def local(self) -> str:
        return self.name.rsplit(":", 1)[-1]


@dataclass
class _Tok:
    kind: str  # "text", "start", "end", "empty", "cdata", "other" (comment, PI)
    start: int
    end: int
    node: _Node | None = None


def _scan(text: str, root_el: Any) -> tuple[list[_Tok], _Node]:
    """Tokens and the element tree of ``text``, each element matched to lxml's."""
    toks: list[_Tok] = []
    nodes: list[_Node] = []
    stack: list[_Node] = []
    pos = 0
    for m in _MARKUP.finditer(text):
        if m.start() > pos:
            toks.append(_Tok("text", pos, m.start()))
        pos = m.end()
        if m.group("start"):
            node = _Node(m.group("start"), m.start(), m.end(), m.end(), m.end(), len(toks), 0)
            if stack:
                stack[-1].children.append(node)
            nodes.append(node)
            if m.group("empty"):
                node.last = len(toks)
                toks.append(_Tok("empty", m.start(), m.end(), node))
            else:
                toks.append(_Tok("start", m.start(), m.end(), node))
                stack.append(node)
        elif m.group("end"):
            if not stack or stack[-1].name != m.group("end"):
                raise _unreadable()
            node = stack.pop()
            node.inner_end, node.end, node.last = m.start(), m.end(), len(toks)
            toks.append(_Tok("end", m.start(), m.end(), node))
        elif m.group("cdata") is not None:
            toks.append(_Tok("cdata", m.start(), m.end()))
        else:
            toks.append(_Tok("other", m.start(), m.end()))
    if pos < len(text):
        toks.append(_Tok("text", pos, len(text)))
    elements = [e for e in root_el.iter() if isinstance(e.tag, str)]
    if stack or len(elements) != len(nodes):
        raise _unreadable()
    for node, el in zip(nodes, elements, strict=True):
        written = f"{el.prefix}:{_local(el)}" if el.prefix else _local(el)
        if written != node.name:
            raise _unreadable()
        node.el = el
    return toks, nodes[0]


def _unreadable() -> DocumentError:
    return DocumentError("the Android strings.xml could not be read element by element")


def _local(el: Any) -> str:
    tag = str(el.tag)
    return tag.rsplit("}", 1)[-1]


def _namespace(el: Any) -> str:
    tag = str(el.tag)
    return tag[1:].split("}", 1)[0] if tag.startswith("{") else ""


# --- a value's content: XML characters, then Android's escapes ----------------------------------


@dataclass
class _Ch:
    """A character of text (after XML decoding) and how the file spells it."""

    char: str
    raw: str


#: Where a code's markup may stand: "xml" (an element, a comment: outside CDATA), "html" (a tag
#: or entity of the HTML inside a CDATA section: inside one), "cdata" (the section's own
#: ``<![CDATA[``/``]]>``) or "any" (a placeholder, an escape, a quote).
_Ctx = str


@dataclass
class _Mark:
    """Markup: ``tag`` is ``(closing, name)`` for what may pair, None for a standalone code."""

    raw: str
    tag: tuple[bool, str] | None
    ctx: _Ctx = "xml"


def _xml_chars(raw: str) -> list[_Ch | _Mark]:
    """Characters of XML text; a reference to a declared entity is markup (a code)."""
    out: list[_Ch | _Mark] = []
    for m in _XML_CHAR.finditer(raw):
        s = m.group(0)
        if len(s) == 1:
            out.append(_Ch(s, s))
        elif s.startswith("&#"):
            num = int(s[3:-1], 16) if s[2] in "xX" else int(s[2:-1])
            out.append(_Ch(chr(num) if num <= 0x10FFFF else "\ufffd", s))
        elif s[1:-1] in _ENTITIES:
            out.append(_Ch(_ENTITIES[s[1:-1]], s))
        else:
            out.append(_Mark(s, None))
    return out


def _cdata(raw: str, key: str) -> list[_Ch | _Mark]:
    body = raw[len("<![CDATA[") : -len("]]>")]
    out: list[_Ch | _Mark] = [_Mark("<![CDATA[", (False, key), "cdata")]
    for m in _HTML_TOKEN.finditer(body):
        s = m.group(0)
        if m.group("name"):
            name = m.group("name").lower()
            void = bool(m.group("void")) or name in _HTML_VOID
            tag = None if void else (bool(m.group("close")), f"html:{name}")
            out.append(_Mark(s, tag, "html"))
        elif len(s) > 1:  # an entity or character reference
            ref = _xml_chars(s)[0]
            decoded = ref.char if isinstance(ref, _Ch) else None
            out.append(_Ch(decoded, s) if decoded and len(decoded) == 1 else _Mark(s, None, "html"))
        else:
            out.append(_Ch(s, s))
    out.append(_Mark("]]>", (True, key), "cdata"))
    return out


def _flatten(text: str, toks: list[_Tok], node: _Node) -> list[_Ch | _Mark]:
    """The content of ``node`` as characters and markup, in order."""
    out: list[_Ch | _Mark] = []
    i = node.first + 1
    while i < node.last:
        tok = toks[i]
        raw = text[tok.start : tok.end]
        if tok.kind == "text":
            out.extend(_xml_chars(raw))
        elif tok.kind == "cdata":
            out.extend(_cdata(raw, f"cdata{i}"))
        elif tok.kind == "start" and tok.node is not None:
            child = tok.node
            if _local(child.el) == "g" and _namespace(child.el) == _XLIFF_NS:
                out.append(_Mark(text[child.start : child.end], None))  # one code, content too
                i = child.last + 1
                continue
            out.append(_Mark(raw, (False, f"el{i}")))
        elif tok.kind == "end" and tok.node is not None:
            out.append(_Mark(raw, (True, f"el{tok.node.first}")))
        else:  # an empty element, a comment, a processing instruction
            out.append(_Mark(raw, None))
        i += 1
    return out


@dataclass
class _A:
    """A piece of a value after Android's escapes: ``kind`` is "text" (``char``), "ws" (white
    space outside quotes), "quote" (an unescaped double quote), "code" (an escape kept as
    written) or "mark" (markup, ``tag`` as in :class:`_Mark`)."""

    kind: str
    raw: str
    char: str = ""
    tag: tuple[bool, str] | None = None
    ctx: _Ctx = "any"
    escaped: bool = False  # a "text" written as a \\uXXXX escape or a character reference


def _android(items: list[_Ch | _Mark]) -> list[_A]:
    out: list[_A] = []
    quoted = False
    i = 0
    while i < len(items):
        it = items[i]
        i += 1
        if isinstance(it, _Mark):
            out.append(_A("mark", it.raw, tag=it.tag, ctx=it.ctx))
            continue
        c = it.char
        if c == "\\":
            nxt = items[i] if i < len(items) else None
            if not isinstance(nxt, _Ch):
                out.append(_A("code", it.raw))
                continue
            i += 1
            raw = it.raw + nxt.raw
            if nxt.char in "'\"@?\\":
                out.append(_A("text", raw, nxt.char))
            elif nxt.char == "u":
                hexes = items[i : i + 4]
                digits = "".join(h.char for h in hexes if isinstance(h, _Ch))
                if len(digits) == 4 and re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                    i += 4
                    raw += "".join(h.raw for h in hexes if isinstance(h, _Ch))
                    ch = chr(int(digits, 16))
                    if ch.isprintable() and not ch.isspace():
                        out.append(_A("text", raw, ch, escaped=True))
                    else:
                        out.append(_A("code", raw))
                else:
                    out.append(_A("code", raw))
            else:  # \n, \t and anything else aapt reads its own way
                out.append(_A("code", raw))
        elif c == '"':
            quoted = not quoted
            out.append(_A("quote", it.raw, c))
        elif c in _WS and not quoted:
            out.append(_A("ws", it.raw, c))
        else:  # a character reference is written the same way again
            out.append(_A("text", it.raw, c, escaped=it.raw.startswith("&#")))
    return out


@dataclass
class _Value:
    """The content of a ``<string>`` or ``<item>``: where it is and the unit it makes."""

    start: int
    end: int
    raw: str
    unit: Unit | None = None  # None: nothing to translate (written as it was)
    ctx: dict[int, _Ctx] = field(default_factory=dict)  # code number -> where it may stand
    prefix: str = ""  # leading white space and the opening quote of a wrapped value
    suffix: str = ""
    spelled: dict[str, str] = field(default_factory=dict)  # char -> its escape (\\u, &#)

    def render(self, translation: str) -> str:
        """The value's new content: as it was when the translation is the source's text."""
        if self.unit is None or translation == self.unit.text:
            return self.raw
        codes = self.unit.codes
        tree, _warnings = restore_markers(translation, codes)
        out: list[str] = []
        cdata = 0  # CDATA sections open (the engine may nest two: the inner one is dropped)
        first = True  # nothing written yet: a leading @ or ? must be escaped

        def on_text(s: str) -> None:
            nonlocal first
            piece = "".join(self.spelled.get(c) or _ESCAPE.get(c) or xml_text(c) for c in s)
            if first:
                lead = len(piece) - len(piece.lstrip(_WS))
                if piece[lead : lead + 1] in ("@", "?"):
                    piece = f"{piece[:lead]}\\{piece[lead:]}"
                first = not piece.strip(_WS)
            out.append(piece)

        def markup(raw: str, ctx: _Ctx) -> None:
            nonlocal first
            first = False
            if ctx == "html" and not cdata:  # HTML moved out of its CDATA: in one of its own
                out.append(f"<![CDATA[{raw}]]>")
            elif ctx == "xml" and cdata:  # an element moved into a CDATA: out of it
                out.append(f"]]>{raw}<![CDATA[")
            else:
                out.append(raw)

        def on_standalone(n: int) -> None:
            if n not in self.ctx:  # a literal tag-like text the builder protected: text again
                on_text(codes[n].start)
            else:
                markup(codes[n].start, self.ctx[n])

        def on_open(n: int) -> None:
            nonlocal cdata
            if self.ctx[n] == "cdata":
                cdata += 1
                if cdata == 1:
                    out.append(codes[n].start)
            else:
                markup(codes[n].start, self.ctx[n])

        def on_close(n: int) -> None:
            nonlocal cdata
            if self.ctx[n] == "cdata":
                cdata -= 1
                if cdata == 0:
                    out.append(codes[n].end or "")
            else:
                markup(codes[n].end or "", self.ctx[n])

        walk_markers(tree, on_text, on_standalone, on_open, on_close)
        return self.prefix + "".join(out) + self.suffix


_ESCAPE = {"\\": "\\\\", '"': '\\"', "'": "\\'", "\n": "\\n", "\t": "\\t"}


def _value(text: str, toks: list[_Tok], node: _Node, path: str) -> _Value:
    raw = text[node.inner_start : node.inner_end]
    value = _Value(node.inner_start, node.inner_end, raw)
    pieces = _android(_flatten(text, toks, node))
    significant = [k for k, p in enumerate(pieces) if p.kind != "ws"]
    if not significant:
        return value
    lo, hi = significant[0], significant[-1]
    wrapped = lo != hi and pieces[lo].kind == "quote" and pieces[hi].kind == "quote"
    if wrapped:
        lo, hi = lo + 1, hi - 1
    body = pieces[lo : hi + 1]
    value.prefix = "".join(p.raw for p in pieces[:lo])
    value.suffix = "".join(p.raw for p in pieces[hi + 1 :])
    if not wrapped and body and body[0].kind == "text" and body[0].raw in ("@", "?"):
        return value  # a resource or theme attribute reference, not text
    _unit(value, body, path)
    # (a character XML cannot carry is no character the translation may write)
    value.spelled = {p.char: p.raw for p in body if p.escaped and xml_text(p.char)}
    return value


def _unit(value: _Value, body: list[_A], path: str) -> None:
    """Make ``value``'s unit (none when it holds no text) and its codes' contexts."""
    b = UnitBuilder(path)
    marks = [p for p in body if p.kind == "mark"]
    partner = pair_tags([p.tag for p in marks])
    closers = set(partner.values())
    index = {id(p): k for k, p in enumerate(marks)}
    pending: list[_A] = []

    def flush() -> None:
        s = "".join(p.char for p in pending)  # one char per piece
        found = list(_IN_TEXT.finditer(s))
        tags = [_escaped_tag(m) for m in found]
        pairs = pair_tags(tags)
        ends = set(pairs.values())
        pos = 0
        for i, m in enumerate(found):
            b.text(s[pos : m.start()])
            pos = m.end()
            # as the file spells it (a "<" of "%<s" or of an escaped tag is "&lt;" there)
            raw = "".join(p.raw for p in pending[m.start() : m.end()])
            if i in pairs:
                end = found[pairs[i]]
                value.ctx[b.open(raw, "".join(p.raw for p in pending[end.start() : end.end()]))] = (
                    "any"
                )
            elif i in ends:
                b.close()
            else:
                value.ctx[b.standalone(raw)] = "any"
        b.text(s[pos:])
        pending.clear()

    k = 0
    while k < len(body):
        p = body[k]
        k += 1
        if p.kind == "text":
            pending.append(p)
            continue
        if p.kind == "ws":
            while k < len(body) and body[k].kind == "ws":
                k += 1
            pending.append(_A("text", " ", " "))
            continue
        flush()
        at = index.get(id(p))
        if at is not None and at in partner:
            value.ctx[b.open(p.raw, marks[partner[at]].raw)] = p.ctx
        elif at is not None and at in closers:
            b.close()
        else:
            value.ctx[b.standalone(p.raw)] = p.ctx
    flush()
    if not b.empty:
        value.unit = b.build()


# --- the document ------------------------------------------------------------------------------


@dataclass
class _Item:
    """An ``<item quantity=…>`` of a ``<plurals>``."""

    quantity: str
    node: _Node
    ws_start: int  # start of the white space before its start tag
    value: _Value | None  # None: an empty element (<item quantity="x"/>)


@dataclass
class _Plurals:
    items: list[_Item]


@dataclass
class _Doc:
    bom: bytes
    encoding: str
    text: str
    values: list[_Value]  # every value holding a unit, in document order
    plurals: list[_Plurals]
    locale: tuple[int, int] | None  # span of tools:locale's value on <resources>


def _decode(content: bytes, declared: str | None) -> tuple[bytes, str, str]:
    boms = (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF32_LE, "utf-32-le"),
        (codecs.BOM_UTF32_BE, "utf-32-be"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    )
    bom, encoding = next(
        ((b, e) for b, e in boms if content.startswith(b)), (b"", declared or "utf-8")
    )
    try:
        codecs.lookup(encoding)
        return bom, encoding, content[len(bom) :].decode(encoding)
    except (LookupError, UnicodeDecodeError, ValueError) as exc:
        raise DocumentError(f"the Android strings.xml is not valid {encoding}: {exc}") from None


def _translatable(node: _Node) -> bool:
    return str(node.el.get("translatable", "true")).strip().lower() != "false"


def _path(node: _Node) -> str:
    name = str(node.el.get("name") or "?")
    product = node.el.get("product")
    return f"{name}[product={product}]" if product else name


def _parse(content: bytes) -> _Doc:
    root = parse_untrusted_xml(content, "the Android strings.xml", internal_entities=True)
    if _local(root) != "resources" or _namespace(root):
        written = f"{root.prefix}:{_local(root)}" if root.prefix else _local(root)
        raise DocumentError(
            f"an XML file whose root is <{written}>, not Android string resources <resources>"
        )
    bom, encoding, text = _decode(content, root.getroottree().docinfo.encoding)
    toks, top = _scan(text, root)
    doc = _Doc(bom, encoding, text, [], [], _locale_span(text, top))

    def add(node: _Node, path: str) -> _Value | None:
        if node.first == node.last:  # <string name="x"/>
            return None
        value = _value(text, toks, node, path)
        if value.unit is not None:
            doc.values.append(value)
        return value

    for node in top.children:
        if _namespace(node.el) or not _translatable(node):
            continue
        kind = node.local
        if kind == "string" or (kind == "item" and node.el.get("type") == "string"):
            add(node, _path(node))
        elif kind == "string-array":
            items = [c for c in node.children if c.local == "item" and not _namespace(c.el)]
            for k, item in enumerate(items):
                if _translatable(item):
                    add(item, f"{_path(node)}[{k}]")
        elif kind == "plurals":
            group = _Plurals([])
            for item in node.children:
                if item.local != "item" or _namespace(item.el):
                    continue
                quantity = str(item.el.get("quantity", "")).strip()
                ws = item.start
                while ws > node.inner_start and text[ws - 1] in _WS:
                    ws -= 1
                value = add(item, f"{_path(node)}#{quantity}")
                group.items.append(_Item(quantity, item, ws, value))
            doc.plurals.append(group)
    return doc


def _locale_span(text: str, top: _Node) -> tuple[int, int] | None:
    if top.el.get(f"{{{_TOOLS_NS}}}locale") is None:
        return None
    prefixes = [p for p, uri in top.el.nsmap.items() if uri == _TOOLS_NS and p]
    start_tag = text[top.start : top.inner_start]
    for prefix in prefixes:
        m = re.search(rf"""\s{re.escape(prefix)}:locale\s*=\s*(["'])(.*?)\1""", start_tag, re.S)
        if m:
            return top.start + m.start(2), top.start + m.end(2)
    return None


def _resource_locale(lang: str) -> str:
    """A language tag as Android's resource qualifiers write it (``es``, ``pt-rBR``,
    ``b+sr+Latn``)."""
    parts = [p for p in re.split(r"[-_]", lang) if p]
    if len(parts) == 1:
        return parts[0].lower()
    if len(parts) == 2 and re.fullmatch(r"[A-Za-z]{2}|[0-9]{3}", parts[1]):
        return f"{parts[0].lower()}-r{parts[1].upper()}"
    return "b+" + "+".join(parts)


class AndroidStringsFormat(DocumentFormat):
    name: ClassVar[str] = "android"
    extensions: ClassVar[tuple[str, ...]] = (".xml",)
    media_type: ClassVar[str] = "application/xml"

    def extract(self, content: bytes) -> list[Unit]:
        return [v.unit for v in _parse(content).values if v.unit is not None]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        doc = _parse(content)
        check_count(self.name, doc.values, translations)
        done = {id(v): v.render(t) for v, t in zip(doc.values, translations, strict=True)}

        def rendered(value: _Value) -> str:
            return done.get(id(value), value.raw)

        edits: list[tuple[int, int, str]] = []  # (start, end, replacement), in document order
        rebuilt: set[int] = set()
        if target_lang:
            for group in doc.plurals:
                if group.items:
                    edits += _plural_edits(doc.text, group, target_lang, rendered, rebuilt)
            if doc.locale:
                edits.append((*doc.locale, xml_text(_resource_locale(target_lang))))
        for value in doc.values:
            if id(value) not in rebuilt and done[id(value)] != value.raw:
                edits.append((value.start, value.end, done[id(value)]))
        edits.sort(key=lambda e: (e[0], e[1]))
        out: list[str] = []
        pos = 0
        for start, end, new in edits:
            out += [doc.text[pos:start], new]
            pos = end
        out.append(doc.text[pos:])
        errors = "strict" if doc.encoding.startswith("utf") else "xmlcharrefreplace"
        return doc.bom + "".join(out).encode(doc.encoding, errors)


def _plural_edits(
    text: str,
    group: _Plurals,
    target: str,
    rendered: Callable[[_Value], str],
    rebuilt: set[int],
) -> list[tuple[int, int, str]]:
    """The edits that give ``group`` exactly the target's categories (none when it has them)."""
    cases = for_target(
        [(it.quantity, it) for it in group.items],
        target,
        placeholders=lambda it: placeholders(it.value.unit if it.value else None),
    )
    if len(cases) == len(group.items) and all(q == it.quantity for q, it in cases):
        return []  # it has the target's categories already
    kept = {id(it) for q, it in cases if q == it.quantity}
    edits: list[tuple[int, int, str]] = []
    for it in group.items:
        if id(it) not in kept:
            edits.append((it.ws_start, it.node.end, ""))
            if it.value is not None:
                rebuilt.add(id(it.value))
    made = [(q, it) for q, it in cases if q != it.quantity]
    if not made:
        return edits
    # made items go before the kept "other" (or after the last kept item, or where the
    # first source item was), laid out like the item they are made from
    other = next((it for q, it in cases if q == "other" == it.quantity), None)
    last_kept = next((it for q, it in reversed(cases) if q == it.quantity), None)
    for q, source in made:
        ws = text[source.ws_start : source.node.start]
        start_tag = text[source.node.start : source.node.inner_start]
        found = _QUANTITY.search(start_tag)
        if found:
            start_tag = start_tag[: found.start(3)] + q + start_tag[found.end(3) :]
        end_tag = text[source.node.inner_end : source.node.end]
        inner = rendered(source.value) if source.value is not None else ""
        item = start_tag + inner + end_tag
        if other is not None:
            edits.append((other.node.start, other.node.start, item + ws))
        elif last_kept is not None:
            edits.append((last_kept.node.end, last_kept.node.end, ws + item))
        else:
            first = group.items[0]
            edits.append((first.ws_start, first.ws_start, ws + item))
    return edits


register(AndroidStringsFormat())
