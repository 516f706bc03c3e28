"""Apple ``.strings`` files (``"key" = "value";``): a unit per value; keys, comments, layout
and the file's encoding kept.

A ``.strings`` file is an old-style property list of string pairs, as ``genstrings`` and Xcode
write it: UTF-16 with a byte-order mark (little or big endian) or UTF-8; ``/* … */`` and ``//``
comments (the translator's notes: never units); keys quoted or bare words; a pair may be
``"key";`` alone (its value is its key). A unit is a value as the app reads it (``\\"``,
``\\\\``, ``\\n``, ``\\t``, ``\\r``, ``\\Uxxxx``/``\\uxxxx`` and octal escapes decoded). Keys are
never units. Format specifiers (``%@``, ``%d``, ``%1$@``, ``%lld``, ``%.2f``, ``%%``) are
standalone codes. A value the translation leaves as it was is written as it was; a translated
one is written quoted, with ``"`` and ``\\`` escaped and line breaks as ``\\n``, in the file's own
encoding and byte-order mark. Anything that does not parse (a missing ``;``, an unterminated
string or comment) is refused with its line. (No parser library: ``plistlib`` reads XML and
binary plists only, and the file must come back byte for byte where nothing changed.)
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Sequence
from dataclasses import dataclass

from mtfleet.formats import register
from mtfleet.formats.base import DocumentError, DocumentFormat, Unit, restore
from mtfleet.formats.text import check_count, coded_unit

#: Apple's String Format Specifiers (printf's, with %@ for objects).
_SPECIFIER = re.compile(
    r"%(?:\d+\$)?[-+#0 ']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|q|L|z|t|j)?"
    r"[@dDiuUxXoOfFeEgGaAcCsSp%]"
)
_BARE = re.compile(r"[A-Za-z0-9_.$:/-]+")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_BOMS = ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


@dataclass
class _Value:
    start: int  # the quoted value's span in the text (its quotes included)
    end: int
    text: str
    unit: Unit


def _decode(content: bytes) -> tuple[bytes, str, str]:
    """(bom, encoding, text)."""
    for bom, encoding in _BOMS:
        if content.startswith(bom):
            try:
                return bom, encoding, content[len(bom) :].decode(encoding)
            except UnicodeDecodeError:
                raise DocumentError(".strings document is not valid UTF-16") from None
    bom = codecs.BOM_UTF8 if content.startswith(codecs.BOM_UTF8) else b""
    try:
        text = content[len(bom) :].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f".strings document is not valid UTF-8 or UTF-16 (with its byte-order mark): byte "
            f"0x{content[exc.start]:02x} at offset {exc.start}"
        ) from None
    if "\x00" in text:
        raise DocumentError(".strings document contains NUL characters (UTF-16 without a BOM?)")
    return bom, "utf-8", text


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> DocumentError:
        line = self.text.count("\n", 0, self.pos) + 1
        return DocumentError(f"not a valid .strings file: line {line}: {what}")

    def skip(self) -> None:
        """White space and comments."""
        t = self.text
        while self.pos < len(t):
            if t[self.pos].isspace():
                self.pos += 1
            elif t.startswith("/*", self.pos):
                end = t.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("a /* comment is never closed")
                self.pos = end + 2
            elif t.startswith("//", self.pos):
                end = t.find("\n", self.pos)
                self.pos = len(t) if end < 0 else end + 1
            else:
                return

    def string(self) -> tuple[int, int, str]:
        """A quoted or bare string here: (start, end, decoded)."""
        t, start = self.text, self.pos
        if start < len(t) and t[start] == '"':
            out: list[str] = []
            i = start + 1
            while i < len(t) and t[i] != '"':
                if t[i] != "\\":
                    out.append(t[i])
                    i += 1
                    continue
                i, char = self._escape(i)
                out.append(char)
            if i >= len(t):
                self.pos = start
                raise self.fail("a string is never closed")
            self.pos = i + 1
            decoded = "".join(out).encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            return start, self.pos, decoded
        bare = _BARE.match(t, start)
        if bare is None:
            raise self.fail(f"expected a quoted string, found {t[start : start + 20]!r}")
        self.pos = bare.end()
        return start, self.pos, bare.group(0)

    def _escape(self, i: int) -> tuple[int, str]:
        t = self.text
        nxt = t[i + 1] if i + 1 < len(t) else ""
        if nxt in "uU":
            digits = t[i + 2 : i + 6]
            if not re.fullmatch(r"[0-9A-Fa-f]{4}", digits):
                self.pos = i
                raise self.fail(f"a malformed \\U escape: {t[i : i + 6]!r}")
            return i + 6, chr(int(digits, 16))
        octal = re.match(r"[0-7]{1,3}", t[i + 1 : i + 4])
        if octal:
            return i + 1 + len(octal.group(0)), chr(int(octal.group(0), 8))
        return i + 2, _ESCAPES.get(nxt, nxt)

    def expect(self, char: str) -> None:
        self.skip()
        if not self.text.startswith(char, self.pos):
            found = self.text[self.pos : self.pos + 20] or "the end of the file"
            raise self.fail(f"expected {char!r}, found {found!r}")
        self.pos += 1


def _parse(text: str) -> list[_Value]:
    r = _Reader(text)
    values: list[_Value] = []
    while True:
        r.skip()
        if r.pos >= len(text):
            return values
        _, _, key = r.string()
        r.skip()
        if text.startswith(";", r.pos):  # "key"; : its value is its key, which is no unit
            r.pos += 1
            continue
        r.expect("=")
        r.skip()
        start, end, value = r.string()
        r.expect(";")
        if value.strip():
            values.append(_Value(start, end, value, _unit(value, key)))


def _unit(value: str, key: str) -> Unit:
    return coded_unit(value, key, _SPECIFIER)


def _quote(value: str) -> str:
    escaped = (
        value.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


class AppleStringsFormat(DocumentFormat):
    name = "strings"
    extensions = (".strings",)
    media_type = "text/plain"  # UTF-8 or UTF-16, as the file came

    def extract(self, content: bytes) -> list[Unit]:
        _, _, text = _decode(content)
        return [v.unit for v in _parse(text)]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        bom, encoding, text = _decode(content)
        values = _parse(text)
        check_count(self.name, values, translations)
        out: list[str] = []
        pos = 0
        for value, translation in zip(values, translations, strict=True):
            restored = restore(translation, value.unit.codes).text
            if restored == value.text or not restored.strip():
                continue  # unchanged (or emptied): as the file wrote it
            out += [text[pos : value.start], _quote(restored)]
            pos = value.end
        out.append(text[pos:])
        return bom + "".join(out).encode(encoding, "surrogatepass")


register(AppleStringsFormat())
