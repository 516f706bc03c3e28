"""formats/xlsx.py: the strings of an .xlsx in, the same workbook with translated
strings out.

Fixtures: ``excelize_Book1.xlsx`` (a real file, see /work/shared/corpus/real2/SOURCES.md: rich
shared strings, an inline string, a ``t="str"`` cell without a formula, a table, a comment,
charts, whitespace between tags) and the two written by tests/fixtures/documents/make_xlsx.py
(one workbook stored as Excel does, with shared strings, and as openpyxl does, with inline
strings). openpyxl reads every result back.
"""

from __future__ import annotations

import importlib.util
import io
import random
import re
import time
import zipfile
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree
from openpyxl.cell.rich_text import CellRichText, TextBlock
from openpyxl.worksheet.formula import ArrayFormula

from mtfleet.api.parsing import _cut, _render
from mtfleet.formats import for_name, for_upload
from mtfleet.formats.base import (
    TAG,
    DocumentError,
    DocumentTooLarge,
    Unit,
    tag_counts,
    unit_budget,
)
from mtfleet.formats.charts import C as CHART_NS
from mtfleet.formats.drawingml import A as A_NS
from mtfleet.formats.xlsx import (
    SHEET_NAMES_TRANSLATED,
    TABLE_HEADERS_TRANSLATED,
    XlsxFormat,
)

DOCS = Path(__file__).resolve().parents[1] / "fixtures" / "documents"
BOOK1 = DOCS / "xlsx" / "excelize_Book1.xlsx"
FEATURES = DOCS / "xlsx" / "workbook_features.xlsx"
INLINE = DOCS / "xlsx" / "openpyxl_inline.xlsx"
ALL = [BOOK1, FEATURES, INLINE]
FMT = XlsxFormat()
MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
STRING_PARTS = r"xl/(sharedStrings|worksheets/sheet\d+|comments/?\w*|threadedComments/\w+)\.xml"


def _members(content: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(content)) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def _pseudo(text: str) -> str:
    """Upper-case the text outside the inline tags."""
    out, pos = [], 0
    for m in TAG.finditer(text):
        out.append(text[pos : m.start()].upper() + m.group(0))
        pos = m.end()
    return "".join(out) + text[pos:].upper()


def _translate(content: bytes, fn: Any = _pseudo) -> tuple[list[Unit], bytes]:
    units = FMT.extract(content)
    return units, FMT.render(content, [fn(u.text) for u in units])


def _book(content: bytes, **kwargs: Any) -> Any:
    return openpyxl.load_workbook(io.BytesIO(content), **kwargs)


def _cells(wb: Any) -> dict[tuple[str, str], Any]:
    return {
        (ws.title, cell.coordinate): cell
        for ws in wb.worksheets
        for row in ws.iter_rows()
        for cell in row
        if cell.value is not None
    }


def _upper_outside_codes(value: str) -> str:
    """A cell's text as the pseudo-translation leaves it: literal tags and Excel's escapes are
    codes, the rest upper case."""
    out, pos = [], 0
    for m in re.finditer(f"{TAG.pattern}|_x[0-9A-Fa-f]{{4}}_", value):
        out.append(value[pos : m.start()].upper() + m.group(0))
        pos = m.end()
    return "".join(out) + value[pos:].upper()


def _formula(value: Any) -> Any:
    """An array formula as (its range, its text); any other value as it is."""
    return (value.ref, value.text) if isinstance(value, ArrayFormula) else value


def _table_headers(wb: Any) -> set[tuple[str, str]]:
    headers = set()
    for ws in wb.worksheets:
        for table in ws.tables.values():
            for row in ws[table.ref][:1]:
                headers |= {(ws.title, c.coordinate) for c in row}
    return headers


def _load_make_xlsx() -> Any:
    spec = importlib.util.spec_from_file_location("make_xlsx", DOCS / "make_xlsx.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- round trip ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_identity_round_trip_is_byte_equal(path: Path) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    assert units
    assert FMT.render(content, [u.text for u in units]) == content
    assert FMT.render(content, [u.text for u in units], target_lang="de") == content


@pytest.mark.parametrize("path", [BOOK1, FEATURES], ids=lambda p: p.name)
def test_one_changed_string_changes_only_its_own_bytes(path: Path) -> None:
    """Each unit translated alone: every other ZIP member byte-equal (but the charts whose
    caches copy its cells: they show the same translation), the part holding it equal outside
    the string's own markup (whitespace between tags included), and every other unit read
    back unchanged."""
    content = path.read_bytes()
    units = FMT.extract(content)
    before = _members(content)
    for i, unit in enumerate(units):
        texts = [u.text for u in units]
        texts[i] = "Zz " + unit.text
        out = FMT.render(content, texts)
        after = _members(out)
        assert list(after) == list(before)
        changed = [name for name in before if before[name] != after[name]]
        for chart in [name for name in changed if name.startswith("xl/charts/")]:
            shown = [v.text for v in etree.fromstring(after[chart]).iter(f"{{{CHART_NS}}}v")]
            assert texts[i] in shown, (unit.path, chart)
            changed.remove(chart)
        assert len(changed) == 1, (unit.path, changed)
        old, new = before[changed[0]], after[changed[0]]
        prefix = next(k for k, (a, b) in enumerate(zip(old, new, strict=False)) if a != b)
        suffix = next(
            k for k, (a, b) in enumerate(zip(old[::-1], new[::-1], strict=False)) if a != b
        )
        # what changed lies inside one string's markup
        region = old[prefix : len(old) - suffix]
        for boundary in (b"<si", b"<c ", b"<comment ", b"<threadedComment ", b"<row"):
            assert boundary not in region, (unit.path, region)
        etree.fromstring(new)  # still well-formed
        again = FMT.extract(out)
        assert [u.text for u in again] == texts


# --- what is a unit ------------------------------------------------------------------------------


def test_units_of_the_excelize_workbook() -> None:
    units = FMT.extract(BOOK1.read_bytes())
    texts = [u.text for u in units]
    by_path = {u.path: u.text for u in units}
    # "IBM" is three runs with one formatting: one plain string
    assert "IBM" in texts
    assert by_path["Sheet2!E1"] == "inlineStr"  # the inline string
    assert by_path["Sheet2!C11"] == "Other"  # t="str" without a formula: a literal string
    assert by_path["Sheet1!A22#comment"].startswith("Hyperlink test")
    assert {"< 17 Inch", "> 23 Inch", "Total:", "GitHub", "Monitor"} <= set(texts)
    # the table's header cells keep their text (they are its column names)
    assert not {"Column1", "Column2"} & set(texts)
    # no formula, number or sheet name
    assert not [t for t in texts if "SUM(" in t or "IF(" in t or t.isdigit()]
    assert not {"Sheet1", "Sheet2"} & set(texts)
    assert len(texts) == len(set(by_path))  # paths are distinct


def test_whitespace_between_tags_survives_a_translation() -> None:
    _units, out = _translate(BOOK1.read_bytes())
    sheet = _members(out)["xl/worksheets/sheet2.xml"].decode()
    assert '<c r="E1" t="inlineStr"> <is> <t>INLINESTR</t> </is> </c>' in sheet
    assert '<c r="C11" s="4" t="str"> <v>OTHER</v> </c>' in sheet
    original = _members(BOOK1.read_bytes())["xl/worksheets/sheet2.xml"].decode()
    assert sheet == original.replace(">inlineStr<", ">INLINESTR<").replace(">Other<", ">OTHER<")


def test_units_of_the_features_workbook() -> None:
    units = FMT.extract(FEATURES.read_bytes())
    texts = [u.text for u in units]
    by_path = {u.path: u for u in units}
    # a shared string shown by four cells is one unit
    assert texts.count("In stock") == 2  # once shared, once in the inline sheet
    # strings with nothing to translate are no units
    for nothing in ("00123", "   ", "   2024-03-31   "):
        assert nothing not in texts
    assert " padded text " in texts
    # formula results are no units, a t="str" string without a formula is
    assert not {"expensive", "DESK LAMP", "CHAIR"} & set(texts)
    assert by_path["Products!H2"].text == "Other"
    # a rich string: formatting other than the first run's is a paired code
    order = by_path["xl/sharedStrings.xml#si19"]
    assert order.text == "Order <g1>today</g1> and save 10%"
    assert "<b" in order.codes[1].start
    rich = by_path["Inline!A2"]
    assert rich.text == "Save <g1>now</g1> or <g2>later</g2>."
    # Excel's escapes and literal tag-like text are standalone codes
    escape = next(u for u in units if u.text.startswith("First line"))
    assert [c.start for c in escape.codes.values()] == ["_x000D_"]
    literal = next(u for u in units if u.text.startswith("Use <b>"))
    assert [c.start for c in literal.codes.values()] == ["<g1>"]
    # hidden and very hidden sheets are translated; sheet names are not
    assert {"Maybe", "Internal note: do not publish."} <= set(texts)
    assert not {"Products", "Q1 Notes", "Lookup", "Summary"} & set(texts)
    # comments: the legacy one (its bold author line the plain text), the threaded one
    # without a mention; the one with a mention is left alone
    assert by_path["Products!A2#comment"].text.startswith("Ann:<g1>")
    assert by_path["Q1 Notes!A1#thread1"].text == "Is this figure final?"
    assert not [t for t in texts if "@Ann" in t]
    # the header row of the table keeps its text, and so does G1, which shows the same
    # shared string as the header A1
    assert not {"Product", "Description", "Price", "Added"} & set(texts)
    assert SHEET_NAMES_TRANSLATED is False and TABLE_HEADERS_TRANSLATED is False


def test_inline_strings_are_units_cell_by_cell() -> None:
    units = FMT.extract(INLINE.read_bytes())
    by_path = {u.path: u.text for u in units}
    assert by_path["Products!B3"] == by_path["Products!B4"] == "In stock"
    assert by_path["Products!G1"] == "Product"  # not a header cell: its own inline string
    assert "Products!A1" not in by_path  # the header cell is
    assert by_path["Q1 Notes!A5"] == "Order <g1>today</g1> and save 10%"
    assert by_path["Q1 Notes!A6"] == "東京都"


def test_cells_without_a_reference_are_placed_by_their_order() -> None:
    members = _members(INLINE.read_bytes())
    sheet = members["xl/worksheets/sheet1.xml"].decode()
    row1 = re.search(r'<row r="1">.*?</row>', sheet)
    assert row1 is not None
    members["xl/worksheets/sheet1.xml"] = sheet.replace(
        row1.group(0), re.sub(r'<c r="[A-Z]+1"', "<c", row1.group(0))
    ).encode()
    units = FMT.extract(_zip(members))
    by_path = {u.path: u.text for u in units}
    # A1:D1 are still the table's header; G1, the fifth cell of its row, is E1 now
    assert not {"Products!A1", "Products!B1", "Products!C1", "Products!D1"} & set(by_path)
    assert not {"Description", "Price", "Added"} & set(by_path.values())
    assert by_path["Products!E1"] == "Product"


def test_a_document_over_the_unit_budget_is_refused_while_read() -> None:
    with unit_budget(5), pytest.raises(DocumentTooLarge):
        FMT.extract(FEATURES.read_bytes())


# --- translations read back ----------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_pseudo_translation_reads_back_with_openpyxl(path: Path) -> None:
    content = path.read_bytes()
    _units, out = _translate(content)
    before, after = _book(content), _book(out)
    assert after.sheetnames == before.sheetnames
    assert [ws.sheet_state for ws in after] == [ws.sheet_state for ws in before]
    headers = _table_headers(before)
    old, new = _cells(before), _cells(after)
    assert old.keys() == new.keys()
    header_texts = {old[key].value for key in headers if key in old}
    translated = 0
    for key, cell in old.items():
        value, got = cell.value, new[key].value
        if cell.data_type == "f" or not isinstance(value, str):
            assert _formula(got) == _formula(value), key  # formulas, numbers, dates, booleans
        elif key in headers or not re.search(r"[^\W\d_]", value):
            assert got == value, key
        elif got != value:
            assert got == _upper_outside_codes(value), key
            translated += 1
        else:  # only a header's text (another cell showing its shared string) stays
            assert value == value.upper() or value in header_texts, key
    assert translated > 0
    # table column names still equal their header cells
    for ws in after.worksheets:
        for table in ws.tables.values():
            names = [c.name for c in table.tableColumns]
            assert names == [c.value for c in ws[table.ref][0]]
    # only the parts holding strings changed (and the charts showing them); styles, tables...
    # are byte-equal
    members_before, members_after = _members(content), _members(out)
    assert list(members_after) == list(members_before)
    changed = {n for n in members_before if members_before[n] != members_after[n]}
    assert changed and all(
        re.fullmatch(
            r"xl/(sharedStrings|worksheets/sheet\d+|comments/?\w*|threadedComments/\w+"
            r"|charts/chart\d+)\.xml",
            n,
        )
        for n in changed
    ), changed
    # the comments are translated
    for key, cell in old.items():
        if cell.comment is not None:
            assert new[key].comment.text == cell.comment.text.upper()


def test_cached_results_and_translated_strings_with_data_only() -> None:
    _units, out = _translate(FEATURES.read_bytes())
    products = _book(out, data_only=True)["Products"]
    assert products["C8"].value == "expensive"  # formula results stay
    assert products["F2"].value == "DESK LAMP" and products["F3"].value == "CHAIR"
    assert products["H2"].value == "OTHER"
    assert products["A9"].value == "00123" and products["A10"].value == "   "
    assert products["C2"].value == 24.5
    assert products["D2"].value.year == 2024


def test_rich_runs_keep_their_formatting_when_reordered() -> None:
    content = FEATURES.read_bytes()
    units = FMT.extract(content)
    texts = [
        "<g2>Later</g2> or <g1>now</g1>: save!" if u.path == "Inline!A2" else u.text for u in units
    ]
    wb = _book(FMT.render(content, texts), rich_text=True)
    value = wb["Inline"]["A2"].value
    assert isinstance(value, CellRichText)
    blocks = [(b.text, b.font.b, b.font.i) if isinstance(b, TextBlock) else b for b in value]
    assert ("Later", False, True) in blocks and ("now", True, False) in blocks
    assert str(value) == "Later or now: save!"
    shared = wb["Q1 Notes"]["A5"].value
    assert isinstance(shared, CellRichText)


def test_spaces_around_a_translation_are_preserved() -> None:
    content = FEATURES.read_bytes()
    units = FMT.extract(content)
    texts = [
        "  Stuhl "
        if u.text == "Chair"
        else " GEPOLSTERT "
        if u.text.strip() == "padded text"
        else u.text
        for u in units
    ]
    out = FMT.render(content, texts)
    products = _book(out)["Products"]
    assert products["A3"].value == "  Stuhl "
    assert products["A11"].value == " GEPOLSTERT "
    sst = etree.fromstring(_members(out)["xl/sharedStrings.xml"])
    stuhl = next(t for t in sst.iter(f"{{{MAIN}}}t") if t.text == "  Stuhl ")
    assert stuhl.get(XML_SPACE) == "preserve"


def test_phonetic_runs_and_untouched_strings_stay_as_they_are() -> None:
    content = FEATURES.read_bytes()
    units = FMT.extract(content)
    texts = ["Tokyo" if u.text == "東京都" else u.text for u in units]
    sst = _members(FMT.render(content, texts))["xl/sharedStrings.xml"].decode()
    assert (
        '<si><t>Tokyo</t><rPh sb="0" eb="3"><t>トウキョウト</t></rPh>'
        '<phoneticPr fontId="1" type="noConversion"/></si>'
    ) in sst
    assert "<si><t>00123</t></si>" in sst


def test_threaded_comment_translated_and_one_with_a_mention_left_alone() -> None:
    content = FEATURES.read_bytes()
    _units, out = _translate(content)
    part = _members(out)["xl/threadedComments/threadedComment1.xml"].decode()
    assert "<text>IS THIS FIGURE FINAL?</text>" in part
    assert "<text>@Ann Example please check the catalogue.</text>" in part
    etree.fromstring(part.encode())


def test_excel_escapes_survive_and_literal_ones_are_escaped() -> None:
    content = FEATURES.read_bytes()
    units = FMT.extract(content)
    texts = [
        "Erste<x1/>\nZweite _x0041_" if u.text.startswith("First line") else u.text for u in units
    ]
    sst = _members(FMT.render(content, texts))["xl/sharedStrings.xml"].decode()
    assert "<si><t>Erste_x000D_\nZweite _x005F_x0041_</t></si>" in sst


def test_utf16_parts_are_read_and_written_back_in_utf8() -> None:
    members = _members(BOOK1.read_bytes())
    sst = members["xl/sharedStrings.xml"].decode("utf-8")
    members["xl/sharedStrings.xml"] = sst.replace('encoding="UTF-8"', 'encoding="UTF-16"').encode(
        "utf-16"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    content = out.getvalue()
    assert [u.text for u in FMT.extract(content)] == [
        u.text for u in FMT.extract(BOOK1.read_bytes())
    ]
    _units, translated = _translate(content)
    assert _members(translated)["xl/sharedStrings.xml"].startswith(b"<?xml")
    assert _book(translated)["Sheet2"]["A1"].value == "MONITOR"


# --- hostile translations ------------------------------------------------------------------------


def _hostile(text: str, i: int) -> str:
    variants = [
        TAG.sub("", text) + ' <script>alert("x")</script> & < > " \'',
        text + text,  # every tag twice
        "</g1><g1></g1></t></r></si>]]>&amp;" + text[::-1],
        "\x00\x01\x0b\ud800 \ufffe" + text,
        "<x9/><g7>unknown</g7>",
        "",
        "  \n ",
    ]
    return variants[i % len(variants)]


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_hostile_translation_still_gives_a_workbook(path: Path) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [_hostile(u.text, i) for i, u in enumerate(units)])
    for name, data in _members(out).items():
        if name.endswith((".xml", ".rels")):
            etree.fromstring(data)
    wb = _book(out)
    assert wb.sheetnames == _book(content).sheetnames
    texts = {str(c.value) for c in _cells(wb).values()}
    assert any("<script>" in t for t in texts)
    # what came back is readable again, as many strings as before or fewer (an empty
    # translation leaves nothing to translate)
    assert len(FMT.extract(out)) <= len(units)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.characters(codec="utf-8"), min_size=1, max_size=40))
def test_any_translation_text_reads_back(text: str) -> None:
    content = FEATURES.read_bytes()
    units = FMT.extract(content)
    i = next(k for k, u in enumerate(units) if u.text == "Chair")
    texts = [u.text for u in units]
    texts[i] = "Chair " + text
    out = FMT.render(content, texts)
    got = _book(out)["Products"]["A3"].value
    expected = TAG.sub("", texts[i])  # the unit had no codes: tags are dropped
    expected = re.sub("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]", "", expected)
    expected = re.sub(r"_(x[0-9A-Fa-f]{4}_)", r"_x005F_\1", expected)  # Excel's escape of "_"
    assert got == expected


# --- bad input -----------------------------------------------------------------------------------


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


def _with(name: str, data: bytes) -> bytes:
    members = _members(BOOK1.read_bytes())
    members[name] = data
    return _zip(members)


BAD = [
    (BOOK1.read_bytes()[: len(BOOK1.read_bytes()) // 2], "not a readable ZIP"),
    (b"", "not a ZIP"),
    (b"Brand,Monitor\nHP,19\n", "not a ZIP"),
    ((DOCS / "docx" / "product_sheet.docx").read_bytes(), "not an Excel workbook"),
    (_zip({"mimetype": b"application/vnd.oasis.opendocument.spreadsheet"}), "Content_Types"),
    (_with("xl/sharedStrings.xml", b"<sst><si><t>broken</si></sst>"), "not well-formed"),
    (
        _with(
            "xl/sharedStrings.xml",
            b'<?xml version="1.0"?><!DOCTYPE sst [<!ENTITY a "aaaa">]>'
            b'<sst xmlns="' + MAIN.encode() + b'"><si><t>&a;</t></si></sst>',
        ),
        "DOCTYPE",
    ),
    (
        _with(
            "xl/worksheets/sheet2.xml",
            b'<worksheet xmlns="' + MAIN.encode() + b'"><sheetData><row><c t="inlineStr">'
            b"<is><t>x</t></is></c></row></worksheet>",
        ),
        "not well-formed",
    ),
    (
        _with(
            "[Content_Types].xml",
            _members(BOOK1.read_bytes())["[Content_Types].xml"].replace(
                b"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
                b"application/vnd.ms-excel.sheet.binary.macroEnabled.main",
            ),
        ),
        ".xlsb",
    ),
    (_with("xl/sharedStrings.xml", b'<?xml version="1.0" encoding="nope"?><sst/>'), "encoding"),
]


@pytest.mark.parametrize("index", range(len(BAD)))
def test_invalid_input_is_a_document_error(index: int) -> None:
    content, message = BAD[index]
    with pytest.raises(DocumentError, match=re.escape(message)):
        FMT.extract(content)
    with pytest.raises(DocumentError):
        FMT.render(content, [])


def test_wrong_number_of_translations_is_refused() -> None:
    content = BOOK1.read_bytes()
    with pytest.raises(DocumentError, match="translations for the"):
        FMT.render(content, ["one"])


# --- size ----------------------------------------------------------------------------------------


def _big_workbook(rows: int) -> bytes:
    """A workbook as a data export looks: per row a shared string (from a table of
    ``rows // 4``), six numbers and a formula; an inline string on every tenth row."""
    rnd = random.Random(7)
    words = [
        "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9)))
        for _ in range(3000)
    ]
    n = rows // 4
    strings = "".join(
        f"<si><t>{' '.join(rnd.choice(words) for _ in range(7)).capitalize()}.</t></si>"
        for _ in range(n)
    )
    sheet = []
    for r in range(1, rows + 1):
        numbers = "".join(f'<c r="{c}{r}"><v>{rnd.random()}</v></c>' for c in "BCDEFG")
        inline = (
            f'<c r="I{r}" t="inlineStr"><is><t>Item {rnd.choice(words)}</t></is></c>'
            if r % 10 == 0
            else ""
        )
        sheet.append(
            f'<row r="{r}"><c r="A{r}" t="s"><v>{rnd.randrange(n)}</v></c>{numbers}'
            f'<c r="H{r}"><f>SUM(B{r}:G{r})</f><v>0</v></c>{inline}</row>'
        )
    members = _members(BOOK1.read_bytes())
    members["xl/sharedStrings.xml"] = f'<sst xmlns="{MAIN}">{strings}</sst>'.encode()
    members["xl/worksheets/sheet2.xml"] = (
        f'<worksheet xmlns="{MAIN}"><sheetData>{"".join(sheet)}</sheetData></worksheet>'.encode()
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


def test_a_five_megabyte_workbook_extracts_in_reasonable_time() -> None:
    content = _big_workbook(50_000)
    started = time.perf_counter()
    units = FMT.extract(content)
    extracted = time.perf_counter() - started
    xml = sum(len(data) for data in _members(content).values())
    print(
        f"\n{len(content) / 1e6:.1f} MB workbook ({xml / 1e6:.0f} MB of XML), "
        f"{len(units)} units: extract {extracted:.2f} s"
    )
    assert len(content) > 5_000_000
    # its shared strings but the two Sheet1's table header cells show, its inline strings,
    # Sheet1's comment
    assert len(units) == 12_500 - 2 + 5_000 + 1
    assert units[-1].path == "Sheet2!I50000"


# --- registration and fixtures -------------------------------------------------------------------


def test_registered_under_its_name_and_extensions() -> None:
    assert isinstance(for_name("xlsx"), XlsxFormat)
    assert isinstance(for_upload(b"", "Budget 2024.XLSX"), XlsxFormat)
    assert isinstance(for_upload(b"", "macros.xlsm"), XlsxFormat)
    assert FMT.binary
    assert FMT.media_type == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def test_fixtures_match_their_script(tmp_path: Path) -> None:
    for path in _load_make_xlsx().build(tmp_path):
        assert path.read_bytes() == (DOCS / "xlsx" / path.name).read_bytes()


def test_tags_in_units_are_balanced() -> None:
    for path in ALL:
        for unit in FMT.extract(path.read_bytes()):
            counts = tag_counts(unit.text)
            assert all(v == 1 for v in counts.values()), unit
            assert len(counts) == sum(1 if c.end is None else 2 for c in unit.codes.values())


# --- charts --------------------------------------------------------------------------------------


def _result(content: bytes, name: str = "xlsx") -> tuple[list[str], bytes]:
    """The segments of ``content`` and the file rendered from their upper-cased translations,
    through the functions the API's document processes run (a read at submission, the
    render of the result)."""
    _units, cut = _cut(name, content, "en", False, 100_000)
    done = _render(name, content, "en", [_upper_outside_codes(s) for s in cut.segments], "de")
    return cut.segments, done.content


def _chart_strings(chart: bytes) -> list[tuple[str, str]]:
    """(the ``c:f`` reference, or "" for a literal, and the text) of each cached string."""
    out = []
    for v in etree.fromstring(chart).iter(f"{{{CHART_NS}}}v"):
        pt = v.getparent()
        holder = pt.getparent().getparent() if pt.tag == f"{{{CHART_NS}}}pt" else None
        if holder is not None and holder.tag.endswith("numRef"):
            continue
        f = holder.find(f"{{{CHART_NS}}}f") if holder is not None else None
        out.append((f.text if f is not None else "", v.text))
    return out


def test_chart_caches_show_their_cells_translated() -> None:
    """A chart's series names and category labels are copies of cells (c:strRef's
    c:strCache): each shows its cell's translation, and no cell is sent twice."""
    content = BOOK1.read_bytes()
    _segments, out = _result(content)
    assert not [u.path for u in FMT.extract(content) if "chart" in u.path]  # no unit of theirs
    book = openpyxl.load_workbook(io.BytesIO(out))
    for name in ("xl/charts/chart1.xml", "xl/charts/chart2.xml"):
        strings = _chart_strings(_members(out)[name])
        assert len(strings) > 4
        for ref, text in strings:
            sheet, _, cells = ref.partition("!")
            found = book[sheet][cells.replace("$", "")]
            rows = found if isinstance(found, tuple) else ((found,),)
            assert text in [c.value for row in rows for c in row], (ref, text)
            assert text == text.upper()  # translated, as its cell is
    assert ("Sheet2!$A$1", "MONITOR") in _chart_strings(_members(out)["xl/charts/chart1.xml"])


def _titled_chart_book() -> bytes:
    """A workbook with a chart titled, its axes titled and a series named by a literal."""
    from openpyxl.chart import BarChart, Reference
    from openpyxl.chart.series import SeriesLabel

    wb = openpyxl.Workbook()
    ws = wb.active
    for row in (["Fruit", "Sales"], ["Apples", 3], ["Pears", 5]):
        ws.append(row)
    chart = BarChart()
    chart.title = "Sales by fruit"
    chart.x_axis.title = "Kind of fruit"
    chart.y_axis.title = "Boxes sold"
    chart.add_data(Reference(ws, min_col=2, min_row=2, max_row=3))
    chart.series[0].tx = SeriesLabel(v="Boxes this year")
    chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=3))
    ws.add_chart(chart, "D2")
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def test_chart_titles_axis_titles_and_literal_series_names_are_translated() -> None:
    content = _titled_chart_book()
    segments, out = _result(content)
    for text in ("Sales by fruit", "Kind of fruit", "Boxes sold", "Boxes this year"):
        assert text in segments
    chart = etree.fromstring(_members(out)["xl/charts/chart1.xml"])
    titles = ["".join(t.text for t in p.iter(f"{{{A_NS}}}t")) for p in chart.iter(f"{{{A_NS}}}p")]
    assert [t for t in titles if t] == ["SALES BY FRUIT", "KIND OF FRUIT", "BOXES SOLD"]
    assert ("", "BOXES THIS YEAR") in _chart_strings(_members(out)["xl/charts/chart1.xml"])
    cells = openpyxl.load_workbook(io.BytesIO(out)).active
    assert [cells["A2"].value, cells["A3"].value] == ["APPLES", "PEARS"]
    # an identity translation leaves the file as it was
    units = FMT.extract(content)
    assert FMT.render(content, [u.text for u in units]) == content
