"""gettext PO/POT catalogues (formats/gettext_po.py): every source field kept, msgstr
and the header filled for the target, plural entries in exactly the target's CLDR forms.

The catalogues are read back with polib and the plural rules checked against Babel's CLDR data
and Python's own gettext evaluation of the header's expression, independently of the format's
code."""

from __future__ import annotations

import gettext
from pathlib import Path

import polib
import pytest
from babel import Locale

from mtfleet.formats import DocumentError, for_name, for_upload
from mtfleet.formats.base import TAG

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents" / "po"
CATALOGUES = sorted(FIXTURES.iterdir())
#: CLDR's plural categories (cardinal) of each target, as a translator's tool lists them.
CLDR = {"ru": 3, "ar": 6, "ja": 1, "pl": 3}


def identity(content: bytes, target: str | None) -> polib.POFile:
    fmt = for_upload(content, "x.po")
    units = fmt.extract(content)
    return polib.pofile(fmt.render(content, [u.text for u in units], target_lang=target).decode())


def fields(entry: polib.POEntry) -> tuple[object, ...]:
    return (
        entry.msgctxt,
        entry.msgid,
        entry.msgid_plural,
        entry.comment,
        entry.tcomment,
        entry.occurrences,
        entry.flags,
        entry.previous_msgid,
        entry.previous_msgctxt,
        entry.obsolete,
    )


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda p: p.name)
def test_every_source_field_is_kept_and_the_target_filled(path: Path) -> None:
    content = path.read_bytes()
    before = polib.pofile(content.decode())
    after = identity(content, "es")
    assert [fields(e) for e in after] == [fields(e) for e in before]
    assert [(e.msgid, e.msgstr) for e in after.obsolete_entries()] == [
        (e.msgid, e.msgstr) for e in before.obsolete_entries()
    ]
    assert after.metadata["Language"] == "es"
    for key, value in before.metadata.items():  # the rest of the header as it was
        if key not in ("Language", "Plural-Forms"):
            assert after.metadata[key] == value, key
    for entry in after:
        if entry.obsolete or not entry.msgid:
            continue
        if entry.msgid_plural:
            assert set(entry.msgstr_plural.values()) <= {entry.msgid, entry.msgid_plural}
        else:
            assert entry.msgstr == entry.msgid  # an identity engine: the msgid, as it was


@pytest.mark.parametrize("target", sorted(CLDR))
def test_plural_entries_get_exactly_the_targets_cldr_forms(target: str) -> None:
    content = (FIXTURES / "shop.pot").read_bytes()
    fmt = for_upload(content, "shop.pot")
    units = fmt.extract(content)
    # a translation that says which source form it came from, placeholders kept as tags
    marked = [f"[{i}] {u.text}" for i, u in enumerate(units)]
    po = polib.pofile(fmt.render(content, marked, target_lang=target).decode())
    forms = po.metadata["Plural-Forms"]
    assert forms.startswith(f"nplurals={CLDR[target]};")
    index = gettext.c2py(forms.split("plural=", 1)[1].rstrip(";"))
    category = Locale.parse(target).plural_form
    plural = [e for e in po if e.msgid_plural and not e.obsolete]
    assert len(plural) == 2
    for entry in plural:
        assert sorted(entry.msgstr_plural) == list(range(CLDR[target]))
        placeholder = "%(count)d" if "count" in entry.msgid else "%d"
        for n in (0, 1, 2, 3, 5, 11, 21, 22, 25, 101, 111, 1000):
            text = entry.msgstr_plural[index(n)]
            # a number CLDR calls "one" reads as the singular (Russian's 21 too), others the plural
            source = entry.msgid if category(n) == "one" else entry.msgid_plural
            assert text.endswith(source), (n, category(n), text)
            assert placeholder in text and not TAG.search(text)


def test_a_catalogue_is_refused_when_it_does_not_parse_and_a_path_is_never_opened() -> None:
    fmt = for_name("po")
    with pytest.raises(DocumentError, match="not a valid PO file"):
        fmt.extract(b'msgid "a"\nmsgstr "b"\nmsgid "c" what\n')
    with pytest.raises(DocumentError, match="not a valid PO file"):
        fmt.extract(b"/etc/passwd")  # polib would open a one-line string as a path
    with pytest.raises(DocumentError, match="not valid UTF-8"):
        fmt.extract(b'msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\xe9')
    with pytest.raises(ValueError, match="got 1 translations for 3"):
        fmt.render((FIXTURES / "messages.po").read_bytes(), ["x"])


def test_a_nameless_catalogue_is_read_as_po() -> None:
    assert for_upload((FIXTURES / "messages.po").read_bytes()).name == "po"
    assert for_upload((FIXTURES / "shop.pot").read_bytes(), "file").name == "po"
