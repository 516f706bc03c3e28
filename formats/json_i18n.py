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
* ICU ``plural`` / ``select`` / ``selectordinal`` (:mod:`mtfleet.formats.icu`): each
  case's message is a unit of its own (path ``/key/plural:one``), with ``#`` and nested
  ``{arg}`` as codes; text around the argument is one more unit, the argument a code in it
  (``"You have {n, plural, one {# item} other {# items}}"`` → ``You have <x1/>``,
  ``<x1/> item``, ``<x1/> items``). Cases nest. The skeleton (argument name, keyword, case keys,
  braces) is never sent, so no translation can break it.

With a ``target_lang``, each plural gets exactly the target's CLDR categories (``=0``/``=1``
kept, missing ones made from the translated ``other``, extra ones dropped); without one, the
unchanged translations give back the file byte for byte.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from mtfleet.formats import icu, register
from mtfleet.formats.base import DocumentError, DocumentFormat, Unit
from mtfleet.formats.plurals import CATEGORIES, for_target
from mtfleet.formats.text import check_count, decode_document

_WS = " \t\n\r"
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = ("true", "false", "null")
#: Levels of objects and arrays a JSON file may nest (a locale file nests a few).
MAX_DEPTH = 64

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


@dataclass
class _Value:
    start: int  # span of the JSON string literal, quotes included
    end: int
    value: str
    path: str


@dataclass
class _Member:
    """An object's member: where its key starts and ends (quotes included), where its value
    starts and ends, and the value when it is a string."""

    key: str
    key_start: int
    key_end: int
    value_start: int
    value_end: int
    value: _Value | None


# --- the JSON scanner ---------------------------------------------------------------------------


def _pointer(path: str, key: str | int) -> str:
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


def _strings(text: str) -> tuple[list[_Value], list[list[_Member]]]:
    """Every string value of the JSON ``text`` (valid JSON: json.loads accepted it), in order,
    and every object's members (those of ``@`` metadata apart)."""
    out: list[_Value] = []
    objects: list[list[_Member]] = []

    def ws(pos: int) -> int:
        while pos < len(text) and text[pos] in _WS:
            pos += 1
        return pos

    def value(pos: int, path: str, skip: bool, depth: int) -> int:
        c = text[pos]
        if c == '"':
            s, end = scanstring(text, pos + 1)
            if not skip:
                out.append(_Value(pos, end, s, path or "/"))
            return end
        if c in "{[":
            if depth == MAX_DEPTH:  # this object or array would be one level more
                raise too_deep()
            close = "}" if c == "{" else "]"
            pos = ws(pos + 1)
            index = 0
            members: list[_Member] = []
            if c == "{" and not skip:
                objects.append(members)
            while text[pos] != close:
                if c == "{":
                    key_start = pos
                    key, key_end = scanstring(text, pos + 1)
                    pos = ws(ws(key_end) + 1)  # past ':'
                    found = len(out)
                    end = value(pos, _pointer(path, key), skip or key.startswith("@"), depth + 1)
                    string = out[-1] if len(out) > found and out[-1].start == pos else None
                    members.append(_Member(key, key_start, key_end, pos, end, string))
                    pos = end
                else:
                    pos = value(pos, _pointer(path, index), skip, depth + 1)
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

    value(ws(0), "", False, 0)
    return out, objects


def too_deep() -> DocumentError:
    return DocumentError(f"invalid JSON: it nests objects and arrays more than {MAX_DEPTH} levels")


def _no_constant(name: str) -> Any:
    raise DocumentError(f"invalid JSON: {name} is not a JSON value")


def loads(text: str, **hooks: Any) -> Any:
    """``json.loads`` of a document (``hooks``: its keyword arguments), refused as JSON
    refuses it, at its line and column; NaN and Infinity are not JSON values; past
    :data:`MAX_DEPTH` levels (json.loads stops only near Python's recursion limit, the
    scanners of spans at MAX_DEPTH) it nests too deeply."""
    try:
        return json.loads(text, parse_constant=_no_constant, **hooks)
    except json.JSONDecodeError as exc:
        raise DocumentError(
            f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise too_deep() from None


def _parse(content: bytes) -> tuple[str, str, list[_Value], list[list[_Member]]]:
    bom, text = decode_document(content, "JSON")
    loads(text)
    return bom, text, *_strings(text)


# --- inside a value: placeholders, tags, ICU messages ------------------------------------------


def _tag(markup: str) -> tuple[bool, str] | None:
    """An HTML tag that pairs (``(closing, name)``); None for self-closing and void ones."""
    if markup.endswith("/>"):
        return None
    m = _TAG_NAME.match(markup)
    name = m.group(1).lower() if m else ""
    return None if name in _VOID else (markup.startswith("</"), name)


def _message(value: str, icu_file: bool) -> list[icu.Item]:
    return icu.parse(value, quoting=icu_file, codes=_CODE)


def _icu_file(values: Sequence[_Value]) -> bool:
    """A file with a plural/select message is ICU MessageFormat throughout: ICU quoting applies
    to every value (``'{'`` is a literal brace), and translated braces get quoted."""
    return any(icu.has_args(_message(v.value, False)) for v in values)


@dataclass
class _Message:
    value: _Value
    items: list[icu.Item]
    levels: list[icu.Piece]


def _messages(values: Sequence[_Value], icu_file: bool) -> list[_Message]:
    out = []
    for v in values:
        items = _message(v.value, icu_file)
        out.append(_Message(v, items, icu.pieces(items, v.path, pair=_tag)))
    return out


def _escaper(items: Sequence[icu.Item]) -> Callable[[str], str] | None:
    """Translated text must not turn into markup the source did not have: in values with
    HTML, ``<`` before a tag-like name and ``&`` before an entity-like name are escaped (ICU
    quoting, for files with ICU messages, is :func:`mtfleet.formats.icu.render`'s)."""
    if not any(t.kind == "tag" or t.text.startswith("&") for t in icu.tokens(items)):
        return None

    def esc(s: str) -> str:
        s = re.sub(r"&(?=#?[A-Za-z0-9]+;)", "&amp;", s)
        return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", s)

    return esc


def _rendered(
    m: _Message, translations: list[str | None], target: str | None, icu_file: bool
) -> str:
    escape = _escaper(m.items)
    new = icu.render(m.levels, translations, target=target, quoting=icu_file, escape=escape)
    if new == m.value.value or not icu.has_args(m.items):
        return new
    # the skeleton is never sent to the engine, so no translation can break it; should the
    # escaping ever let one through, the source's text (in the target's categories) is kept
    kept = icu.render(m.levels, [None] * len(m.levels), target=target, quoting=icu_file)
    try:
        same = icu.skeleton(_message(new, icu_file)) == icu.skeleton(_message(kept, icu_file))
    except DocumentError:
        same = False
    return new if same else kept


# --- the format ---------------------------------------------------------------------------------


class JsonI18nFormat(DocumentFormat):
    name = "json"
    extensions = (".json",)
    media_type = "application/json"
    #: i18next's ``key_one``/``key_other`` members are plurals (not in ARB, whose keys are
    #: Dart names).
    suffix_plurals: bool = True

    def extract(self, content: bytes) -> list[Unit]:
        _, _, values, _ = _parse(content)
        icu_file = _icu_file(values)
        return [p.unit for m in _messages(values, icu_file) for p in m.levels if p.unit is not None]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        bom, text, values, objects = _parse(content)
        icu_file = _icu_file(values)
        messages = _messages(values, icu_file)
        units = [p.unit for m in messages for p in m.levels if p.unit is not None]
        check_count(self.name, units, translations)
        escaped = not any(ord(c) > 127 for c in text) and bool(
            re.search(r"\\u(?!00[0-7])[0-9a-fA-F]{4}", text)
        )
        done = iter(translations)
        written: dict[int, str] = {}  # a changed value's JSON literal, by id of its _Value
        for m in messages:
            mine = [None if p.unit is None else next(done) for p in m.levels]
            unchanged = all(
                p.unit is None or t == p.unit.text for p, t in zip(m.levels, mine, strict=True)
            )
            if unchanged and not (target_lang and icu.has_args(m.items)):
                continue
            new = _rendered(m, mine, target_lang, icu_file)
            if new == m.value.value:
                continue
            ascii_only = escaped or any("\ud800" <= c <= "\udfff" for c in new)
            written[id(m.value)] = json.dumps(new, ensure_ascii=ascii_only)
        edits: list[tuple[int, int, str]] = []
        removed: set[int] = set()
        if target_lang and self.suffix_plurals:
            for group in _suffix_plurals(objects):
                edits += _plural_edits(text, group, target_lang, written, removed, escaped)
        edits += [
            (m.value.start, m.value.end, written[id(m.value)])
            for m in messages
            if id(m.value) in written and id(m.value) not in removed
        ]
        edits.sort(key=lambda e: (e[0], e[1]))
        out = [bom]
        pos = 0
        for start, end, new_text in edits:
            out += [text[pos:start], new_text]
            pos = end
        out.append(text[pos:])
        return "".join(out).encode("utf-8")


# --- i18next suffix plurals ---------------------------------------------------------------------

#: An i18next v4 plural key: ``name_one``, ``name_ordinal_few``.
_SUFFIX = re.compile(
    r"(?P<name>.+?)_(?P<ordinal>ordinal_)?(?P<category>" + "|".join(CATEGORIES) + ")"
)


@dataclass
class _SuffixPlural:
    """One i18next plural: its members (category, member) in the file's order, all strings,
    ``other`` among them; the next member of the object after each (None for the last) and
    the one before it."""

    name: str
    ordinal: bool
    cases: list[tuple[str, _Member]]
    siblings: list[_Member]


def _suffix_plurals(objects: Sequence[Sequence[_Member]]) -> list[_SuffixPlural]:
    """Every i18next plural: members ``name_<category>`` (or ``name_ordinal_<category>``) of
    one object, all strings, one of them ``name_other``. A key that only ends like one
    (``arrowhead_one`` without an ``arrowhead_other``) is an ordinary key."""
    out = []
    for members in objects:
        groups: dict[tuple[str, bool], list[tuple[str, _Member]]] = {}
        for member in members:
            m = _SUFFIX.fullmatch(member.key)
            if m is not None:
                key = (m.group("name"), bool(m.group("ordinal")))
                groups.setdefault(key, []).append((m.group("category"), member))
        for (name, ordinal), cases in groups.items():
            categories = [c for c, _ in cases]
            if "other" not in categories or len(set(categories)) != len(categories):
                continue
            if any(member.value is None for _, member in cases):
                continue
            out.append(_SuffixPlural(name, ordinal, cases, list(members)))
    return out


def _placeholders(value: str) -> set[str]:
    """The codes of a value that stand for a value (``{{count}}``, ``%d``, ``{count}``)."""
    found = {m.group(0) for m in _CODE.finditer(value) if m.lastgroup not in ("tag", "entity")}
    return found | set(re.findall(r"\{\s*[\w.-]+\s*\}", value))  # ICU's simple arguments


def _plural_edits(
    text: str,
    group: _SuffixPlural,
    target: str,
    written: dict[int, str],
    removed: set[int],
    escaped: bool,
) -> list[tuple[int, int, str]]:
    """The edits that give ``group`` exactly the target's keys (:func:`plurals.for_target`,
    ``_zero`` explicit as i18next reads it for 0 in every language): a member the target lacks
    is removed with its comma, a made one (from ``other``'s translation) goes before
    ``name_other`` in its layout. The ids of removed members' values go into ``removed``."""
    cases = group.cases
    wanted = for_target(
        cases,
        target,
        explicit=lambda c: c == "zero",
        ordinal=group.ordinal,
        placeholders=lambda member: _placeholders(member.value.value if member.value else ""),
    )
    own = dict(cases)
    kept = {id(member) for c, member in wanted if member is own.get(c)}
    edits: list[tuple[int, int, str]] = []
    siblings = group.siblings
    gone = {id(member) for _, member in cases if id(member) not in kept}
    for at, member in enumerate(siblings):
        if id(member) not in gone:
            continue
        if any(id(later) not in gone for later in siblings[at + 1 :]):
            edits.append((member.key_start, siblings[at + 1].key_start, ""))  # with its comma
        else:  # in the object's last members: from the end of the one before (its comma)
            edits.append((siblings[at - 1].value_end, member.value_end, ""))
        if member.value is not None:
            removed.add(id(member.value))
    made = [(c, member) for c, member in wanted if member is not own.get(c)]
    if not made:
        return edits
    other = own["other"]
    before = other.key_start
    while before > 0 and text[before - 1] in _WS:
        before -= 1
    layout = text[before : other.key_start]
    colon = text[other.key_end : other.value_start]
    value = (
        written[id(other.value)]
        if other.value is not None and id(other.value) in written
        else text[other.value_start : other.value_end]
    )
    prefix = group.name + ("_ordinal_" if group.ordinal else "_")
    members = "".join(
        json.dumps(prefix + c, ensure_ascii=escaped) + colon + value + "," + layout for c, _ in made
    )
    edits.append((other.key_start, other.key_start, members))
    return edits


register(JsonI18nFormat())
