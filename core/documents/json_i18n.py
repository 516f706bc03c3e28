"""JSON i18n resource files: a unit per string value; keys, numbers, booleans, nulls never change.

The file is never re-serialised. A small scanner walks the (already validated) JSON text and
notes the span of each string value (``json.decoder.scanstring`` decodes it); render replaces
only the spans of values whose text changed, JSON-encoding the new value in the file's own style
(``\\uXXXX`` escapes when the file escaped its non-ASCII text, raw UTF-8 otherwise). Values under
a key that starts with ``@`` (ARB metadata such as ``"@title": {"description": ...}`` and
``"@@locale"``) are skipped entirely.

Inside a value these become codes, so the engine keeps them as they are:

* placeholders: ICU / i18next ``{name}``, ``{count, number}``, ``{{count}}``, ``{{- html}}``,
  ``${name}``, printf ``%s %d %1$s %(name)s %@ %%``, i18next nesting ``$t(key)``, HTML entities;
* HTML tags, paired when they match (``<b>…</b>``, i18next ``<1>…</1>``), else standalone;
* ICU ``plural`` / ``select`` / ``selectordinal``: the keyword parts are codes and each case's
  message stays translatable, one paired code per case (``{count, plural, one {# item} other
  {# items}}`` → ``<g1><x2/> item</g1><g3><x4/> items</g3>``, where ``#`` is a code). Cases nest.

A translation that breaks an ICU message (an engine that dropped or reordered a case tag) would
leave the file unusable at run time, so render checks the translated value's ICU structure against
the source's and keeps the source value where they differ.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from mtfleet.core.documents import register
from mtfleet.core.documents.base import DocumentError, DocumentFormat, Unit, UnitBuilder, restore
from mtfleet.core.documents.text import check_count, decode_document, pair_tags

_WS = " \t\n\r"
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = ("true", "false", "null")
_ICU_COMPLEX = ("plural", "select", "selectordinal")

#: Everything that is a code inside a value, except ICU arguments (brace-matched by hand).
_CODE = re.compile(
    r"""
      (?P<i18next>\{\{[^{}]*\}\})
    | (?P<nest>\$t\([^()]*\))
    | (?P<dollar>\$\{[^{}]*\})
    | (?P<printf>%(?:\([A-Za-z_][\w.-]*\))?(?:\d+\$)?[-+\#0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?
         (?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcspn@%])
    | (?P<tag></?(?:[A-Za-z][A-Za-z0-9:-]*|\d+)(?:\s[^<>]*)?/?>)
    | (?P<entity>&(?:\#\d{1,7}|\#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});)
    """,
    re.VERBOSE,
)
_TAG_NAME = re.compile(r"</?([A-Za-z][A-Za-z0-9:-]*|\d+)")
_VOID = {"br", "hr", "img", "input", "wbr", "meta", "link", "source", "area", "col", "embed"}
_ARG = re.compile(r"\s*([^\s{},#'][^{},]*)(?:,\s*([A-Za-z]+)\s*(?:,|$))?", re.S)
_SIMPLE = re.compile(r"\s*[\w.-]+\s*(?:,[^{}]*)?")
_CASE_KEY = re.compile(r"\s*(=-?\d+(?:\.\d+)?|[^\s{}=][^\s{}]*)\s*\{")
_OFFSET = re.compile(r"\s*offset\s*:\s*\d+")


@dataclass
class _Value:
    start: int  # span of the JSON string literal, quotes included
    end: int
    value: str
    path: str


# --- the JSON scanner ---------------------------------------------------------------------------


def _pointer(path: str, key: str | int) -> str:
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


def _strings(text: str) -> list[_Value]:
    """Every string value of the JSON ``text`` (valid JSON: json.loads accepted it), in order."""
    out: list[_Value] = []

    def ws(pos: int) -> int:
        while pos < len(text) and text[pos] in _WS:
            pos += 1
        return pos

    def value(pos: int, path: str, skip: bool) -> int:
        c = text[pos]
        if c == '"':
            s, end = scanstring(text, pos + 1)
            if not skip:
                out.append(_Value(pos, end, s, path or "/"))
            return end
        if c in "{[":
            close = "}" if c == "{" else "]"
            pos = ws(pos + 1)
            index = 0
            while text[pos] != close:
                if c == "{":
                    key, pos = scanstring(text, pos + 1)
                    pos = ws(pos)  # at ':'
                    pos = ws(pos + 1)
                    pos = value(pos, _pointer(path, key), skip or key.startswith("@"))
                else:
                    pos = value(pos, _pointer(path, index), skip)
                index += 1
                pos = ws(pos)
                if text[pos] == ",":
                    pos = ws(pos + 1)
            return pos + 1
        m = _NUMBER.match(text, pos)
        if m:
            return m.end()
        for lit in _LITERALS:
            if text.startswith(lit, pos):
                return pos + len(lit)
        raise DocumentError(f"unexpected {c!r} at offset {pos}")  # json.loads would have said so

    value(ws(0), "", False)
    return out


def _parse(content: bytes) -> tuple[str, str, list[_Value]]:
    bom, text = decode_document(content, "JSON")

    def no_constants(name: str) -> Any:
        raise DocumentError(f"invalid JSON: {name} is not a JSON value")

    try:
        json.loads(text, parse_constant=no_constants)
        values = _strings(text)
    except json.JSONDecodeError as exc:
        raise DocumentError(
            f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise DocumentError("invalid JSON: nested too deeply") from None
    return bom, text, values


# --- inside a value: placeholders, tags, ICU messages ------------------------------------------


@dataclass
class _Icu:
    """An ICU plural/select argument: ``cases`` are (key, start markup, message, end markup)."""

    name: str
    kind: str
    cases: list[tuple[str, str, str, str]]


_ICU_SPECIAL = "{}#|"


def _quoted_end(s: str, pos: int, end: int) -> int:
    """ICU quoting: ``'{'`` and ``'{…}'`` are literal text. If a quoted literal starts at
    ``pos``, the index just past it; else -1 (a lone ``'`` or ``''`` is an apostrophe)."""
    if s[pos] != "'" or pos + 1 >= end or s[pos + 1] not in _ICU_SPECIAL:
        return -1
    j = pos + 1
    while j < end:
        if s[j] == "'":
            if j + 1 < end and s[j + 1] == "'":
                j += 2
                continue
            return j + 1
        j += 1
    return end


def _match_brace(s: str, i: int, end: int, icu: bool) -> int:
    """Index just past the ``}`` that closes the ``{`` at ``i``; -1 if there is none."""
    depth = 0
    j = i
    while j < end:
        c = s[j]
        if icu and c == "'":
            q = _quoted_end(s, j, end)
            if q > 0:
                j = q
                continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return -1


def _icu(s: str, i: int, end: int, icu: bool) -> _Icu | None:
    """The plural/select argument ``s[i:end]`` (braces included) as cases, or None."""
    m = _ARG.match(s, i + 1, end - 1)
    if not m or m.group(2) is None or m.group(2).lower() not in _ICU_COMPLEX:
        return None
    pos = m.end()
    off = _OFFSET.match(s, pos, end - 1)
    if off:
        pos = off.end()
    spans: list[tuple[str, int, int, int]] = []  # key, markup start, "{" index, "}" + 1
    markup_start = i
    while True:
        k = _CASE_KEY.match(s, pos, end - 1)
        if not k:
            break
        brace = k.end() - 1
        close = _match_brace(s, brace, end - 1, icu)
        if close < 0:
            return None
        spans.append((k.group(1), markup_start, brace, close))
        markup_start = pos = close
    if not spans or s[pos : end - 1].strip():
        return None
    cases = [
        (
            key,
            s[a : brace + 1],
            s[brace + 1 : close - 1],
            "}" if n < len(spans) - 1 else s[close - 1 : end],
        )
        for n, (key, a, brace, close) in enumerate(spans)
    ]
    return _Icu(m.group(1).strip(), m.group(2).lower(), cases)


def _items(s: str, in_plural: bool, icu: bool) -> Iterator[tuple[str, str | _Icu]]:
    """Split a message into ("text", str), ("code", str), ("tag", str) and ("icu", _Icu).
    With ``icu``, ICU quoting applies (``'{'`` is text)."""
    pos = 0
    text_start = 0
    n = len(s)
    while pos < n:
        c = s[pos]
        if icu and c == "'":
            q = _quoted_end(s, pos, n)
            if q > 0:  # a quoted literal: kept as it is
                yield "text", s[text_start:pos]
                yield "code", s[pos:q]
                pos = text_start = q
                continue
        if c == "{" and not s.startswith("{{", pos):
            end = _match_brace(s, pos, n, icu)
            if end > 0:
                arg = _icu(s, pos, end, icu)
                if arg is not None or _SIMPLE.fullmatch(s, pos + 1, end - 1):
                    yield "text", s[text_start:pos]
                    yield ("icu", arg) if arg is not None else ("code", s[pos:end])
                    pos = text_start = end
                    continue
        elif c == "#" and in_plural:
            yield "text", s[text_start:pos]
            yield "code", "#"
            pos = text_start = pos + 1
            continue
        if c in "{$%<&":
            m = _CODE.match(s, pos)
            if m:
                yield "text", s[text_start:pos]
                yield ("tag" if m.group("tag") else "code"), m.group(0)
                pos = text_start = m.end()
                continue
        pos += 1
    yield "text", s[text_start:]


def _icu_file(values: Sequence[_Value]) -> bool:
    """A file with a plural/select message is ICU MessageFormat throughout: ICU quoting applies
    to every value (``'{'`` is a literal brace), and translated braces get quoted."""
    return any(isinstance(i, _Icu) for v in values for _, i in _items(v.value, False, False))


def _tag(kind: str, val: str | _Icu) -> tuple[bool, str] | None:
    if kind != "tag" or not isinstance(val, str) or val.endswith("/>"):
        return None
    m = _TAG_NAME.match(val)
    name = m.group(1).lower() if m else ""
    return None if name in _VOID else (val.startswith("</"), name)


def _emit(b: UnitBuilder, s: str, in_plural: bool, icu: bool) -> None:
    items = list(_items(s, in_plural, icu))
    # pair HTML tags by name at this level; unmatched ones are standalone codes
    partner = pair_tags([_tag(kind, val) for kind, val in items])
    closers = set(partner.values())
    for i, (kind, val) in enumerate(items):
        if isinstance(val, _Icu):
            for _, start, msg, end in val.cases:
                b.open(start, end)
                _emit(b, msg, in_plural or val.kind != "select", icu)
                b.close()
        elif kind == "text":
            b.text(val)
        elif i in partner:
            b.open(val, str(items[partner[i]][1]))
        elif i in closers:
            b.close()
        else:
            b.standalone(val)


def _skeleton(s: str, icu: bool) -> list[Any]:
    """The ICU structure of a message (argument names, kinds, case keys), for comparison."""
    out: list[Any] = []
    for _, val in _items(s, True, icu):
        if isinstance(val, _Icu):
            cases = [(key, _skeleton(msg, icu)) for key, _, msg, _ in val.cases]
            out.append((val.name, val.kind, cases))
    return out


def _unit(v: _Value, icu: bool) -> Unit | None:
    b = UnitBuilder(v.path)
    _emit(b, v.value, False, icu)
    return None if b.empty else b.build()


# --- escaping the translated text ---------------------------------------------------------------


def _escaper(value: str, icu: bool) -> Callable[[str], str]:
    """Translated text must not turn into markup or placeholders the source did not have:
    in values with HTML, ``<`` before a tag-like name and ``&`` before an entity-like name are
    escaped; in files with ICU messages, braces are quoted."""
    items = _items(value, False, icu)
    html = any(k == "tag" or (k == "code" and str(v).startswith("&")) for k, v in items)

    def esc(s: str) -> str:
        if html:
            s = re.sub(r"&(?=#?[A-Za-z0-9]+;)", "&amp;", s)
            s = re.sub(r"<(?=[A-Za-z/!?])", "&lt;", s)
        if icu:  # an apostrophe before a brace would start a quote; braces would be syntax
            s = re.sub(r"(?<!')'(?!')(?=[{}#|]|$)", "''", s)
            s = re.sub(r"[{}]", lambda m: f"'{m.group(0)}'", s)
        return s

    return esc


# --- the format ---------------------------------------------------------------------------------


class JsonI18nFormat(DocumentFormat):
    name = "json"
    extensions = (".json",)
    media_type = "application/json"

    def extract(self, content: bytes) -> list[Unit]:
        _, _, values = _parse(content)
        icu = _icu_file(values)
        return [u for v in values if (u := _unit(v, icu)) is not None]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        bom, text, values = _parse(content)
        icu = _icu_file(values)
        units = [(v, u) for v in values if (u := _unit(v, icu)) is not None]
        check_count(self.name, units, translations)
        escaped = not any(ord(c) > 127 for c in text) and bool(
            re.search(r"\\u(?!00[0-7])[0-9a-fA-F]{4}", text)
        )
        out = [bom]
        pos = 0
        for (v, unit), translation in zip(units, translations, strict=True):
            if translation == unit.text:
                continue
            new = restore(translation, unit.codes, _escaper(v.value, icu)).text
            if new == v.value or _skeleton(new, icu) != _skeleton(v.value, icu):
                continue  # unchanged, or an ICU message the translation broke: keep the source
            ascii_only = escaped or any("\ud800" <= c <= "\udfff" for c in new)
            out.append(text[pos : v.start])
            out.append(json.dumps(new, ensure_ascii=ascii_only))
            pos = v.end
        out.append(text[pos:])
        return "".join(out).encode("utf-8")


register(JsonI18nFormat())
