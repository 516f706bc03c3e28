"""WebVTT subtitles and captions (.vtt): a unit per cue's text.

The file is read block by block as the WebVTT parsing rules describe (blocks are separated by
blank lines, and a line holding ``-->`` where it cannot be its block's timing begins the next
block, so a timing right after a cue's text starts a new cue; a block whose first or second
line holds ``-->`` is a cue; ``NOTE``, ``STYLE`` and ``REGION`` blocks are not), and the
units are cut from the *source text* at the payloads' spans, so the header, cue identifiers,
timings and cue settings, comments, styles, regions, blank lines and line endings never
change. (No parser library is used: ``webvtt-py``, the kept one, rewrites
a file it saves in its own layout; a translation must come back byte for byte as it came.) A
cue whose timing line does not parse, or a block that is no cue, comment, style or region, is
refused with its line number: a player would drop it silently, and its text would go
untranslated.

Inside a cue a line break is a standalone code (as in SRT); ``<c.class>``, ``<i>``, ``<b>``,
``<u>``, ``<v Speaker>``, ``<lang xx>``, ``<ruby>``/``<rt>`` are paired codes when closed
(``<v …>`` often is not: then a standalone code), timestamp tags (``<00:01.500>``) and character
references (``&amp;``) are standalone codes. Translated text is written back so that it cannot
break the cue: a ``<`` becomes ``&lt;``, an ``&`` that would start a reference ``&amp;``, ``-->``
``--&gt;``, and line breaks the engine adds become spaces. A header line ``Language: xx``
or ``lang: xx`` (metadata some tools write) names the target in the translated file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from mtfleet.formats import register
from mtfleet.formats.base import DocumentError, DocumentFormat, Unit, restore
from mtfleet.formats.text import check_count, coded_unit, decode_document

#: A line with its ending (the last may have none).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_SIGNATURE = re.compile(r"WEBVTT(?:[ \t]|$)")
_TIMESTAMP = r"(?:\d{2,}:)?[0-5]\d:[0-5]\d\.\d{3}"
_TIMING = re.compile(rf"^{_TIMESTAMP}[ \t]+-->[ \t]+{_TIMESTAMP}(?:[ \t].*)?$")
_NOT_CUE = re.compile(r"(?:NOTE|STYLE|REGION)(?:[ \t]|$)")
#: Markup inside a cue: a line break, a timestamp tag, a tag, a character reference.
_MARKUP = re.compile(
    r"(?P<br>\r\n|\r|\n)"
    rf"|(?P<ts><{_TIMESTAMP}>)"
    r"|(?P<tag></?(?P<name>[A-Za-z][A-Za-z0-9]*)(?:\.[^\s.<>/&]+)*(?:[ \t][^<>\r\n]*)?>)"
    r"|(?P<ref>&(?:[A-Za-z][A-Za-z0-9]*|#[0-9]+|#[xX][0-9A-Fa-f]+);)"
)
_LANGUAGE = re.compile(r"^((?:Language|lang):[ \t]*)(\S*)", re.I)


@dataclass
class _Cue:
    start: int
    end: int
    unit: Unit


@dataclass
class _Parsed:
    header_end: int  # where the header block ends (its lines may name the language)
    cues: list[_Cue]


def _lines(text: str) -> list[tuple[int, str]]:
    """(offset, line without its ending) for every line."""
    return [(m.start(), m.group(0).rstrip("\r\n")) for m in _LINE.finditer(text)]


def _block_end(lines: list[tuple[int, str]], i: int, header: bool) -> tuple[int, int | None]:
    """Where the block starting at line ``i`` ends, and its timing line (None: no cue), as the
    WebVTT parser collects a block: it ends at a blank line, or before a line holding ``-->``
    that cannot be its own timing (any such line in the header, from the third line of a block,
    or a second one): that line begins the next block, so a timing right after a cue's text
    (as youtube-dl writes them) starts a new cue."""
    timing: int | None = None
    j = i
    while j < len(lines) and lines[j][1]:
        if "-->" in lines[j][1]:
            if header or timing is not None or j - i >= 2:
                break
            timing = j
        j += 1
    return j, timing


def _parse(text: str) -> _Parsed:
    if not text.strip():
        return _Parsed(len(text), [])  # an empty file: nothing to translate
    lines = _lines(text)
    if not lines or not _SIGNATURE.match(lines[0][1]):
        raise DocumentError("not a WebVTT file: it must start with the line WEBVTT")
    i, _ = _block_end(lines, 1, header=True)  # the header: to a blank line or a timing
    header_end = lines[i][0] if i < len(lines) else len(text)
    cues: list[_Cue] = []
    while i < len(lines):
        if not lines[i][1]:
            i += 1
            continue
        block = i
        i, timing = _block_end(lines, block, header=False)
        first = lines[block][1]
        if _NOT_CUE.match(first) and "-->" not in first:
            continue  # a comment, a style sheet or a region: kept as it is
        if timing is None:
            raise DocumentError(
                f"not a valid WebVTT file: the block at line {block + 1} is neither a cue (a "
                f"timing line with -->) nor a NOTE, STYLE or REGION: {first[:80]!r}"
            )
        if not _TIMING.match(lines[timing][1]):
            raise DocumentError(
                f"not a valid WebVTT file: line {timing + 1} is not a cue timing "
                f"('00:00:01.000 --> 00:00:02.500'): {lines[timing][1][:80]!r}"
            )
        if timing + 1 >= i:
            continue  # a cue without text
        start = lines[timing + 1][0]
        end = lines[i - 1][0] + len(lines[i - 1][1])
        payload = text[start:end]
        lead = len(payload) - len(payload.lstrip())
        core = payload.strip()
        if core:
            cue_id = first if timing > block else f"at line {timing + 1}"
            cues.append(_Cue(start + lead, start + lead + len(core), _unit(core, f"cue {cue_id}")))
    return _Parsed(header_end, cues)


def _tag(m: re.Match[str]) -> tuple[bool, str] | None:
    tag = m.group("tag")
    return (tag.startswith("</"), m.group("name").lower()) if tag else None


def _unit(core: str, path: str) -> Unit:
    return coded_unit(core, path, _MARKUP, _tag)


_REFERENCE_START = re.compile(r"&(?=[A-Za-z0-9#][A-Za-z0-9]*;)")


def _safe(s: str) -> str:
    """Translated text between codes, written so that it stays the cue's text."""
    s = re.sub(r"\s*(?:\r\n|\r|\n)\s*", " ", s)
    s = _REFERENCE_START.sub("&amp;", s).replace("<", "&lt;")
    return s.replace("-->", "--&gt;")


class WebVttFormat(DocumentFormat):
    name = "webvtt"
    extensions = (".vtt",)
    media_type = "text/vtt; charset=utf-8"

    def extract(self, content: bytes) -> list[Unit]:
        _, text = decode_document(content, "WebVTT")
        return [c.unit for c in _parse(text).cues]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        bom, text = decode_document(content, "WebVTT")
        parsed = _parse(text)
        check_count(self.name, parsed.cues, translations)
        header = text[: parsed.header_end]
        if target_lang:
            header = "".join(
                _LANGUAGE.sub(lambda m: m.group(1) + target_lang, line)
                for line in re.split(r"(?<=\n)", header)
            )
        out = [bom, header]
        pos = parsed.header_end
        for cue, translation in zip(parsed.cues, translations, strict=True):
            out.append(text[pos : cue.start])
            translated = restore(translation, cue.unit.codes, _safe).text.strip()
            out.append(translated or text[cue.start : cue.end])  # a cue is never left empty
            pos = cue.end
        out.append(text[pos:])
        return "".join(out).encode("utf-8")


register(WebVttFormat())
