"""SubRip subtitles (.srt): a unit per cue's text.

The ``srt`` package validates the file (its parser, with its tolerance for common defects, decides
what is a cue); the units are cut from the *source text* at the spans its regex matched, so cue
numbers, timestamps, blank lines and line endings never change. Inside a cue a line break is a
standalone code (``<x1/>``: the break comes back where the engine put it), ``<i>…</i>``,
``<b>``, ``<u>`` and ``<font …>`` are paired codes, ``{\\an8}``-style positioning tags are
standalone codes. Translated text cannot break the cue structure: line breaks the engine adds
become spaces, and a blank translation keeps the cue's source text (a cue is never empty).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import srt as srt_lib

from mtfleet.formats import register
from mtfleet.formats.base import DocumentError, DocumentFormat, Unit, restore
from mtfleet.formats.text import check_count, coded_unit, decode_document

#: Markup inside a cue: a line break, an HTML-like tag, an ASS override block such as {\an8}.
_MARKUP = re.compile(
    r"(?P<br>\r\n|\r|\n)|(?P<tag></?(?P<name>[A-Za-z][A-Za-z0-9]*)\b[^<>\r\n]*>)|(?P<ass>\{\\[^{}\r\n]*\})"
)


@dataclass
class _Cue:
    start: int
    end: int
    unit: Unit


def _cues(text: str) -> list[_Cue]:
    """The cues, each made as the parser reads it (a unit budget stops the reading there)."""
    cues: list[_Cue] = []
    matches = srt_lib.SRT_REGEX.finditer(text)
    try:
        for sub in srt_lib.parse(text):
            m = next(matches, None)
            if m is None:  # the parser and its regex disagree: never guess
                raise DocumentError("not a valid SRT file: cues could not be located")
            start, end = m.span(5)
            content = text[start:end]
            lead = len(content) - len(content.lstrip())
            core = content.strip()
            if core:
                unit = _unit(core, f"cue {sub.index}")
                cues.append(_Cue(start + lead, start + lead + len(core), unit))
    except (srt_lib.SRTParseError, ValueError) as exc:
        raise DocumentError(f"not a valid SRT file: {exc}") from None
    if next(matches, None) is not None:
        raise DocumentError("not a valid SRT file: cues could not be located")
    return cues


def _tag(m: re.Match[str]) -> tuple[bool, str] | None:
    tag = m.group("tag")
    return (
        (tag.startswith("</"), m.group("name").lower()) if tag and not tag.endswith("/>") else None
    )


def _unit(core: str, path: str) -> Unit:
    return coded_unit(core, path, _MARKUP, _tag)


def _flatten(s: str) -> str:
    """Translated text between codes: a line break the engine added must not end the cue."""
    return re.sub(r"\s*(?:\r\n|\r|\n)\s*", " ", s)


class SrtFormat(DocumentFormat):
    name = "srt"
    extensions = (".srt",)
    media_type = "application/x-subrip; charset=utf-8"

    def extract(self, content: bytes) -> list[Unit]:
        _, text = decode_document(content, "SRT")
        return [c.unit for c in _cues(text)]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        bom, text = decode_document(content, "SRT")
        cues = _cues(text)
        check_count(self.name, cues, translations)
        out = [bom]
        pos = 0
        for cue, translation in zip(cues, translations, strict=True):
            out.append(text[pos : cue.start])
            translated = restore(translation, cue.unit.codes, _flatten).text.strip()
            out.append(translated or text[cue.start : cue.end])  # a cue is never left empty
            pos = cue.end
        out.append(text[pos:])
        return "".join(out).encode("utf-8")


register(SrtFormat())
