"""Xcode String Catalogs (``.xcstrings``): the source language's strings are the units, the
translations become the target language's localization.

A String Catalog is JSON: ``sourceLanguage``, ``strings`` (key → entry) and ``version``. An
entry's ``localizations`` map a language to a *localization*: a ``stringUnit`` (``state``,
``value``), ``variations`` (``plural``: one localization per CLDR category; ``device``: per
``iphone``, ``mac``… — they nest) and ``substitutions`` (``%#@name@`` variables, each with its
own plural ``variations``).

Units, for each entry whose ``shouldTranslate`` is not false: every ``stringUnit.value`` of the
source language's localization (plural and device variations and substitutions each their own
unit), or, where the source has no localization, the key itself (Xcode's keys are the source
text). The key ``""`` and values that are empty or only codes are no units. Keys are never
units. Format specifiers (``%@``, ``%lld``, ``%1$@``, ``%#@name@``, a substitution's ``%arg``) are
standalone codes;
SwiftUI's Markdown (``**bold**``, ``*italic*``, ``~~strike~~``, ``[link](url)``) is paired
codes, a ``` `code` ``` span one standalone code.

Render writes ``localizations[target]`` of every entry with something translated: the source's
shape, each ``stringUnit`` ``{"state": "translated", "value": …}``, plural variations with
exactly the target's CLDR categories (:func:`plurals.for_target`; ``zero`` is explicit and
stays where the source has it; a case that spells its number, ``1 day``, is made from
``other`` where the target's category covers several numbers). A target localization already
holding the same texts is left as it is (its ``state`` too). Every other localization,
``comment``, ``extractionState`` and key stays as it was. Without ``target_lang`` the
translations go to the source language (the catalogue then reads as its translation); an
identity render gives the file back unchanged.

The file is never re-serialised: render splices the new localization into the original text,
written in the file's own JSON style (Xcode's ``"key" : value`` and two-space indent, or
whatever separators, indent, line endings and escaping the file uses), the new language key
placed where Xcode sorts it (case-insensitively), so a catalogue Xcode wrote looks as if Xcode
had written the translation. Invalid JSON, duplicate keys, and JSON that is not a String
Catalog (no ``sourceLanguage``/``strings``) are refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from mtfleet.formats import register
from mtfleet.formats.apple_strings import _SPECIFIER
from mtfleet.formats.base import TAG, DocumentError, DocumentFormat, Unit, restore
from mtfleet.formats.json_i18n import MAX_DEPTH, loads, too_deep
from mtfleet.formats.plurals import for_target
from mtfleet.formats.text import check_count, coded_unit, decode_document

#: Format specifiers (``%#@name@`` first) and SwiftUI Markdown.
CODE = re.compile(
    r"(?P<sub>%(?:\d+\$)?#@[^@\s%]*@)"
    r"|(?P<arg>%arg(?![A-Za-z0-9]))"
    r"|(?P<spec>" + _SPECIFIER.pattern + ")"
    r"|(?P<code>`[^`\n]+`)"
    r"|(?P<link>\[(?=[^\]\n]*\]\([^)\s]+\)))|(?P<href>\]\([^)\s]+\))"
    r"|(?P<delim>\*\*|~~)"
    r"|(?P<star>(?<![\w*\\])\*(?=[^\s*])|(?<=[^\s*\\])\*(?![\w*]))"
)

_WS = " \t\n\r"
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")


# --- the JSON text, with spans ------------------------------------------------------------------


@dataclass
class _Node:
    """A JSON value and its span; an object also has its members (key, key's start, value)."""

    start: int
    end: int
    members: list[tuple[str, int, _Node]] = field(default_factory=list)

    def get(self, key: str) -> _Node | None:
        return next((v for k, _, v in self.members if k == key), None)


def _spans(text: str) -> _Node:
    """The spans of (valid: json.loads accepted it) JSON ``text``."""

    def ws(pos: int) -> int:
        while pos < len(text) and text[pos] in _WS:
            pos += 1
        return pos

    def value(pos: int, depth: int) -> _Node:
        c = text[pos]
        if c == '"':
            return _Node(pos, scanstring(text, pos + 1)[1])
        if c in "{[":
            if depth == MAX_DEPTH:  # this object or array would be one level more
                raise too_deep()
            node = _Node(pos, -1)
            close = "}" if c == "{" else "]"
            pos = ws(pos + 1)
            while text[pos] != close:
                if c == "{":
                    key_start = pos
                    key, pos = scanstring(text, pos + 1)
                    pos = ws(ws(pos) + 1)  # past ':'
                    child = value(pos, depth + 1)
                    node.members.append((key, key_start, child))
                else:
                    child = value(pos, depth + 1)
                pos = ws(child.end)
                if text[pos] == ",":
                    pos = ws(pos + 1)
            node.end = pos + 1
            return node
        m = _NUMBER.match(text, pos)
        if m:
            return _Node(pos, m.end())
        for lit in ("true", "false", "null"):
            if text.startswith(lit, pos):
                return _Node(pos, pos + len(lit))
        raise DocumentError(f"invalid JSON: unexpected {c!r} at offset {pos}")

    return value(ws(0), 0)


@dataclass
class _Style:
    """How the file writes JSON: what separates a key from its value, what opens a member
    (newline and indent per level, or a fixed run of spaces), escapes."""

    colon: str = " : "
    newline: str = "\n"
    indent: str = "  "
    flat: str = ""  # a one-line file: what follows "{" and ","
    ascii: bool = False
    slash: bool = False

    @classmethod
    def of(cls, text: str, root: _Node) -> _Style:
        style = cls()
        if root.members:
            _, key_start, first = root.members[0]
            key_end = scanstring(text, key_start + 1)[1]
            style.colon = text[key_end : first.start]
            lead = text[root.start + 1 : key_start]
            if "\n" in lead:
                style.newline = "\r\n" if "\r\n" in lead else "\n"
                style.indent = lead.rsplit("\n", 1)[1]
            else:
                style.newline, style.indent, style.flat = "", "", lead
        # \uXXXX escapes for non-ASCII text, and no raw non-ASCII character: ensure_ascii
        style.ascii = (
            text.isascii() and re.search(r"\\u(?!00[0-7])[0-9a-fA-F]{4}", text) is not None
        )
        style.slash = "\\/" in text
        return style

    def string(self, s: str) -> str:
        out = json.dumps(s, ensure_ascii=self.ascii)
        return out.replace("/", "\\/") if self.slash else out

    def dump(self, value: Any, depth: int) -> str:
        """``value`` as JSON, its members at ``depth + 1``."""
        if isinstance(value, dict):
            if not self.newline:
                inner = ("," + self.flat).join(
                    self.string(k) + self.colon + self.dump(v, depth + 1) for k, v in value.items()
                )
                return "{" + self.flat + inner + self.flat + "}"
            pad = self.newline + self.indent * (depth + 1)
            inner = ("," + pad).join(
                self.string(k) + self.colon + self.dump(v, depth + 1) for k, v in value.items()
            )
            return "{" + pad + inner + self.newline + self.indent * depth + "}"
        if isinstance(value, list):
            if not value:
                return "[]"
            pad = self.newline + self.indent * (depth + 1) if self.newline else self.flat
            end = self.newline + self.indent * depth if self.newline else self.flat
            return "[" + pad + ("," + pad).join(self.dump(v, depth + 1) for v in value) + end + "]"
        if isinstance(value, str):
            return self.string(value)
        return json.dumps(value)


def _collate(key: str) -> tuple[str, str]:
    """Xcode's order of keys: case-insensitive (a lower-case spelling first)."""
    return key.casefold(), key.swapcase()


# --- the catalogue ------------------------------------------------------------------------------


@dataclass
class _Slot:
    """A source ``stringUnit.value`` (or an entry's key), and its unit (None: nothing to
    translate, written as it is)."""

    text: str
    unit: Unit | None
    new: str = ""


@dataclass
class _Entry:
    key: str
    node: _Node  # the entry's object in the text
    source: dict[str, Any] | None  # the source language's localization (None: the key is it)
    slots: dict[tuple[str, ...], _Slot]  # by path in the localization ((): the key itself)


@dataclass
class _Catalogue:
    bom: str
    text: str
    data: dict[str, Any]
    root: _Node
    source_lang: str
    entries: list[_Entry]

    @property
    def units(self) -> list[_Slot]:
        return [s for e in self.entries for s in e.slots.values() if s.unit is not None]


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise DocumentError(f"not a valid String Catalog: the key {k!r} occurs twice")
        out[k] = v
    return out


def _parse(content: bytes) -> _Catalogue:
    bom, text = decode_document(content, ".xcstrings")
    data = loads(text, object_pairs_hook=_no_duplicates)
    root = _spans(text)
    if not isinstance(data, dict) or not isinstance(data.get("sourceLanguage"), str):
        raise DocumentError('not a String Catalog: no "sourceLanguage"')
    strings = data.get("strings")
    strings_node = root.get("strings")
    if not isinstance(strings, dict) or strings_node is None:
        raise DocumentError('not a String Catalog: no "strings" object')
    source_lang: str = data["sourceLanguage"]
    entries: list[_Entry] = []
    for key, _, node in strings_node.members:
        entry = strings[key]
        if not isinstance(entry, dict):
            raise DocumentError(f"not a valid String Catalog: the entry {key!r} is not an object")
        locs = entry.get("localizations", {})
        if not isinstance(locs, dict):
            raise DocumentError(
                f"not a valid String Catalog: the localizations of {key!r} are not an object"
            )
        if entry.get("shouldTranslate") is False:
            continue
        source = locs.get(source_lang)
        slots: dict[tuple[str, ...], _Slot] = {}
        if isinstance(source, dict) and _has_strings(source):
            _walk(source, key, (), slots)
        else:
            source = None
            slots[()] = _slot(key, key)
        entries.append(_Entry(key, node, source, slots))
    return _Catalogue(bom, text, data, root, source_lang, entries)


def _has_strings(loc: dict[str, Any]) -> bool:
    unit = loc.get("stringUnit")
    return (isinstance(unit, dict) and isinstance(unit.get("value"), str)) or isinstance(
        loc.get("variations"), dict
    )


def _walk(
    loc: dict[str, Any], key: str, path: tuple[str, ...], slots: dict[tuple[str, ...], _Slot]
) -> None:
    """The string values of a localization, in the file's order."""
    for name, value in loc.items():
        if not isinstance(value, dict):
            continue
        if name == "stringUnit" and isinstance(value.get("value"), str):
            where = "/".join((key, *path)) if path else key
            slots[(*path, "stringUnit")] = _slot(value["value"], where)
        elif name == "variations":
            for kind, cases in value.items():
                if isinstance(cases, dict):
                    for case, sub in cases.items():
                        if isinstance(sub, dict):
                            _walk(sub, key, (*path, "variations", kind, case), slots)
        elif name == "substitutions":
            for var, sub in value.items():
                if isinstance(sub, dict):
                    _walk(sub, key, (*path, "substitutions", var), slots)


def _markdown() -> Callable[[re.Match[str]], tuple[bool, str] | None]:
    """The tag function of :func:`coded_unit` for one value: ``**``, ``~~`` and ``*`` open and
    close in turn, ``[`` opens a link its ``](url)`` closes."""
    seen: dict[str, int] = {}

    def tag(m: re.Match[str]) -> tuple[bool, str] | None:
        kind = m.lastgroup
        if kind == "link":
            return False, "link"
        if kind == "href":
            return True, "link"
        if kind in ("delim", "star"):
            token = m.group(0)
            seen[token] = seen.get(token, 0) + 1
            return seen[token] % 2 == 0, token
        return None

    return tag


def _slot(text: str, path: str) -> _Slot:
    unit = coded_unit(text, path, CODE, _markdown())
    return _Slot(text, unit if TAG.sub("", unit.text).strip() else None)


# --- render -------------------------------------------------------------------------------------


def _sorted(d: dict[str, Any]) -> dict[str, Any]:
    return {k: d[k] for k in sorted(d, key=_collate)}


def _build(
    loc: dict[str, Any], path: tuple[str, ...], entry: _Entry, target: str
) -> dict[str, Any]:
    """The target's localization made from the source's ``loc`` at ``path``."""
    out: dict[str, Any] = {}
    for name, value in loc.items():
        if not isinstance(value, dict):
            continue
        if name == "stringUnit" and (*path, "stringUnit") in entry.slots:
            slot = entry.slots[(*path, "stringUnit")]
            out[name] = {"state": "translated", "value": slot.new or slot.text}
        elif name == "variations":
            variations: dict[str, Any] = {}
            for kind, cases in value.items():
                if not isinstance(cases, dict):
                    continue
                pairs = [(c, (c, sub)) for c, sub in cases.items() if isinstance(sub, dict)]
                if kind == "plural":  # made categories come from "other": built from its path
                    pairs = for_target(
                        pairs,
                        target,
                        explicit=lambda c: c == "zero",
                        placeholders=lambda case: _specifiers(case[1]),
                    )
                variations[kind] = _sorted(
                    {
                        c: _build(sub, (*path, "variations", kind, source), entry, target)
                        for c, (source, sub) in pairs
                    }
                )
            out[name] = _sorted(variations)
        elif name == "substitutions":
            subs: dict[str, Any] = {}
            for var, sub in value.items():
                if isinstance(sub, dict):
                    made = _build(sub, (*path, "substitutions", var), entry, target)
                    rest = {k: v for k, v in sub.items() if k not in ("stringUnit", "variations")}
                    subs[var] = _sorted({**rest, **made})
            out[name] = _sorted(subs)
    return _sorted(out)


def _specifiers(loc: dict[str, Any]) -> set[str]:
    """The format specifiers a localization's values write (how a plural case writes its
    number), its nested variations' included."""
    unit = loc.get("stringUnit")
    value = unit.get("value") if isinstance(unit, dict) else None
    found = set()
    if isinstance(value, str):
        found = {m.group(0) for m in CODE.finditer(value) if m.lastgroup in ("sub", "arg", "spec")}
    for cases in (loc.get("variations") or {}).values():
        for sub in cases.values() if isinstance(cases, dict) else ():
            if isinstance(sub, dict):
                found |= _specifiers(sub)
    return found


def _texts(loc: Any) -> Any:
    """A localization without its ``state``s (what a translation changes)."""
    if isinstance(loc, dict):
        return {k: _texts(v) for k, v in loc.items() if k != "state"}
    return loc


def _language(target: str, locs: dict[str, Any] | None, source: str) -> str:
    """The catalogue's spelling of ``target`` (``pt-BR``, ``zh-Hans``): one it already has,
    else the language lower-case, a script title-case, a region upper-case."""
    tag = target.replace("_", "-")
    for known in [source, *(locs or {})]:
        if known.casefold() == tag.casefold():
            return known
    parts = tag.split("-")
    out = [parts[0].lower()]
    for p in parts[1:]:
        out.append(p.title() if len(p) == 4 else p.upper() if len(p) in (2, 3) else p)
    return "-".join(out)


def _insert(
    text: str, obj: _Node, key: str, value: Any, depth: int, style: _Style
) -> tuple[int, int, str]:
    """The edit that adds ``key`` to the object ``obj`` (at ``depth``), where Xcode sorts it."""
    member = style.string(key) + style.colon + style.dump(value, depth + 1)
    if not obj.members:
        return obj.start, obj.end, style.dump({key: value}, depth)
    lead = text[obj.start + 1 : obj.members[0][1]]
    at = next((i for i, (k, _, _) in enumerate(obj.members) if _collate(k) > _collate(key)), None)
    if at is None:
        end = obj.members[-1][2].end
        return end, end, "," + lead + member
    start = obj.members[at][1]
    return start, start, member + "," + lead


class XcstringsFormat(DocumentFormat):
    name = "xcstrings"
    extensions = (".xcstrings",)
    media_type = "application/json"

    def extract(self, content: bytes) -> list[Unit]:
        return [s.unit for s in _parse(content).units if s.unit is not None]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        cat = _parse(content)
        slots = cat.units
        check_count(self.name, slots, translations)
        changed = False
        for slot, translation in zip(slots, translations, strict=True):
            assert slot.unit is not None
            restored = restore(translation, slot.unit.codes).text
            slot.new = restored if restored.strip() else slot.text
            changed = changed or slot.new != slot.text
        if target_lang is None and not changed:
            return content
        style = _Style.of(cat.text, cat.root)
        strings = cat.data["strings"]
        edits: list[tuple[int, int, str]] = []
        for entry in cat.entries:
            if not any(s.unit is not None for s in entry.slots.values()):
                continue
            locs = strings[entry.key].get("localizations")
            target = _language(target_lang or cat.source_lang, locs, cat.source_lang)
            if entry.source is None:
                slot = entry.slots[()]
                new: dict[str, Any] = {"stringUnit": {"state": "translated", "value": slot.new}}
                before = (locs or {}).get(target)
                if before is None and target == cat.source_lang:
                    before = {"stringUnit": {"value": entry.key}}
            else:
                new = _build(entry.source, (), entry, target)
                before = (locs or {}).get(target)
            if before is not None and _texts(before) == _texts(new):
                continue
            edits.append(self._edit(cat, entry, target, new, style))
        out: list[str] = []
        pos = 0
        for start, end, text in sorted(edits, key=lambda e: (e[0], e[1])):
            out += [cat.text[pos:start], text]
            pos = end
        out.append(cat.text[pos:])
        return (cat.bom + "".join(out)).encode("utf-8")

    @staticmethod
    def _edit(
        cat: _Catalogue, entry: _Entry, target: str, new: dict[str, Any], style: _Style
    ) -> tuple[int, int, str]:
        # depths: the root 0, "strings" 1, an entry 2, its localizations 3, a language's 4
        locs = entry.node.get("localizations")
        if locs is None:
            return _insert(cat.text, entry.node, "localizations", {target: new}, 2, style)
        current = locs.get(target)
        if current is None:
            return _insert(cat.text, locs, target, new, 3, style)
        return current.start, current.end, style.dump(new, 4)


register(XcstringsFormat())
