"""DOCX (Word 2007+; a macro-enabled or template package is read the same way): every
paragraph with text is a unit.

Covered: the main document (body, tables and nested tables, block-level content controls, text
boxes: the DrawingML one and its VML fallback, each a unit), every header and footer,
footnotes, endnotes and comments (``word/comments.xml``: each paragraph of a comment is a
unit, read like the body's; a reviewer reads the document's comments in its language, as an
XLSX workbook's comments are translated). Not covered (their text stays as is): charts,
SmartArt, embedded objects, the text of inline content controls and of field results, the
authors' names and initials of comments.

Comments stay where they are anchored: the marks in the text (``w:commentRangeStart``,
``w:commentRangeEnd``, the run holding ``w:commentReference``) and a comment's own mark
(``w:annotationRef``) are standalone codes that go back in place, and a comment keeps its
``w:id``. Its replies and resolved state (``word/commentsExtended.xml`` and the parts beside
it) name a comment's last paragraph by its ``w14:paraId``, an attribute of the paragraph that
a rebuilt paragraph keeps: they are metadata, copied byte for byte.

Inside a paragraph:

* text in the formatting of the paragraph's first text run is plain text; a stretch of runs
  with other formatting (the run's ``<w:rPr>`` is its identity; adjacent runs with equal rPr are
  one stretch) is a paired tag ``<gN>…</gN>``;
* a hyperlink (its relationship id or anchor kept), tracked insertion, smart tag or custom XML
  element is a paired tag around its runs;
* tabs, breaks, symbols, images/drawings, footnote references, bookmarks, whole fields (from
  ``fldChar begin`` to ``end``, with their result) and anything else that is not text is a
  standalone tag ``<xN/>``: it goes back in place, never copied, never lost;
* proofing marks (``w:proofErr``), ``w:lastRenderedPageBreak`` and runs with no content are
  hints Word recomputes or nothing at all: they are dropped from paragraphs that are rebuilt.

``render`` rebuilds each unit's runs from the tagged translation: a ``<gN>`` span becomes a run
with that stretch's formatting, untagged text a run with the paragraph's first run's
formatting, and every standalone code's original elements are moved back. Only the XML parts
holding units are rewritten; every other ZIP member is copied byte for byte with its name,
order, timestamp and compression.

The round-trip contract (DOCX bytes are not stable: the ZIP is written anew): after
``render(content, [u.text for u in extract(content)])`` the rewritten parts are tree-equal to
the originals and all other members byte-equal, for paragraphs whose adjacent runs differ in
formatting; runs that Word split for revision tracking (same ``rPr``, different ``w:rsid*``)
come back merged, with the proofing marks gone (and the indentation of hand-formatted XML
between a rebuilt paragraph's runs, which Word ignores).

Why not python-docx at run time: its ``save`` re-serializes every XML part it loaded and its
parser drops whitespace-only text nodes, so "other members byte-equal" could not hold, and it
reaches neither footnotes nor text boxes. The parts are read with the same hardened lxml
parser as XLIFF (no DTD, no entities, no network), and the archive is checked against the
limits of :mod:`mtfleet.formats.ooxml` before anything is decompressed (ZIP
bombs).
"""

from __future__ import annotations

import copy
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from lxml import etree

from mtfleet.formats import register
from mtfleet.formats.base import DocumentError, Rendered, Unit, UnitBuilder
from mtfleet.formats.ooxml import Package, PackageFormat
from mtfleet.formats.xliff import (
    close_tag,
    open_tag,
    restore_markers,
    serialize,
    to_bytes,
    walk_markers,
)

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"

#: Content types of the parts whose paragraphs are units, in the order they are read.
_MAIN_TYPES = (
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",
    "application/vnd.ms-word.document.macroEnabled.main+xml",
    "application/vnd.ms-word.template.macroEnabledTemplate.main+xml",
)
_OTHER_TYPES = tuple(
    f"application/vnd.openxmlformats-officedocument.wordprocessingml.{kind}+xml"
    for kind in ("header", "footer", "footnotes", "endnotes", "comments")
)


def _w(local: str) -> str:
    return f"{{{W}}}{local}"


_P, _R, _T, _RPR, _PPR = _w("p"), _w("r"), _w("t"), _w("rPr"), _w("pPr")
_FLDCHAR = _w("fldChar")
#: Paragraph-level elements whose runs are translatable text: a paired tag around them.
_CONTAINERS = {_w(n) for n in ("hyperlink", "ins", "moveTo", "smartTag", "customXml", "dir", "bdo")}
#: Layout hints dropped from rebuilt paragraphs.
_DROPPED = {_w("proofErr"), _w("lastRenderedPageBreak")}


# --- extraction ---------------------------------------------------------------------------------


@dataclass
class _Span:
    """A stretch of runs with one formatting: ``run`` lends its rPr and attributes."""

    run: Any


@dataclass
class _Container:
    """A hyperlink (or another container): ``element`` is cloned without its runs; ``run`` is
    its first text run, whose formatting untagged text inside it takes (None: the outer one)."""

    element: Any
    run: Any


@dataclass
class _Standalone:
    """What a standalone code stands for, in order: ``(run, child)`` (a run's child, put back
    in a run formatted like ``run``) or ``(None, element)`` (a paragraph-level element)."""

    items: list[tuple[Any, Any]]


@dataclass
class _Para:
    element: Any
    unit: Unit
    base: Any  # the first text run: untagged text takes its formatting
    refs: dict[int, _Span | _Container | _Standalone] = field(default_factory=dict)
    empty: bool = False
    text_runs: set[Any] = field(default_factory=set)  # runs some of whose text is unit text


def _key(run: Any) -> bytes:
    rpr = run.find(_RPR)
    return b"" if rpr is None else bytes(etree.tostring(rpr))


class _ParagraphReader:
    """Walks one paragraph into a unit (see the module docstring for what becomes what)."""

    def __init__(self, p: Any, path: str) -> None:
        self.b = UnitBuilder(path)
        self.refs: dict[int, _Span | _Container | _Standalone] = {}
        self.base: Any = None
        # per container level: the formatting untagged text has there (None: not seen yet; the
        # level's first text run sets it) and the container code it belongs to (0: paragraph)
        self.bases: list[tuple[bytes | None, int]] = [(None, 0)]
        self.span: bytes | None = None  # formatting of the open <gN> span, if any
        self.field: list[tuple[Any, Any]] | None = None  # items of an open complex field
        self.text_runs: set[Any] = set()
        self.depth = 0
        self._children(p)
        self._close_span()
        self._end_field()
        if self.base is None:  # all its text is inside links: text moved out of them takes theirs
            self.base = next(
                (
                    r.run
                    for r in self.refs.values()
                    if not isinstance(r, _Standalone) and r.run is not None
                ),
                None,
            )
        self.para = _Para(p, self.b.build(), self.base, self.refs, self.b.empty, self.text_runs)

    def _children(self, parent: Any) -> None:
        for child in parent:
            tag = child.tag
            if tag == _PPR or tag in _DROPPED:
                continue
            if self.field is not None:
                if tag == _R:
                    self._run(child)
                else:
                    self.field.append((None, child))
            elif tag == _R:
                self._run(child)
            elif tag in _CONTAINERS:
                self._container(child)
            elif isinstance(tag, str) and tag.startswith(f"{{{W}}}") and tag.endswith("Pr"):
                continue  # a container's own properties (smartTagPr...): kept with its clone
            else:
                self._standalone([(None, child)])

    def _container(self, el: Any) -> None:
        self._close_span()
        n = self.b.open(open_tag(el), close_tag(el))
        self.refs[n] = _Container(el, None)
        self.bases.append((None, n))
        self._children(el)
        self._close_span()
        self.bases.pop()
        self.b.close()

    def _run(self, run: Any) -> None:
        for child in run:
            tag = child.tag
            if tag == _RPR or tag in _DROPPED:
                continue
            if self.field is not None:
                self.field.append((run, child))
                if tag == _FLDCHAR:
                    kind = child.get(_w("fldCharType"))
                    self.depth += {"begin": 1, "end": -1}.get(kind, 0)
                    if self.depth == 0:
                        self._end_field()
            elif tag == _FLDCHAR and child.get(_w("fldCharType")) == "begin":
                self.field, self.depth = [(run, child)], 1
            elif tag == _T:
                if child.text:
                    self._format(run)
                    self.b.text(child.text)
                    self.text_runs.add(run)
            else:
                self._standalone([(run, child)])

    def _format(self, run: Any) -> None:
        key = _key(run)
        base, owner = self.bases[-1]
        if base is None:  # the first text of this level: its formatting is the level's
            base = key
            self.bases[-1] = (key, owner)
            container = self.refs.get(owner)
            if isinstance(container, _Container):
                container.run = run
            elif self.base is None:
                self.base = run
        if key == base:
            self._close_span()
        elif key != self.span:
            self._close_span()
            rpr = run.find(_RPR)
            n = self.b.open(f"<w:r>{serialize(rpr) if rpr is not None else ''}", "</w:r>")
            self.refs[n] = _Span(run)
            self.span = key

    def _close_span(self) -> None:
        if self.span is not None:
            self.b.close()
            self.span = None

    def _standalone(self, items: list[tuple[Any, Any]]) -> None:
        n = self.b.standalone("".join(serialize(el) for _run, el in items))
        self.refs[n] = _Standalone(items)

    def _end_field(self) -> None:
        if self.field:
            self._standalone(self.field)
        self.field, self.depth = None, 0


# --- rebuilding ---------------------------------------------------------------------------------


@dataclass
class _OutRun:
    source: Any  # the original run it copies attributes and rPr from
    out: Any
    key: bytes
    text: bool  # whether following text may join it
    last_t: Any = None


@dataclass
class _Frame:
    ref: _Span | _Container
    out: Any = None  # a container's element in the output
    parent: Any = None  # where that element sits
    suspends: int | None = None  # index of the same-kind container frame it was put beside


class _ParagraphWriter:
    """Rebuilds one paragraph's runs from a restored marker tree."""

    def __init__(self, para: _Para, translation: str) -> None:
        self.para = para
        p = para.element
        for child in list(p):
            if child.tag != _PPR:
                p.remove(child)
        self.frames: list[_Frame] = []
        self.run: _OutRun | None = None  # the run being written, if text may still join it
        self.keys: dict[Any, bytes] = {}
        self.texts: list[Any] = []  # the w:t elements written
        tree, _warnings = restore_markers(translation, para.unit.codes)
        walk_markers(tree, self.text, self.standalone, self.open, self.close)
        for t in self.texts:  # as Word and python-docx do: only where spaces need it
            if t.text != t.text.strip():
                t.set(_XML_SPACE, "preserve")

    def _container_out(self) -> Any:
        for frame in reversed(self.frames):
            if isinstance(frame.ref, _Container):
                return frame.out
        return self.para.element

    def _format_run(self) -> Any:
        for frame in reversed(self.frames):
            if isinstance(frame.ref, _Span):
                return frame.ref.run
            if frame.ref.run is not None:
                return frame.ref.run
        return self.para.base

    def _key(self, run: Any) -> bytes:
        key = self.keys.get(run)
        if key is None:
            key = self.keys[run] = _key(run)
        return key

    def _out_run(self, source: Any, *, joins: bool, takes_text: bool) -> _OutRun:
        """The output run for content formatted like ``source``: the current one when it is
        ``source``'s own copy, or when ``joins`` and it has the same formatting and takes text;
        else a new run copying ``source``'s attributes and rPr."""
        parent = self._container_out()
        cur = self.run
        if (
            cur is not None
            and len(parent)
            and parent[-1] is cur.out
            and (cur.source is source or (joins and cur.text and cur.key == self._key(source)))
        ):
            return cur
        out = etree.SubElement(parent, _R, dict(source.attrib))
        rpr = source.find(_RPR)
        if rpr is not None:
            out.append(copy.deepcopy(rpr))
        self.run = _OutRun(source, out, self._key(source), takes_text)
        return self.run

    def text(self, s: str) -> None:
        run = self._out_run(self._format_run(), joins=True, takes_text=True)
        last = run.out[-1] if len(run.out) else None
        if last is None or last is not run.last_t:
            last = run.last_t = etree.SubElement(run.out, _T)
            self.texts.append(last)
        last.text = (last.text or "") + s

    def standalone(self, n: int) -> None:
        ref = self.para.refs.get(n)
        if not isinstance(ref, _Standalone):  # literal tag-like text the builder protected
            self.text(self.para.unit.codes[n].start)
            return
        for run, el in ref.items:
            el.tail = None
            if run is None:
                self.run = None
                self._container_out().append(el)
            else:
                # a tab or break that sat among its run's text stays in a run with text; an
                # image or field in a run of its own keeps a run of its own
                inline = run in self.para.text_runs
                self._out_run(run, joins=inline, takes_text=inline).out.append(el)

    def open(self, n: int) -> None:
        ref = self.para.refs[n]
        assert isinstance(ref, _Span | _Container)
        frame = _Frame(ref)
        if isinstance(ref, _Container):
            self.run = None
            same = [
                i
                for i, f in enumerate(self.frames)
                if isinstance(f.ref, _Container) and f.ref.element.tag == ref.element.tag
            ]
            # a container never nests in its own kind (a link in a link): it goes beside the
            # outer one, which continues in a fresh clone once it is closed
            frame.suspends = same[0] if same else None
            frame.parent = self.frames[same[0]].parent if same else self._container_out()
            frame.out = self._clone(ref.element, frame.parent)
        self.frames.append(frame)

    def close(self, n: int) -> None:
        frame = self.frames.pop()
        if not isinstance(frame.ref, _Container):
            return
        self.run = None
        if frame.suspends is not None:
            parent = frame.parent
            for f in self.frames[frame.suspends :]:
                if isinstance(f.ref, _Container):
                    f.parent, f.out = parent, self._clone(f.ref.element, parent)
                    parent = f.out

    @staticmethod
    def _clone(el: Any, parent: Any) -> Any:
        out = etree.SubElement(parent, el.tag, dict(el.attrib))
        for child in el:
            if isinstance(child.tag, str) and child.tag.endswith("Pr") and child.tag != _RPR:
                out.append(copy.deepcopy(child))
        return out


# --- the package --------------------------------------------------------------------------------


def _text_parts(pkg: Package) -> list[zipfile.ZipInfo]:
    """The parts whose paragraphs are units: the main document, then headers, footers,
    footnotes, endnotes and comments (each kind in name order)."""
    kinds = pkg.parts_by_type()
    main = [i for t in _MAIN_TYPES for i in kinds.get(t, [])]
    if not main:
        raise DocumentError(
            "a ZIP archive but not a Word document: no main document part "
            "(is it a spreadsheet, a presentation or an ODF file?)"
        )
    return main[:1] + [i for t in _OTHER_TYPES for i in kinds.get(t, [])]


@dataclass
class _Part:
    info: zipfile.ZipInfo
    data: bytes
    root: Any
    paras: list[_Para]


class _Document:
    """A Word document read once: its parts, their paragraphs, and its units."""

    def __init__(self, content: bytes) -> None:
        self.pkg = Package(content, "DOCX")
        self.parts = []
        for info in _text_parts(self.pkg):
            data, root = self.pkg.parse(info)
            paras = [
                _ParagraphReader(p, f"{info.filename}#p{i + 1}").para
                for i, p in enumerate(root.iter(_P))
            ]
            self.parts.append(_Part(info, data, root, paras))
        self.units = [para.unit for part in self.parts for para in part.paras if not para.empty]

    def render(self, translations: Sequence[str], target_lang: str | None) -> Rendered:
        if len(translations) != len(self.units):
            raise DocumentError(
                f"{len(translations)} translations for the {len(self.units)} units of this "
                "DOCX document"
            )
        it = iter(translations)
        rewritten: dict[str, bytes] = {}
        for part in self.parts:
            changed = False
            for para in part.paras:
                if para.empty:
                    continue
                translation = next(it)
                if translation != para.unit.text:  # an unchanged paragraph keeps its bytes
                    _ParagraphWriter(para, translation)
                    changed = True
            if changed:
                rewritten[part.info.filename] = to_bytes(part.root, part.data)
        return Rendered(self.pkg.write(rewritten))


class DocxFormat(PackageFormat):
    name: ClassVar[str] = "docx"
    extensions: ClassVar[tuple[str, ...]] = (".docx",)
    media_type: ClassVar[str] = (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    )

    def read(self, content: bytes) -> _Document:
        return _Document(content)


register(DocxFormat())
