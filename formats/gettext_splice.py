"""A translated gettext catalogue written into the original's text, entry by entry.

polib reads a catalogue well but writes it in its own layout: every entry rewrapped, comments
it does not keep (after the last entry) dropped. A translator's diff of our output would show
every line changed. So the output is the original text with only what changed replaced: the
``msgstr`` lines of each entry whose translation changed (written by polib, wrapped as
``msgmerge`` wraps), and the header's ``Language`` and ``Plural-Forms`` lines. Everything else,
comments, ``msgctxt``/``msgid`` lines, obsolete ``#~`` entries, blank lines and line endings,
keeps its bytes. (No library splices: babel and translate-toolkit rewrite whole files too.)

The text is cut into *msgstr sections* (a ``msgstr`` or ``msgstr[n]`` line and its ``"…"``
continuations, up to the next keyword, comment or blank line): one per entry in file order,
obsolete ones apart, the first with an empty msgid being the header, as polib reads them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import polib

#: The width ``msgmerge`` wraps at (polib's own default).
WRAP = 78
#: The first line of a header field (``"Language: de\\n"``).
_FIELD_START = re.compile(r'^"[\w.-]+:')


@dataclass
class _Section:
    start: int  # first line (its msgstr keyword)
    end: int  # after its last line
    empty_msgid: bool  # the entry's msgid is "" (the header, for the first such)


def _sections(lines: Sequence[str]) -> list[_Section]:
    out: list[_Section] = []
    msgid_empty = False
    in_msgid = False
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        if line.startswith("msgid "):
            msgid_empty, in_msgid = line.rstrip() == 'msgid ""', True
        elif line.startswith('"') and in_msgid:
            msgid_empty = msgid_empty and line.rstrip() == '""'
        elif line.startswith("msgstr"):
            start = i
            i += 1
            while i < len(lines) and lines[i].lstrip().startswith(('"', "msgstr[")):
                i += 1
            out.append(_Section(start, i, msgid_empty))
            in_msgid = False
            continue
        elif not line.startswith("msgid_plural"):
            in_msgid = False
        i += 1
    return out


def _msgstr_lines(entry: polib.POEntry, newline: str) -> list[str]:
    """The entry's msgstr lines, as polib writes them."""
    text = entry.__unicode__(wrapwidth=WRAP).split("\n")
    first = next(i for i, ln in enumerate(text) if ln.startswith("msgstr"))
    return [ln + newline for ln in text[first:] if ln]


def _newline(lines: Sequence[str]) -> str:
    return "\r\n" if lines and lines[0].endswith("\r\n") else "\n"


def splice(
    text: str,
    po: polib.POFile,
    changed: set[int],
    header: dict[str, str],
    fuzzy: AbstractSet[int] = frozenset(),
) -> str | None:
    """``text`` with the msgstr lines of the entries at ``changed`` (indices into ``po``'s
    entries, obsolete ones included, as polib lists them) written from ``po``, the entries
    at ``fuzzy`` marked ``#, fuzzy`` (their flags line, or a new one where flags go), and
    the ``header`` fields set. None where the text cannot be matched to ``po``'s entries (the
    caller writes the whole catalogue with polib)."""
    lines = text.splitlines(keepends=True)
    nl = _newline(lines)
    sections = _sections(lines)
    head = next((s for s in sections if s.empty_msgid), None)
    if head is not None:  # polib keeps the header as metadata, not as an entry
        sections.remove(head)
    live = [n for n, e in enumerate(po) if not e.obsolete]
    if len(sections) != len(live):
        return None
    replace: dict[int, tuple[int, list[str]]] = {}
    insert: dict[int, list[str]] = {}  # lines put in before a line
    for n, section in zip(live, sections, strict=True):
        if n in changed:
            replace[section.start] = (section.end, _msgstr_lines(po[n], nl))
        if n in fuzzy:
            at, flags = _flags_line(lines, section.start)
            if flags is None:
                insert[at] = [f"#, fuzzy{nl}"]
            elif "fuzzy" not in lines[flags]:
                rest = lines[flags][2:].strip()
                replace[flags] = (flags + 1, [f"#, fuzzy, {rest}{nl}" if rest else f"#, fuzzy{nl}"])
    prefix = ""
    if header:
        if head is None:  # no header entry: polib's, first
            prefix = str(po.metadata_as_entry()) + nl + nl
        else:
            found = _header(lines[head.start : head.end], header, po, nl)
            replace[head.start] = (head.end, found)
    out: list[str] = [prefix]
    i = 0
    while i < len(lines):
        out += insert.get(i, ())
        if i in replace:
            end, new = replace[i]
            out += new
            i = end
        else:
            out.append(lines[i])
            i += 1
    return "".join(out)


def _flags_line(lines: Sequence[str], start: int) -> tuple[int, int | None]:
    """For the entry whose msgstr section starts at line ``start``: where a flags line goes
    (after its comments, before its previous-msgid ``#|`` lines, msgctxt and msgid) and its
    flags line (``#,``), if it has one."""
    i = start - 1
    while i >= 0 and lines[i].strip() and (lines[i].startswith("#|") or lines[i][0] != "#"):
        if lines[i].lstrip().startswith("msgstr"):
            break
        i -= 1
    at = i + 1
    flags = None
    while i >= 0 and lines[i].startswith("#") and not lines[i].startswith(("#~", "#|")):
        if lines[i].startswith("#,"):
            flags = i
        i -= 1
    return at, flags


def _header(section: list[str], fields: dict[str, str], po: polib.POFile, nl: str) -> list[str]:
    """The header's msgstr lines with ``fields`` set: a field's own lines (a long one may be
    wrapped over several) replaced by one, a missing one added at the end; a header not
    written a field at a time is written by polib."""
    if section[0].strip() != 'msgstr ""':
        return _msgstr_lines(po.metadata_as_entry(), nl)
    groups: list[list[str]] = []  # the lines of each field
    for line in section[1:]:
        if not groups or groups[-1][-1].rstrip().endswith('\\n"'):
            if not _FIELD_START.match(line):
                return _msgstr_lines(po.metadata_as_entry(), nl)
            groups.append([])
        groups[-1].append(line)
    for key, value in fields.items():
        line = f'"{key}: {polib.escape(value)}\\n"{nl}'
        at = next((i for i, g in enumerate(groups) if g[0].startswith(f'"{key}:')), None)
        if at is None:
            groups.append([line])
        else:
            groups[at] = [line]
    return [section[0], *(ln for g in groups for ln in g)]
