"""Plain-text files as jobs: one segment per non-blank line, reassembled byte for byte.

Blank and whitespace-only lines are not sent; they and every line ending (``\\n``, ``\\r\\n``,
form feeds and the other boundaries ``str.splitlines`` knows) come back exactly as they were,
so the translated file has the same line structure as the source. Other control characters
inside a line are refused by the API (422) like any other request's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LineDocument:
    lines: list[str]  # without line terminators
    endings: list[str]  # "\n", "\r\n" or "" (last line without newline)
    segment_lines: list[int]  # line numbers that carry a segment, in segment order

    @property
    def segments(self) -> list[str]:
        return [self.lines[i] for i in self.segment_lines]

    def render(self, translations: list[str | None]) -> str:
        """The document with each segment line replaced (a missing translation keeps the source)."""
        if len(translations) != len(self.segment_lines):
            raise ValueError(
                f"{len(translations)} translations for {len(self.segment_lines)} segments"
            )
        lines = list(self.lines)
        for line_no, text in zip(self.segment_lines, translations, strict=True):
            if text is not None:
                lines[line_no] = text
        return "".join(line + end for line, end in zip(lines, self.endings, strict=True))


def parse_lines(text: str) -> LineDocument:
    lines: list[str] = []
    endings: list[str] = []
    # Every line boundary Python knows (\n, \r\n, form feed, U+2028, ...) ends a segment and
    # is kept verbatim as that line's ending.
    for raw in text.splitlines(keepends=True):
        body = raw.splitlines()[0] if raw.splitlines() else ""
        lines.append(body)
        endings.append(raw[len(body) :])
    segment_lines = [i for i, line in enumerate(lines) if line.strip()]
    return LineDocument(lines, endings, segment_lines)
