"""Plain text: a unit per line, the one rule of every surface that takes a text file.

Line i of the translation is line i of the file, translated: the API's documents
(``POST /v1/documents``, DeepL's ``/v2/document``, LibreTranslate's ``/translate_file``, the web
page) and ``mtfleet submit`` (which sends a ``.txt`` file's lines as texts) read lines with
:func:`parse_lines`. A line ends at any boundary ``str.splitlines`` knows (``\\n``, ``\\r\\n``,
``\\r``, a form feed, U+2028, ...). Each line with text is a unit (the pipeline cuts it into
sentences, within the line); blank and whitespace-only lines, every line ending, the white space
around a line's text and a UTF-8 byte-order mark come back byte for byte. A line break the
engine writes into a translation becomes a space: a translation cannot add a line.

A paragraph hard-wrapped over several lines is translated line by line, like any other lines:
joining lines would let words move between them, and the lines of a catalogue or a list (one
product per line) cannot be told from a wrapped paragraph. Flowing prose goes one paragraph per
line, or as Markdown (``.md``), whose paragraphs are translated whole.

:func:`decode_document` (UTF-8 with an optional BOM, a clear error otherwise) is shared by the
other text-based formats.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mtfleet.formats import register
from mtfleet.formats.base import DocumentError, DocumentFormat, Unit, UnitBuilder, restore

BOM = "\ufeff"
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
#: A run of line boundaries (every one ``str.splitlines`` knows) and the blanks around it.
_BREAKS = re.compile(r"[ \t]*(?:\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029])+[ \t]*")


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


@dataclass(frozen=True)
class LineDocument:
    """A plain-text file as lines (:func:`parse_lines`)."""

    bom: str  # a UTF-8 byte-order mark the text started with, or ""
    lines: list[str]  # without their endings
    endings: list[str]  # each line's own ending ("" for a last line without one)
    segment_lines: list[int]  # the lines with text, in order: one segment (unit) each

    @property
    def segments(self) -> list[str]:
        return [self.lines[i] for i in self.segment_lines]

    def render(self, translations: Sequence[str | None]) -> str:
        """The text with each line of text replaced by its translation (None keeps the
        line); a line break in a translation becomes a space."""
        if len(translations) != len(self.segment_lines):
            raise ValueError(
                f"{len(translations)} translations for {len(self.segment_lines)} segments"
            )
        lines = list(self.lines)
        for at, text in zip(self.segment_lines, translations, strict=True):
            if text is not None:
                lines[at] = one_line(text)
        return self.bom + "".join(map(str.__add__, lines, self.endings))


def one_line(text: str) -> str:
    """``text`` on one line: each run of line breaks (and the blanks around it) a space."""
    return _BREAKS.sub(" ", text)


def parse_lines(text: str) -> LineDocument:
    """``text`` as lines: every line boundary ``str.splitlines`` knows ends one and is kept as
    that line's ending; a line with more than white space is a segment."""
    bom = BOM if text.startswith(BOM) else ""
    lines: list[str] = []
    endings: list[str] = []
    for raw in text[len(bom) :].splitlines(keepends=True):
        body = raw.splitlines()[0] if raw.splitlines() else ""
        lines.append(body)
        endings.append(raw[len(body) :])
    return LineDocument(bom, lines, endings, [i for i, line in enumerate(lines) if line.strip()])


class TextFormat(DocumentFormat):
    name = "text"
    extensions = (".txt",)

    def extract(self, content: bytes) -> list[Unit]:
        doc = parse_lines("".join(decode_document(content, "text")))
        return [_unit(doc.lines[at], at) for at in doc.segment_lines]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        doc = parse_lines("".join(decode_document(content, "text")))
        check_count(self.name, doc.segment_lines, translations)
        units = [_unit(doc.lines[at], at) for at in doc.segment_lines]
        restored = [restore(t, u.codes).text for t, u in zip(translations, units, strict=True)]
        return doc.render(restored).encode("utf-8")


def _unit(line: str, at: int) -> Unit:
    b = UnitBuilder(f"line {at + 1}")
    b.text(line)
    return b.build()


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
