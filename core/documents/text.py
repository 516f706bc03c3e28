"""Plain text: a unit per paragraph (lines up to a blank line).

Every byte outside the paragraphs' text stays as it is: blank lines, indentation, trailing
spaces, CRLF or LF line endings, a UTF-8 byte-order mark. Inside a paragraph a line break is a
plain ``\\n`` in the unit's text; on render the k-th ``\\n`` of the translation gets back the k-th
break of the source (with the indentation of the line after it), so a hard-wrapped paragraph
keeps its shape, and extra breaks reuse the paragraph's last one.

:func:`decode_document` (UTF-8 with an optional BOM, a clear error otherwise) is shared by the
other text-based formats.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mtfleet.core.documents import register
from mtfleet.core.documents.base import DocumentError, DocumentFormat, Unit, UnitBuilder, restore

BOM = "\ufeff"
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
#: A line break inside a paragraph and the whitespace around it (trailing and leading).
_BREAK = re.compile(r"[ \t]*(?:\r\n|\r|\n)[ \t]*")


def decode_document(content: bytes, what: str) -> tuple[str, str]:
    """``(bom, text)``: the document as text, its UTF-8 byte-order mark (or "") apart.

    DocumentError for bytes that are not UTF-8 (naming the byte and its offset), for UTF-16 or
    UTF-32, and for text with NUL characters (a binary file sent as ``what``)."""
    if content.startswith(_UTF16_BOMS):
        raise DocumentError(f"{what} document is UTF-16 or UTF-32; send it as UTF-8")
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f"{what} document is not valid UTF-8: byte 0x{content[exc.start]:02x} "
            f"at offset {exc.start}"
        ) from None
    if "\x00" in text:
        raise DocumentError(f"{what} document contains NUL characters (a binary file?)")
    if text.startswith(BOM):
        return BOM, text[1:]
    return "", text


def newline_escape(breaks: Sequence[str], extra: str = " ") -> Callable[[str], str]:
    """An ``escape`` for :func:`restore`: the k-th ``\\n`` of the translated text becomes
    ``breaks[k]``; more breaks than the source had reuse the last one (or ``extra`` when it had
    none). Runs of blank lines collapse to one break: a translation cannot split a unit."""
    count = 0

    def esc(s: str) -> str:
        nonlocal count
        if "\n" not in s and "\r" not in s:
            return s
        out: list[str] = []
        for i, piece in enumerate(re.split(r"[ \t]*(?:\r\n|\r|\n)(?:[ \t]*(?:\r\n|\r|\n))*", s)):
            if i:
                out.append(breaks[min(count, len(breaks) - 1)] if breaks else extra)
                count += 1
            out.append(piece)
        return "".join(out)

    return esc


@dataclass
class _Span:
    start: int
    end: int
    breaks: list[str]
    unit: Unit


def _paragraphs(text: str) -> list[_Span]:
    spans: list[_Span] = []
    block_start: int | None = None
    block_end = 0
    pos = 0
    for m in _LINE.finditer(text):
        line = m.group(0)
        if not line:
            break
        if line.strip():
            if block_start is None:
                block_start = m.start()
            block_end = m.end()
        elif block_start is not None:
            spans.append(_span(text, block_start, block_end, len(spans)))
            block_start = None
        pos = m.end()
    if block_start is not None:
        spans.append(_span(text, block_start, block_end, len(spans)))
    assert pos == len(text)
    return spans


def _span(text: str, start: int, end: int, index: int) -> _Span:
    block = text[start:end]
    lead = len(block) - len(block.lstrip())
    core = block.strip()
    start += lead
    b = UnitBuilder(f"paragraph {index + 1}")
    breaks: list[str] = []
    pos = 0
    for m in _BREAK.finditer(core):
        b.text(core[pos : m.start()])
        b.text("\n")
        breaks.append(m.group(0))
        pos = m.end()
    b.text(core[pos:])
    return _Span(start, start + len(core), breaks, b.build())


class TextFormat(DocumentFormat):
    name = "text"
    extensions = (".txt",)

    def extract(self, content: bytes) -> list[Unit]:
        _, text = decode_document(content, "text")
        return [s.unit for s in _paragraphs(text)]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        bom, text = decode_document(content, "text")
        spans = _paragraphs(text)
        check_count(self.name, spans, translations)
        out: list[str] = [bom]
        pos = 0
        for span, translation in zip(spans, translations, strict=True):
            out.append(text[pos : span.start])
            out.append(restore(translation, span.unit.codes, newline_escape(span.breaks)).text)
            pos = span.end
        out.append(text[pos:])
        return "".join(out).encode("utf-8")


def pair_tags(tags: Sequence[tuple[bool, str] | None]) -> dict[int, int]:
    """Match opening and closing tags: ``tags[i]`` is ``(closing, name)`` for a tag, None for
    anything else. Returns {index of an opening tag: index of its closing tag}; pairs nest
    properly, so they can become paired codes, and a tag left out is a standalone code. A
    closing tag closes the nearest open tag of its name (``<b><i>x</b>``: the ``<i>`` is
    left unpaired)."""
    partner: dict[int, int] = {}
    stack: list[tuple[int, str]] = []
    for i, tag in enumerate(tags):
        if tag is None:
            continue
        closing, name = tag
        if not closing:
            stack.append((i, name))
            continue
        for depth in range(len(stack) - 1, -1, -1):
            if stack[depth][1] == name:
                partner[stack[depth][0]] = i
                del stack[depth:]
                break
    return partner


def coded_unit(
    text: str,
    path: str,
    markup: re.Pattern[str],
    tag: Callable[[re.Match[str]], tuple[bool, str] | None] = lambda m: None,
) -> Unit:
    """A unit of ``text`` whose ``markup`` matches are codes: a match ``tag`` names (``(closing,
    name)``) pairs with its partner (:func:`pair_tags`) into a paired code, every other match is
    a standalone code (a line break, a placeholder, an unpaired tag)."""
    b = UnitBuilder(path)
    tokens = list(markup.finditer(text))
    partner = pair_tags([tag(m) for m in tokens])
    closers = set(partner.values())
    pos = 0
    for i, m in enumerate(tokens):
        b.text(text[pos : m.start()])
        pos = m.end()
        if i in partner:
            b.open(m.group(0), tokens[partner[i]].group(0))
        elif i in closers:
            b.close()
        else:
            b.standalone(m.group(0))
    b.text(text[pos:])
    return b.build()


def check_count(fmt: str, units: Sequence[object], translations: Sequence[str]) -> None:
    """Render gets one translation per unit; anything else is a caller's bug, said plainly."""
    if len(translations) != len(units):
        raise ValueError(
            f"{fmt}: render got {len(translations)} translations for {len(units)} units"
        )


register(TextFormat())
