"""gettext catalogues (``.po``, ``.pot``): msgid → msgstr, plurals in the target's forms.

polib reads the catalogue, and every field a translator's tool keeps survives:
``msgctxt``, translator (``#``) and extracted (``#.``) comments, references (``#:``), flags
(``#, fuzzy``, ``python-format``…), previous msgids (``#|``) and obsolete entries (``#~``, never
units). A unit is an entry's ``msgid``, and for a plural entry also its ``msgid_plural``; the
header entry and obsolete ones are not units. Format placeholders (``%s``, ``%(name)s``,
``%1$d``, ``{0}``, ``{name}``, ``%%``) are standalone codes.

The translated catalogue is the target's: its header says ``Language`` for the target, and
``Plural-Forms`` is the catalogue's own where its ``Language`` already is the target's language,
else gettext's conventional formula for the target (:func:`plurals.gettext_rule`, Weblate's
data: Russian three forms, Arabic six, Japanese one, Spanish and French two, as their
catalogues have). A plural entry gets one ``msgstr[n]`` per form: a form for 1 alone from the
singular's translation; a form for 1 and other numbers but not 2 (Russian's 1, 21, 31…;
French 0 and 1) from the singular's where the singular writes the count as the plural does
(``%d file``), else from the plural's (``One file`` would read so for 21); every other form
from the plural's. Without a target (an identity render) the file's own ``Plural-Forms``
decides.

The catalogue is written into the original's text (:mod:`gettext_splice`): only the msgstr
lines of the entries whose translation changed and the header's ``Language`` and
``Plural-Forms`` lines are rewritten, every other byte stays.

An entry a unit of which has no translation (it failed, or an output check withheld it) is left
untranslated, an empty ``msgstr`` (:meth:`PoFormat.render_result`): gettext then shows the
msgid and a translator's tool lists the entry as to do, where the English in ``msgstr`` would
pass for a translation. Pango/HTML markup in a message (``<a href>``, ``<b>``) is codes, as
placeholders are. Menu accelerators (``_File``, ``&Open``) are taken out of the msgid before
the engine and put back on the same letter of the translation (:mod:`accelerators`).
"""

from __future__ import annotations

import gettext
import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import polib

from mtfleet.formats import accelerators, gettext_splice, register
from mtfleet.formats.base import DocumentError, DocumentFormat, Rendered, Unit, restore
from mtfleet.formats.plurals import gettext_rule, placeholders
from mtfleet.formats.text import check_count, coded_unit

#: printf (C and Python) and Python brace placeholders.
_PLACEHOLDER = re.compile(
    r"%(?:\([\w.-]+\))?(?:\d+\$)?[-+#0 ]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?"
    r"[diouxXeEfFgGcrsaA%]"
    r"|\{[\w.-]*(?:![rsa])?(?::[^{}]*)?\}"
)
_CHARSET = re.compile(r"charset=([\w.-]+)", re.I)


#: Markup in a message (Pango's ``<b>``, ``<a href>``; HTML): codes, as placeholders are.
_MARKUP = re.compile(rf"{_PLACEHOLDER.pattern}|</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>")
_TAG = re.compile(r"<(/?)([A-Za-z][\w:.-]*)")


@dataclass
class _Entry:
    entry: polib.POEntry
    singular: Unit
    plural: Unit | None
    accelerator: tuple[str, str] | None = None  # (marker, key) taken out of the msgid


def _catalogue(content: bytes) -> polib.POFile:
    return _parse(*_decode(content))


def _decode(content: bytes) -> tuple[str, str]:
    """The catalogue's text and its charset (its header's)."""
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
    return text, charset


def _parse(text: str, charset: str) -> polib.POFile:
    try:
        # no re-wrapping: a comment polib wrapped would read back as two lines
        return polib.pofile(text, encoding=charset, wrapwidth=1 << 30)
    except (OSError, ValueError) as exc:
        raise DocumentError(f"not a valid PO file: {exc}") from None


def _tag(m: re.Match[str]) -> tuple[bool, str] | None:
    found = _TAG.match(m.group(0))
    if found is None or m.group(0).endswith("/>"):
        return None
    return bool(found.group(1)), found.group(2).lower()


def _unit(text: str, path: str) -> Unit:
    return coded_unit(text, path, _MARKUP, _tag)


def _entries(po: polib.POFile) -> list[_Entry]:
    live = [e for e in po if not e.obsolete and e.msgid]  # obsolete ones: polib keeps them
    marker = accelerators.marker_of(
        po.metadata.get("X-Accelerator-Marker"), (e.msgid for e in live)
    )
    out = []
    for entry in live:
        path = f"{entry.msgctxt}\x04{entry.msgid}" if entry.msgctxt else entry.msgid
        msgid, plural_id, key = entry.msgid, entry.msgid_plural, None
        if marker is not None:
            msgid, key = accelerators.take(msgid, marker, _MARKUP)
            plural_id, plural_key = accelerators.take(plural_id, marker, _MARKUP)
            key = key or plural_key
        plural = _unit(plural_id, path + " (plural)") if entry.msgid_plural else None
        accelerator = (marker, key) if marker is not None and key is not None else None
        out.append(_Entry(entry, _unit(msgid, path), plural, accelerator))
    return out


def _finish(
    entries: list[_Entry], untranslated: AbstractSet[int], review: AbstractSet[int] = frozenset()
) -> list[str]:
    """After the translations are in: an entry a unit of which has no translation is left
    untranslated (an empty ``msgstr``: gettext shows the msgid, and a translator's tool lists
    it as to do), never shipped with the source as its translation; one a unit of which is in
    ``review`` is marked ``#, fuzzy`` (a translator's tool lists it as to review, and msgfmt
    leaves it out of the compiled catalogue until then); an accelerator taken out goes back
    on its letter. Returns what had to be guessed."""
    warnings: list[str] = []
    n = 0
    for e in entries:
        mine = {n, n + 1} if e.plural is not None else {n}
        n += len(mine)
        entry = e.entry
        if mine & untranslated:
            if entry.msgid_plural:
                entry.msgstr_plural = dict.fromkeys(entry.msgstr_plural, "")
            else:
                entry.msgstr = ""
            continue
        if mine & review and "fuzzy" not in entry.flags:
            entry.flags.insert(0, "fuzzy")
        if e.accelerator is None:
            continue
        marker, key = e.accelerator
        texts = entry.msgstr_plural if entry.msgid_plural else {0: entry.msgstr}
        missing = False
        for i, text in texts.items():
            texts[i], found = accelerators.put(text, marker, key, _MARKUP)
            missing = missing or not found
        if not entry.msgid_plural:
            entry.msgstr = texts[0]
        if missing:
            warnings.append(
                f"msgid {entry.msgid[:60]!r}: the translation has no {key!r} for the "
                f"accelerator {marker}{key}; put on its first letter"
            )
    return warnings


def _state(po: polib.POFile) -> list[tuple[str, dict[int, str]]]:
    return [(e.msgstr, dict(e.msgstr_plural)) for e in po]


def _units(entries: list[_Entry]) -> list[Unit]:
    return [u for e in entries for u in (e.singular, e.plural) if u is not None]


def _own_rule(po: polib.POFile) -> tuple[int, str] | None:
    """The catalogue's own ``Plural-Forms`` (nplurals, expression); None where it has none
    that reads (a template's ``nplurals=INTEGER``)."""
    header = po.metadata.get("Plural-Forms", "")
    n = re.search(r"nplurals\s*=\s*(\d+)", header)
    expr = re.search(r"plural\s*=\s*([^;]+)", header)
    if not n or not expr or not 0 < int(n.group(1)) <= 10:
        return None
    try:
        gettext.c2py(expr.group(1))
    except (ValueError, SyntaxError):
        return None
    return int(n.group(1)), expr.group(1).strip()


def _rule(po: polib.POFile, target: str) -> tuple[tuple[int, str], bool]:
    """The ``Plural-Forms`` of the target's catalogue, and whether it is the file's own: the
    file's where its ``Language`` is the target's language (a catalogue of that language whose
    team chose its formula), else gettext's conventional one for the target
    (:func:`plurals.gettext_rule`)."""
    own = _own_rule(po)
    language = po.metadata.get("Language", "").replace("-", "_").split("_")[0].lower()
    if own and language and language == target.replace("-", "_").split("_")[0].lower():
        return own, True
    return gettext_rule(target), False


def _forms(count: int, expr: str) -> list[frozenset[int]]:
    """The numbers (up to 1,199) each of the formula's forms covers."""
    index = gettext.c2py(expr)
    numbers: list[set[int]] = [set() for _ in range(count)]
    for n in range(1200):
        i = int(index(n))
        if 0 <= i < count:
            numbers[i].add(n)
    return [frozenset(found) for found in numbers]


def _from_singular(numbers: frozenset[int], counts: bool) -> bool:
    """Whether a form is written from the entry's singular: a form for 1 alone, or for 1 and
    other numbers but not 2 (Russian's 1, 21, 31…; French 0 and 1) where the singular writes
    the count as the plural does (``%d file``, not ``One file``)."""
    return 1 in numbers and (numbers == {1} or (2 not in numbers and counts))


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
        return self.render_result(content, translations, target_lang=target_lang).content

    def render_result(
        self,
        content: bytes,
        translations: Sequence[str],
        untranslated: AbstractSet[int] = frozenset(),
        *,
        target_lang: str | None = None,
        review: AbstractSet[int] = frozenset(),
    ) -> Rendered:
        """The catalogue with the translations in, written into the original's text (only
        what changed is rewritten: :mod:`gettext_splice`); the units in ``untranslated`` leave
        their entries untranslated, those in ``review`` mark theirs fuzzy (:func:`_finish`)."""
        text, charset = _decode(content)
        po = _parse(text, charset)
        entries = _entries(po)
        units = _units(entries)
        check_count(self.name, units, translations)
        before, header = _state(po), dict(po.metadata)
        done = iter(translations)
        if target_lang:
            (count, expr), own = _rule(po, target_lang)
            po.metadata["Language"] = _language(target_lang)
            if not own:
                po.metadata["Plural-Forms"] = f"nplurals={count}; plural={expr};"
        else:
            count, expr = _own_rule(po) or (2, "n != 1")
        forms = _forms(count, expr)
        for e in entries:
            one = restore(next(done), e.singular.codes).text
            if e.plural is None:
                e.entry.msgstr = one
                continue
            other = restore(next(done), e.plural.codes).text
            counts = placeholders(e.singular) >= placeholders(e.plural)
            e.entry.msgstr_plural = {
                i: one if _from_singular(numbers, counts) else other
                for i, numbers in enumerate(forms)
            }
        flags = [list(e.flags) for e in po]
        warnings = _finish(entries, untranslated, review)
        changed = {n for n, state in enumerate(_state(po)) if state != before[n]}
        fuzzy = {n for n, e in enumerate(po) if e.flags != flags[n]}
        fields = {k: v for k, v in po.metadata.items() if header.get(k) != v}
        out = gettext_splice.splice(text, po, changed, fields, fuzzy)
        return Rendered((str(po) if out is None else out).encode(charset), warnings)


register(PoFormat())
