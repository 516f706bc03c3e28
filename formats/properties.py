"""Java ``.properties`` resource bundles: a unit per value; keys, comments and layout kept.

The file is read as ``java.util.Properties.load`` reads it: natural lines; ``#`` and ``!``
comment lines; a line ending in an odd number of backslashes continues on the next (whose
leading white space is skipped); the key ends at the first unescaped ``=``, ``:`` or white
space; ``\\uXXXX``, ``\\t``, ``\\n``, ``\\r``, ``\\f`` and ``\\`` + any character are escapes.
A unit is a value as the program sees it (escapes decoded); everything else (keys,
separators and their padding, comments, blank lines, line endings, a value that starts on the
line after ``=\\``) stays byte for byte. A value the engine returned as it was given is written
back as it was (its escapes and MessageFormat quoting included); a translated one is written on
the line its value started on, escaped as the file writes: raw UTF-8 in a UTF-8 file that has
non-ASCII text, ``\\uXXXX`` in an ASCII file, raw Latin-1 (and ``\\uXXXX`` beyond it) in an
ISO-8859-1 file (bytes that are not UTF-8 are read as ISO-8859-1, the encoding
``Properties.load`` assumes).

A value with ``{0}``-style arguments is a ``MessageFormat`` pattern: its arguments (``{1}``,
``{0,number}``, ``{0,choice,0#days|1#day}``) and quoted literals (``'{'``) are standalone codes,
``''`` is the apostrophe the engine sees, and a translation's apostrophes and braces are quoted
again. (No parser library: the kept ones — ``jproperties``, ``javaproperties`` — give keys and
values, not where each sits, and the file must come back as it was where nothing changed.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from mtfleet.formats import register
from mtfleet.formats.base import DocumentError, DocumentFormat, Unit, UnitBuilder, restore
from mtfleet.formats.text import BOM, check_count, pair_tags

_NATURAL = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_BLANK = " \t\f"
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
#: A MessageFormat argument's opening: ``{`` then a digit (``{0}``, ``{1,number}``).
_ARGUMENT = re.compile(r"\{\s*\d")


@dataclass
class _Value:
    start: int  # offsets of the raw value in the file's text
    end: int
    text: str  # the value as the program sees it (escapes decoded)
    message_format: bool
    unit: Unit


@dataclass
class _Parsed:
    bom: str
    encoding: str  # "utf-8" or "latin-1"
    escape_non_ascii: bool  # the file writes non-ASCII as \\uXXXX
    hex_lower: bool  # and its \\u escapes in lower-case hex (\\u00e9)
    text: str
    values: list[_Value]


def _decode(content: bytes) -> tuple[str, str, str]:
    """(bom, encoding, text)."""
    if content.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DocumentError("properties document is UTF-16; send it as UTF-8 or ISO-8859-1")
    bom = ""
    if content.startswith(BOM.encode()):
        bom, content = BOM, content[3:]
    try:
        text, encoding = content.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        if bom:
            raise DocumentError(
                "properties document starts with a UTF-8 BOM but is not UTF-8"
            ) from None
        text, encoding = content.decode("latin-1"), "latin-1"
    if "\x00" in text:
        raise DocumentError("properties document contains NUL characters (a binary file?)")
    return bom, encoding, text


def _unescape(logical: str, offsets: list[int], at: int, line_no: int) -> tuple[str, int]:
    """The value decoded from ``logical[at:]``; also the offset of its first raw character."""
    out: list[str] = []
    i = at
    while i < len(logical):
        c = logical[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = logical[i + 1] if i + 1 < len(logical) else ""
        if nxt == "u":
            digits = logical[i + 2 : i + 6]
            if not re.fullmatch(r"[0-9A-Fa-f]{4}", digits):
                raise DocumentError(
                    f"not a valid properties file: line {line_no} has a malformed \\uxxxx "
                    f"escape: {logical[i : i + 6]!r}"
                )
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_SIMPLE_ESCAPES.get(nxt, nxt))
            i += 2
    # a pair of \\u escapes of one surrogate pair is one character
    decoded = "".join(out).encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return decoded, offsets[at] if at < len(offsets) else -1


def _split_key(logical: str) -> int:
    """Where the value starts in a logical line (after the key and its separator)."""
    i, n = 0, len(logical)
    while i < n:
        c = logical[i]
        if c == "\\":
            i += 2
            continue
        if c in "=:" or c in _BLANK:
            break
        i += 1
    while i < n and logical[i] in _BLANK:
        i += 1
    if i < n and logical[i] in "=:":
        i += 1
        while i < n and logical[i] in _BLANK:
            i += 1
    return min(i, n)


def _parse(content: bytes) -> _Parsed:
    bom, encoding, text = _decode(content)
    lines = [(m.start(), m.group(0)) for m in _NATURAL.finditer(text)]
    values: list[_Value] = []
    i = 0
    while i < len(lines):
        start, raw = lines[i]
        line_no = i + 1
        body = raw.rstrip("\r\n")
        lead = len(body) - len(body.lstrip(_BLANK))
        if not body[lead:] or body[lead] in "#!":
            i += 1
            continue
        # the logical line, with each character's offset in the file: its physical lines'
        # pieces, joined once (a line ending in a backslash continues; counted per line, as
        # Java does: the backslashes kept before it are an even run)
        pieces, offsets = [body[lead:]], list(range(start + lead, start + len(body)))
        end = start + len(body)
        while _continues(pieces[-1]):
            pieces[-1] = pieces[-1][:-1]
            offsets.pop()
            if i + 1 == len(lines):  # a last line ending in a backslash: Java drops it
                end -= 1
                break
            i += 1
            nstart, nraw = lines[i]
            nbody = nraw.rstrip("\r\n")
            nlead = len(nbody) - len(nbody.lstrip(_BLANK))
            pieces.append(nbody[nlead:])
            offsets.extend(range(nstart + nlead, nstart + len(nbody)))
            end = nstart + len(nbody)
        logical = "".join(pieces)
        i += 1
        at = _split_key(logical)
        value, value_start = _unescape(logical, offsets, at, line_no)
        if value.strip():
            mf = bool(_ARGUMENT.search(value))
            key = logical[:at].rstrip(_BLANK + "=:")
            values.append(_Value(value_start, end, value, mf, _unit(value, mf, key)))
    escape = encoding == "latin-1" or (
        not re.search(r"[^\x00-\x7f]", text) and bool(re.search(r"\\u[0-9A-Fa-f]{4}", text))
    )
    if encoding == "utf-8" and not re.search(r"[^\x00-\x7f]", text):
        escape = True  # an ASCII file: \\uXXXX reads the same as ISO-8859-1 and as UTF-8
    first = re.search(r"\\u([0-9A-Fa-f]{4})", text)
    lower = bool(first and first.group(1) != first.group(1).upper())
    return _Parsed(bom, encoding, escape, lower, text, values)


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


#: In a MessageFormat pattern: a doubled apostrophe, a quoted literal, an argument's opening.
_MF_TOKEN = re.compile(r"(?P<quote>''|'[^']*')|(?P<arg>\{)")
#: HTML markup in a value (a web UI's messages carry ``<strong>``, ``<a href>``).
_TAG = re.compile(r"</?(?P<name>[A-Za-z][A-Za-z0-9-]*)\b[^<>]*>")


def _unit(value: str, message_format: bool, key: str) -> Unit:
    """The value's unit: HTML tags are paired (or standalone) codes; in a MessageFormat
    pattern, arguments and quoted literals are standalone codes and ``''`` is an apostrophe."""
    pieces: list[tuple[str, str]] = []  # (kind: text, code, tag; the raw text)
    pos = 0
    # the next match of each expression, looked for again only once passed (a value of many
    # quotes and one tag at its end is read in linear time)
    tag = _TAG.search(value)
    mf = _MF_TOKEN.search(value) if message_format else None
    while pos < len(value):
        if tag is not None and tag.start() < pos:
            tag = _TAG.search(value, pos)
        if mf is not None and mf.start() < pos:
            mf = _MF_TOKEN.search(value, pos)
        m = min((x for x in (tag, mf) if x is not None), key=lambda x: x.start(), default=None)
        if m is None:
            break
        pieces.append(("text", value[pos : m.start()]))
        if m is tag:
            pieces.append(("tag", m.group(0)))
            pos = m.end()
        elif m.group("quote") == "''":
            pieces.append(("text", "'"))
            pos = m.end()
        elif m.group("quote"):
            pieces.append(("code", m.group(0)))
            pos = m.end()
        else:
            close = _argument_end(value, m.start())
            pieces.append(("code", value[m.start() : close]))
            pos = close
    pieces.append(("text", value[pos:]))
    tags: list[tuple[bool, str] | None] = []
    for kind, raw in pieces:
        tag_match = _TAG.fullmatch(raw) if kind == "tag" and not raw.endswith("/>") else None
        tags.append((raw.startswith("</"), tag_match.group("name").lower()) if tag_match else None)
    partner = pair_tags(tags)
    closers = set(partner.values())
    b = UnitBuilder(key)
    for i, (kind, raw) in enumerate(pieces):
        if kind == "text":
            b.text(raw)
        elif i in partner:
            b.open(raw, pieces[partner[i]][1])
        elif i in closers:
            b.close()
        else:
            b.standalone(raw)
    return b.build()


def _argument_end(value: str, at: int) -> int:
    """The end of the ``{…}`` argument at ``at`` (nested braces counted; the value's end if it
    is never closed: the rest is kept as it is)."""
    depth = 0
    for i in range(at, len(value)):
        if value[i] == "{":
            depth += 1
        elif value[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(value)


def _mf_text(s: str) -> str:
    """Translated text inside a MessageFormat pattern: apostrophes doubled, braces quoted."""
    return s.replace("'", "''").replace("{", "'{'").replace("}", "'}'")


def _escape_value(value: str, parsed: _Parsed) -> str:
    out: list[str] = []
    for i, c in enumerate(value):
        if c == "\\":
            out.append("\\\\")
        elif c in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[c])
        elif c == " " and i == 0:
            out.append("\\ ")  # a leading space is kept only escaped
        elif ord(c) > 0x7F and (
            parsed.escape_non_ascii and (parsed.encoding == "utf-8" or ord(c) > 0xFF)
        ):
            units = c.encode("utf-16-be")
            spec = "04x" if parsed.hex_lower else "04X"
            out += [f"\\u{units[k] << 8 | units[k + 1]:{spec}}" for k in range(0, len(units), 2)]
        else:
            out.append(c)
    return "".join(out)


class PropertiesFormat(DocumentFormat):
    name = "properties"
    extensions = (".properties",)
    media_type = "text/x-java-properties; charset=utf-8"

    def extract(self, content: bytes) -> list[Unit]:
        return [v.unit for v in _parse(content).values]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        parsed = _parse(content)
        check_count(self.name, parsed.values, translations)
        text = parsed.text
        out = [parsed.bom]
        pos = 0
        for value, translation in zip(parsed.values, translations, strict=True):
            out.append(text[pos : value.start])
            escape = _mf_text if value.message_format else None
            restored = restore(translation, value.unit.codes, escape).text
            if translation == value.unit.text or restored == value.text or not restored.strip():
                # unchanged (or emptied): as it was, its escapes and quoting as the file wrote
                # them (``{0}'s`` is not rewritten ``{0}''s``, nor ``\u00a7`` decoded)
                out.append(text[value.start : value.end])
            else:
                out.append(_escape_value(restored, parsed))
            pos = value.end
        out.append(text[pos:])
        encoding = "latin-1" if parsed.encoding == "latin-1" else "utf-8"
        return "".join(out).encode(encoding)


register(PropertiesFormat())
