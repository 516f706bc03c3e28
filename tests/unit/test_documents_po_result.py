"""gettext catalogues as a job's result (formats/gettext_po.py, gettext_splice.py,
accelerators.py): a segment the output check withheld leaves its entry untranslated (never the
English shipped as a translation), an entry the fleet did not change keeps its bytes (wrapping,
comments and the reference above the header included), and GTK/Qt accelerators reach the
engine without their marker and come back on the right letter (issue 40 item 4).

The document goes the way the service sends it: cut as the API cuts it, translated through
the worker's chunk path (checks included, tests/support.py), rendered by the functions the
document processes run; only the process pool is left out. Catalogues are read back with
polib, independently of the format's code."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import polib
import pytest

from mtfleet.core.schemas import DocumentOut
from mtfleet.formats import accelerators, for_upload
from mtfleet.formats.base import Unit
from tests.support import document_result

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents" / "po"
GNOME = FIXTURES / "gnome-calculator_de.po"
INJECTED = "<script>alert(1)</script>"


def translate(content: bytes, engine: Callable[[str], str], target: str = "fr") -> DocumentOut:
    """``content`` as a .po job's result, ``engine`` answering each text it is given."""
    return document_result("po", "x.po", content, engine, target)


def entries(out: DocumentOut) -> dict[str, polib.POEntry]:
    return {e.msgid: e for e in polib.pofile(out.data().decode()) if not e.obsolete}


def test_a_withheld_segment_leaves_its_entry_untranslated() -> None:
    def engine(text: str) -> str:  # one answer the markup check withholds, twice
        return f"FR {text}" + (INJECTED if text == "Basic Mode" else "")

    out = entries(translate(GNOME.read_bytes(), engine))
    assert out["Basic Mode"].msgstr == ""  # not "Basic Mode", nor the German it had
    assert out["Advanced Mode"].msgstr == "FR Advanced Mode"
    assert out["Calculator"].msgstr == "FR Calculator"


def test_a_withheld_plural_leaves_every_form_untranslated() -> None:
    content = (
        b'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        b'msgid "%d file"\nmsgid_plural "%d files"\nmsgstr[0] ""\nmsgstr[1] ""\n\n'
        b'msgid "Open"\nmsgstr ""\n'
    )

    def engine(text: str) -> str:
        return f"RU {text}" + (INJECTED if "files" in text else "")

    out = entries(translate(content, engine, target="ru"))
    assert out["%d file"].msgstr_plural == {0: "", 1: "", 2: ""}  # Russian's three, all to do
    assert out["Open"].msgstr == "RU Open"


def tagged(text: str, unit: Unit) -> str:
    """A msgstr as an engine returns it for ``unit``: the unit's codes as their tags (matched by
    their text, longest first)."""
    for n, code in sorted(unit.codes.items(), key=lambda item: -len(item[1].start)):
        if code.end is None:
            text = text.replace(code.start, f"\0x{n}\0", 1)
        else:
            text = text.replace(code.start, f"\0g{n}\0", 1).replace(code.end, f"\0/g{n}\0", 1)
    return re.sub(
        "\0(/?)([xg])(\\d+)\0",
        lambda m: f"<x{m[3]}/>" if m[2] == "x" else f"<{m[1]}g{m[3]}>",
        text,
    )


@pytest.mark.parametrize("path", sorted(FIXTURES.iterdir()), ids=lambda p: p.name)
def test_translations_that_come_back_as_they_were_leave_the_file_as_it_was(path: Path) -> None:
    """Every entry the fleet did not change keeps its bytes (an empty msgstr stays empty: its
    units have no translation): its wrapping (msgmerge's, which
    polib would redo), the header's comment block and a reference above the header, obsolete
    entries, comments after the last entry."""
    content = path.read_bytes()
    fmt = for_upload(content, path.name)
    po = polib.pofile(content.decode())
    language = po.metadata.get("Language") or None
    have = [
        text
        for e in po
        if not e.obsolete and e.msgid
        for text in (
            [e.msgstr_plural.get(0, ""), e.msgstr_plural.get(1, "")]
            if e.msgid_plural
            else [e.msgstr]
        )
    ]
    units = fmt.extract(content)
    assert len(have) == len(units)
    empty = {i for i, text in enumerate(have) if not text}  # untranslated, as they were
    back = [tagged(text, unit) for text, unit in zip(have, units, strict=True)]
    assert fmt.render_result(content, back, empty, target_lang=language).content == content


def test_only_what_changed_is_rewritten() -> None:
    content = GNOME.read_bytes()
    fmt = for_upload(content, "de.po")
    units = fmt.extract(content)
    out = fmt.render(content, [u.text for u in units], target_lang="fr").decode()
    before, after = content.decode().splitlines(), out.splitlines()
    assert after[:39] == before[:39]  # the translators' comment block, as it was
    assert '"Report-Msgid-Bugs-To: https://gitlab.gnome.org/GNOME/gnome-calculator/"' in after
    assert '"Language: fr\\n"' in after
    kept = [ln for ln in before if not ln.startswith(("msgstr", '"'))]
    assert [ln for ln in after if not ln.startswith(("msgstr", '"'))] == kept
    assert out.count("\n#~ msgid") == content.decode().count("\n#~ msgid")  # obsolete: as is


def test_accelerators_are_taken_out_and_put_back_on_their_letter() -> None:
    content = GNOME.read_bytes()
    seen: list[str] = []
    german = {
        "Cancel": "Abbrechen",
        "Paste": "Einfügen",
        "Number of Decimals": "Anzahl der Dezimalstellen",
        "Word Size": "Wortgröße",
        "Exchange Rate Refresh Interval": "Aktualisierungsintervall der Wechselkurse",
    }

    def engine(text: str) -> str:
        seen.append(text)
        return german.get(text, text)

    result = translate(content, engine, target="de")
    out = entries(result)
    assert not [t for t in seen if "_" in t and "imp_" not in t]
    assert "imp_gallon,imp_gallons,imp_gal" in seen  # unit names, not an accelerator
    assert out["_Cancel"].msgstr == "Abbre_chen"  # the letter in the other case
    assert out["Number of _Decimals"].msgstr == "Anzahl der _Dezimalstellen"  # its case first
    assert out["_Word Size"].msgstr == "_Wortgröße"
    # no x, no p: before the first letter, and said
    assert (
        out["E_xchange Rate Refresh Interval"].msgstr
        == "_" + german["Exchange Rate Refresh Interval"]
    )
    assert out["_Paste"].msgstr == "_Einfügen"
    missing = [w for w in result.warnings if "first letter" in w]
    assert len(missing) == 2 and any("'P'" in w for w in missing)
    assert out["_Copy"].msgstr == "_Copy"  # an engine that kept the word: the same letter


def test_the_catalogues_own_marker_is_read_from_its_header() -> None:
    content = (
        b'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
        b'"X-Accelerator-Marker: &\\n"\n\n'
        b'msgid "&File"\nmsgstr ""\n\nmsgid "Save &As..."\nmsgstr ""\n\n'
        b'msgid "Tom &amp; Jerry"\nmsgstr ""\n\nmsgid "_Not a marker here"\nmsgstr ""\n'
    )
    seen: list[str] = []

    def engine(text: str) -> str:
        seen.append(text)
        return {"File": "Datei", "Save As...": "Speichern als..."}.get(text, text)

    out = entries(translate(content, engine, target="de"))
    assert sorted(seen) == ["File", "Save As...", "Tom &amp; Jerry", "_Not a marker here"]
    assert out["&File"].msgstr == "&Datei"
    assert out["Save &As..."].msgstr == "Speichern &als..."
    assert out["Tom &amp; Jerry"].msgstr == "Tom &amp; Jerry"


@pytest.mark.parametrize(
    ("text", "marker", "taken", "key"),
    [
        ("_File", "_", "File", "F"),
        ("S_witch", "_", "Switch", "w"),
        ("Close _All", "_", "Close All", "A"),
        ("Re_do", "_", "Redo", "d"),
        ("notify_interval minutes", "_", "notify_interval minutes", None),
        ("imp_gallon,imp_gal", "_", "imp_gallon,imp_gal", None),
        ("__init__", "_", "__init__", None),
        ("Hello %(user_name)s", "_", "Hello %(user_name)s", None),
        ("&Open", "&", "Open", "O"),
        ("Fish &amp; _Chips", "&", "Fish &amp; _Chips", None),
        ("Save && &Quit", "&", "Save && Quit", "Q"),
        ("_One _Two", "_", "_One _Two", None),
    ],
)
def test_take(text: str, marker: str, taken: str, key: str | None) -> None:
    assert accelerators.take(text, marker, re.compile(r"%\(\w+\)s")) == (taken, key)


def test_put_prefers_the_same_case_at_a_word_start() -> None:
    assert accelerators.put("Speichern als", "_", "a") == ("Speichern _als", True)
    assert accelerators.put("Datei", "&", "F") == ("&Datei", False)
    assert accelerators.put("Öffnen", "_", "O") == ("_Öffnen", False)  # not the same letter
    assert accelerators.put("Abbrechen", "_", "C") == ("Abbre_chen", True)
    assert accelerators.put("<b>Fett</b>", "_", "b") == ("<b>_Fett</b>", False)
    assert accelerators.put("123", "_", "x") == ("_123", False)
