"""gettext catalogues (``.po``, ``.pot``): msgid → msgstr, plurals in the target's forms.

polib reads and writes the catalogue, so every field a translator's tool keeps survives:
``msgctxt``, translator (``#``) and extracted (``#.``) comments, references (``#:``), flags
(``#, fuzzy``, ``python-format``…), previous msgids (``#|``) and obsolete entries (``#~``, never
units). A unit is an entry's ``msgid``, and for a plural entry also its ``msgid_plural``; the
header entry and obsolete ones are not units. Format placeholders (``%s``, ``%(name)s``,
``%1$d``, ``{0}``, ``{name}``, ``%%``) are standalone codes.

The translated catalogue is the target's: its header says ``Language`` and ``Plural-Forms``
for the target (from CLDR, through Babel's ``get_plural``: Russian three forms, Arabic six,
Japanese one), and a plural entry gets one ``msgstr[n]`` per target form: the form whose
numbers CLDR calls ``one`` from the singular's translation, every other form from the
plural's (so Russian's ``one``, which covers 21, reads as the singular does). Without a target
(an identity render) the file's own ``Plural-Forms`` decides. polib writes entries in its own
line layout (long lines are not wrapped), so a layout may change where the content does not.
"""

from __future__ import annotations

import gettext
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polib
from babel import Locale, UnknownLocaleError
from babel.messages.plurals import get_plural

from mtfleet.core.documents import register
from mtfleet.core.documents.base import DocumentError, DocumentFormat, Unit, restore
from mtfleet.core.documents.text import check_count, coded_unit

#: printf (C and Python) and Python brace placeholders.
_PLACEHOLDER = re.compile(
    r"%(?:\([\w.-]+\))?(?:\d+\$)?[-+#0 ]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?"
    r"[diouxXeEfFgGcrsaA%]"
    r"|\{[\w.-]*(?:![rsa])?(?::[^{}]*)?\}"
)
_CHARSET = re.compile(r"charset=([\w.-]+)", re.I)


@dataclass
class _Entry:
    entry: polib.POEntry
    singular: Unit
    plural: Unit | None


def _catalogue(content: bytes) -> polib.POFile:
    head = content[:4096].decode("latin-1")
    found = _CHARSET.search(head)
    charset = found.group(1) if found and found.group(1).upper() != "CHARSET" else "utf-8"
    try:
        text = content.decode(charset)
    except (LookupError, UnicodeDecodeError) as exc:
        raise DocumentError(f"PO document is not valid {charset}: {exc}") from None
    if "\x00" in text:
        raise DocumentError("PO document contains NUL characters (a binary .mo file?)")
    if "\n" not in text.strip():
        # polib takes a one-line string for a path to open: a catalogue has several lines
        raise DocumentError("not a valid PO file: a catalogue has msgid and msgstr lines")
    try:
        # no re-wrapping: a comment polib wrapped would read back as two lines
        return polib.pofile(text, encoding=charset, wrapwidth=1 << 30)
    except (OSError, ValueError) as exc:
        raise DocumentError(f"not a valid PO file: {exc}") from None


def _unit(text: str, path: str) -> Unit:
    return coded_unit(text, path, _PLACEHOLDER)


def _entries(po: polib.POFile) -> list[_Entry]:
    out = []
    for entry in po:  # obsolete entries are not iterated as translatable (polib keeps them)
        if entry.obsolete or not entry.msgid:
            continue
        path = f"{entry.msgctxt}\x04{entry.msgid}" if entry.msgctxt else entry.msgid
        plural = _unit(entry.msgid_plural, path + " (plural)") if entry.msgid_plural else None
        out.append(_Entry(entry, _unit(entry.msgid, path), plural))
    return out


def _units(entries: list[_Entry]) -> list[Unit]:
    return [u for e in entries for u in (e.singular, e.plural) if u is not None]


def plural_forms(target: str) -> tuple[str, list[bool]]:
    """The target's ``Plural-Forms`` header and, for each of its forms, whether it is made from
    the singular (its numbers are CLDR's ``one``) or from the plural."""
    lang = target.replace("-", "_")
    rule = get_plural(lang)
    forms = f"nplurals={rule.num_plurals}; plural={rule.plural_expr};"
    try:
        category: Callable[[int], str] = Locale.parse(lang).plural_form
    except (UnknownLocaleError, ValueError):
        category = lambda n: "one" if n == 1 else "other"  # noqa: E731 - Babel's default rule
    return forms, _singular_forms(rule.num_plurals, rule.plural_expr, category)


def _singular_forms(count: int, expr: str, category: Callable[[int], str]) -> list[bool]:
    index = gettext.c2py(expr)
    first: dict[int, int] = {}
    for n in range(0, 1200):  # the first number of each form
        first.setdefault(int(index(n)), n)
    return [i in first and category(first[i]) == "one" for i in range(count)]


def _file_forms(po: polib.POFile) -> list[bool]:
    """What the file's own ``Plural-Forms`` says (English's two forms when it says nothing)."""
    header = po.metadata.get("Plural-Forms", "")
    n = re.search(r"nplurals\s*=\s*(\d+)", header)
    expr = re.search(r"plural\s*=\s*([^;]+)", header)
    if not n or not expr:
        return [True, False]
    try:
        return _singular_forms(int(n.group(1)), expr.group(1), lambda k: "one" if k == 1 else "")
    except (ValueError, SyntaxError):
        return [True, False]


def _language(target: str) -> str:
    """A language tag as PO headers write it (``pt_BR``, ``zh_Hant``)."""
    parts = target.replace("_", "-").split("-")
    return "_".join([parts[0].lower(), *(p if len(p) != 2 else p.upper() for p in parts[1:])])


class PoFormat(DocumentFormat):
    name = "po"
    extensions = (".po", ".pot")
    media_type = "text/x-gettext-translation; charset=utf-8"

    def extract(self, content: bytes) -> list[Unit]:
        return _units(_entries(_catalogue(content)))

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        po = _catalogue(content)
        entries = _entries(po)
        units = _units(entries)
        check_count(self.name, units, translations)
        done = iter(translations)
        if target_lang:
            po.metadata["Language"] = _language(target_lang)
            po.metadata["Plural-Forms"], singular = plural_forms(target_lang)
        else:
            singular = _file_forms(po)
        for e in entries:
            one = restore(next(done), e.singular.codes).text
            if e.plural is None:
                e.entry.msgstr = one
                continue
            other = restore(next(done), e.plural.codes).text
            e.entry.msgstr_plural = {i: one if s else other for i, s in enumerate(singular)}
        return str(po).encode(po.encoding or "utf-8")


register(PoFormat())
