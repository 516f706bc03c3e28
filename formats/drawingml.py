"""DrawingML text (``<a:p>`` paragraphs of the ``a:`` namespace): what a unit of a PowerPoint
slide, a SmartArt diagram or a chart's title is, and how a paragraph is rebuilt from its
translation. Shared by :mod:`mtfleet.formats.pptx` and :mod:`mtfleet.formats.charts`
(a chart's titles in a workbook or a deck).

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

``ParagraphWriter`` rebuilds a unit's runs from its tagged translation: untagged text becomes a
run with the base run's formatting, a ``<gN>`` span one with that stretch's formatting (the
innermost span wins when the engine nests them), and every standalone code's element is moved
back. A rebuilt run drops ``dirty`` and ``err`` (its text is new: PowerPoint proofs it again);
with a target language (:func:`target_lang`: a BCP 47 tag such as ``fr`` or ``pt-BR``;
anything else is not written) the rebuilt paragraph's runs, breaks and paragraph mark get
``lang="<target>"``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from lxml import etree

from mtfleet.formats.base import Unit, UnitBuilder
from mtfleet.formats.xliff import restore_markers, serialize, walk_markers

A = "http://schemas.openxmlformats.org/drawingml/2006/main"


def _a(local: str) -> str:
    return f"{{{A}}}{local}"


P = _a("p")
_R, _T, _RPR, _PPR, _END = (_a(n) for n in ("r", "t", "rPr", "pPr", "endParaRPr"))
_BR = _a("br")
_LINKS = {_a("hlinkClick"), _a("hlinkMouseOver")}
#: ``a:rPr`` attributes PowerPoint recomputes (proofing language, spelling and smart-tag
#: state, bookmarks): not part of a run's formatting.
_IGNORED = frozenset({"lang", "altLang", "dirty", "err", "smtClean", "smtId", "bmk"})
#: Dropped from the runs of a rebuilt paragraph: their text is new, proofing starts over.
_STALE = ("dirty", "err")
_LANG = re.compile(r"[A-Za-z]{2,8}(?:-[A-Za-z0-9]{1,8})*")


def target_lang(lang: str | None) -> str | None:
    """``lang`` as a rebuilt run's ``lang`` attribute takes it (a BCP 47 tag); None for
    anything else (nothing is written then)."""
    if lang is None:
        return None
    lang = lang.strip().replace("_", "-")
    return lang if _LANG.fullmatch(lang) else None


# --- extraction ---------------------------------------------------------------------------------


def _key(rpr: Any) -> bytes:
    """A run's formatting: its rPr (None: none) without the attributes of :data:`_IGNORED`."""
    if rpr is None:
        return b"[]"
    attrs = sorted((k, v) for k, v in rpr.attrib.items() if k not in _IGNORED)
    if not len(rpr):
        return repr(attrs).encode()
    return repr(attrs).encode() + b"".join(etree.tostring(c, with_tail=False) for c in rpr)


@dataclass
class _Run:
    """A text run of a paragraph, read once: its element, text, rPr and formatting."""

    element: Any
    text: str
    rpr: Any
    key: bytes

    @property
    def linked(self) -> bool:
        return self.rpr is not None and any(c.tag in _LINKS for c in self.rpr)


def _text_runs(p: Any) -> dict[Any, _Run]:
    """The paragraph's runs that hold only their formatting and text (what the schema
    allows) and some text."""
    runs = {}
    for child in p:
        if child.tag != _R:
            continue
        rpr = None
        texts = []
        for c in child:
            if c.tag == _T:
                texts.append(c.text or "")
            elif c.tag == _RPR:
                rpr = c
            else:
                break
        else:
            text = "".join(texts)
            if text:
                runs[child] = _Run(child, text, rpr, _key(rpr))
    return runs


def _base_run(runs: list[_Run]) -> _Run | None:
    """The run whose formatting is the paragraph's: of the formatting most of its text has
    (the first one on a tie), links apart unless all of it is linked."""
    plain = [r for r in runs if not r.linked] or runs
    chars: dict[bytes, int] = {}
    first: dict[bytes, _Run] = {}
    for run in plain:
        chars[run.key] = chars.get(run.key, 0) + len(run.text)
        first.setdefault(run.key, run)
    return first[max(chars, key=lambda k: chars[k])] if chars else None


@dataclass
class Para:
    element: Any
    unit: Unit
    base: Any  # the run whose formatting untagged text takes
    refs: dict[int, Any]  # code number -> a run (a <gN> span) or a list of elements (<xN/>)
    empty: bool
    echo: bool  # a copy of text read elsewhere (a diagram drawing cache, an mc:Fallback)


def read_paragraph(p: Any, path: str, echo: bool) -> Para:
    b = UnitBuilder(path)
    refs: dict[int, Any] = {}
    runs = _text_runs(p)
    base = _base_run(list(runs.values()))
    base_key = base.key if base is not None else None
    span: bytes | None = None  # formatting of the open span
    for child in p:
        if child.tag in (_PPR, _END):
            continue
        run = runs.get(child)
        if run is not None:
            if run.key == base_key:
                if span is not None:
                    b.close()
                    span = None
            elif run.key != span:
                if span is not None:
                    b.close()
                rpr = run.rpr
                n = b.open(f"<a:r>{serialize(rpr) if rpr is not None else ''}", "</a:r>")
                refs[n] = child
                span = run.key
            for i, piece in enumerate(run.text.split("\t")):
                if i:  # a tab lays out columns: a code, so the engine cannot drop it
                    b.standalone("\t")
                b.text(piece)
        elif child.tag == _R and all(c.tag in (_RPR, _T) for c in child):
            continue  # a run without text: nothing to keep
        else:  # a:br, a:fld, mc:AlternateContent, a comment...
            refs[b.standalone(serialize(child))] = [child]
    unit = b.build()
    return Para(p, unit, base.element if base is not None else None, refs, b.empty, echo)


# --- rebuilding ---------------------------------------------------------------------------------


class ParagraphWriter:
    """Rebuilds one paragraph's runs from a translation restored with its codes."""

    def __init__(self, para: Para, translation: str, lang: str | None) -> None:
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
