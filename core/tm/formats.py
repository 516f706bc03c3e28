"""Translation-memory files: TMX 1.4 (read and written), TSV and CSV (read).

**Which format**: the file name's extension (``.tmx``; ``.tsv``/``.tab``; ``.csv``), else the
bytes: XML (``<`` first, after a byte-order mark and blanks) is TMX, a first line with a tab is
TSV, anything else CSV. TSV and CSV are UTF-8 (a UTF-8 or UTF-16 byte-order mark is honoured);
TMX says its own encoding. A file is read as it goes (a TMX unit by unit, a table line by
line), never whole: a memory is imported in a document process (:mod:`mtfleet.core.tm.files`).

**TMX** (1.4; 1.1's ``lang`` is read as ``xml:lang``): every ``<tu>`` of ``<body>`` whose
``<tuv>`` variants include both requested languages gives one pair (the language of a variant
is compared as the fleet normalizes codes: ``en-US`` and ``EN_gb`` are ``en``; the first
variant of a language counts); a file may hold many languages, and any two of them are a pair
(``es`` -> ``en`` from an English-Spanish memory too). A ``<tu>`` without both languages, or
with an empty side, is skipped and counted. The parser has the settings of the fleet's hardened
one (:func:`mtfleet.formats.xliff.iterparse_untrusted`: no DTD, no entity, no network).

**Inline codes** become what they stand for. A code whose native content is a placeholder
(``<ph>{0}</ph>``, ``<ph>%s</ph>``, ``<x equiv-text="{{name}}"/>``: the placeholders the fleet
checks, :data:`mtfleet.core.glossary.PLACEHOLDER`) is that placeholder, as text: it matches the
same placeholder in a request, and a request's other placeholder is carried over in its place
(:mod:`mtfleet.core.tm.placeables`). Any other code becomes one of the fleet's inline tags, as
a document's segments carry them, so a memory built from a CAT tool's TMX matches the segments
of the same document: a ``<bpt>`` and the ``<ept>`` with the same ``i`` around text, or a
``<g>``, become ``<gN>...</gN>``; ``<ph>``, ``<it>``, ``<ut>``, ``<x>`` and a ``<bpt>`` or
``<ept>`` without its partner (or crossing another pair) become a standalone ``<xN/>``. N
counts the tags of the source segment in order (1, 2, ...), as a document's are; the target's
tags take the number of the source code they stand for (the same ``x``, ``<x>``/``<g>`` the
same ``id``, a ``<bpt>``/``<ept>`` the same ``i``, or the same rank among the source's codes of
that element), and a code only the target has takes the next free number. The native markup
inside a code (``&lt;b>``) is not kept: the document a segment comes from has its own.
``<hi>`` keeps its text and drops its mark; a ``<sub>`` (text inside a code, such as a link's
title) goes with its code. Text that happens to read like one of the fleet's tags becomes a
standalone code too, as in documents.

**TSV**: ``source<TAB>target`` lines; **CSV**: ``source,target`` records (RFC 4180 quoting).
Both may open with a header, which is skipped: ``source``/``target`` names the columns, and
language codes (``en-US<TAB>es-ES<TAB>fr-FR``) let the requested pair choose two of many
columns. Without a header every line has exactly two columns. Blank lines are skipped; a line
with an empty side is skipped and counted.

**Export** writes TMX 1.4, UTF-8, a unit at a time: one ``<tu>`` per pair, the fleet's tags as
``<bpt>``/``<ept>`` (a paired tag, ``i`` = its number) and ``<ph>`` (a standalone one, ``x`` =
its number) holding the tag itself as their native code, and each placeholder as a ``<ph>``
holding it (``x`` numbered after the pair's tags, the same in source and target); imported
again, it gives the same pairs.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import IO, Any

from mtfleet.core import languages
from mtfleet.core.errors import InvalidInput, UnsupportedLanguage
from mtfleet.core.glossary.matching import PLACEHOLDER
from mtfleet.core.tm.text import check_pair
from mtfleet.formats.base import TAG
from mtfleet.formats.xliff import iterparse_untrusted, xml_text

FORMATS = ("tmx", "tsv", "csv")
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_HEADER_NAMES = {
    "source": "source",
    "src": "source",
    "source_text": "source",
    "target": "target",
    "tgt": "target",
    "target_text": "target",
}


@dataclass
class Parsed:
    """The checked pairs a file gives (duplicates not yet removed), and the units or lines it
    skipped (a side missing or empty)."""

    pairs: list[tuple[str, str]] = field(default_factory=list)
    skipped: int = 0


def sniff(head: bytes, filename: str | None) -> str:
    """``tmx``, ``tsv`` or ``csv`` (see the module's docstring), from the file's name or its
    first bytes (``head``: up to 4 KiB)."""
    ext = PurePath(filename).suffix.lower() if filename else ""
    if ext == ".tmx":
        return "tmx"
    if ext in (".tsv", ".tab"):
        return "tsv"
    if ext == ".csv":
        return "csv"
    head = head[:4096]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = head[2:].decode("utf-16-le" if head[0] == 0xFF else "utf-16-be", "ignore")
    else:
        text = head.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "ignore")
    text = text.lstrip()
    if text.startswith("<"):
        return "tmx"
    first = next((line for line in text.splitlines() if line.strip()), "")
    return "tsv" if "\t" in first else "csv"


def parse(
    file: IO[bytes], fmt: str, source: str, target: str, *, max_bytes: int, filename: str = ""
) -> Parsed:
    """The pairs for ``source`` -> ``target`` (fleet codes) in a binary file (seekable) of
    format ``fmt``, read as it goes; InvalidInput naming the unit or line for anything that
    cannot be read."""
    what = f"the file {filename!r}" if filename else "the file"
    if fmt == "tmx":
        return parse_tmx(file, source, target, max_bytes=max_bytes, what=what)
    if fmt in ("tsv", "csv"):
        lines = text_lines(file, what)
        rows = _tsv_rows(lines) if fmt == "tsv" else _csv_rows(lines, what)
        return _table(rows, source, target, max_bytes=max_bytes, what=what)
    raise InvalidInput(f"format {fmt!r}: use one of {', '.join(FORMATS)}")


def text_lines(file: IO[bytes], what: str) -> Iterator[str]:
    """The file's lines as text, each with its line break: UTF-16 after its byte-order mark,
    else UTF-8 (a byte-order mark skipped); InvalidInput naming the first byte that is not."""
    head = file.read(3)
    file.seek(0)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            yield from io.TextIOWrapper(file, encoding="utf-16", newline="")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"{what} is not valid UTF-16: {exc.reason}") from None
        return
    offset = 0
    for raw in file:
        if not offset and raw.startswith(b"\xef\xbb\xbf"):
            raw, offset = raw[3:], 3
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                f"{what} is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset "
                f"{offset + exc.start}); save it as UTF-8"
            ) from None
        offset += len(raw)
        yield line


# --- TSV and CSV ------------------------------------------------------------------------------


def _tsv_rows(lines: Iterator[str]) -> Iterator[tuple[int, list[str]]]:
    for n, line in enumerate(lines, 1):
        yield n, line.rstrip("\r\n").split("\t")


def _csv_rows(lines: Iterator[str], what: str) -> Iterator[tuple[int, list[str]]]:
    reader = csv.reader(lines)
    try:
        for row in reader:
            yield reader.line_num, row
    except csv.Error as exc:
        raise InvalidInput(f"{what} line {reader.line_num}: not CSV ({exc})") from None


def _language(cell: str) -> str | None:
    try:
        return languages.normalize(cell.strip())
    except (UnsupportedLanguage, InvalidInput):
        return None


def _header(row: list[str], source: str, target: str, what: str) -> tuple[int, int] | None:
    """The columns a header row names for the pair (None: the row is not a header)."""
    cells = [c.strip() for c in row]
    named = [_HEADER_NAMES.get(c.lower()) for c in cells]
    if "source" in named and "target" in named:
        return named.index("source"), named.index("target")
    filled = [c for c in cells if c]
    if len(filled) < 2 or any(_language(c) is None for c in filled):
        return None
    codes = [_language(c) if c else None for c in cells]
    missing = [lang for lang in (source, target) if lang not in codes]
    if missing:
        raise InvalidInput(
            f"{what}: its header names the languages {', '.join(filled)}; none of them is "
            f"{' or '.join(missing)}"
        )
    return codes.index(source), codes.index(target)


def _table(
    rows: Iterator[tuple[int, list[str]]], source: str, target: str, *, max_bytes: int, what: str
) -> Parsed:
    out = Parsed()
    columns: tuple[int, int] | None = None
    first = True
    for n, row in rows:
        if not any(c.strip() for c in row):
            continue
        if first:
            first = False
            columns = _header(row, source, target, what)
            if columns is not None:
                continue
        if columns is None:
            if len(row) != 2:
                raise InvalidInput(
                    f"{what} line {n}: expected 2 columns (source and target), got {len(row)}"
                )
            s, t = row
        else:
            if len(row) <= max(columns):
                raise InvalidInput(
                    f"{what} line {n}: {len(row)} column(s); the header names {max(columns) + 1}"
                )
            s, t = row[columns[0]], row[columns[1]]
        if not s.strip() or not t.strip():
            out.skipped += 1
            continue
        out.pairs.append(check_pair(s, t, max_bytes=max_bytes, where=f"{what} line {n}"))
    return out


# --- TMX --------------------------------------------------------------------------------------


def _local(el: Any) -> str:
    tag = el.tag
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


@dataclass
class _Event:
    kind: str  # "text", "open", "close", "x"
    value: str = ""  # the text
    key: tuple[str, ...] = ()  # what a code is, to match the target's codes to the source's
    i: str = ""  # a paired code's pairing id


def _native(code: Any) -> str:
    """A code's native content (its text, without the text of a ``<sub>`` in it)."""
    return (code.text or "") + "".join(c.tail or "" for c in code)


def _events(seg: Any) -> list[_Event]:
    """A ``<seg>``'s content as text and code events, in document order."""
    out: list[_Event] = []
    ranks: dict[str, int] = {}

    def ranked(name: str) -> tuple[str, ...]:
        ranks[name] = ranks.get(name, 0) + 1
        return ("#" + name, str(ranks[name]))

    def text(s: str | None) -> None:
        if not s:
            return
        pos = 0
        for m in TAG.finditer(s):  # text that reads like our tags is a code of its own
            out.append(_Event("text", s[pos : m.start()]))
            out.append(_Event("x", key=ranked("literal:" + m.group())))
            pos = m.end()
        out.append(_Event("text", s[pos:]))

    def walk(el: Any) -> None:
        text(el.text)
        for child in el:
            name = _local(child)
            x = child.get("x")  # TMX's link between a code and its counterpart in another tuv
            ident = child.get("id")  # the same, for <x> and <g>
            if name in ("bpt", "ept"):
                i = child.get("i") or ""
                kind = "open" if name == "bpt" else "close"
                key = ("x", x) if x else ("g", i) if i else ranked(name)
                out.append(_Event(kind, key=key, i=i))
            elif name in ("ph", "it", "ut", "x"):
                native = (child.get("equiv-text") or "") if name == "x" else _native(child)
                if PLACEHOLDER.fullmatch(native):  # the code is this placeholder
                    out.append(_Event("text", native))
                elif name == "x":
                    out.append(_Event("x", key=("id", ident) if ident else ranked("x")))
                else:
                    key = ("x", x) if x else ranked(f"{name}:{child.get('pos') or ''}")
                    out.append(_Event("x", key=key))
            elif name == "g":  # a paired code around its content
                key = ("id", ident) if ident else ranked("g")
                pairing = "g:" + key[1]
                out.append(_Event("open", key=key, i=pairing))
                walk(child)
                out.append(_Event("close", key=key, i=pairing))
            elif name in ("hi", "mrk"):  # marked text: the text stays, the mark goes
                walk(child)
            # anything else (a comment, a <sub> out of place) is not text
            text(child.tail)

    walk(seg)
    return out


def _paired(events: list[_Event]) -> set[int]:
    """Indices of the open and close events that pair up well nested (the rest are
    standalone codes)."""
    stack: list[int] = []
    pairs: set[int] = set()
    for n, e in enumerate(events):
        if e.kind == "open":
            stack.append(n)
        elif e.kind == "close" and stack and events[stack[-1]].i == e.i and e.i:
            pairs.update((stack.pop(), n))
    return pairs


def _seg_text(seg: Any, numbers: dict[tuple[str, ...], int], numbering: bool) -> str:
    """The segment as text with the fleet's tags. ``numbering``: the source, whose codes get
    1, 2, ... in order (recorded by key in ``numbers``); else a target, whose codes take the
    numbers of the source's codes with the same key (a new one when the source has none)."""
    events = _events(seg)
    paired = _paired(events)
    parts: list[str] = []
    open_numbers: list[int] = []  # the paired codes open here (well nested by construction)
    for n, e in enumerate(events):
        if e.kind == "text":
            parts.append(e.value)
            continue
        if e.kind == "close" and n in paired:
            parts.append(f"</g{open_numbers.pop()}>")
            continue
        # a bpt/ept that pairs up is one code, ("g", i); one that does not is a code of its own
        alone = e.kind in ("open", "close") and n not in paired
        key = (*e.key, e.kind) if alone else e.key
        num = None
        if not numbering:
            num = numbers.get(key)
            if num is None and e.kind in ("open", "close"):  # paired on one side only
                num = numbers.get(e.key if alone else (*e.key, e.kind))
        if num is None:
            num = max(numbers.values(), default=0) + 1
            numbers[key] = num
        if e.kind == "open" and not alone:
            open_numbers.append(num)
            parts.append(f"<g{num}>")
        else:
            parts.append(f"<x{num}/>")
    return "".join(parts)


def _tuv_language(tuv: Any) -> str:
    return str(tuv.get(_XML_LANG) or tuv.get("lang") or "")


def parse_tmx(file: IO[bytes], source: str, target: str, *, max_bytes: int, what: str) -> Parsed:
    """The pairs of a TMX file, read a ``<tu>`` at a time (each dropped once read)."""
    out = Parsed()
    seen: dict[str, str | None] = {}  # each language written in the file -> the fleet's code
    root: Any = None
    body: Any = None
    for event, el in iterparse_untrusted(file, what):
        if event == "start":
            if root is None:
                root = el
                if _local(root) != "tmx":
                    raise InvalidInput(
                        f"{what} is not TMX: its root element is <{_local(root)}>, not <tmx>"
                    )
            elif body is None and _local(el) == "body" and el.getparent() is root:
                body = el
            continue
        if body is None or el.getparent() is not body:
            continue
        if _local(el) == "tu":
            _unit(el, source, target, seen, out, max_bytes=max_bytes, what=what)
        el.clear(keep_tail=False)
        while el.getprevious() is not None:
            del body[0]
    if body is None:
        raise InvalidInput(f"{what} has no <body>")
    if not out.pairs:
        found = sorted(lang for lang in seen if lang)
        missing = [lang for lang in (source, target) if lang not in seen.values()]
        if missing:
            raise InvalidInput(
                f"{what} holds the languages {', '.join(found) or '(none)'}; none of them is "
                f"{' or '.join(missing)}"
            )
        raise InvalidInput(f"{what} has no <tu> with both a {source} and a {target} segment")
    return out


def tmx_pair(file: IO[bytes], what: str) -> tuple[str, str]:
    """The language pair a TMX file holds, for an import that names none (DeepL's client
    sends only the file): the source is the header's ``srclang`` (the first language of the
    first ``<tu>`` when it is ``*all*`` or missing), the target the one other language of its
    ``<tuv>`` variants; InvalidInput naming them when there is not exactly one other (a fleet
    memory is one pair: import such a file naming the pair, on ``/v1/translation_memories``)."""
    header: str | None = None
    seen: dict[str, str | None] = {}  # each language written in the file -> the fleet's code
    first: str | None = None
    root: Any = None
    for event, el in iterparse_untrusted(file, what):
        if root is None:
            root = el
            if _local(root) != "tmx":
                raise InvalidInput(
                    f"{what} is not TMX: its root element is <{_local(root)}>, not <tmx>"
                )
        if event != "end":
            continue
        name = _local(el)
        if name == "header":
            header = (el.get("srclang") or "").strip()
        elif name == "tuv":
            lang = _tuv_language(el)
            if lang not in seen:
                seen[lang] = _language(lang) if lang else None
                first = first or seen[lang]
        if name in ("tu", "header"):
            el.clear(keep_tail=False)
            parent = el.getparent()
            while parent is not None and el.getprevious() is not None:
                del parent[0]
    codes = list(dict.fromkeys(c for c in seen.values() if c))
    if header and header.lower() != "*all*":
        source = _language(header)
        if source is None:
            raise InvalidInput(f"{what}: its header's srclang {header!r} is not a language")
    elif first is not None:
        source = first
    else:
        raise InvalidInput(f"{what} has no <tuv> in a language this fleet knows")
    targets = [c for c in codes if c != source]
    if len(targets) != 1:
        found = ", ".join(sorted(lang for lang in seen if lang)) or "(none)"
        raise InvalidInput(
            f"{what} holds the languages {found}; a translation memory here is one language "
            f"pair, the source {source} (the header's srclang) and one target: "
            + (
                "it has none"
                if not targets
                else f"it has {len(targets)} ({', '.join(targets)}); import it with "
                "POST /v1/translation_memories, naming source_lang and target_lang"
            )
        )
    return source, targets[0]


def _unit(
    tu: Any,
    source: str,
    target: str,
    seen: dict[str, str | None],
    out: Parsed,
    *,
    max_bytes: int,
    what: str,
) -> None:
    """One ``<tu>``'s pair added to ``out`` (or counted as skipped)."""
    segs: dict[str, Any] = {}
    for tuv in tu:
        if _local(tuv) != "tuv":
            continue
        lang = _tuv_language(tuv)
        if lang not in seen:
            seen[lang] = _language(lang) if lang else None
        code = seen[lang]
        seg = next((c for c in tuv if _local(c) == "seg"), None)
        if code in (source, target) and code not in segs and seg is not None:
            segs[code] = seg
    if len(segs) < 2:
        out.skipped += 1
        return
    numbers: dict[tuple[str, ...], int] = {}
    s = _seg_text(segs[source], numbers, True)
    t = _seg_text(segs[target], numbers, False)
    if not s.strip() or not t.strip():
        out.skipped += 1
        return
    where = f"{what}, <tu> at line {tu.sourceline}"
    out.pairs.append(check_pair(s, t, max_bytes=max_bytes, where=where))


# A tag of the fleet's, or a placeholder (exported as a <ph> holding it).
_CODE = re.compile(f"{TAG.pattern}|{PLACEHOLDER.pattern}")


def _placeholder_numbers(source: str, target: str) -> dict[str, int]:
    """A number for each placeholder of a pair (its ``x``: after the pair's tags, the same in
    source and target)."""
    tags = [int(m.group(3)) for m in TAG.finditer(source + target)]
    out: dict[str, int] = {}
    for m in PLACEHOLDER.finditer(source + "\n" + target):
        out.setdefault(m.group(), max(tags, default=0) + len(out) + 1)
    return out


def _tmx_seg(text: str, placeholders: dict[str, int]) -> str:
    """A stored text as a TMX ``<seg>``'s content (the fleet's tags and the placeholders as
    inline codes)."""
    closes = {m.group(3) for m in TAG.finditer(text) if m.group(1)}
    opens = {m.group(3) for m in TAG.finditer(text) if not m.group(1) and not m.group(4)}
    parts: list[str] = []
    pos = 0
    for m in _CODE.finditer(text):
        parts.append(xml_text(text[pos : m.start()]))
        num, code = m.group(3), xml_text(m.group(0))
        if num is None:
            parts.append(f'<ph x="{placeholders[m.group()]}">{code}</ph>')
        elif m.group(1) and num in opens:
            parts.append(f'<ept i="{num}">{code}</ept>')
        elif not m.group(1) and not m.group(4) and num in closes:
            parts.append(f'<bpt i="{num}" x="{num}">{code}</bpt>')
        else:
            parts.append(f'<ph x="{num}">{code}</ph>')
        pos = m.end()
    parts.append(xml_text(text[pos:]))
    return "".join(parts)


def _attr(value: str) -> str:
    return xml_text(value).replace('"', "&quot;")


def tmx_parts(pairs: Iterable[tuple[str, str]], source: str, target: str) -> Iterator[str]:
    """The pairs as a TMX 1.4 document (to be written as UTF-8), a unit at a time."""
    src, tgt = _attr(source), _attr(target)
    yield (
        '<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4">\n'
        f'<header creationtool="mtfleet" creationtoolversion="1" segtype="sentence" '
        f'o-tmf="mtfleet" adminlang="en" srclang="{src}" datatype="plaintext"/>\n<body>\n'
    )
    for s, t in pairs:
        numbers = _placeholder_numbers(s, t)
        yield (
            f'<tu><tuv xml:lang="{src}"><seg>{_tmx_seg(s, numbers)}</seg></tuv>'
            f'<tuv xml:lang="{tgt}"><seg>{_tmx_seg(t, numbers)}</seg></tuv></tu>\n'
        )
    yield "</body>\n</tmx>\n"
