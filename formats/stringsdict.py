"""Apple ``.stringsdict`` files (XML property lists of plural rules): a unit per string value;
keys, structure and layout kept byte for byte; plural forms made the target's.

A ``.stringsdict`` maps each key the app looks up (never a unit: ``EVERY_%ld_DAYS`` is code's
name for the string) to a dict whose ``NSStringLocalizedFormatKey`` is the format the app
fills (``%#@days@``: each ``%#@name@`` names a variable dict below it, a code), and whose
variable dicts (``NSStringFormatSpecTypeKey`` = ``NSStringPluralRuleType``) hold one string
per CLDR plural category: ``zero``, ``one``, ``two``, ``few``, ``many``, ``other``. Every
string value is a unit except those of ``NSStringFormatSpecTypeKey`` and
``NSStringFormatValueTypeKey``; device-specific (``NSStringDeviceSpecificRuleType``) and
width (``NSStringVariableWidthRuleType``) variants are units too. Format specifiers (``%ld``,
``%@``, ``%1$@``, ``%#@name@``…) are standalone codes. A value that is empty or only codes
(``%#@days@``) is no unit.

The file is the target's (a ``.stringsdict`` holds one language): with ``target_lang``, each
plural rule gets exactly the target's CLDR categories (:func:`plurals.for_target`): a
category the target lacks is removed with the whitespace before it, one it needs is inserted
before ``other`` (from ``other``'s translation) in the file's own indentation, and so is one
whose source spells its number (``1 day``) where the target's category covers several
(Russian ``one``: 1, 21, 31…); ``zero`` is an explicit form Apple reads in every language, so it
stays.

The file is never re-serialised: render splices the new values into the original text (a
value the translation leaves as it was keeps its bytes: entities, CDATA), so tabs, the
``DOCTYPE``, comments and key order survive. The XML is checked first by the hardened parser
(:func:`xliff.parse_untrusted_xml`: no DTD is loaded and no entity expanded); the plist
``DOCTYPE`` every ``.stringsdict`` carries is let through when it is a plain external
identifier, and refused when it has an internal subset (where entities are declared).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mtfleet.formats import register
from mtfleet.formats.apple_strings import _SPECIFIER
from mtfleet.formats.base import TAG, DocumentError, DocumentFormat, Unit, restore
from mtfleet.formats.plurals import CATEGORIES, for_target
from mtfleet.formats.text import check_count, coded_unit
from mtfleet.formats.xliff import parse_untrusted_xml, xml_text

#: Apple's format specifiers, with ``%#@name@`` (a variable of the stringsdict) first.
PLACEHOLDER = re.compile(r"%(?:\d+\$)?#@[^@\s%]*@|" + _SPECIFIER.pattern)

#: Keys whose string values are the rule's machinery, not text.
_STRUCTURAL = {"NSStringFormatSpecTypeKey", "NSStringFormatValueTypeKey"}
_PLURAL_RULE = "NSStringPluralRuleType"

_DOCTYPE = re.compile(rb"<!DOCTYPE\b[^>\[]*(\[)?", re.I)
_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*?\bencoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
#: Markup of a (well-formed: lxml said so) XML document, in order; text lies between matches.
_MARKUP = re.compile(
    r"<!--.*?-->"
    r"|<\?.*?\?>"
    r"|<!\[CDATA\[.*?\]\]>"
    r"|<!DOCTYPE[^>\[]*>"
    r"|<(?P<close>/)?(?P<tag>[^\s/>!?]+)(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*\s*"
    r"(?P<empty>/)?>",
    re.S,
)
_TRAILING_WS = re.compile(r"\s*\Z")


@dataclass
class _El:
    """An element of the plist: its span in the text and its content's (None when empty)."""

    tag: str
    start: int
    end: int = -1
    inner: tuple[int, int] | None = None
    before: int = 0  # where the markup before it ends (its parent's start tag or a sibling)
    children: list[_El] = field(default_factory=list)
    node: Any = None  # the lxml element

    @property
    def text(self) -> str:
        if self.node is None or len(self.node):
            return ""
        return str(self.node.text or "")


@dataclass
class _String:
    """A ``<string>`` value: its text, and the unit it is (None: empty or only codes)."""

    el: _El
    text: str
    unit: Unit | None
    new: str = ""  # the content written back (XML-escaped)


@dataclass
class _Rule:
    """A plural rule's dict: its (category, key element, value) pairs in the file's order."""

    cases: list[tuple[str, _El, _String]]


@dataclass
class _Doc:
    text: str
    encoding: str
    bom: bytes
    strings: list[_String]
    rules: list[_Rule]

    @property
    def units(self) -> list[_String]:
        return [s for s in self.strings if s.unit is not None]


def _decode(content: bytes) -> tuple[bytes, str, str]:
    if content.startswith(b"bplist"):
        raise DocumentError(".stringsdict document is a binary property list; send it as XML")
    if content.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise DocumentError(".stringsdict document is UTF-16; send it as UTF-8")
    bom = codecs.BOM_UTF8 if content.startswith(codecs.BOM_UTF8) else b""
    declared = _ENCODING.match(content[len(bom) : len(bom) + 512])
    encoding = declared.group(1).decode("ascii").lower() if declared else "utf-8"
    try:
        codecs.lookup(encoding)
        text = content[len(bom) :].decode(encoding)
    except LookupError:
        raise DocumentError(
            f".stringsdict document declares an unknown encoding {encoding!r}"
        ) from None
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f".stringsdict document is not valid {encoding}: byte 0x{content[exc.start]:02x} "
            f"at offset {exc.start + len(bom)}"
        ) from None
    if "\x00" in text:
        raise DocumentError(".stringsdict document contains NUL characters (a binary file?)")
    return bom, encoding, text


def _checked_xml(content: bytes) -> Any:
    """The lxml root, parsed with the hardened parser; the plist DOCTYPE is blanked out first
    (same length: offsets stay) when it has no internal subset."""
    doctype = _DOCTYPE.search(content, 0, 4096)
    if doctype is not None:
        if doctype.group(1):
            raise DocumentError(
                ".stringsdict document has a DOCTYPE with an internal subset; DTDs and entities "
                "are not accepted"
            )
        end = content.find(b">", doctype.end())
        if end < 0:
            raise DocumentError(".stringsdict document is not well-formed XML: an open DOCTYPE")
        content = (
            content[: doctype.start()] + b" " * (end + 1 - doctype.start()) + content[end + 1 :]
        )
    return parse_untrusted_xml(content, ".stringsdict document")


def _tree(text: str, root: Any) -> _El:
    """The elements of ``text`` with their spans, each tied to lxml's element (same order)."""
    nodes = [n for n in root.iter() if isinstance(n.tag, str)]
    top = _El("", 0, len(text), (0, len(text)))
    stack = [top]
    last = 0  # end of the previous markup
    count = 0
    for m in _MARKUP.finditer(text):
        tag = m.group("tag")
        if tag is None:
            last = m.end()
            continue
        parent = stack[-1]
        if m.group("close"):
            el = stack.pop()
            if el.tag != tag or el.inner is None:  # lxml accepted it: cannot happen
                raise DocumentError(f".stringsdict document: unexpected </{tag}>")
            el.inner = (el.inner[0], m.start())
            el.end = m.end()
        else:
            if count >= len(nodes) or nodes[count].tag != tag:
                raise DocumentError(f".stringsdict document: cannot follow the element <{tag}>")
            el = _El(tag, m.start(), before=last, node=nodes[count])
            count += 1
            parent.children.append(el)
            if m.group("empty"):
                el.end = m.end()
            else:
                el.inner = (m.end(), m.end())
                stack.append(el)
        last = m.end()
    if len(stack) != 1 or count != len(nodes):
        raise DocumentError(".stringsdict document: its elements could not be followed")
    return top


def _pairs(d: _El, where: str) -> list[tuple[str, _El, _El]]:
    kids = d.children
    if (
        len(kids) % 2
        or any(k.tag != "key" for k in kids[::2])
        or any(v.tag == "key" for v in kids[1::2])
    ):
        raise DocumentError(
            f"not a valid .stringsdict: the dict {where} does not alternate <key> and values"
        )
    return [(k.text, k, v) for k, v in zip(kids[::2], kids[1::2], strict=True)]


def _parse(content: bytes) -> _Doc:
    bom, encoding, text = _decode(content)
    root = _checked_xml(content)
    top = _tree(text, root)
    plist = top.children[0] if len(top.children) == 1 else None
    if plist is None or plist.tag != "plist":
        raise DocumentError("not a .stringsdict: the root element is not <plist>")
    if len(plist.children) != 1 or plist.children[0].tag != "dict":
        raise DocumentError("not a .stringsdict: the property list does not hold one <dict>")
    doc = _Doc(text, encoding, bom, [], [])
    _walk(doc, plist.children[0], "", top=True)
    return doc


def _string(doc: _Doc, el: _El, path: str) -> _String:
    value = el.text
    unit = coded_unit(value, path, PLACEHOLDER) if el.inner is not None else None
    if unit is not None and not _has_text(unit):
        unit = None
    s = _String(el, value, unit, "" if el.inner is None else doc.text[slice(*el.inner)])
    doc.strings.append(s)
    return s


def _has_text(unit: Unit) -> bool:
    return bool(TAG.sub("", unit.text).strip())


def _walk(doc: _Doc, d: _El, path: str, *, top: bool = False) -> None:
    pairs = _pairs(d, f"at {path!r}" if path else "at the top")
    spec = next((v.text for k, _, v in pairs if k == "NSStringFormatSpecTypeKey"), None)
    rule = _Rule([]) if spec == _PLURAL_RULE else None
    for key, key_el, value in pairs:
        where = f"{path}/{key}" if path else key
        if value.tag == "dict":
            _walk(doc, value, where)
        elif value.tag == "string" and (top or key not in _STRUCTURAL):
            if value.node is not None and len(value.node):
                continue  # a comment or PI inside the value: left as it is
            s = _string(doc, value, where)
            if rule is not None and key in CATEGORIES:
                rule.cases.append((key, key_el, s))
    if rule is not None and rule.cases:
        doc.rules.append(rule)


def _ws(text: str, start: int, end: int) -> str:
    """The whitespace that ends ``text[start:end]``."""
    m = _TRAILING_WS.search(text, start, end)
    return m.group(0) if m else ""


def _edits(doc: _Doc, target_lang: str | None) -> list[tuple[int, int, str]]:
    text = doc.text
    edits: list[tuple[int, int, str]] = []
    dropped: set[int] = set()
    if target_lang:
        for rule in doc.rules:
            cases = [(k, (key_el, s)) for k, key_el, s in rule.cases]
            wanted = for_target(
                cases,
                target_lang,
                explicit=lambda k: k == "zero",
                placeholders=lambda case: PLACEHOLDER.findall(case[1].text),
            )
            own = dict(cases)
            kept = {id(case[1]) for k, case in wanted if case is own.get(k)}
            made = [(k, case) for k, case in wanted if case is not own.get(k)]
            for _, (key_el, s) in cases:
                if id(s) not in kept:
                    edits.append((key_el.before, s.el.end, ""))
                    dropped.add(id(s))
            if not made:
                continue
            source = made[0][1][1]  # the case the made ones copy (other)
            anchor = next((key_el for k, (key_el, _) in cases if k == "other"), None)
            last_key, last = cases[-1][1]
            indent = _ws(text, (anchor or last_key).before, (anchor or last_key).start)
            between = _ws(text, last_key.end, last.el.start)
            at = anchor.before if anchor is not None else last.el.end
            insert = "".join(
                f"{indent}<key>{k}</key>{between}<string>{source.new}</string>" for k, _ in made
            )
            edits.append((at, at, insert))
    for s in doc.strings:
        if s.el.inner is not None and id(s) not in dropped and s.new != text[slice(*s.el.inner)]:
            edits.append((*s.el.inner, s.new))
    return edits


class StringsdictFormat(DocumentFormat):
    name = "stringsdict"
    extensions = (".stringsdict",)
    media_type = "application/x-plist"

    def extract(self, content: bytes) -> list[Unit]:
        return [s.unit for s in _parse(content).units if s.unit is not None]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        doc = _parse(content)
        units = doc.units
        check_count(self.name, units, translations)
        for s, translation in zip(units, translations, strict=True):
            assert s.unit is not None
            restored = restore(translation, s.unit.codes).text
            if restored != s.text and restored.strip():
                s.new = xml_text(restored)
        out: list[str] = []
        pos = 0
        for start, end, new in sorted(_edits(doc, target_lang), key=_order):
            out += [doc.text[pos:start], new]
            pos = end
        out.append(doc.text[pos:])
        return doc.bom + "".join(out).encode(doc.encoding, "xmlcharrefreplace")


def _order(edit: tuple[int, int, str]) -> tuple[int, int]:
    return edit[0], edit[1]


register(StringsdictFormat())
