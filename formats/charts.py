"""Charts: the DrawingML chart parts (``c:chartSpace``; ``xl/charts/chartN.xml`` in a
workbook, ``ppt/charts/chartN.xml`` in a deck), the text a chart shows.

A chart holds text of two kinds:

* **rich text**: its title, axis titles, data labels and display-unit labels written as
  ``c:rich`` DrawingML paragraphs: each paragraph with text is a unit, read and rebuilt as a
  slide's (:mod:`mtfleet.formats.drawingml`). Text properties (``c:txPr``) hold
  paragraphs without text: no units;
* **cached strings**: series names (``c:ser/c:tx``), category labels (``c:cat``) and a title
  taken from a cell, each a ``c:pt/c:v`` of a ``c:strCache`` or ``c:multiLvlStrCache`` (a
  copy of the cells its ``c:f`` names, kept so that a reader needs no spreadsheet) or a
  literal (``c:strLit``, a series name ``c:tx/c:v``). A string without a letter (a year, a
  number stored as text) is no text; numbers (``c:numCache``) never are.

What becomes of a cached string depends on where its cells are, which the format holding the
chart knows: :class:`Chart` reads both kinds, says which strings are copies of cells
(:attr:`Cached.ref`), and :meth:`Chart.render` writes the translations it is given
(``None``: the string keeps its text). A cached string keeps its text as plain text (the
engine's tags, if any, are dropped); the paragraphs are rebuilt as in a slide.

Not read: Office 2016's chart parts (``cx:chartSpace``: waterfall, treemap, sunburst...) and a
chart's style and colour parts (no text).
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mtfleet.formats.base import Unit, UnitBuilder, restore
from mtfleet.formats.drawingml import P, Para, ParagraphWriter, read_paragraph
from mtfleet.formats.ooxml import Package
from mtfleet.formats.xliff import to_bytes

#: A chart part's content type (in an XLSX and a PPTX alike).
CHART_TYPE = "application/vnd.openxmlformats-officedocument.drawingml.chart+xml"
C = "http://schemas.openxmlformats.org/drawingml/2006/chart"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"


def _c(local: str) -> str:
    return f"{{{C}}}{local}"


_V, _PT, _TX, _LVL = _c("v"), _c("pt"), _c("tx"), _c("lvl")
#: The caches and literals of strings, and which of them copy cells.
_STRINGS = {_c("strCache"), _c("strLit"), _c("multiLvlStrCache")}
_REFS = {_c("strRef"), _c("multiLvlStrRef")}
#: A letter (a word character that is neither a digit nor ``_``).
_LETTER = re.compile(r"[^\W\d_]")
#: Characters XML 1.0 cannot carry at all.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass
class Cached:
    """A cached or literal string of a chart: its ``c:v`` element and its unit."""

    element: Any
    unit: Unit
    ref: bool  # a copy of cells (in a c:strRef): the cells hold the text too


@dataclass
class Chart:
    """One chart part, parsed: its paragraphs with text (``Para.echo`` when in an
    ``mc:Fallback``) and its cached strings, each in document order."""

    info: zipfile.ZipInfo
    data: bytes
    root: Any
    paras: list[Para] = field(default_factory=list)
    cached: list[Cached] = field(default_factory=list)

    @classmethod
    def read(cls, pkg: Package, info: zipfile.ZipInfo) -> Chart:
        data, root = pkg.parse(info)
        chart = cls(info, data, root)
        name = info.filename
        for i, p in enumerate(root.iter(P)):
            echo = any(a.tag == _MC_FALLBACK for a in p.iterancestors())
            para = read_paragraph(p, f"{name}#p{i + 1}", echo)
            if not para.empty:
                chart.paras.append(para)
        for i, v in enumerate(root.iter(_V)):
            parent = v.getparent()
            if parent.tag == _TX:  # a series name written as a literal
                ref = False
            elif parent.tag == _PT:
                strings = parent.getparent()
                if strings is not None and strings.tag == _LVL:  # a level of multi-level labels
                    strings = strings.getparent()
                if strings is None or strings.tag not in _STRINGS:
                    continue  # a number
                holder = strings.getparent()
                ref = holder is not None and holder.tag in _REFS
            else:
                continue
            text = v.text or ""
            if _LETTER.search(text) is None:
                continue
            b = UnitBuilder(f"{name}#v{i + 1}")
            b.text(text)
            chart.cached.append(Cached(v, b.build(), ref))
        return chart

    def render(
        self,
        paras: Sequence[str | None],
        cached: Sequence[str | None],
        lang: str | None = None,
    ) -> bytes | None:
        """The part with ``paras[i]`` as the translation of ``self.paras[i]`` and ``cached[i]``
        of ``self.cached[i]`` (``None``, or the unit's own text: kept as it is); ``lang`` the
        rebuilt runs' language (see :func:`mtfleet.formats.drawingml.target_lang`).
        None when nothing changed (the part keeps its bytes)."""
        changed = False
        for para, translation in zip(self.paras, paras, strict=True):
            if translation is not None and translation != para.unit.text:
                ParagraphWriter(para, translation, lang)
                changed = True
        for item, translation in zip(self.cached, cached, strict=True):
            if translation is None or translation == item.unit.text:
                continue
            item.element.text = _NOT_XML.sub("", restore(translation, item.unit.codes).text)
            changed = True
        return to_bytes(self.root, self.data) if changed else None
