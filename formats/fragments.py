"""Short texts as the drop-in surfaces send them (DeepL's ``/v2/translate``, LibreTranslate's
``/translate``): plain, or carrying inline markup (DeepL's ``tag_handling=html|xml``,
LibreTranslate's ``format=html``), cut into the segments of an ordinary job and put back
together from their translations.

A text is cut exactly as a document is: into units, then each unit into sentences
(:func:`mtfleet.formats.pipeline.plan`), so markup travels as the same inline tags
(``<gN>``...``</gN>``, ``<xN/>``), the worker checks them as it checks a document's, and
:func:`mtfleet.formats.base.restore` puts every code back. A segment without a
translation keeps its source text. Cutting is deterministic: :func:`render` cuts again.

* ``text``: a unit per line when newlines split (DeepL ``split_sentences=1``, the default), the
  whole text otherwise (``nonewlines``, ``0``); a tag-like string in it (``<g1>``) is text,
  protected as a code;
* ``html``: the html format's scan (:func:`mtfleet.formats.html.units`) with HTML's rules,
  changed by the caller's tag lists: ``ignore_tags`` are never translated (each such element is
  one code), ``non_splitting_tags`` become inline, ``splitting_tags`` end a unit;
* ``xml``: the same scan with XML's rules: no void, raw-text or implied-end elements, no
  translated attributes, and every element inline unless it splits: a ``splitting_tags``
  element, or, with ``outline_detection`` (DeepL's default), an element that never sits beside
  text in its parent (a container such as ``<doc>`` or ``<par>``, not ``<b>`` inside a
  sentence).

``split`` ``0`` keeps each unit one segment (no sentence splitting at all).

DeepL's ``tag_handling_version=v2`` reads ``xml`` strictly: :func:`xml_problem` says what
makes a text not well-formed (the surface refuses it, 400) before it is cut; ``v1``, the
default, takes markup as the scan finds it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from xml.parsers import expat

from mtfleet.core.errors import InvalidInput
from mtfleet.formats import html
from mtfleet.formats.base import Unit, UnitBuilder, restore
from mtfleet.formats.pipeline import assemble, plan

Markup = Literal["text", "html", "xml"]
Split = Literal["0", "1", "nonewlines"]

_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")

#: XML's rules before a caller's tag lists: nothing void, raw or implied.
_XML = html.TagRules(
    inline=frozenset(),
    inline_void=frozenset(),
    void=frozenset(),
    opaque=frozenset(),
    opaque_block=frozenset(),
    raw_text=frozenset(),
    rcdata=frozenset(),
    implied_end={},
    translate_attrs=False,
    splitting=frozenset(),
)


@dataclass(frozen=True)
class Cutting:
    """How a request's texts are cut: its markup, sentence splitting and tag lists (lower-case
    tag names)."""

    markup: Markup = "text"
    split: Split = "1"
    ignore_tags: tuple[str, ...] = ()
    non_splitting_tags: tuple[str, ...] = ()
    splitting_tags: tuple[str, ...] = ()
    outline_detection: bool = True

    @property
    def in_markup(self) -> bool:
        """Whether the texts are markup (read by the html scan, in a document worker)."""
        return self.markup != "text"


def rules(text: str, how: Cutting) -> html.TagRules:
    """The scan's rules for one markup text."""
    ignore = frozenset(how.ignore_tags)
    keep = frozenset(how.non_splitting_tags) - ignore
    split = frozenset(how.splitting_tags) - ignore - keep
    if how.markup == "html":
        base = html.HTML
        return html.TagRules(
            inline=(base.inline | keep) - split - ignore,
            opaque=base.opaque | ignore,
            opaque_block=base.opaque_block - keep,
        )
    detected = structural(text) if how.outline_detection else frozenset()
    return html.TagRules(
        inline=keep,
        inline_void=frozenset(),
        void=frozenset(),
        opaque=ignore,
        opaque_block=frozenset(),
        raw_text=frozenset(),
        rcdata=frozenset(),
        implied_end={},
        translate_attrs=False,
        splitting=(split | detected) - keep - ignore,
    )


def structural(text: str) -> frozenset[str]:
    """XML outline detection: the names of elements that never sit beside text in their
    parent (their parent holds only elements and whitespace). Those end units; the others are
    inline markup inside a sentence."""
    toks = html.tokenize(text, _XML)
    frames: list[tuple[str, list[str], list[bool]]] = [("", [], [False])]  # name, children, text
    seen: set[str] = set()
    inline: set[str] = set()

    def close(frame: tuple[str, list[str], list[bool]]) -> None:
        if frame[2][0]:
            inline.update(frame[1])

    for t in toks:
        if t.kind == "start":
            seen.add(t.name)
            frames[-1][1].append(t.name)
            if not t.selfclosing:
                frames.append((t.name, [], [False]))
        elif t.kind == "end":
            if any(f[0] == t.name for f in frames[1:]):
                while True:
                    frame = frames.pop()
                    close(frame)
                    if frame[0] == t.name:
                        break
        elif t.kind == "text" and html.decode_text(text[t.start : t.end], {}).strip():
            frames[-1][2][0] = True
    for frame in frames:
        close(frame)
    return frozenset(seen - inline)


#: A text's own XML declaration, which may open it (and nothing else may precede).
_XML_DECL = re.compile(r"\A<\?xml[^>]*\?>")
_WRAP = "<mtfleet-text>"


def xml_problem(text: str) -> str | None:
    """What makes ``text`` not well-formed XML content (elements and text, any number of
    top-level elements, an XML declaration first if any): expat's reason and where it is, as
    ``line L, column C`` of the text (1-based); None if it is well-formed. A DOCTYPE is refused
    (no DTD, no entity but XML's five and character references)."""
    body = _XML_DECL.sub("", text, count=1)
    shift = len(text) - len(body)  # the declaration's length, on line 1
    if "<!DOCTYPE" in body:
        return "it has a DOCTYPE (DTDs and entities are not accepted)"
    wrapped = _WRAP + body
    parser = expat.ParserCreate()
    try:
        parser.Parse(f"{wrapped}</{_WRAP[1:]}", True)
    except expat.ExpatError as exc:
        last_line = wrapped.count("\n") + 1
        if exc.lineno == last_line and exc.offset >= len(wrapped.rsplit("\n", 1)[-1]):
            return "an element is still open at the end of the text"
        column = exc.offset + 1 + ((shift - len(_WRAP)) if exc.lineno == 1 else 0)
        return f"{expat.ErrorString(exc.code)} at line {exc.lineno}, column {max(column, 1)}"
    return None


def check_xml(texts: Sequence[str]) -> None:
    """InvalidInput (400) naming the first text that is not well-formed XML and why."""
    for i, text in enumerate(texts):
        problem = xml_problem(text)
        if problem is not None:
            raise InvalidInput(
                f"text[{i}] is not well-formed XML (tag_handling_version=v2 reads XML "
                f"strictly): {problem}"
            )


def _lines(text: str, how: Cutting) -> list[str]:
    """A plain text as pieces: unit texts at even positions, line breaks between them."""
    return _LINE_BREAK.split(text) if how.split == "1" else [text]


def extract(text: str, how: Cutting) -> list[Unit]:
    """The units of one text."""
    if how.in_markup:
        return html.units(text, rules(text, how))
    units = []
    for piece in _lines(text, how)[::2]:
        b = UnitBuilder()
        b.text(piece)
        units.append(b.build())
    return units


def _put_back(text: str, how: Cutting, units: list[Unit], unit_texts: list[str]) -> str:
    if how.in_markup:
        return html.rendered(text, unit_texts, rules(text, how))
    pieces = _lines(text, how)
    for k, (unit, translated) in enumerate(zip(units, unit_texts, strict=True)):
        pieces[2 * k] = restore(translated, unit.codes).text
    return "".join(pieces)


def cut(texts: Sequence[str], lang: str, how: Cutting) -> list[list[str]]:
    """Each text's segments (source language ``lang``; none for a text with nothing to
    translate)."""
    return [plan(extract(t, how), lang, split=how.split != "0").segments for t in texts]


def render(
    texts: Sequence[str],
    lang: str,
    how: Cutting,
    translations: Sequence[Sequence[str | None]],
) -> list[str]:
    """Each text put back together from its segments' translations (None: the segment keeps
    its source text), markup restored."""
    out = []
    for text, done in zip(texts, translations, strict=True):
        units = extract(text, how)
        p = plan(units, lang, split=how.split != "0")
        if len(done) != len(p.segments):
            raise ValueError(f"{len(done)} translations for {len(p.segments)} segments")
        out.append(_put_back(text, how, units, assemble(p, list(done))))
    return out
