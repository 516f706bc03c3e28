"""Markdown (CommonMark with GFM tables and strikethrough): a unit per paragraph, heading and
table cell (in lists and blockquotes too), per link and image title, per translatable
attribute of inline HTML, per text of an HTML block, and per display field of the front matter.

markdown-it-py finds the blocks (with their source lines) and the inline syntax; the units are
then cut from the *source text*, so every byte outside them (code blocks, fences, reference
definitions but their titles, list markers, ``>`` prefixes, table pipes, line endings) stays
as it is, and a document whose translations equal its source comes back byte for byte.

**Translated** (every text a reader or a browser can show):

* paragraphs, headings (ATX and setext), table cells, in nested lists and blockquotes too;
* inside them: emphasis, strong, strikethrough and inline HTML elements that open and close
  are paired codes (``**bold**`` → ``<g1>bold</g1>`` with start and end ``**``); a link is a
  paired code around its text: start ``[``, end ``](url "title")`` (or ``][ref]``); an image
  is a paired code around its alt text (``![`` … ``](src)``), or one standalone code if the
  alt text has markup of its own;
* the title of an inline link or image (``[a](url "title")``, ``![alt](src 'title')``) and
  of a reference definition (``[ref]: url "title"``): a unit each, written back inside its
  own delimiters with ``\\``, the delimiter and ``&`` escaped;
* the attributes of inline HTML that HTML's rules translate (``alt``, ``title``,
  ``aria-label``... see :mod:`mtfleet.formats.html`): a unit each;
* an HTML block (outside lists and blockquotes) goes through the html format's rules: its
  text and attributes are units, its scripts, styles, code, ``translate="no"`` and
  ``class="notranslate"`` are not, and a backtick code span in its text (`` `jekyll serve` ``,
  which markdown-it leaves as text inside HTML) is one standalone code; a translation never
  puts a blank line into it (that would end the block). ``<?...?>`` and ``<![CDATA[``
  blocks, and HTML blocks in lists and blockquotes, are kept;
* YAML front matter: the single-line string values of the top-level keys ``title``,
  ``subtitle``, ``description``, ``summary``, ``excerpt``, ``linkTitle`` and
  ``sidebar_label`` (what static site generators show as the page's title, description and
  navigation label); a changed value is written double-quoted, its ``<``, ``>``, ``&``,
  brackets and backticks ``\\u``-escaped (a renderer that does not know front matter shows
  it as Markdown: it must find no markup there). Every other key (``slug``, ``tags``, dates,
  layout...), multi-line, block and non-string values, and TOML (``+++``) front matter are
  kept.

**Never translated** (kept byte for byte): code spans, fenced and indented code, autolinks
(``<https://...>``), URLs and destinations, reference labels, entities, hard line breaks
(standalone codes inside a unit); inline HTML that HTML's rules never translate (``<code>``,
``<kbd>``, ``<script>...</script>``, ``<span translate="no">``...: one standalone code with
its content); everything after an inline or block ``<script>``, ``<style>``, ``<textarea>``
(or another raw-text element) left open, up to the block where it closes. Footnote
references and labels (``[^1]``, ``[^note]:``), task list markers (``[ ]``, ``[x]``), a
heading's trailing attribute list (``{#id .class}``) and brackets the source holds as text
although they look like a link (``[Enter] (key)``, an undefined ``[ref][x]``) are standalone
codes. Template syntax (Liquid, Jinja, Handlebars: ``{{ page.title }}``, ``{% if %}``) is a
protected span of the sentence it is in (:mod:`mtfleet.formats.pipeline`); a ``{% raw %}``
or ``{% comment %}`` block that reaches over more than one unit (a fenced example between
``{% raw %}`` and ``{% endraw %}``) keeps every block it touches as it is.

A soft line break (a hard-wrapped paragraph) is a plain ``\\n`` in a unit: on render the k-th
``\\n`` of the translation gets back the k-th line break of the source, with the next line's
prefix (``> ``, list indentation), so the translation stays inside its blockquote or list
item.

Translated text is escaped where it would otherwise turn into syntax: ``<`` before an HTML tag or
autolink, ``&`` before an entity, ``|`` in a table cell, and a block marker (``#``, ``>``, ``-``,
``1.``, a fence, a setext underline) at the start of a line of a paragraph. Each unit is checked
at extraction: rendering its own text must give back its source bytes exactly; a block that fails
(exotic tab expansion, say) is left untranslated rather than risked.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.common.entities import entities
from markdown_it.common.html_re import HTML_TAG_RE
from markdown_it.helpers import parseLinkDestination, parseLinkTitle
from markdown_it.rules_inline.autolink import AUTOLINK_RE, EMAIL_RE
from markdown_it.rules_inline.entity import DIGITAL_RE, NAMED_RE
from markdown_it.rules_inline.state_inline import StateInline
from markdown_it.token import Token
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from mtfleet.formats import html, register
from mtfleet.formats.base import (
    Code,
    DocumentError,
    DocumentFormat,
    Unit,
    UnitBuilder,
    restore,
)
from mtfleet.formats.templates import TEMPLATE_BLOCK
from mtfleet.formats.text import check_count, decode_document, newline_escape, pair_tags

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
_FRONT_MATTER_END = re.compile(r"(?:---|\.\.\.)[ \t]*$")
_SOFTBREAK = re.compile(r" ?\n[ \t]*")
_HARDBREAK = re.compile(r"(?:\\| {2,})\n[ \t]*")
_BLOCK_START = re.compile(
    r"#{1,6}(?=[ \t]|$)|>|[-+*](?=[ \t]|$)|\d{1,9}(?=[.)](?:[ \t]|$))|```|~~~"
    r"|(?=(?:[-*_][ \t]*){3,}$)|(?==+[ \t]*$)|(?=-+[ \t]*$)",
    re.M,
)
#: The longest run of one emphasis, strikethrough or code delimiter (``*``, ``_``, ``~``, a
#: backtick) or of one bracket a document may have; real ones have a few.
MAX_DELIMITER_RUN = 256
_LONG_RUN = re.compile(
    rf"\*{{{MAX_DELIMITER_RUN + 1},}}|_{{{MAX_DELIMITER_RUN + 1},}}|~{{{MAX_DELIMITER_RUN + 1},}}"
    rf"|`{{{MAX_DELIMITER_RUN + 1},}}|\[{{{MAX_DELIMITER_RUN + 1},}}|\]{{{MAX_DELIMITER_RUN + 1},}}"
)
# A ``[`` that opens a link, image or reference: a label on one line, then ``(``, ``[`` or ``:``.
_LINK_OPENER = re.compile(r"\[[^\][\n]*\][ \t]*[(\[:]")
_PAIRED = {"em_open", "strong_open", "s_open", "em_close", "strong_close", "s_close"}
_HTML_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)")
_VOID = {"br", "hr", "img", "input", "wbr", "source", "area", "col", "embed", "meta", "link"}
#: Elements whose content a browser reads as raw text up to their end tag.
_RAW = html.RAW_TEXT | html.RCDATA | {"plaintext"}
#: A footnote reference or label (``[^1]``, ``[^note]:`` at a paragraph's start).
_FOOTNOTE = re.compile(r"(?<!\\)\[\^[^\[\]\s]+\](?::[ \t]*)?")
#: Brackets the source holds as text although they look like a link (``[Enter] (key)``, an
#: undefined ``[ref][x]``): kept as they are, or the escaping of a translation would change them.
_LITERAL_LINK = re.compile(r"(?<!\\)\[[^\][\n]*\](?=[ \t]*[(\[:])")
#: A task list item's box (``[ ]``, ``[x]``) at the start of its first paragraph.
_TASK = re.compile(r"\[[ xX]\](?=[ \t])")
_ATTR_ITEM = r"""(?:[#.][^\s{}"'=]+|[\w-]+=(?:"[^"\n]*"|'[^'\n]*'|[^\s{}"']+))"""
#: A heading's trailing attribute list (Pandoc, kramdown, Python-Markdown's attr_list).
_HEADING_ATTRS = re.compile(rf"(?<!\\)\{{:?[ \t]*{_ATTR_ITEM}(?:[ \t]+{_ATTR_ITEM})*[ \t]*\}}$")
#: The front matter keys whose values are shown as the page's title, description or label.
FRONT_MATTER_KEYS = {
    "title", "subtitle", "description", "summary", "excerpt", "linktitle", "sidebar_label",
}  # fmt: skip
_FRONT_MATTER_FIELD = re.compile(r"([A-Za-z_][\w-]*)[ \t]*:[ \t]+(\S.*?)[ \t]*$")
#: A front matter longer than this is kept as it is (it is read with a YAML parser).
MAX_FRONT_MATTER = 64 * 1024
#: Characters a YAML double-quoted scalar must escape beyond JSON's (non-printable, line
#: breaks), and markup a renderer that does not know front matter would read (it shows the
#: front matter as Markdown: ``<script>`` there would be HTML, ``[a](b)`` a link).
_YAML_UNSAFE = re.compile(r"[\x7f-\x9f\u2028\u2029\ufeff<>&\[\]`]")
_HTML_BLOCK_RAW = re.compile(r" {0,3}<(?:script|pre|style|textarea)(?:[ \t>]|$)", re.I)
_HTML_BLOCK_SKIP = re.compile(r" {0,3}<(?:\?|!\[CDATA\[)")


class _Unmappable(Exception):
    """markdown-it's view of a block does not line up with its source: leave it alone."""


def _recording(rule: Callable[[StateInline, bool], bool]) -> Callable[[StateInline, bool], bool]:
    """Wrap an inline rule so the token it makes remembers its source span (``meta["span"]``)."""

    def wrapped(state: StateInline, silent: bool) -> bool:
        start, count = state.pos, len(state.tokens)
        ok = rule(state, silent)
        if ok and not silent:
            for tok in state.tokens[count:]:
                if tok.type != "text":
                    tok.meta["span"] = (start, state.pos)
                    break
        return ok

    return wrapped


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.core.ruler.disable("text_join")  # keep escapes and entities as their own tokens
    for rule in md.inline.ruler.__rules__:
        if rule.name in ("link", "image", "backticks", "autolink", "html_inline"):
            md.inline.ruler.at(rule.name, _recording(rule.fn))
    return md


_MD = _parser()


# --- the pieces of a document that hold units ---------------------------------------------------


class _Part(ABC):
    """A span of the document (``start``, ``end``) holding units, and how to write it back."""

    start: int
    end: int

    @property
    @abstractmethod
    def units(self) -> list[Unit]: ...

    @abstractmethod
    def render(self, translations: Sequence[str]) -> str:
        """The span's new text, from one translation per unit."""


@dataclass
class _Sub:
    """A translatable piece inside a code's markup: a link's title, an HTML attribute."""

    code: int
    at_end: bool  # in the code's end markup (else its start)
    start: int  # span inside that markup
    end: int
    unit: Unit
    write: Callable[[str], str]  # the translated text as it goes into the markup


@dataclass
class _Block(_Part):
    """A paragraph, heading or table cell: one unit, and the units inside its codes."""

    start: int  # span of the unit in the document text
    end: int
    unit: Unit
    kind: str  # "para", "heading" or "cell"
    breaks: list[str]  # source of each soft line break, in order
    strict: bool  # escape block markers at line starts (False if that would change the source)
    subs: list[_Sub] = field(default_factory=list)
    main: bool = True  # the unit has text (else only its codes' units are units)

    @property
    def units(self) -> list[Unit]:
        return [self.unit] * self.main + [s.unit for s in self.subs]

    def render(self, translations: Sequence[str]) -> str:
        if not self.main:
            translations = [self.unit.text, *translations]
        codes = self.unit.codes
        changes: dict[tuple[int, bool], list[tuple[int, int, str]]] = {}
        for sub, translation in zip(self.subs, translations[1:], strict=True):
            if translation != sub.unit.text:
                new = sub.write(restore(translation, sub.unit.codes).text)
                changes.setdefault((sub.code, sub.at_end), []).append((sub.start, sub.end, new))
        if changes:
            codes = dict(codes)
            for (num, at_end), edits in changes.items():
                code = codes[num]
                markup = _splice(code.end or "" if at_end else code.start, edits)
                codes[num] = Code(code.start, markup) if at_end else Code(markup, code.end)
        esc = _escaper(self.kind, self.breaks, self.strict)
        return restore(translations[0], codes, esc).text


@dataclass
class _Value(_Part):
    """A value written in the document on its own: a reference definition's title, a front
    matter field. Kept as it was unless its translation differs."""

    start: int
    end: int
    raw: str
    unit: Unit
    write: Callable[[str], str]

    @property
    def units(self) -> list[Unit]:
        return [self.unit]

    def render(self, translations: Sequence[str]) -> str:
        (translation,) = translations
        if translation == self.unit.text:
            return self.raw
        return self.write(restore(translation, self.unit.codes).text)


@dataclass
class _HtmlBlock(_Part):
    """An HTML block, cut and written back by the html format's rules."""

    start: int
    end: int
    source: str
    found: list[Unit]
    post: Callable[[str], str] | None
    lines_end: int  # the line after the block's last

    @property
    def units(self) -> list[Unit]:
        return self.found

    def render(self, translations: Sequence[str]) -> str:
        # a line break at a unit's edge would meet the source's own: a blank line
        cleaned = [t.strip(" \t\r\n") for t in translations]
        return html.rendered(self.source, cleaned, html.IN_MARKDOWN, post=self.post)


def _splice(s: str, edits: list[tuple[int, int, str]]) -> str:
    out: list[str] = []
    pos = 0
    for a, b, new in sorted(edits):
        out += [s[pos:a], new]
        pos = b
    out.append(s[pos:])
    return "".join(out)


# --- blocks and their source ------------------------------------------------------------------


def _lines(text: str) -> list[tuple[int, str, str]]:
    """(offset, line without its ending, ending) for each line, as markdown-it numbers them."""
    out: list[tuple[int, str, str]] = []
    for m in _LINE.finditer(text):
        if not m.group(0) and m.start() == len(text) and out:
            break
        line = m.group(0)
        body = line.rstrip("\r\n")
        out.append((m.start(), body, line[len(body) :]))
        if not line:
            break
    return out


def _front_matter_end(lines: list[tuple[int, str, str]]) -> int:
    """The number of lines of a leading YAML (``---``) or TOML (``+++``) front matter, or 0."""
    if not lines:
        return 0
    fence = lines[0][1].rstrip()
    if fence not in ("---", "+++"):
        return 0
    for n, (_, body, _) in enumerate(lines[1:], start=1):
        if (fence == "---" and _FRONT_MATTER_END.match(body)) or (
            fence == "+++" and body.rstrip() == "+++"
        ):
            return n + 1
    return 0


def _without_front_matter(text: str, lines: list[tuple[int, str, str]]) -> str:
    """``text`` with a leading front matter block blanked out (line numbers unchanged)."""
    count = _front_matter_end(lines)
    if not count:
        return text
    rest = lines[count][0] if count < len(lines) else len(text)
    return "".join(end for _, _, end in lines[:count]) + text[rest:]


def _line_positions(content: str, lines: list[tuple[int, str, str]], first: int) -> list[int]:
    """Document offset of each character of a paragraph's or heading's ``content`` (plus one
    past its end); a ``\\n`` maps to the end of its line's text."""
    rows = content.split("\n")
    pos: list[int] = []
    for j, row in enumerate(rows):
        if first + j >= len(lines):
            raise _Unmappable
        offset, body, _ = lines[first + j]
        if j < len(rows) - 1:
            if not body.endswith(row):
                raise _Unmappable
            col = len(body) - len(row)
        else:
            col = body.rfind(row)  # after it: trailing spaces, a heading's closing #s
            if col < 0 or body[col + len(row) :].strip().strip("#").strip():
                raise _Unmappable
        pos.extend(range(offset + col, offset + col + len(row)))
        pos.append(offset + col + len(row))
    return pos


def _split_row(body: str) -> list[tuple[str, list[int]]]:
    """A table row cut at unescaped pipes as markdown-it does (``\\|`` loses its backslash);
    each cell's stripped text with the column of each of its characters (plus one past)."""
    cells: list[tuple[str, list[int]]] = []
    chars: list[str] = []
    cols: list[int] = []  # where each character starts; cols[k + 1] is where it ends
    escaped = False

    def finish(end: int) -> None:
        text = "".join(chars)
        lead = len(text) - len(text.lstrip())
        core = text.strip()
        ends = [*cols[1:], end]
        c = cols[lead : lead + len(core)]
        cells.append((core, [*c, ends[lead + len(core) - 1] if core else end]))

    for i, ch in enumerate(body):
        if ch == "|" and not escaped:
            finish(i)
            chars, cols = [], []
        elif ch == "|":
            chars[-1] = "|"  # "\|" stands for "|"; its source starts at the backslash
        else:
            chars.append(ch)
            cols.append(i)
        escaped = ch == "\\"
    finish(len(body))
    return cells


def _cell_positions(
    cells: list[tuple[str, list[int]]], content: str, index: int, offset: int
) -> tuple[list[int], int]:
    """Document positions of the ``index``-th cell's content (searching from cell ``index``)."""
    for k in range(index, len(cells)):
        text, cols = cells[k]
        if text == content:
            return [offset + c for c in cols], k + 1
        if k == 0 and text.endswith(content):  # the row's first cell carries a container prefix
            cut = len(text) - len(content)
            return [offset + c for c in cols[cut:]], k + 1
    raise _Unmappable


def _check_runs(text: str) -> None:
    """Refuse a run of delimiters longer than any document needs before it reaches the parser
    (each delimiter of a run is a token of its own, a pair of them a nesting level)."""
    m = _LONG_RUN.search(text)
    if m is not None:
        line = text.count("\n", 0, m.start()) + 1
        raise DocumentError(
            f"line {line} has a run of {len(m.group(0))} {m.group(0)[0]!r} characters; the limit "
            f"is {MAX_DELIMITER_RUN}"
        )


def _parts(text: str) -> list[_Part]:
    lines = _lines(text)
    env: dict[str, object] = {}
    tokens = _MD.parse(_without_front_matter(text, lines), env)
    parts: list[_Part] = list(_front_matter(text, lines))
    row: list[tuple[str, list[int]]] = []
    row_offset = 0
    cell = 0
    raw_open: str | None = None  # a raw-text element (a script...) left open: its text is code
    skip_to = 0  # the line an HTML element read whole ends before
    for i, tok in enumerate(tokens):
        if tok.type == "tr_open" and tok.map:
            row_offset, body, _ = lines[tok.map[0]]
            row = _split_row(body)
            cell = 0
        if tok.map and tok.map[0] < skip_to:
            continue  # inside an HTML element read whole (:func:`_element_span`)
        if tok.type == "html_block" and tok.map:
            source = _source(text, lines, tok.map)
            if raw_open is not None:
                raw_open = _still_open(raw_open, source)
                continue
            raw_open = _left_open_html(source)
            span = _element_span(tokens, i, text, lines) if raw_open is None else None
            html_part = _html_block(text, lines, tok, span)
            if html_part is not None:
                parts.append(html_part)
                skip_to = html_part.lines_end
            continue
        if tok.type != "inline" or not tok.map:
            continue
        children = tok.children or []
        if raw_open is not None:
            raw_open = _still_open(raw_open, "".join(_html_pieces(children)))
            continue
        raw_open = _left_open_inline(children)
        if not tok.content.strip():
            continue
        parent = tokens[i - 1].type
        task = parent == "paragraph_open" and i >= 2 and tokens[i - 2].type == "list_item_open"
        try:
            if parent in ("th_open", "td_open"):
                pos, cell = _cell_positions(row, tok.content, cell, row_offset)
                kind = "cell"
            else:
                pos = _line_positions(tok.content, lines, tok.map[0])
                kind = "heading" if parent == "heading_open" else "para"
            block = _block(text, tok, pos, kind, f"line {tok.map[0] + 1}", task)
        except _Unmappable:
            continue
        if block is not None:
            parts.append(block)
    parts += _reference_titles(text, lines, env)
    if "{%" in text:
        parts = _outside_template_blocks(text, parts)
    return sorted(parts, key=lambda p: p.start)


def _outside_template_blocks(text: str, parts: list[_Part]) -> list[_Part]:
    """``parts`` without those a ``{% raw %}`` or ``{% comment %}`` block reaches into: such a
    block is template source or a comment, never text. One that lies within a unit's text as
    written is one protected span there (:data:`~mtfleet.formats.templates.TEMPLATE_BLOCK`);
    one that spans blocks (a fence between ``{% raw %}`` and ``{% endraw %}``), or that
    markup cuts, keeps every part it touches as it is."""
    blocks = [(m.start(), m.end()) for m in TEMPLATE_BLOCK.finditer(text)]

    def inside(part: _Part, a: int, b: int) -> bool:
        return part.start <= a and b <= part.end and any(text[a:b] in u.text for u in part.units)

    return [
        p for p in parts if all(b <= p.start or p.end <= a or inside(p, a, b) for a, b in blocks)
    ]


def _source(text: str, lines: list[tuple[int, str, str]], span: list[int]) -> str:
    first, stop = span
    end = lines[stop][0] if stop < len(lines) else len(text)
    return text[lines[first][0] : end]


# --- raw text left open -------------------------------------------------------------------------


def _html_pieces(children: list[Token]) -> list[str]:
    return [c.content for c in children if c.type == "html_inline"]


def _left_open_inline(children: list[Token]) -> str | None:
    """The raw-text element (``<script>``...) a paragraph's inline HTML leaves open, if any."""
    open_name: str | None = None
    for piece in _html_pieces(children):
        m = _HTML_TAG.match(piece)
        if not m:
            continue
        name = m.group(2).lower()
        if open_name is None and not m.group(1) and name in _RAW:
            open_name = name
        elif open_name == name and m.group(1):
            open_name = None
    return open_name


def _left_open_html(source: str) -> str | None:
    """The raw-text element an HTML block leaves open, if any."""
    open_name: str | None = None
    for t in html.tokenize(source):
        if t.kind == "start" and t.name in _RAW and open_name is None:
            open_name = t.name
        elif t.kind == "end" and t.name == open_name:
            open_name = None
    return open_name


def _still_open(name: str, source: str) -> str | None:
    """After a block inside the open raw-text element ``name``: still open unless the block
    closes it (then whatever it opens after that)."""
    m = re.search(rf"</{re.escape(name)}(?=[ \t\n\r\f/>])", source, re.I)
    if m is None:
        return name
    return _left_open_html(source[m.end() :])


# --- HTML blocks, reference titles, front matter -----------------------------------------------


def _html_block(
    text: str, lines: list[tuple[int, str, str]], tok: Token, span: list[int] | None = None
) -> _HtmlBlock | None:
    """An HTML block outside lists and blockquotes, through the html format's rules; ``span``:
    the lines of the whole element it opens, where that goes on past the block
    (:func:`_element_span`)."""
    assert tok.map
    lines_span = span or tok.map
    source = _source(text, lines, lines_span)
    if tok.level != 0 or _HTML_BLOCK_SKIP.match(source):
        return None
    first = _source(text, lines, tok.map)
    if re.sub(r"\r\n?", "\n", first).rstrip("\n") != tok.content.rstrip("\n"):
        return None  # not the block's source (a container's prefix, tabs): leave it
    found = html.units(source, html.IN_MARKDOWN)
    if not found:
        return None
    post = None if _HTML_BLOCK_RAW.match(source) else html.no_blank_lines
    if html.rendered(source, [u.text for u in found], html.IN_MARKDOWN, post=post) != source:
        return None  # the html format would not give it back byte for byte: leave it
    for u in found:
        u.path = f"line {tok.map[0] + 1} {u.path}"
    start = lines[lines_span[0]][0]
    return _HtmlBlock(start, start + len(source), source, found, post, lines_span[1])


def _element_span(
    tokens: list[Token], i: int, text: str, lines: list[tuple[int, str, str]]
) -> list[int] | None:
    """The lines of the element HTML block ``tokens[i]`` opens, where it goes on past the block.

    CommonMark ends such a block (a ``<table>``, a ``<div>``) at its first blank line and reads
    an indented line after it as code; kramdown (Jekyll's reader) and the browser read the
    element to its end tag. A page written for them (Jekyll's own docs: ``<td><p>``, a blank
    line, the cell's prose indented) would keep half its text untranslated as "code". So an
    element followed only by HTML blocks and indented "code" up to its end tag is read whole,
    as kramdown reads it; one that meets Markdown (a paragraph, a heading) before its end tag
    is left to CommonMark. None where the block closes what it opens."""
    tok = tokens[i]
    assert tok.map
    name = _first_element(_source(text, lines, tok.map))
    if name is None:
        return None
    depth = 0
    end = tok.map[1]
    for t in tokens[i:]:
        if t.level != 0 or t.map is None or t.type not in ("html_block", "code_block"):
            return None
        depth += _depth_change(name, _source(text, lines, t.map))
        end = t.map[1]
        if depth <= 0:
            break
    else:
        return None
    return None if end == tok.map[1] else [tok.map[0], end]


def _first_element(source: str) -> str | None:
    """The element an HTML block starts with, when it is one whose content goes on (not void,
    not raw text)."""
    for t in html.tokenize(source):
        if t.kind == "start":
            if t.selfclosing or t.name in html.VOID or t.name in _RAW:
                return None
            return t.name
        if t.kind != "text" or source[t.start : t.end].strip():
            return None
    return None


def _depth_change(name: str, source: str) -> int:
    toks = html.tokenize(source)
    opened = sum(1 for t in toks if t.kind == "start" and t.name == name and not t.selfclosing)
    return opened - sum(1 for t in toks if t.kind == "end" and t.name == name)


def _title_writer(delimiter: str, cell: bool = False) -> Callable[[str], str]:
    """Write a translated title between its delimiters (``"``, ``'`` or ``(``)."""
    specials = {'"': '"', "'": "'", "(": "()"}[delimiter]

    def write(s: str) -> str:
        s = re.sub(r"[ \t]*(?:\r\n|\r|\n)[ \t]*", " ", s)  # a title may not hold a blank line
        out: list[str] = []
        for i, ch in enumerate(s):
            if ch == "\\" or ch in specials or (cell and ch == "|"):
                out.append("\\" + ch)
            elif ch == "&" and _starts_entity(s, i):
                out.append("&amp;")
            else:
                out.append(ch)
        return "".join(out)

    return write


def _title_span(s: str, pos: int) -> tuple[int, int, str] | None:
    """After a link's ``(`` at ``pos`` in ``s``: the span of its title's text (inside its
    delimiters) and the title, or None when it has none."""
    n = len(s)
    pos = _skip_space(s, pos)
    dest = parseLinkDestination(s, pos, n)
    if not dest.ok:
        return None
    start = _skip_space(s, dest.pos)
    if start == dest.pos or start >= n or s[start] not in "\"'(":
        return None
    title = parseLinkTitle(s, start, n)
    if not title.ok:
        return None
    return start + 1, title.pos - 1, title.str


def _skip_space(s: str, pos: int) -> int:
    newline = False
    while pos < len(s) and (s[pos] in " \t" or (s[pos] in "\r\n" and not newline)):
        if s[pos] in "\r\n":
            newline = True
            if s.startswith("\r\n", pos):
                pos += 1
        pos += 1
    return pos


_REF_LABEL = re.compile(r" {0,3}\[(?:[^\\\[\]]|\\.){0,999}\]:", re.S)


def _reference_titles(
    text: str, lines: list[tuple[int, str, str]], env: dict[str, object]
) -> list[_Part]:
    """A unit per title of a reference definition (outside containers)."""
    refs = env.get("references")
    parts: list[_Part] = []
    if not isinstance(refs, dict):
        return parts
    for ref in refs.values():
        span, title = ref.get("map"), ref.get("title")
        if not title or not title.strip() or not span:
            continue
        source = _source(text, lines, span)
        m = _REF_LABEL.match(source)
        if not m:
            continue
        found = _title_span(source, m.end())
        if found is None or found[2] != title or source[found[1] + 1 :].strip():
            continue
        a, b, _ = found
        base = lines[span[0]][0]
        builder = UnitBuilder(f"line {span[0] + 1} reference title")
        builder.text(title)
        write = _title_writer(source[a - 1])
        parts.append(_Value(base + a, base + b, source[a:b], builder.build(), write))
    return parts


def _front_matter(text: str, lines: list[tuple[int, str, str]]) -> list[_Part]:
    """A unit per display field of a YAML front matter (single-line string values)."""
    count = _front_matter_end(lines)
    if count < 3 or lines[0][1].rstrip() != "---":
        return []
    if lines[count - 1][0] > MAX_FRONT_MATTER:
        return []
    parts: list[_Part] = []
    for n in range(1, count - 1):
        offset, body, _ = lines[n]
        m = _FRONT_MATTER_FIELD.match(body)
        if not m or m.group(1).lower() not in FRONT_MATTER_KEYS:
            continue
        scalar = _scalar(m.group(2))
        if scalar is None:
            continue
        following = next((b for _, b, _ in lines[n + 1 : count - 1] if b.strip()), "")
        if scalar[0] not in "\"'" and following[:1] in (" ", "\t"):
            continue  # a plain value that goes on over the next lines
        value = _yaml_string(f"k: {scalar}")
        if value is None or not value.strip():
            continue
        b = UnitBuilder(f"front matter {m.group(1)}")
        b.text(value)
        start = offset + m.start(2)
        parts.append(_Value(start, start + len(scalar), scalar, b.build(), _yaml_quoted))
    return parts


def _scalar(raw: str) -> str | None:
    """The scalar at the start of a front matter value (a comment after it left out), or
    None for anything but a plain or quoted one-line string."""
    if raw[0] in "\"'":
        q = raw[0]
        i = 1
        while i < len(raw):
            if q == '"' and raw[i] == "\\":
                i += 2
                continue
            if raw[i] == q:
                if q == "'" and raw[i + 1 : i + 2] == "'":
                    i += 2
                    continue
                rest = raw[i + 1 :].strip()
                return raw[: i + 1] if not rest or rest.startswith("#") else None
            i += 1
        return None
    if raw[0] in "-?:,[]{}#&*!|>%@`":
        return None
    cut = re.search(r"[ \t]#", raw)
    return (raw[: cut.start()] if cut else raw).rstrip()


def _yaml_string(line: str) -> str | None:
    try:
        loaded = YAML(typ="safe", pure=True).load(line)
    except (YAMLError, ValueError, TypeError):
        return None
    value = loaded.get("k") if isinstance(loaded, dict) else None
    return value if isinstance(value, str) else None


def _yaml_quoted(s: str) -> str:
    """``s`` as a YAML double-quoted scalar on one line (markup characters ``\\u``-escaped)."""
    quoted = json.dumps(s, ensure_ascii=False)
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", quoted)


# --- inside a block -----------------------------------------------------------------------------


def _spans(children: list[Token], content: str) -> list[tuple[int, int]]:
    """Where each inline token sits in ``content``; autolink insides get empty spans."""
    spans: list[tuple[int, int]] = []
    cur = 0
    link_ends: list[int] = []
    autolink_end = -1
    for tok in children:
        t = tok.type
        if autolink_end >= 0:
            spans.append((autolink_end, autolink_end))
            if t == "link_close":
                autolink_end = -1
            continue
        span: tuple[int, int] | None = tok.meta.get("span") if tok.meta else None
        if t == "text":
            end = cur + len(tok.content)
            if content[cur:end] != tok.content:
                raise _Unmappable
        elif t == "text_special" or t in _PAIRED:
            end = cur + len(tok.markup)
            if content[cur:end] != tok.markup:
                raise _Unmappable
        elif t in ("softbreak", "hardbreak"):
            m = (_SOFTBREAK if t == "softbreak" else _HARDBREAK).match(content, cur)
            if not m:
                raise _Unmappable
            end = m.end()
        elif t == "link_open":
            if span is None or span[0] != cur:
                raise _Unmappable
            if tok.markup == "autolink":
                end = autolink_end = span[1]
            else:
                end = cur + 1
                link_ends.append(span[1])
        elif t == "link_close":
            if not link_ends:
                raise _Unmappable
            end = link_ends.pop()
        elif t in ("code_inline", "html_inline", "image"):
            if span is None or span[0] != cur:
                raise _Unmappable
            end = span[1]
        else:
            raise _Unmappable
        spans.append((cur, end))
        cur = end
    if cur != len(content) or link_ends:
        raise _Unmappable
    return spans


def _tag_of(tok: Token) -> tuple[bool, str] | None:
    t = tok.type
    if t in _PAIRED:
        return t.endswith("_close"), "\0" + t.rsplit("_", 1)[0]
    if t in ("link_open", "link_close") and tok.markup != "autolink":
        return t == "link_close", "\0link"
    if t == "html_inline":
        m = _HTML_TAG.match(tok.content)
        if m and not tok.content.rstrip().endswith("/>") and m.group(2).lower() not in _VOID:
            return bool(m.group(1)), m.group(2).lower()
    return None


def _block(
    text: str, tok: Token, pos: list[int], kind: str, path: str, task: bool = False
) -> _Block | None:
    content = tok.content
    children = tok.children or []
    spans = _spans(children, content)

    def src(a: int, b: int) -> str:
        return text[pos[a] : pos[b]]

    partner = pair_tags([_tag_of(c) for c in children])
    closers = set(partner.values())
    b = UnitBuilder(path)
    breaks: list[str] = []
    pending: list[str] = []  # text is added in runs, so a tag-like run is protected whole
    subs: list[_Sub] = []
    at_start = True  # nothing but blanks added yet

    def flush(last: bool = False) -> None:
        nonlocal at_start
        if not pending:
            return
        run = "".join(pending)
        pending.clear()
        cut = 0
        protected: list[tuple[int, int]] = []
        if at_start and task:
            m = _TASK.match(run)
            if m:
                protected.append((0, m.end()))
        for m in _LITERAL_LINK.finditer(run):  # brackets that are text in the source stay so
            protected.append((m.start(), m.end()))
        for m in _FOOTNOTE.finditer(run):
            if m.group(0).endswith((":", ": ", ":\t")) and not (at_start and m.start() == 0):
                protected.append((m.start(), m.start() + m.group(0).index("]") + 1))
            else:
                protected.append((m.start(), m.end()))
        if last and kind == "heading":
            m = _HEADING_ATTRS.search(run)
            if m:
                protected.append((m.start(), m.end()))
        for s, e in sorted(protected, key=lambda span: (span[0], -span[1])):
            if s < cut:
                continue
            b.text(run[cut:s])
            b.standalone(run[s:e])
            cut = e
        b.text(run[cut:])
        at_start = False

    cell = kind == "cell"
    writer: Callable[[str], str] = _attr_writer(cell)
    in_autolink = False
    i = 0
    while i < len(children):
        c, (s, e) = children[i], spans[i]
        i += 1
        if in_autolink:
            in_autolink = c.type != "link_close"
            continue
        if c.type == "text" or (c.type == "text_special" and c.info == "escape"):
            pending.append(content[s:e])
            continue
        if c.type == "softbreak":
            pending.append("\n")
            breaks.append(src(s, e))
            continue
        flush()
        at_start = False
        tag = html.start_tag(c.content) if c.type == "html_inline" else None
        if tag is not None and html.never_translated(tag):
            stop = False
            if i - 1 in partner:  # the element and its content: one code
                num = b.standalone(src(s, spans[partner[i - 1]][1]))
                i = partner[i - 1] + 1
            elif tag.name in _RAW and not tag.selfclosing:  # left open: the rest is raw text
                num = b.standalone(src(s, len(content)))
                stop = True
            else:
                num = b.standalone(src(s, e))
            if not html.no_translate(tag):  # a <textarea>'s placeholder, a <code>'s title
                _attr_subs(subs, num, tag, path, writer)
            if stop:
                break
            continue
        if i - 1 in partner:
            cs, ce = spans[partner[i - 1]]
            num = b.open(src(s, e), src(cs, ce))
            if tag is not None:
                _attr_subs(subs, num, tag, path, writer)
            elif c.type == "link_open":
                _link_title(subs, num, src(cs, ce), path, cell)
        elif i - 1 in closers:
            b.close()
        elif c.type == "image" and _simple_alt(c, content, s, e):
            label_end = s + 2 + len(c.content)
            num = b.open(src(s, s + 2), src(label_end, e))
            _link_title(subs, num, src(label_end, e), path, cell)
            b.text(c.content)
            b.close()
        else:
            num = b.standalone(src(s, e))
            if tag is not None:
                _attr_subs(subs, num, tag, path, writer)
            elif c.type == "image":
                _image_title(subs, num, src(s, e), c, path, cell)
            in_autolink = c.type == "link_open"
    flush(last=True)
    main = not b.empty
    if not main and not subs:
        return None
    unit = b.build()
    start, end = pos[0], pos[len(content)]
    source = text[start:end]
    for strict in (True, False):
        if restore(unit.text, unit.codes, _escaper(kind, breaks, strict)).text == source:
            return _Block(start, end, unit, kind, breaks, strict, subs, main)
    return None


def _attr_writer(cell: bool) -> Callable[[str], str]:
    """Write a translated attribute value of inline HTML (quoted, on one line)."""

    def write(s: str) -> str:
        value = html.attr_value(re.sub(r"[ \t]*(?:\r\n|\r|\n)[ \t]*", " ", s))
        return value.replace("|", "\\|") if cell else value

    return write


def _attr_subs(
    subs: list[_Sub], num: int, tag: html.Tok, path: str, write: Callable[[str], str]
) -> None:
    """A unit per translatable attribute of the inline HTML start tag of code ``num``."""
    for a in html.translatable_attrs(tag):
        assert a.value is not None
        b = UnitBuilder(f"{path} <{tag.name} {a.name}>")
        b.text(a.value)
        subs.append(_Sub(num, False, a.start, a.end, b.build(), write))


def _link_title(subs: list[_Sub], num: int, end_markup: str, path: str, cell: bool) -> None:
    """A unit for the title in a link's or image's end markup (``](url "title")``)."""
    if not end_markup.startswith("]("):
        return
    found = _title_span(end_markup, 2)
    if found is None or not found[2].strip():
        return
    a, z, title = found
    b = UnitBuilder(f"{path} title")
    b.text(title)
    subs.append(_Sub(num, True, a, z, b.build(), _title_writer(end_markup[a - 1], cell)))


def _image_title(
    subs: list[_Sub], num: int, markup: str, img: Token, path: str, cell: bool
) -> None:
    """A unit for the title of an image that is one standalone code (``![](src "title")``,
    an alt text with markup of its own): the last ``](`` whose destination and title run to
    the image's closing ``)``."""
    title = img.attrs.get("title")
    if not isinstance(title, str) or not title.strip():
        return
    at = markup.rfind("](")
    while at >= 0:
        found = _title_span(markup, at + 2)
        if found is not None and found[2] == title and markup[found[1] + 1 :].strip() == ")":
            a, z, _ = found
            b = UnitBuilder(f"{path} title")
            b.text(title)
            subs.append(_Sub(num, False, a, z, b.build(), _title_writer(markup[a - 1], cell)))
            return
        at = markup.rfind("](", 0, at)


def _simple_alt(img: Token, content: str, s: int, e: int) -> bool:
    """An image whose alt text is plain text on one line (it becomes translatable text)."""
    label = img.content
    kids = img.children or []
    return (
        bool(label.strip())
        and "\n" not in label
        and all(k.type == "text" for k in kids)
        and content.startswith("![" + label + "]", s)
        and s + 3 + len(label) <= e
    )


# --- escaping translated text -------------------------------------------------------------------


def _escape_inline(s: str) -> str:
    """``<`` that would open an HTML tag or autolink, ``&`` that would start an entity, ``[``
    that would open a link, an image or a link reference (``[text](url)``, ``![alt](src)``,
    ``[text][ref]``, ``[ref]: url``): markup the translation brings is text, never a link."""
    if "<" not in s and "&" not in s and "[" not in s:
        return s
    out: list[str] = []
    for i, ch in enumerate(s):
        if i and s[i - 1] == "\\":
            out.append(ch)
        elif ch == "<" and _opens_markup(s, i):
            out.append("&lt;")
        elif ch == "&" and _starts_entity(s, i):
            out.append("&amp;")
        elif ch == "[" and _LINK_OPENER.match(s, i):
            out.append("\\[")
        else:
            out.append(ch)
    return "".join(out)


def _opens_markup(s: str, i: int) -> bool:
    if HTML_TAG_RE.match(s, i):
        return True
    end = s.find(">", i)
    if end < 0 or "<" in s[i + 1 : end]:
        return False
    inner = s[i + 1 : end]
    return bool(AUTOLINK_RE.search(inner) or EMAIL_RE.search(inner))


def _starts_entity(s: str, i: int) -> bool:
    if DIGITAL_RE.match(s, i):
        return True
    m = NAMED_RE.match(s, i)
    return bool(m and m.group(1) in entities)


def _escaper(kind: str, breaks: list[str], strict: bool) -> Callable[[str], str]:
    newlines = newline_escape(breaks) if kind != "cell" else None
    first = True

    def esc(s: str) -> str:
        nonlocal first
        s = _escape_inline(s)
        if s.endswith("\\") and not s.endswith("\\\\"):
            s += "\\"  # a lone backslash would escape the markup that follows
        if kind == "cell":
            s = re.sub(r"\s*[\r\n]+\s*", " ", s)
            s = re.sub(r"(?<!\\)\|", r"\\|", s)
        elif kind == "para" and strict:
            s = re.sub(r"[ \t]*(?:\r\n|\r|\n)[ \t]*", "\n", s)
            if first:
                s = s.lstrip(" \t")
            s = _escape_line_starts(s, first)
        first = False
        return newlines(s) if newlines else s

    return esc


def _escape_line_starts(s: str, first: bool) -> str:
    out: list[str] = []
    for n, line in enumerate(s.split("\n")):
        if n or first:
            m = _BLOCK_START.match(line)
            if m:
                cut = m.end() if m.group(0).isdigit() else m.start()
                line = line[:cut] + "\\" + line[cut:]
        out.append(line)
    return "\n".join(out)


# --- the format ---------------------------------------------------------------------------------


class MarkdownFormat(DocumentFormat):
    name = "markdown"
    extensions = (".md", ".markdown")
    media_type = "text/markdown; charset=utf-8"

    def extract(self, content: bytes) -> list[Unit]:
        _, text = decode_document(content, "Markdown")
        _check_runs(text)
        return [u for part in _parts(text) for u in part.units]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        bom, text = decode_document(content, "Markdown")
        parts = _parts(text)
        check_count(self.name, [u for p in parts for u in p.units], translations)
        out = [bom]
        pos = 0
        index = 0
        for part in parts:
            count = len(part.units)
            out.append(text[pos : part.start])
            out.append(part.render(translations[index : index + count]))
            index += count
            pos = part.end
        out.append(text[pos:])
        return "".join(out).encode("utf-8")


register(MarkdownFormat())
