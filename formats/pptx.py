"""PPTX (PowerPoint 2007+; a slide show, template or macro-enabled package is read the same
way): every DrawingML paragraph ``<a:p>`` with text is a unit.

Covered, in this order for each slide of the presentation (``ppt/presentation.xml``'s
``sldIdLst``, through its relationships): the slide (every shape, placeholder, table cell and
group shape: every ``<a:p>`` of the part), the SmartArt it shows (the diagram data part, then
the diagram's drawing cache, see below), its charts, then its notes page. Slides, notes pages,
diagram and chart parts no slide refers to follow in name order. Not covered (their text stays
as is): slide layouts and masters (their placeholder prompts are not shown in a slide show;
the text a slide shows is on the slide), comments, alternative text (``descr``), embedded
objects and document properties.

A chart (:mod:`mtfleet.formats.charts`) shows its title, axis titles and data labels
(paragraphs, units as a slide's are) and its series names and category labels from the
caches of its embedded workbook's cells (``ppt/embeddings/*.xlsx``). PowerPoint draws a chart
from those caches, so each cached string is translated (a unit the first time its text
appears in the deck; a category label repeated for every series is one unit). When the chart's
data is edited, PowerPoint reads the embedded workbook again and redraws from its cells, so
the workbook follows: every cell the XLSX format translates (:mod:`mtfleet.formats.xlsx`)
whose text is a translated cached string gets the same translation, and nothing else in it
changes. A translated string no such cell holds (a series name in a table's header row: the
XLSX format keeps table headers, which name the table's columns), or a chart whose data is an
external or binary (``.xls``) workbook, is named in a warning of the result: the chart shows
the translation until its data is edited.

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

A paragraph is a unit as :mod:`mtfleet.formats.drawingml` says (runs with their own
formatting and links as paired codes, breaks, fields and tabs as standalone ones).
``render`` rebuilds a unit's paragraph from its tagged translation (with ``target_lang``, its
runs name it in ``lang``). A paragraph whose translation is its own unit text is not touched
(unless the language is written), and a part with no rebuilt paragraph keeps its bytes. Only
the parts holding rebuilt paragraphs are re-serialized; every other ZIP member is copied byte
for byte with its name, order, timestamp and compression (:mod:`mtfleet.formats.ooxml`,
which also refuses ZIP bombs). The parts are parsed once for a job's result: the units and
the render come from the same reading (:meth:`PptxFormat.open`).

The round-trip contract: ``render(content, [u.text for u in extract(content)])`` gives every
ZIP member byte-equal. When the paragraphs are rebuilt (a target language, or a translation)
the rebuilt parts are tree-equal to the originals once the recomputed attributes above are set
aside, adjacent runs of equal formatting merged and runs without text dropped (and the
indentation of hand-formatted XML between a rebuilt paragraph's runs, which PowerPoint ignores).

Why not python-pptx at run time: its ``save`` re-serializes every part it loaded, it does not
reach SmartArt, and its text API flattens runs. The parts are parsed with the hardened lxml
parser of :mod:`mtfleet.formats.xliff` (no DTD, no entities, no network).
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mtfleet.formats import register
from mtfleet.formats.base import DocumentError, Rendered
from mtfleet.formats.charts import CHART_TYPE, Cached, Chart
from mtfleet.formats.drawingml import P, Para, ParagraphWriter, read_paragraph, target_lang
from mtfleet.formats.ooxml import Package, PackageFormat, natural
from mtfleet.formats.xliff import to_bytes
from mtfleet.formats.xlsx import XlsxFormat

_MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
_PML = "http://schemas.openxmlformats.org/presentationml/2006/main"
_R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"

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
_REL_SLIDE, _REL_NOTES, _REL_CHART = "slide", "notesSlide", "chart"
_REL_DATA, _REL_DRAWING, _REL_PACKAGE = "diagramData", "diagramDrawing", "package"
_FALLBACK = f"{{{_MC}}}Fallback"
#: How a part's paragraphs are read.
_TEXT, _ECHOES, _CHART = "text", "echoes", "chart"  # echoes: a diagram drawing cache


@dataclass
class _Part:
    info: zipfile.ZipInfo
    data: bytes
    root: Any
    paras: list[Para] = field(default_factory=list)
    chart: Chart | None = None


def _text_parts(pkg: Package) -> list[tuple[zipfile.ZipInfo, str]]:
    """The parts whose text is read, in reading order, each with how (:data:`_TEXT`,
    :data:`_ECHOES`, :data:`_CHART`)."""
    kinds = pkg.parts_by_type()
    main = [i for t in _PRESENTATION_TYPES for i in kinds.get(t, [])]
    if not main:
        raise DocumentError(
            "a ZIP archive but not a PowerPoint presentation: no presentation part "
            "(is it a Word document, a spreadsheet or an ODF file?)"
        )
    order: list[tuple[zipfile.ZipInfo, str]] = []
    seen: set[str] = set()

    def add(info: zipfile.ZipInfo | None, how: str) -> bool:
        if info is None or info.filename in seen:
            return False
        seen.add(info.filename)
        order.append((info, how))
        return True

    presentation = main[0]
    rels = {rid: (kind, target) for rid, kind, target in pkg.relationships(presentation)}
    _data, root = pkg.parse(presentation)
    slides = []
    for sld in root.iter(f"{{{_PML}}}sldId"):
        kind, target = rels.get(str(sld.get(f"{{{_R_NS}}}id", "")), ("", ""))
        if kind == _REL_SLIDE:
            slides.append(pkg.member(target))
    slides += kinds.get(_SLIDE, [])
    charts = {i.filename for i in kinds.get(CHART_TYPE, [])}
    for slide in slides:
        if slide is None or not add(slide, _TEXT):
            continue
        slide_rels = pkg.relationships(slide)
        for kind, how in ((_REL_DATA, _TEXT), (_REL_DRAWING, _ECHOES)):
            for target in sorted((t for _id, k, t in slide_rels if k == kind), key=natural):
                add(pkg.member(target), how)
        for _id, kind, target in slide_rels:
            member = pkg.member(target) if kind == _REL_CHART else None
            if member is not None and member.filename in charts:
                add(member, _CHART)
        for _id, kind, target in slide_rels:
            if kind == _REL_NOTES:
                add(pkg.member(target), _TEXT)
    for content_type, how in (
        (_NOTES, _TEXT),
        (_DATA, _TEXT),
        (_DRAWING, _ECHOES),
        (CHART_TYPE, _CHART),
    ):
        for info in kinds.get(content_type, []):
            add(info, how)
    return order


def _units(parts: list[_Part]) -> list[Para | Cached]:
    """What is sent as units: every paragraph with text that is no echo, then (in their
    places) the echoes whose text no other paragraph has; a chart's cached strings after its
    paragraphs, each text once in the deck."""
    primary = {
        para.unit.text for part in parts for para in part.paras if not para.empty and not para.echo
    }
    seen: set[str] = set()
    cached: set[str] = set()
    units: list[Para | Cached] = []
    for part in parts:
        for para in part.paras:
            if para.empty:
                continue
            if para.echo and (para.unit.text in primary or para.unit.text in seen):
                continue
            if para.echo:
                seen.add(para.unit.text)
            units.append(para)
        for item in part.chart.cached if part.chart is not None else ():
            if item.unit.text not in cached:
                cached.add(item.unit.text)
                units.append(item)
    return units


_WORKBOOK = XlsxFormat()


def _in_fallback(root: Any, data: bytes) -> set[Any]:
    """The paragraphs inside an ``mc:Fallback`` (echoes of their ``mc:Choice``)."""
    if b"Fallback" not in data:
        return set()
    return {p for fallback in root.iter(_FALLBACK) for p in fallback.iter(P)}


class _Deck:
    """A presentation read once: its parts, their paragraphs and charts, and its units."""

    def __init__(self, content: bytes) -> None:
        self.pkg = pkg = Package(content, "PPTX")
        self.parts: list[_Part] = []
        for info, how in _text_parts(pkg):
            if how == _CHART:
                chart = Chart.read(pkg, info)
                self.parts.append(_Part(info, chart.data, chart.root, chart.paras, chart))
                continue
            data, root = pkg.parse(info)
            part = _Part(info, data, root)
            fallback = _in_fallback(root, data)
            for i, p in enumerate(root.iter(P)):
                echo = how == _ECHOES or p in fallback
                part.paras.append(read_paragraph(p, f"{info.filename}#p{i + 1}", echo))
            self.parts.append(part)
        self.items = _units(self.parts)
        self.units = [item.unit for item in self.items]

    def render(self, translations: Sequence[str], lang_tag: str | None) -> Rendered:
        if len(translations) != len(self.items):
            raise DocumentError(
                f"{len(translations)} translations for the {len(self.items)} units of this "
                "PPTX presentation"
            )
        lang = target_lang(lang_tag)
        by_text: dict[str, str] = {}  # a paragraph's text: its translation (for echoes)
        strings: dict[str, str] = {}  # a cached string's text: its translation
        mine: dict[int, str] = {}
        for item, translation in zip(self.items, translations, strict=True):
            mine[id(item)] = translation
            (strings if isinstance(item, Cached) else by_text).setdefault(
                item.unit.text, translation
            )
        rewritten: dict[str, bytes] = {}
        follow: dict[str, dict[str, str]] = {}  # an embedded workbook: its charts' strings
        warnings: list[str] = []
        for part in self.parts:
            paras = [mine.get(id(para), by_text.get(para.unit.text)) for para in part.paras]
            if part.chart is not None:
                cached = [strings[item.unit.text] for item in part.chart.cached]
                data = part.chart.render(paras, cached, lang)
                warnings += self._workbook_of(part.chart, strings, follow)
            else:
                changed = False
                for para, done in zip(part.paras, paras, strict=True):
                    # an unchanged paragraph keeps its bytes
                    if not para.empty and done is not None and done != para.unit.text:
                        ParagraphWriter(para, done, lang)
                        changed = True
                data = to_bytes(part.root, part.data) if changed else None
            if data is not None:
                rewritten[part.info.filename] = data
        for name, wanted in follow.items():
            warnings += self._follow(name, wanted, rewritten)
        return Rendered(self.pkg.write(rewritten), warnings)

    def _workbook_of(
        self, chart: Chart, strings: dict[str, str], follow: dict[str, dict[str, str]]
    ) -> list[str]:
        """Note the translated copies of cells ``chart`` holds under its embedded workbook in
        ``follow``; a warning when it has none that can follow."""
        wanted = {
            item.unit.text: strings[item.unit.text]
            for item in chart.cached
            if item.ref and strings[item.unit.text] != item.unit.text
        }
        if not wanted:
            return []
        workbook = next(
            (
                self.pkg.member(target)
                for _id, kind, target in self.pkg.relationships(chart.info)
                if kind == _REL_PACKAGE
            ),
            None,
        )
        if workbook is None or not workbook.filename.lower().endswith((".xlsx", ".xlsm")):
            return [
                f"{chart.info.filename}: the chart's data is not an embedded XLSX workbook "
                "(an external or .xls one) and keeps the source text; the chart shows the "
                "translation until its data is edited in PowerPoint"
            ]
        follow.setdefault(workbook.filename, {}).update(wanted)
        return []

    def _follow(self, name: str, wanted: dict[str, str], rewritten: dict[str, bytes]) -> list[str]:
        """The embedded workbook ``name`` with each cell the XLSX format translates whose
        text is in ``wanted`` translated so (into ``rewritten``); a warning naming what could
        not follow."""
        info = self.pkg.member(name)
        assert info is not None
        content = self.pkg.read(info)
        try:
            book = _WORKBOOK.read(content)
            texts = [wanted.get(unit.text, unit.text) for unit in book.units]
            out = book.render(texts, None).content
        except DocumentError as exc:
            return [
                f"{name}: the embedded workbook of a chart cannot be read ({exc.message}) and "
                "keeps the source text; the chart shows the translation until its data is "
                "edited in PowerPoint"
            ]
        if out != content:
            rewritten[name] = out
        held = {unit.text for unit in book.units}
        missing = [text for text in wanted if text not in held]
        if not missing:
            return []
        shown = ", ".join(repr(text) for text in missing[:5]) + (" ..." if len(missing) > 5 else "")
        return [
            f"{name}: {shown} of a chart keep the source text in its embedded workbook (not "
            "a cell the workbook's translation changes, such as a table's header cell); the "
            "chart shows the translation until its data is edited in PowerPoint"
        ]


class PptxFormat(PackageFormat):
    name: ClassVar[str] = "pptx"
    extensions: ClassVar[tuple[str, ...]] = (".pptx",)
    media_type: ClassVar[str] = (
        "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    )

    def read(self, content: bytes) -> _Deck:
        return _Deck(content)


register(PptxFormat())
