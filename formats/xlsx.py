"""XLSX (Excel 2007+ workbooks; macro-enabled ``.xlsm`` and templates are read the same way):
every string a cell shows and every comment is a unit.

Units, in this order:

* each shared string (``<si>`` of the shared-strings part, found by its content type), once
  however many cells show it; path ``xl/sharedStrings.xml#si17`` (its 0-based index, the number
  the cells hold);
* then, sheet by sheet in the workbook's order: each inline string cell
  (``<c t="inlineStr"><is>…</is></c>``) and each ``t="str"`` cell *without* a formula (a literal
  string some writers store that way; path ``Sheet2!E1``), then the sheet's comments (the legacy
  ``xl/comments*.xml``: ``Sheet1!A22#comment``) and its threaded comments
  (``Sheet1!A22#thread1``; one with @mentions is left as is: the mentions point into its text
  by character offsets).

Strings with nothing to translate (no letter at all: numbers stored as text such as
``"00123"``, dates, punctuation, whitespace only) are no units and stay byte-equal.

Inside a string (a plain ``<t>`` or rich text runs ``<r><rPr/><t/></r>``), as for DOCX:

* text in the formatting of the string's first text run is plain text; a stretch of runs with
  other formatting (the run's ``<rPr>`` is its identity; adjacent runs with equal ``rPr`` are
  one stretch) is a paired tag ``<gN>…</gN>``;
* Excel's escapes of characters XML cannot carry (``_x000D_``) are standalone tags ``<xN/>``;
* phonetic runs (``<rPh>``) and phonetic properties (``<phoneticPr>``) are kept as they are
  (they follow the runs; their character offsets still point into the source text).

``render`` rebuilds the runs of each string whose translation differs (untagged text in the
first run's formatting, each ``<gN>`` span in its stretch's; ``xml:space="preserve"`` on a
``<t>`` whose text starts or ends with white space) and splices them into the part's bytes in
place of the old runs: everything else in a part (formulas, numbers, styles, the whitespace
between tags) stays byte for byte, and every other ZIP member is copied byte for byte with its
name, order, timestamp and compression. When no translation differs from its source,
``render`` returns ``content`` itself, byte-equal.

Not translated, on purpose:

* formula results (a cell with ``<f>``, among them ``t="str"`` cached results, and the cells an
  array formula fills): Excel computes them; formulas themselves, numbers, booleans, errors;
* sheet names (:data:`SHEET_NAMES_TRANSLATED`): formulas, defined names, charts and
  hyperlinks refer to sheets by name;
* the header cells (and the totals row) of tables (``xl/tables/table*.xml``): a table column's
  ``name`` must equal its header cell's text, be unique in the table, and structured
  references in formulas (``Table1[Column1]``) use it, so the header cells keep their text
  (and, because a shared string is one for all its cells, so does every other cell that shows
  the same shared string); see :data:`TABLE_HEADERS_TRANSLATED`;
* charts (their titles, and the caches of the cell texts they show, which Excel refreshes
  from the cells), drawings and text boxes, VML drawings (the comment boxes: they hold no text,
  the comments parts do), headers and footers, data validation prompts, defined names,
  document properties; pivot tables' definitions and caches (the cells a pivot table shows
  are translated like any other, until a refresh brings back the source's text);
* macro sheets and dialog sheets; the binary ``.xlsb`` workbook is refused.

Formulas that compare a cell with a text literal (``=IF(A1="Yes";…)``) and data validation
lists are not rewritten: such a formula sees the translated text.

How the parts are read: worksheets and shared-string tables can hold millions of elements, more
than a tree of the whole part should cost, so the parts holding units are read in one streaming
pass (expat, with any DOCTYPE refused: no DTD, no entities, no network) that records where each
string sits in the part's bytes; a worksheet with no inline or ``t="str"`` string and no table
is not parsed at all. Small parts (the workbook, relationships, tables) are parsed with the
hardened lxml parser of :mod:`mtfleet.formats.xliff`; the archive is checked against the
limits of :mod:`mtfleet.formats.ooxml` before anything is decompressed (ZIP bombs).
A part in another encoding than UTF-8 (UTF-16, which the standard allows) is rewritten in UTF-8
when one of its strings changes.
"""

from __future__ import annotations

import codecs
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final
from xml.parsers import expat

from mtfleet.formats import register
from mtfleet.formats.base import TAG, DocumentError, Rendered, Unit, UnitBuilder
from mtfleet.formats.charts import CHART_TYPE, Chart
from mtfleet.formats.ooxml import MAX_PART_BYTES, Package, PackageFormat
from mtfleet.formats.xliff import restore_markers, walk_markers, xml_text

#: Sheet names (``<sheet name=…>`` in ``xl/workbook.xml``) are not translated: formulas,
#: defined names, charts and hyperlinks refer to sheets by name, and renaming one would mean
#: rewriting every reference to it. A constant, not a setting: nothing reads it as a switch.
SHEET_NAMES_TRANSLATED: Final = False
#: The header cells (and totals row) of tables are not translated: a table column's name must
#: equal its header cell's text, and formulas refer to columns by name (``Table1[Column1]``).
TABLE_HEADERS_TRANSLATED: Final = False

_SML = "application/vnd.openxmlformats-officedocument.spreadsheetml"
#: Content types of the workbook part (the package's main part).
_WORKBOOK_TYPES = (
    f"{_SML}.sheet.main+xml",
    f"{_SML}.template.main+xml",
    "application/vnd.ms-excel.sheet.macroEnabled.main+xml",
    "application/vnd.ms-excel.template.macroEnabled.main+xml",
)
_XLSB_TYPE = "application/vnd.ms-excel.sheet.binary.macroEnabled.main"
_SST_TYPE = f"{_SML}.sharedStrings+xml"
_SHEET_TYPE = f"{_SML}.worksheet+xml"
_COMMENTS_TYPE = f"{_SML}.comments+xml"
_THREADED_TYPE = "application/vnd.ms-excel.threadedcomments+xml"

#: SpreadsheetML's namespace, transitional and strict.
_MAIN_NS = (
    "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
    "http://purl.oclc.org/ooxml/spreadsheetml/main",
)
_THREADED_NS = "http://schemas.microsoft.com/office/spreadsheetml/2018/threadedcomments"
_REL_NS = (
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "http://purl.oclc.org/ooxml/officeDocument/relationships",
)
_PKG_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"

#: Characters XML 1.0 cannot carry at all.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
#: Excel's escape of a character in a string (``_x000D_`` is a carriage return).
_ESCAPE = re.compile(r"_x[0-9A-Fa-f]{4}_")
#: The rest of a start tag from just after its ``<`` (attribute values may hold ``>``).
_TAG_REST = re.compile(rb"""(?:[^>"']|"[^"]*"|'[^']*')*>""")
_QNAME = re.compile(rb"<([^\s/>]+)")
_CELL_REF = re.compile(r"\$?([A-Za-z]{1,3})\$?([0-9]{1,7})")
_DECL_ENCODING = re.compile(rb"""^(?:\xef\xbb\xbf)?<\?xml[^>]*?\bencoding\s*=\s*["']([^"']*)["']""")
_DECL_ENCODING_TEXT = re.compile(r"""^(<\?xml[^>]*?\bencoding\s*=\s*)(["'])[^"']*\2""")


def _col_number(letters: str) -> int:
    n = 0
    for ch in letters.upper():
        n = n * 26 + ord(ch) - 64
    return n


def _col_letters(n: int) -> str:
    out = ""
    while n > 0:
        n, rem = divmod(n - 1, 26)
        out = chr(65 + rem) + out
    return out


def _cell(ref: str) -> tuple[int, int] | None:
    """(row, column) of ``B12``; None for anything else."""
    m = _CELL_REF.fullmatch(ref.strip())
    return None if m is None else (int(m.group(2)), _col_number(m.group(1)))


def _range(ref: str) -> tuple[int, int, int, int] | None:
    """(first row, first column, last row, last column) of ``A1:C3`` (or of one cell)."""
    first, _, last = ref.partition(":")
    a, b = _cell(first), _cell(last or first)
    if a is None or b is None:
        return None
    (r1, c1), (r2, c2) = a, b
    return min(r1, r2), min(c1, c2), max(r1, r2), max(c1, c2)


def _as_utf8(data: bytes, what: str) -> bytes:
    """A part's bytes in UTF-8 (the declaration says so): the splicing below works on UTF-8."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    elif data.startswith(b"<\x00"):
        encoding = "utf-16-le"
    elif data.startswith(b"\x00<"):
        encoding = "utf-16-be"
    else:
        m = _DECL_ENCODING.match(data)
        encoding = m.group(1).decode("ascii", "replace") if m else "utf-8"
    try:
        if codecs.lookup(encoding).name == "utf-8":
            return data
        text = data.decode(encoding)
    except LookupError:
        raise DocumentError(f"{what} declares an unknown encoding {encoding!r}") from None
    except UnicodeDecodeError as exc:
        raise DocumentError(f"{what} is not valid {encoding}: {exc.reason}") from None
    text = _DECL_ENCODING_TEXT.sub(r"\1\2UTF-8\2", text.lstrip("\ufeff"), count=1)
    return text.encode("utf-8", "surrogatepass")


# --- reading a part ------------------------------------------------------------------------------


def _names(*local: str, namespaces: Sequence[str] = _MAIN_NS) -> frozenset[str]:
    """Element names as expat reports them (``namespace local``)."""
    return frozenset(f"{ns} {name}" for ns in namespaces for name in local)


_SI, _C, _ROW, _V, _F, _IS = (_names(n) for n in ("si", "c", "row", "v", "f", "is"))
_R, _T, _RPR, _COMMENT, _TEXT = (_names(n) for n in ("r", "t", "rPr", "comment", "text"))
_THREADED, _THREAD_TEXT, _MENTIONS = (
    _names(n, namespaces=(_THREADED_NS,)) for n in ("threadedComment", "text", "mentions")
)
#: A letter (a word character that is neither a digit nor ``_``).
_LETTER = re.compile(r"[^\W\d_]")


@dataclass
class _Run:
    """A run of a rich string: ``start`` its start tag and ``<rPr>`` as written (empty for a
    bare ``<t>``), ``end`` its end tag, ``key`` its formatting (the ``rPr``)."""

    start: str
    end: str
    key: str
    t_name: str
    text: str = ""


@dataclass
class _Rich:
    """A string (``<si>``, ``<is>``, a comment's ``<text>``) being read."""

    stack: list[tuple[str, int]] = field(default_factory=list)  # elements open in it
    runs: list[_Run] = field(default_factory=list)
    first: int = -1  # where its first <t>/<r> child starts
    last: tuple[int, int] = (-1, -1)  # its last one's start and end-event offsets
    others: list[tuple[int, int]] = field(default_factory=list)  # its other children, so
    has_runs: bool = False
    run: _Run | None = None  # the run being read
    rpr_start: int = -1


@dataclass
class _Slot:
    """A unit and the bytes of its part it replaces: ``[start, end)``."""

    unit: Unit
    start: int
    end: int
    runs: list[_Run] | None = None  # None: plain text content (a <v>, a threaded comment)
    bare: bool = False  # the string was a bare <t>: it stays one
    spans: dict[int, _Run] = field(default_factory=dict)
    extra: str = ""  # other children found among the runs, put back after them
    escapes: bool = True  # Excel's _xHHHH_ escapes apply (not in threaded comments)


def _has_letters(s: str) -> bool:
    return _LETTER.search(TAG.sub("", s) if "<" in s else s) is not None


def _add_text(b: UnitBuilder, s: str) -> bool:
    """Add ``s`` with Excel's escapes as codes; whether it holds a letter."""
    letters = False
    pos = 0
    for m in _ESCAPE.finditer(s):
        b.text(s[pos : m.start()])
        letters = letters or _has_letters(s[pos : m.start()])
        b.standalone(m.group(0))
        pos = m.end()
    b.text(s[pos:])
    return letters or _has_letters(s[pos:])


def _plain_unit(text: str, path: str) -> Unit | None:
    """The unit of a text without formatting; None when it has nothing to translate."""
    if "<" not in text and "_x" not in text:  # the common case, without a builder
        return Unit(text, {}, path) if _LETTER.search(text) else None
    b = UnitBuilder(path)
    return b.build() if _add_text(b, text) else None


class _Scanner:
    """One streaming pass over a part (expat, namespaces expanded, DOCTYPE refused), with the
    byte offset of every element at hand. Subclasses handle the elements they need in
    ``_start`` and ``_end``; the strings in them are read by ``rich_start``/``rich_end``."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.what = what
        self.chars: list[str] | None = None  # collecting character data when set
        self.rich: _Rich | None = None
        self.slots: list[_Slot] = []
        self.parser: Any = None

    def run(self) -> None:
        p = expat.ParserCreate(namespace_separator=" ")
        p.buffer_text = True
        p.StartDoctypeDeclHandler = self._doctype
        p.EntityDeclHandler = self._doctype
        p.StartElementHandler = self._start
        p.EndElementHandler = self._end
        self.parser = p
        try:
            p.Parse(self.data, True)
        except expat.ExpatError as exc:
            raise DocumentError(f"{self.what} is not well-formed XML: {exc}") from None
        finally:
            self.parser = None  # the handlers refer to self: no cycle through the parser

    def _doctype(self, *_args: Any) -> None:
        raise DocumentError(f"{self.what} has a DOCTYPE; DTDs and entities are not accepted")

    def _chars(self, s: str) -> None:
        if self.chars is not None:
            self.chars.append(s)

    def collect(self) -> None:
        """Collect character data from here (only then is the handler set: most of a sheet's
        character data is numbers and whitespace)."""
        self.chars = []
        self.parser.CharacterDataHandler = self._chars

    def collected(self) -> str:
        text = "".join(self.chars or ())
        self.chars = None
        self.parser.CharacterDataHandler = None
        return text

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        raise NotImplementedError

    def _end(self, name: str) -> None:
        raise NotImplementedError

    # byte offsets

    def tag_end(self, start: int) -> tuple[int, bool]:
        """Where the start tag at ``start`` ends, and whether it is an empty-element tag."""
        m = _TAG_REST.match(self.data, start + 1)
        assert m is not None  # expat read a start tag there
        return m.end(), self.data[m.end() - 2 : m.end()] == b"/>"

    def element_end(self, start: int, idx: int) -> int:
        """Where the element that starts at ``start`` and whose end event came at ``idx``
        ends."""
        end, empty = self.tag_end(start)
        if empty:
            return end
        return self.data.index(b">", idx) + 1

    def raw(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8")

    def qname(self, start: int, local: bytes = b"") -> str:
        """The element name as written in the start tag at ``start`` (``local`` when it has no
        prefix: a shortcut for the usual case)."""
        if local and self.data.startswith(local, start + 1):
            following = self.data[start + 1 + len(local) : start + 2 + len(local)]
            if following in (b">", b" ", b"/", b"\t", b"\n", b"\r"):
                return local.decode()
        m = _QNAME.match(self.data, start)
        assert m is not None
        return m.group(1).decode("utf-8")

    # rich strings

    def rich_start(self, rich: _Rich, name: str) -> None:
        """An element starts inside the string being read."""
        idx = self.parser.CurrentByteIndex
        rich.stack.append((name, idx))
        level = len(rich.stack)  # 1: a child of the string's element
        if level == 1:
            if name in _R:
                rich.has_runs = True
                tag_end, empty = self.tag_end(idx)
                start = self.raw(idx, tag_end)
                if empty:  # <r/>: nothing in it
                    start = start[:-2].rstrip() + ">"
                rich.run = _Run(start, f"</{self.qname(idx, b'r')}>", "", "t")
            elif name in _T:
                rich.run = _Run("", "", "", self.qname(idx, b"t"))
                self.collect()
        elif level == 2 and rich.run is not None and rich.run.end:
            if name in _RPR:
                rich.rpr_start = idx
            elif name in _T:
                rich.run.t_name = self.qname(idx, b"t")
                self.collect()

    def rich_end(self, rich: _Rich, name: str) -> bool:
        """An element ends inside the string being read; True when it is the string's own."""
        if not rich.stack:
            return True
        idx = self.parser.CurrentByteIndex
        _name, start = rich.stack.pop()
        level = len(rich.stack) + 1
        if level == 1:
            run = rich.run
            if (name in _R or name in _T) and run is not None:
                if name in _T:
                    run.text = self.collected()
                rich.runs.append(run)
                rich.run = None
                if rich.first < 0:
                    rich.first = start
                rich.last = (start, idx)
            else:
                rich.others.append((start, idx))
        elif level == 2 and rich.run is not None and rich.run.end:
            if name in _RPR:
                rpr = self.raw(rich.rpr_start, self.element_end(rich.rpr_start, idx))
                rich.run.key = rpr
                rich.run.start += rpr
            elif name in _T:
                rich.run.text += self.collected()
        return False

    def end_rich(self, path: str) -> _Slot | None:
        """The slot of the string just read; None when it has nothing to translate."""
        rich = self.rich
        self.rich = None
        assert rich is not None
        runs = [r for r in rich.runs if r.text]
        if not runs:
            return None
        if rich.has_runs:  # a bare <t> among runs (not by the schema): a run without rPr
            r_name = next(r.end[2:-1] for r in rich.runs if r.end)
            for r in rich.runs:
                if not r.end:
                    r.start, r.end = f"<{r_name}>", f"</{r_name}>"
        base = runs[0].key
        spans: dict[int, _Run] = {}
        if all(run.key == base for run in runs):
            unit = _plain_unit("".join(run.text for run in runs), path)
            if unit is None:
                return None
        else:
            b = UnitBuilder(path)
            span: str | None = None
            letters = False
            for run in runs:
                if run.key == base:
                    if span is not None:
                        b.close()
                        span = None
                elif run.key != span:
                    if span is not None:
                        b.close()
                    spans[b.open(run.start, run.end)] = run
                    span = run.key
                letters = _add_text(b, run.text) or letters
            if not letters:
                return None
            unit = b.build()
        last = self.element_end(*rich.last)
        extra = "".join(
            self.raw(s, self.element_end(s, e)) for s, e in rich.others if rich.first < s < last
        )
        return _Slot(
            unit,
            rich.first,
            last,
            runs=runs,
            bare=not rich.has_runs,
            spans=spans,
            extra=extra,
        )

    def text_slot(self, path: str, start: int, idx: int, text: str) -> _Slot | None:
        """A slot for an element whose content is plain text (``start``: the element's start
        offset, ``idx``: its end event's)."""
        content, empty = self.tag_end(start)
        if empty:
            return None
        unit = _plain_unit(text, path)
        return None if unit is None else _Slot(unit, content, idx)


class _StringsScan(_Scanner):
    """The shared-strings part: each ``<si>``, but those ``skip`` names (table headers)."""

    def __init__(self, data: bytes, what: str, part: str, skip: set[int]) -> None:
        super().__init__(data, what)
        self.part = part
        self.skip = skip
        self.index = -1

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        rich = self.rich
        if rich is not None:
            self.rich_start(rich, name)
        elif name in _SI:
            self.index += 1
            if self.index not in self.skip:
                self.rich = _Rich()

    def _end(self, name: str) -> None:
        rich = self.rich
        if rich is not None and self.rich_end(rich, name):
            slot = self.end_rich(f"{self.part}#si{self.index}")
            if slot is not None:
                self.slots.append(slot)


@dataclass
class _Cell:
    ref: str  # its r attribute ("" when it has none)
    type: str
    row: int  # where it is when it has no r: the row's number, the last cell with an r
    last_ref: str  # in the row, and how many cells it is after that one
    after: int
    formula: bool = False
    value: str = ""
    value_at: tuple[int, int] | None = None  # the <v>'s start and end-event offsets
    slot: _Slot | None = None  # its inline string

    def position(self) -> tuple[int, int]:
        pos = _cell(self.ref) if self.ref else None
        if pos is not None:
            return pos
        last = _cell(self.last_ref) if self.last_ref else None
        return (self.row, self.after) if last is None else (last[0], last[1] + self.after)

    def name(self) -> str:
        if self.ref:
            return self.ref
        row, col = self.position()
        return f"{_col_letters(col)}{row}"


class _SheetScan(_Scanner):
    """A worksheet: inline string cells and ``t="str"`` cells without a formula are units;
    the shared strings that ``keep`` cells (table headers) show are noted in ``kept``."""

    def __init__(self, data: bytes, what: str, sheet: str, keep: set[tuple[int, int]]) -> None:
        super().__init__(data, what)
        self.sheet = sheet
        self.keep = keep
        self.kept: set[int] = set()
        self.row = 0
        self.last_ref = ""
        self.after = 0
        self.cell: _Cell | None = None  # the cell being read, when it may matter
        self.v_start = -1
        self.arrays: list[tuple[int, int, int, int]] = []  # ranges array formulas fill

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        rich = self.rich
        if rich is not None:
            self.rich_start(rich, name)
            return
        cell = self.cell
        if cell is not None:
            if name in _V:
                self.v_start = self.parser.CurrentByteIndex
                self.collect()
            elif name in _F:
                cell.formula = True
                if attrs.get("t") in ("array", "dataTable") and attrs.get("ref"):
                    filled = _range(attrs["ref"])
                    if filled is not None:
                        self.arrays.append(filled)
            elif name in _IS and cell.type == "inlineStr" and not cell.formula:
                self.rich = _Rich()
        elif name in _C:
            ref = attrs.get("r", "")
            if ref:
                self.last_ref, self.after = ref, 0
            else:
                self.after += 1
            kind = attrs.get("t", "n")
            if kind in ("inlineStr", "str") or (kind == "s" and self.keep):
                self.cell = _Cell(ref, kind, self.row, self.last_ref, self.after)
        elif name in _ROW:
            r = attrs.get("r", "")
            self.row = int(r) if r.isdigit() else self.row + 1
            self.last_ref, self.after = "", 0
        elif name in _F and attrs.get("t") in ("array", "dataTable") and attrs.get("ref"):
            filled = _range(attrs["ref"])  # in a cell of another type (a number)
            if filled is not None:
                self.arrays.append(filled)

    def _end(self, name: str) -> None:
        rich = self.rich
        cell = self.cell
        if rich is not None:
            if self.rich_end(rich, name) and cell is not None:
                cell.slot = self.end_rich(f"{self.sheet}!{cell.name()}")
        elif cell is None:
            return
        elif name in _V:
            cell.value = self.collected()
            cell.value_at = (self.v_start, self.parser.CurrentByteIndex)
        elif name in _C:
            self.cell = None
            self._cell_done(cell)

    def _cell_done(self, cell: _Cell) -> None:
        if self.keep and cell.position() in self.keep:
            if cell.type == "s" and cell.value.strip().isdigit():
                self.kept.add(int(cell.value))
            return
        if cell.formula:
            return
        if cell.type == "inlineStr" and cell.slot is not None:
            self.slots.append(cell.slot)
        elif cell.type == "str" and cell.value_at is not None:
            if self.arrays:
                row, col = cell.position()
                if any(r1 <= row <= r2 and c1 <= col <= c2 for r1, c1, r2, c2 in self.arrays):
                    return  # filled by an array formula: a result
            path = f"{self.sheet}!{cell.name()}"
            slot = self.text_slot(path, *cell.value_at, cell.value)
            if slot is not None:
                self.slots.append(slot)


class _CommentsScan(_Scanner):
    """Legacy comments: each ``<comment>``'s ``<text>``."""

    def __init__(self, data: bytes, what: str, sheet: str) -> None:
        super().__init__(data, what)
        self.sheet = sheet
        self.ref: str | None = None  # in a <comment> when set

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        rich = self.rich
        if rich is not None:
            self.rich_start(rich, name)
        elif name in _COMMENT:
            self.ref = attrs.get("ref", "")
        elif name in _TEXT and self.ref is not None:
            self.rich = _Rich()

    def _end(self, name: str) -> None:
        rich = self.rich
        if rich is not None:
            if self.rich_end(rich, name):
                slot = self.end_rich(f"{self.sheet}!{self.ref}#comment")
                if slot is not None:
                    self.slots.append(slot)
        elif name in _COMMENT:
            self.ref = None


class _ThreadedScan(_Scanner):
    """Threaded comments: each ``<threadedComment>``'s ``<text>`` (plain text); one with
    ``<mentions>`` is left alone (they count characters into its text)."""

    def __init__(self, data: bytes, what: str, sheet: str) -> None:
        super().__init__(data, what)
        self.sheet = sheet
        self.ref: str | None = None  # in a <threadedComment> when set
        self.count = 0
        self.slot: _Slot | None = None
        self.mentions = False
        self.text_start = -1

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        if name in _THREADED:
            self.ref = attrs.get("ref", "")
            self.count += 1
            self.slot, self.mentions = None, False
        elif self.ref is None:
            return
        elif name in _THREAD_TEXT and self.chars is None:
            self.text_start = self.parser.CurrentByteIndex
            self.collect()
        elif name in _MENTIONS:
            self.mentions = True

    def _end(self, name: str) -> None:
        if name in _THREAD_TEXT and self.chars is not None:
            path = f"{self.sheet}!{self.ref}#thread{self.count}"
            idx = self.parser.CurrentByteIndex
            self.slot = self.text_slot(path, self.text_start, idx, self.collected())
            if self.slot is not None:
                self.slot.escapes = False
        elif name in _THREADED:
            if self.slot is not None and not self.mentions:
                self.slots.append(self.slot)
            self.slot, self.ref = None, None


# --- rebuilding a string -------------------------------------------------------------------------


def _t(name: str, text: str) -> str:
    space = ' xml:space="preserve"' if text != text.strip() else ""
    return f"<{name}{space}>{xml_text(text)}</{name}>"


def _rebuild(slot: _Slot, translation: str) -> str:
    """The markup that replaces the slot's bytes for ``translation``."""
    pieces: list[tuple[_Run | None, str]] = []
    stack: list[_Run] = []

    def add(s: str) -> None:
        target = stack[-1] if stack else None
        if pieces and pieces[-1][0] is target:
            pieces[-1] = (target, pieces[-1][1] + s)
        else:
            pieces.append((target, s))

    def on_text(s: str) -> None:
        s = _NOT_XML.sub("", s)
        if slot.escapes and "_x" in s:  # a literal "_x0041_" is written "_x005F_x0041_"
            s = _ESCAPE.sub(lambda m: "_x005F_" + m.group(0)[1:], s)
        add(s)

    def on_standalone(n: int) -> None:  # an escape or a literal tag: text again
        add(slot.unit.codes[n].start)

    def on_open(n: int) -> None:
        stack.append(slot.spans[n])

    def on_close(n: int) -> None:
        stack.pop()

    if not slot.unit.codes and "<" not in translation:  # the common case, without a parse
        on_text(translation)
    else:
        tree, _warnings = restore_markers(translation, slot.unit.codes)
        walk_markers(tree, on_text, on_standalone, on_open, on_close)
    if slot.runs is None:
        return xml_text("".join(s for _run, s in pieces))
    base = slot.runs[0]
    if slot.bare:
        return _t(base.t_name, "".join(s for _run, s in pieces)) + slot.extra
    out = [
        f"{run.start}{_t(run.t_name, s)}{run.end}"
        for run, s in ((r or base, s) for r, s in pieces)
        if s
    ]
    if not out:
        out.append(f"{base.start}{_t(base.t_name, '')}{base.end}")
    return "".join(out) + slot.extra


# --- the package ---------------------------------------------------------------------------------


@dataclass
class _Part:
    info: zipfile.ZipInfo
    data: bytes  # as read (in UTF-8)
    slots: list[_Slot]


def _kept_cells(pkg: Package, table: zipfile.ZipInfo) -> set[tuple[int, int]]:
    """The header row and totals row cells of a table."""
    _data, root = pkg.parse(table)
    span = _range(str(root.get("ref", "")))
    if span is None:
        return set()
    r1, c1, r2, c2 = span
    rows = set()
    if str(root.get("headerRowCount", "1")).strip() != "0":
        rows.add(r1)
    totals = str(root.get("totalsRowCount", "0")).strip()
    if totals.isdigit() and int(totals) > 0:
        rows.update(range(max(r1, r2 - int(totals) + 1), r2 + 1))
    return {(r, c) for r in rows for c in range(c1, c2 + 1)}


@dataclass
class _Sheet:
    name: str
    info: zipfile.ZipInfo
    keep: set[tuple[int, int]] = field(default_factory=set)
    comments: list[zipfile.ZipInfo] = field(default_factory=list)
    threaded: list[zipfile.ZipInfo] = field(default_factory=list)


def _sheets(pkg: Package, workbook: zipfile.ZipInfo, kinds: dict[str, Any]) -> list[_Sheet]:
    """The worksheets in the workbook's order (then any the workbook does not list)."""
    worksheets = {i.filename: i for i in kinds.get(_SHEET_TYPE, [])}
    rels = {rid: name for rid, _type, name in pkg.relationships(workbook)}
    _data, root = pkg.parse(workbook)
    sheets: list[_Sheet] = []
    seen: set[str] = set()
    for el in root.iter(*(f"{{{ns}}}sheet" for ns in _MAIN_NS)):
        rid = next((el.get(f"{{{ns}}}id") for ns in _REL_NS if el.get(f"{{{ns}}}id")), None)
        member = pkg.member(rels.get(str(rid), "")) if rid else None
        if member is not None and member.filename in worksheets and member.filename not in seen:
            seen.add(member.filename)
            sheets.append(_Sheet(str(el.get("name", member.filename)), member))
    for name, info in worksheets.items():
        if name not in seen:
            sheets.append(_Sheet(name, info))
    comment_parts = {i.filename for i in kinds.get(_COMMENTS_TYPE, [])}
    threaded_parts = {i.filename for i in kinds.get(_THREADED_TYPE, [])}
    for sheet in sheets:
        for _rid, kind, name in pkg.relationships(sheet.info):
            member = pkg.member(name)
            if member is None:
                continue
            if kind == "table":
                sheet.keep |= _kept_cells(pkg, member)
            elif kind == "comments" and member.filename in comment_parts:
                sheet.comments.append(member)
            elif kind == "threadedComment" and member.filename in threaded_parts:
                sheet.threaded.append(member)
    return sheets


#: A ``t="str"`` cell (``inlineStr`` is looked for as plain bytes first: a regex alternation
#: tried at every byte of a 25 MB sheet of numbers costs 0.2 s, the two plain scans 0.03 s).
_STR_CELL = re.compile(rb"""\bt\s*=\s*["']str["']""")


def _maybe_text_cells(data: bytes) -> bool:
    """Whether a sheet may hold inline or ``t="str"`` strings (a sheet that cannot is not
    parsed at all)."""
    return b"inlineStr" in data or (b"str" in data and _STR_CELL.search(data) is not None)


class _Workbook:
    """A workbook read once: the parts holding its strings, its charts, and its units."""

    def __init__(self, content: bytes) -> None:
        self.content = content
        self.pkg = pkg = Package(content, "XLSX")
        kinds = pkg.parts_by_type()
        workbook = next((i for t in _WORKBOOK_TYPES for i in kinds.get(t, [])), None)
        if workbook is None:
            if kinds.get(_XLSB_TYPE):
                raise DocumentError(
                    "an Excel binary workbook (.xlsb) is not supported; save it as .xlsx"
                )
            raise DocumentError(
                "a ZIP archive but not an Excel workbook: no workbook part "
                "(is it a Word document, a presentation or an ODF file?)"
            )
        sheets = _sheets(pkg, workbook, kinds)

        def load(info: zipfile.ZipInfo) -> tuple[bytes, str]:
            what = f"the XLSX part {info.filename}"
            return _as_utf8(pkg.read(info, MAX_PART_BYTES), what), what

        kept: set[int] = set()
        sheet_parts: list[_Part] = []  # only the parts holding units keep their bytes
        for sheet in sheets:
            data, what = load(sheet.info)
            if sheet.keep or _maybe_text_cells(data):
                scan = _SheetScan(data, what, sheet.name, sheet.keep)
                scan.run()
                kept |= scan.kept
                sheet_parts.append(_Part(sheet.info, data, scan.slots))
            for info in sheet.comments:
                data, what = load(info)
                comments = _CommentsScan(data, what, sheet.name)
                comments.run()
                sheet_parts.append(_Part(info, data, comments.slots))
            for info in sheet.threaded:
                data, what = load(info)
                threaded = _ThreadedScan(data, what, sheet.name)
                threaded.run()
                sheet_parts.append(_Part(info, data, threaded.slots))
            sheet_parts = [p for p in sheet_parts if p.slots]
        parts: list[_Part] = []
        for info in kinds.get(_SST_TYPE, [])[:1]:
            data, what = load(info)
            strings = _StringsScan(data, what, info.filename, kept)
            strings.run()
            parts.append(_Part(info, data, strings.slots))
        self.parts = [p for p in parts + sheet_parts if p.slots]
        self.units = [slot.unit for part in self.parts for slot in part.slots]
        # the charts: their paragraphs and literal strings are units; a copy of cells takes
        # the translation of the cells' text (the cells are units above, or keep their text)
        self.charts = [Chart.read(pkg, info) for info in kinds.get(CHART_TYPE, [])]
        self.chart_units: list[int] = []  # where each chart's paragraphs' units start
        literals: set[str] = set()
        for chart in self.charts:
            self.chart_units.append(len(self.units))
            self.units += [para.unit for para in chart.paras]
            for item in chart.cached:
                if not item.ref and item.unit.text not in literals:
                    literals.add(item.unit.text)
                    self.units.append(item.unit)

    def render(self, translations: Sequence[str], target_lang: str | None) -> Rendered:
        if len(translations) != len(self.units):
            raise DocumentError(
                f"{len(translations)} translations for the {len(self.units)} units of this "
                "XLSX workbook"
            )
        it = iter(translations)
        rewritten: dict[str, bytes] = {}
        for part in self.parts:
            pieces: list[bytes] = []
            pos = 0
            for slot in part.slots:
                translation = next(it)
                if translation == slot.unit.text:
                    continue
                pieces.append(part.data[pos : slot.start])
                pieces.append(_rebuild(slot, translation).encode("utf-8", "surrogatepass"))
                pos = slot.end
            if pieces:
                pieces.append(part.data[pos:])
                rewritten[part.info.filename] = b"".join(pieces)
        if self.charts:
            by_text: dict[str, str] = {}
            for unit, translation in zip(self.units, translations, strict=True):
                by_text.setdefault(unit.text, translation)
            for chart, start in zip(self.charts, self.chart_units, strict=True):
                paras = translations[start : start + len(chart.paras)]
                cached = [by_text.get(item.unit.text) for item in chart.cached]
                data = chart.render(paras, cached)
                if data is not None:
                    rewritten[chart.info.filename] = data
        if not rewritten:
            return Rendered(self.content)
        return Rendered(self.pkg.write(rewritten))


class XlsxFormat(PackageFormat):
    name: ClassVar[str] = "xlsx"
    extensions: ClassVar[tuple[str, ...]] = (".xlsx", ".xlsm")
    media_type: ClassVar[str] = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

    def read(self, content: bytes) -> _Workbook:
        return _Workbook(content)


register(XlsxFormat())
