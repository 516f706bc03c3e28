"""Markdown (CommonMark with GFM tables and strikethrough): a unit per paragraph, heading and
table cell (in lists and blockquotes too).

markdown-it-py finds the blocks (with their source lines) and the inline syntax; the units are
then cut from the *source text*, so every byte outside them (front matter, code blocks, fences,
HTML blocks, reference definitions, list markers, ``>`` prefixes, table pipes, line endings) stays
as it is. Inside a unit:

* emphasis, strong, strikethrough and inline HTML elements that open and close are paired codes
  (``**bold**`` → ``<g1>bold</g1>`` with start and end ``**``);
* a link is a paired code around its text: start ``[``, end ``](url "title")`` (or ``][ref]``);
* an image is a paired code around its alt text (``![`` … ``](src)``), or one standalone code if
  the alt text has markup of its own;
* code spans, autolinks, hard line breaks, entities and lone inline HTML are standalone codes;
* a soft line break (a hard-wrapped paragraph) is a plain ``\\n``: on render the k-th ``\\n`` of the
  translation gets back the k-th line break of the source, with the next line's prefix (``> ``,
  list indentation), so the translation stays inside its blockquote or list item.

Translated text is escaped where it would otherwise turn into syntax: ``<`` before an HTML tag or
autolink, ``&`` before an entity, ``|`` in a table cell, and a block marker (``#``, ``>``, ``-``,
``1.``, a fence, a setext underline) at the start of a line of a paragraph. Each unit is checked
at extraction: rendering its own text must give back its source bytes exactly; a block that fails
(exotic tab expansion, say) is left untranslated rather than risked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.common.entities import entities
from markdown_it.common.html_re import HTML_TAG_RE
from markdown_it.rules_inline.autolink import AUTOLINK_RE, EMAIL_RE
from markdown_it.rules_inline.entity import DIGITAL_RE, NAMED_RE
from markdown_it.rules_inline.state_inline import StateInline
from markdown_it.token import Token

from mtfleet.core.documents import register
from mtfleet.core.documents.base import (
    DocumentError,
    DocumentFormat,
    Unit,
    UnitBuilder,
    restore,
)
from mtfleet.core.documents.text import check_count, decode_document, newline_escape, pair_tags

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


@dataclass
class _Block:
    start: int  # span of the unit in the document text
    end: int
    unit: Unit
    kind: str  # "para", "heading" or "cell"
    breaks: list[str]  # source of each soft line break, in order
    strict: bool  # escape block markers at line starts (False if that would change the source)


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


def _without_front_matter(text: str, lines: list[tuple[int, str, str]]) -> str:
    """``text`` with a leading YAML front matter block blanked out (line numbers unchanged)."""
    if not lines or lines[0][1].rstrip() != "---":
        return text
    for n, (_, body, _) in enumerate(lines[1:], start=1):
        if _FRONT_MATTER_END.match(body):
            return (
                "".join(end for _, _, end in lines[: n + 1])
                + text[lines[n + 1][0] if n + 1 < len(lines) else len(text) :]
            )
    return text


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


def _blocks(text: str) -> list[_Block]:
    lines = _lines(text)
    tokens = _MD.parse(_without_front_matter(text, lines))
    blocks: list[_Block] = []
    row: list[tuple[str, list[int]]] = []
    row_offset = 0
    cell = 0
    for i, tok in enumerate(tokens):
        if tok.type == "tr_open" and tok.map:
            row_offset, body, _ = lines[tok.map[0]]
            row = _split_row(body)
            cell = 0
        if tok.type != "inline" or not tok.map or not tok.content.strip():
            continue
        parent = tokens[i - 1].type
        try:
            if parent in ("th_open", "td_open"):
                pos, cell = _cell_positions(row, tok.content, cell, row_offset)
                kind = "cell"
            else:
                pos = _line_positions(tok.content, lines, tok.map[0])
                kind = "heading" if parent == "heading_open" else "para"
            block = _block(text, tok, pos, kind, f"line {tok.map[0] + 1}")
        except _Unmappable:
            continue
        if block is not None:
            blocks.append(block)
    return blocks


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


def _block(text: str, tok: Token, pos: list[int], kind: str, path: str) -> _Block | None:
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

    def flush() -> None:
        if pending:
            b.text("".join(pending))
            pending.clear()

    in_autolink = False
    for i, (c, (s, e)) in enumerate(zip(children, spans, strict=True)):
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
        if i in partner:
            cs, ce = spans[partner[i]]
            b.open(src(s, e), src(cs, ce))
        elif i in closers:
            b.close()
        elif c.type == "image" and _simple_alt(c, content, s, e):
            label_end = s + 2 + len(c.content)
            b.open(src(s, s + 2), src(label_end, e))
            b.text(c.content)
            b.close()
        else:
            b.standalone(src(s, e))
            in_autolink = c.type == "link_open"
    flush()
    if b.empty:
        return None
    unit = b.build()
    start, end = pos[0], pos[len(content)]
    source = text[start:end]
    for strict in (True, False):
        if restore(unit.text, unit.codes, _escaper(kind, breaks, strict)).text == source:
            return _Block(start, end, unit, kind, breaks, strict)
    return None


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
        return [b.unit for b in _blocks(text)]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        bom, text = decode_document(content, "Markdown")
        blocks = _blocks(text)
        check_count(self.name, blocks, translations)
        out = [bom]
        pos = 0
        for block, translation in zip(blocks, translations, strict=True):
            esc = _escaper(block.kind, block.breaks, block.strict)
            out.append(text[pos : block.start])
            out.append(restore(translation, block.unit.codes, esc).text)
            pos = block.end
        out.append(text[pos:])
        return "".join(out).encode("utf-8")


register(MarkdownFormat())
