"""PPTX (PowerPoint 2007+; a slide show, template or macro-enabled package is read the same
way): every DrawingML paragraph ``<a:p>`` with text is a unit.

Covered, in this order for each slide of the presentation (``ppt/presentation.xml``'s
``sldIdLst``, through its relationships): the slide (every shape, placeholder, table cell and
group shape: every ``<a:p>`` of the part), the SmartArt it shows (the diagram data part, then
the diagram's drawing cache, see below), then its notes page. Slides, notes pages and diagram
parts no slide refers to follow in name order. Not covered (their text stays as is): slide
layouts and masters (their placeholder prompts are not shown in a slide show; the text a
slide shows is on the slide), charts (their titles and ``c:v`` category strings live in
spreadsheet-like caches beside an embedded workbook: changing one without the other is undone
by the first edit), comments, alternative text (``descr``), embedded objects and document
properties.

SmartArt keeps its text twice: in the diagram data (``ppt/diagrams/data*.xml``, what PowerPoint
lays the diagram out from when it is edited) and in the drawing cache
(``ppt/diagrams/drawing*.xml``, what it shows until then). Both are translated so that what is
shown matches what the data would give. A paragraph of a drawing cache is an *echo*: when its
unit text (tags included, hence the same codes in the same places) equals that of a paragraph
translated elsewhere (the data), it takes that paragraph's translation, restored with its own
codes (the cache's runs carry a computed size), and is not a unit of its own, so the engine
never sees it twice. A cache paragraph that matches nothing (the layout split it, or the cache
is stale) is a unit of its own: duplicates are cheaper than a cache that shows the wrong text.
The paragraphs of an ``mc:Fallback`` (the copy of an ``mc:Choice`` for older readers) are
echoes the same way.

Inside a paragraph:

* text in the paragraph's own formatting is plain text: the formatting most of its text has
  (the first such on a tie; runs with a hyperlink count only when all runs have one), so
  "**Definition** *(from Wikipedia)* - Reflection is …" is ``<g1>Definition</g1>
  <g2>(from Wikipedia)</g2> - Reflection is …``; a stretch of adjacent runs with another
  formatting is a paired tag ``<gN>…</gN>``. A run's formatting is its ``<a:rPr>``, without
  the attributes PowerPoint recomputes and nobody sees: ``lang``, ``altLang`` (the proofing
  language), ``dirty``, ``err`` (the spelling checker's state), ``smtClean``, ``smtId``
  (smart tags) and ``bmk``; so runs that differ only there (typically a word typed with
  another keyboard language, or one marked misspelt) are plain text. ``noProof`` is kept:
  it is someone's choice (code, a product name) and survives into the translation;
* a hyperlink lives in its run's ``<a:rPr>`` (``a:hlinkClick``, ``a:hlinkMouseOver``): a run
  with a link is therefore a paired tag whose rebuilt run keeps the link;
* tabs (a ``\t`` in a run's text) are standalone tags ``<xN/>`` too, written back as text
  in the run where the tag lands;
* line breaks ``<a:br/>``, fields ``<a:fld>`` (slide number, date: kept whole, their cached
  text is not translated) and anything else that is not a text run (``mc:AlternateContent``
  math...) are standalone tags ``<xN/>``: each goes back in place, never copied, never lost;
* ``<a:pPr>`` (paragraph properties) and ``<a:endParaRPr>`` (the formatting of the paragraph
  mark) are no tags: they stay where they are. Runs without text are dropped from a rebuilt
  paragraph.

``render`` rebuilds a unit's runs from its tagged translation: untagged text becomes a run with
the base run's formatting, a ``<gN>`` span one with that stretch's formatting (the innermost
span wins when the engine nests them), and every standalone code's element is moved back. A
rebuilt run drops ``dirty`` and ``err`` (its text is new: PowerPoint proofs it again); with
``target_lang`` (a BCP 47 tag such as ``fr`` or ``pt-BR``; anything else is not written) the
rebuilt paragraph's runs, breaks and paragraph mark get ``lang="<target>"``. A paragraph whose
translation is its own unit text is not touched (unless the language is written), and a part
with no rebuilt paragraph keeps its bytes. Only the parts holding rebuilt paragraphs are
re-serialized; every other ZIP member is copied byte for byte with its name, order, timestamp
and compression (:mod:`mtfleet.core.documents.ooxml`, which also refuses ZIP bombs).

The round-trip contract: ``render(content, [u.text for u in extract(content)])`` gives every
ZIP member byte-equal. When the paragraphs are rebuilt (a target language, or a translation)
the rebuilt parts are tree-equal to the originals once the recomputed attributes above are set
aside, adjacent runs of equal formatting merged and runs without text dropped (and the
indentation of hand-formatted XML between a rebuilt paragraph's runs, which PowerPoint ignores).

Why not python-pptx at run time: its ``save`` re-serializes every part it loaded, it does not
reach SmartArt, and its text API flattens runs. The parts are parsed with the hardened lxml
parser of :mod:`mtfleet.core.documents.xliff` (no DTD, no entities, no network).
"""

from __future__ import annotations

import copy
import posixpath
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import unquote

from lxml import etree

from mtfleet.core.documents import register
from mtfleet.core.documents.base import DocumentError, DocumentFormat, Unit, UnitBuilder
from mtfleet.core.documents.ooxml import MAX_PART_BYTES, Package, natural
from mtfleet.core.documents.xliff import (
    parse_untrusted_xml,
    restore_markers,
    serialize,
    to_bytes,
    walk_markers,
)

A = "http://schemas.openxmlformats.org/drawingml/2006/main"
_MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
_PML = "http://schemas.openxmlformats.org/presentationml/2006/main"
_R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_RELS_NS = "http://schemas.openxmlformats.org/package/2006/relationships"

_PRESENTATION_TYPES = tuple(
    f"application/vnd.openxmlformats-officedocument.presentationml.{kind}.main+xml"
    for kind in ("presentation", "slideshow", "template")
) + tuple(
    f"application/vnd.ms-powerpoint.{kind}.macroEnabled.main+xml"
    for kind in ("presentation", "slideshow", "template", "addin")
)
_SLIDE = "application/vnd.openxmlformats-officedocument.presentationml.slide+xml"
_NOTES = "application/vnd.openxmlformats-officedocument.presentationml.notesSlide+xml"
_DATA = "application/vnd.openxmlformats-officedocument.drawingml.diagramData+xml"
_DRAWING = "application/vnd.ms-office.drawingml.diagramDrawing+xml"

# relationship types by their last segment (the 2006 and Microsoft namespaces alike)
_REL_SLIDE, _REL_NOTES = "slide", "notesSlide"
_REL_DATA, _REL_DRAWING = "diagramData", "diagramDrawing"


def _a(local: str) -> str:
    return f"{{{A}}}{local}"


_P, _R, _T, _RPR, _PPR, _END = (_a(n) for n in ("p", "r", "t", "rPr", "pPr", "endParaRPr"))
_BR = _a("br")
_LINKS = {_a("hlinkClick"), _a("hlinkMouseOver")}
_FALLBACK = f"{{{_MC}}}Fallback"
#: ``a:rPr`` attributes PowerPoint recomputes (proofing language, spelling and smart-tag
#: state, bookmarks): not part of a run's formatting.
_IGNORED = frozenset({"lang", "altLang", "dirty", "err", "smtClean", "smtId", "bmk"})
#: Dropped from the runs of a rebuilt paragraph: their text is new, proofing starts over.
_STALE = ("dirty", "err")
_LANG = re.compile(r"[A-Za-z]{2,8}(?:-[A-Za-z0-9]{1,8})*")


# --- extraction ---------------------------------------------------------------------------------


def _key(run: Any) -> bytes:
    """A run's formatting: its rPr without the attributes of :data:`_IGNORED`."""
    rpr = run.find(_RPR)
    if rpr is None:
        return b"[]"
    attrs = sorted((k, v) for k, v in rpr.attrib.items() if k not in _IGNORED)
    return repr(attrs).encode() + b"".join(etree.tostring(c, with_tail=False) for c in rpr)


def _linked(run: Any) -> bool:
    rpr = run.find(_RPR)
    return rpr is not None and any(c.tag in _LINKS for c in rpr)


def _text_run(child: Any) -> bool:
    """A run holding only its formatting and text (what the schema allows) with some text."""
    return (
        child.tag == _R
        and all(c.tag in (_RPR, _T) for c in child)
        and bool("".join(t.text or "" for t in child.iter(_T)))
    )


def _base_run(runs: list[Any]) -> Any:
    """The run whose formatting is the paragraph's: of the formatting most of its text has
    (the first one on a tie), links apart unless all of it is linked."""
    plain = [r for r in runs if not _linked(r)] or runs
    chars: dict[bytes, int] = {}
    first: dict[bytes, Any] = {}
    for run in plain:
        key = _key(run)
        chars[key] = chars.get(key, 0) + sum(len(t.text or "") for t in run.iter(_T))
        first.setdefault(key, run)
    return first[max(chars, key=lambda k: chars[k])] if chars else None


@dataclass
class _Para:
    element: Any
    unit: Unit
    base: Any  # the run whose formatting untagged text takes
    refs: dict[int, Any]  # code number -> a run (a <gN> span) or a list of elements (<xN/>)
    empty: bool
    echo: bool  # in a diagram drawing cache or an mc:Fallback


def _read_paragraph(p: Any, path: str, echo: bool) -> _Para:
    b = UnitBuilder(path)
    refs: dict[int, Any] = {}
    base = _base_run([c for c in p if _text_run(c)])
    base_key = _key(base) if base is not None else None
    span: bytes | None = None  # formatting of the open span
    for child in p:
        if child.tag in (_PPR, _END):
            continue
        if child.tag == _R and all(c.tag in (_RPR, _T) for c in child):
            text = "".join(t.text or "" for t in child.iter(_T))
            if not text:
                continue  # a run without text: nothing to keep
            key = _key(child)
            if key == base_key:
                if span is not None:
                    b.close()
                    span = None
            elif key != span:
                if span is not None:
                    b.close()
                rpr = child.find(_RPR)
                n = b.open(f"<a:r>{serialize(rpr) if rpr is not None else ''}", "</a:r>")
                refs[n] = child
                span = key
            for i, piece in enumerate(text.split("\t")):
                if i:  # a tab lays out columns: a code, so the engine cannot drop it
                    b.standalone("\t")
                b.text(piece)
        else:  # a:br, a:fld, mc:AlternateContent, a comment...
            refs[b.standalone(serialize(child))] = [child]
    unit = b.build()
    return _Para(p, unit, base, refs, b.empty, echo)


# --- rebuilding ---------------------------------------------------------------------------------


class _ParagraphWriter:
    """Rebuilds one paragraph's runs from a translation restored with its codes."""

    def __init__(self, para: _Para, translation: str, lang: str | None) -> None:
        self.para = para
        self.lang = lang
        p = para.element
        self.end = p.find(_END)
        for child in list(p):
            if child.tag not in (_PPR, _END):
                p.remove(child)
        self.spans: list[Any] = []  # the runs of the open <gN> spans, innermost last
        self.run: Any = None  # the run text may join: (its source run, its a:t)
        self.t: Any = None
        tree, _warnings = restore_markers(translation, para.unit.codes)
        walk_markers(tree, self.text, self.standalone, self.open, self.close)
        if lang is not None:
            for child in p:
                rpr = child if child.tag == _END else child.find(_RPR) if child.tag == _BR else None
                if rpr is not None:
                    rpr.set("lang", lang)

    def _add(self, el: Any) -> None:
        if self.end is not None:
            self.end.addprevious(el)
        else:
            self.para.element.append(el)

    def text(self, s: str) -> None:
        source = self.spans[-1] if self.spans else self.para.base
        if self.run is not source:
            out = etree.Element(_R, dict(source.attrib))
            rpr = source.find(_RPR)
            rpr = copy.deepcopy(rpr) if rpr is not None else etree.Element(_RPR)
            for name in _STALE:
                rpr.attrib.pop(name, None)
            if self.lang is not None:
                rpr.set("lang", self.lang)
            if len(rpr) or rpr.attrib:
                out.append(rpr)
            self.t = etree.SubElement(out, _T)
            self._add(out)
            self.run = source
        self.t.text = (self.t.text or "") + s

    def standalone(self, n: int) -> None:
        items = self.para.refs.get(n)
        if not isinstance(items, list):  # a tab, or literal tag-like text: text again
            self.text(self.para.unit.codes[n].start)
            return
        self.run = None
        for el in items:
            el.tail = None
            self._add(el)

    def open(self, n: int) -> None:
        self.spans.append(self.para.refs[n])

    def close(self, n: int) -> None:
        self.spans.pop()


# --- the package --------------------------------------------------------------------------------


@dataclass
class _Part:
    info: zipfile.ZipInfo
    data: bytes
    root: Any
    paras: list[_Para] = field(default_factory=list)


def _relationships(pkg: Package, info: zipfile.ZipInfo) -> list[tuple[str, str, str]]:
    """``(id, type's last segment, target member name)`` of a part's internal
    relationships, in their order."""
    folder, name = posixpath.split(info.filename)
    rels = pkg.member(posixpath.join(folder, "_rels", f"{name}.rels"))
    if rels is None:
        return []
    root = parse_untrusted_xml(pkg.read(rels, MAX_PART_BYTES), f"the PPTX part {rels.filename}")
    out = []
    for rel in root.iter(f"{{{_RELS_NS}}}Relationship"):
        target = unquote(str(rel.get("Target", "")))
        if rel.get("TargetMode") == "External" or not target:
            continue
        path = target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target)
        out.append(
            (
                str(rel.get("Id", "")),
                str(rel.get("Type", "")).rsplit("/", 1)[-1],
                posixpath.normpath(path),
            )
        )
    return out


def _text_parts(pkg: Package) -> list[tuple[zipfile.ZipInfo, bool]]:
    """The parts whose paragraphs are read, in reading order, each with whether it is a
    diagram drawing cache (its paragraphs are echoes)."""
    kinds = pkg.parts_by_type()
    main = [i for t in _PRESENTATION_TYPES for i in kinds.get(t, [])]
    if not main:
        raise DocumentError(
            "a ZIP archive but not a PowerPoint presentation: no presentation part "
            "(is it a Word document, a spreadsheet or an ODF file?)"
        )
    order: list[tuple[zipfile.ZipInfo, bool]] = []
    seen: set[str] = set()

    def add(info: zipfile.ZipInfo | None, drawing: bool) -> bool:
        if info is None or info.filename in seen:
            return False
        seen.add(info.filename)
        order.append((info, drawing))
        return True

    presentation = main[0]
    rels = {rid: (kind, target) for rid, kind, target in _relationships(pkg, presentation)}
    _data, root = pkg.parse(presentation)
    slides = []
    for sld in root.iter(f"{{{_PML}}}sldId"):
        kind, target = rels.get(str(sld.get(f"{{{_R_NS}}}id", "")), ("", ""))
        if kind == _REL_SLIDE:
            slides.append(pkg.member(target))
    slides += kinds.get(_SLIDE, [])
    for slide in slides:
        if slide is None or not add(slide, False):
            continue
        slide_rels = _relationships(pkg, slide)
        for kinds_wanted, drawing in (((_REL_DATA,), False), ((_REL_DRAWING,), True)):
            targets = sorted((t for _id, k, t in slide_rels if k in kinds_wanted), key=natural)
            for target in targets:
                add(pkg.member(target), drawing)
        for _id, kind, target in slide_rels:
            if kind == _REL_NOTES:
                add(pkg.member(target), False)
    for content_type, drawing in ((_NOTES, False), (_DATA, False), (_DRAWING, True)):
        for info in kinds.get(content_type, []):
            add(info, drawing)
    return order


def _read_package(content: bytes) -> tuple[Package, list[_Part], list[_Para]]:
    """The package, its parts with their paragraphs, and the paragraphs that are units (in
    order); every echo paragraph that is no unit is mapped in ``echoes``."""
    pkg = Package(content, "PPTX")
    parts = []
    for info, drawing in _text_parts(pkg):
        data, root = pkg.parse(info)
        part = _Part(info, data, root)
        for i, p in enumerate(root.iter(_P)):
            echo = drawing or any(a.tag == _FALLBACK for a in p.iterancestors())
            part.paras.append(_read_paragraph(p, f"{info.filename}#p{i + 1}", echo))
        parts.append(part)
    return pkg, parts, _units(parts)


def _units(parts: list[_Part]) -> list[_Para]:
    """The paragraphs sent as units: every paragraph with text that is no echo, then (in
    their places) the echoes whose text no other paragraph has."""
    primary = {
        para.unit.text for part in parts for para in part.paras if not para.empty and not para.echo
    }
    seen: set[str] = set()
    units = []
    for part in parts:
        for para in part.paras:
            if para.empty:
                continue
            if para.echo and (para.unit.text in primary or para.unit.text in seen):
                continue
            if para.echo:
                seen.add(para.unit.text)
            units.append(para)
    return units


def _target_lang(lang: str | None) -> str | None:
    if lang is None:
        return None
    lang = lang.strip().replace("_", "-")
    return lang if _LANG.fullmatch(lang) else None


class PptxFormat(DocumentFormat):
    name: ClassVar[str] = "pptx"
    extensions: ClassVar[tuple[str, ...]] = (".pptx",)
    binary: ClassVar[bool] = True
    media_type: ClassVar[str] = (
        "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    )

    def extract(self, content: bytes) -> list[Unit]:
        _pkg, _parts, units = _read_package(content)
        return [para.unit for para in units]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        pkg, parts, units = _read_package(content)
        if len(translations) != len(units):
            raise DocumentError(
                f"{len(translations)} translations for the {len(units)} units of this "
                "PPTX presentation"
            )
        lang = _target_lang(target_lang)
        by_text: dict[str, str] = {}
        for para, translation in zip(units, translations, strict=True):
            by_text.setdefault(para.unit.text, translation)
        mine = {id(para): t for para, t in zip(units, translations, strict=True)}
        rewritten: dict[str, bytes] = {}
        for part in parts:
            changed = False
            for para in part.paras:
                if para.empty:
                    continue
                own = mine.get(id(para))
                # an echo that is no unit takes the translation of the paragraph it repeats
                translation = own if own is not None else by_text[para.unit.text]
                if translation != para.unit.text:  # an unchanged paragraph keeps its bytes
                    _ParagraphWriter(para, translation, lang)
                    changed = True
            if changed:
                rewritten[part.info.filename] = to_bytes(part.root, part.data)
        return pkg.write(rewritten)


register(PptxFormat())
