"""formats/pptx.py: paragraphs of a .pptx in, the same deck with translated runs out.

Fixtures: ``pptx/Open-XML-SDK_Bug571679_Brownbag.pptx`` (a real deck from dotnet/Open-XML-SDK:
sentences split over many runs, links inside sentences, speaker notes, SmartArt with its text
in both the diagram data and the drawing caches) and ``pptx/features.pptx`` (made by
``make_pptx.py`` with python-pptx: placeholders, a table, a group shape, notes, links, breaks,
a slide-number field, an empty paragraph, ``mc:AlternateContent``). python-pptx reads the
results.
"""

from __future__ import annotations

import importlib.util
import io
import re
import time
import zipfile
from pathlib import Path
from typing import Any

import openpyxl
import pptx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree
from pptx.enum.shapes import MSO_SHAPE_TYPE

from mtfleet.api.parsing import _cut, _render
from mtfleet.formats.base import TAG, Code, DocumentError, Rendered, Unit, tag_counts
from mtfleet.formats.pptx import PptxFormat

DOCS = Path(__file__).resolve().parents[1] / "fixtures" / "documents"
REAL = DOCS / "pptx" / "Open-XML-SDK_Bug571679_Brownbag.pptx"
FEATURES = DOCS / "pptx" / "features.pptx"
FMT = PptxFormat()
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
TEXT_PARTS = re.compile(
    r"ppt/(slides/slide|notesSlides/notesSlide|diagrams/(data|drawing))\d+\.xml"
)
IGNORED = {"lang", "altLang", "dirty", "err", "smtClean", "smtId", "bmk"}
INVALID_XML_CHARS = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def a(local: str) -> str:
    return f"{{{A}}}{local}"


def _members(content: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(content)) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def _zip_with(content: bytes, replace: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(content)) as zin, zipfile.ZipFile(out, "w") as z:
        for info in zin.infolist():
            z.writestr(info, replace.get(info.filename, zin.read(info)))
    return out.getvalue()


def _pseudo(text: str) -> str:
    """Upper-case the text outside the tags: a translation that keeps every tag."""
    out, pos = [], 0
    for m in TAG.finditer(text):
        out += [text[pos : m.start()].upper(), m.group(0)]
        pos = m.end()
    return "".join([*out, text[pos:].upper()])


def _canonical(xml: bytes, *, normalise: bool = False) -> str:
    root = etree.fromstring(xml)
    if normalise:
        _normalise(root)
    return etree.tostring(root, method="c14n2").decode()


def _rpr_key(run: Any) -> tuple[list[tuple[str, str]], list[bytes]]:
    rpr = run.find(a("rPr"))
    if rpr is None:
        return [], []
    return sorted(rpr.attrib.items()), [etree.tostring(c, with_tail=False) for c in rpr]


def _normalise(root: Any) -> None:
    """What a rebuilt paragraph does not keep: the proofing attributes PowerPoint recomputes,
    runs without text, adjacent runs split with equal formatting, indentation between runs."""
    for el in root.iter(a("rPr"), a("endParaRPr")):
        for name in IGNORED & set(el.attrib):
            del el.attrib[name]
        if el.tag == a("rPr") and not len(el) and not el.attrib:
            el.getparent().remove(el)
    for p in root.iter(a("p")):
        prev = None
        if p.text is not None and not p.text.strip():  # hand indentation between runs
            p.text = None
        for child in list(p):
            if child.tail is not None and not child.tail.strip():
                child.tail = None
            if child.tag == a("r") and not (child.findtext(a("t")) or ""):
                p.remove(child)
                continue
            if (
                prev is not None
                and child.tag == prev.tag == a("r")
                and _rpr_key(child) == _rpr_key(prev)
            ):
                t = prev.find(a("t"))
                t.text = (t.text or "") + (child.findtext(a("t")) or "")
                p.remove(child)
                continue
            prev = child


def _shapes(shapes: Any) -> list[Any]:
    """Every shape, group shapes' members included."""
    out = []
    for shape in shapes:
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            out += _shapes(shape.shapes)
        else:
            out.append(shape)
    return out


def _paragraphs(content: bytes) -> list[Any]:
    """Every python-pptx paragraph of the slides (shapes, groups, tables) and notes."""
    prs = pptx.Presentation(io.BytesIO(content))
    paras = []
    for slide in prs.slides:
        for shape in _shapes(slide.shapes):
            if shape.has_text_frame:
                paras += shape.text_frame.paragraphs
            if getattr(shape, "has_table", False) and shape.has_table:
                for row in shape.table.rows:
                    for cell in row.cells:
                        paras += cell.text_frame.paragraphs
        if slide.has_notes_slide:
            paras += slide.notes_slide.notes_text_frame.paragraphs
    return paras


def _chars(paragraph: Any, change: Any = str) -> list[tuple[str, Any, Any, Any, Any, Any]]:
    """Each character of the paragraph's runs (their text passed through ``change``) with its
    bold, italic, underline, size and hyperlink (what a reader sees of the formatting)."""
    return [
        (c, r.font.bold, r.font.italic, r.font.underline, r.font.size, r.hyperlink.address)
        for r in paragraph.runs
        for c in change(r.text)
    ]


def _kinds(paragraph: Any) -> set[tuple[Any, ...]]:
    return {k[1:] for k in _chars(paragraph)}


def _load_make_pptx() -> Any:
    spec = importlib.util.spec_from_file_location("make_pptx", DOCS / "make_pptx.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _units(path: Path) -> list[Unit]:
    return FMT.extract(path.read_bytes())


# --- round trip ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [REAL, FEATURES], ids=["brownbag", "features"])
def test_identity_round_trip_is_byte_equal(path: Path) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [u.text for u in units])

    before, after = _members(content), _members(out)
    assert list(after) == list(before)  # same members, same order
    for name, data in before.items():
        assert after[name] == data, name
    with zipfile.ZipFile(io.BytesIO(content)) as x, zipfile.ZipFile(io.BytesIO(out)) as y:
        assert [(i.date_time, i.compress_type) for i in x.infolist()] == [
            (i.date_time, i.compress_type) for i in y.infolist()
        ]
    assert FMT.extract(out) == units


@pytest.mark.parametrize("path", [REAL, FEATURES], ids=["brownbag", "features"])
def test_an_unchanged_translation_into_a_target_leaves_every_byte(path: Path) -> None:
    """A paragraph whose translation is its source text is not rebuilt (a brand name, a
    code line): the deck comes back byte-equal, its language attributes included."""
    content = path.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [u.text for u in units], target_lang="fr_FR")
    assert _members(out) == _members(content)


#: Appended to every unit to make each paragraph rebuilt while reading the same.
ZWSP = "\u200b"


def _without_zwsp(xml: bytes) -> bytes:
    """The part with every ZWSP taken out of its text, and the runs left empty by that."""
    root = etree.fromstring(xml)
    for t in list(root.iter(a("t"))):
        if t.text and ZWSP in t.text:
            t.text = t.text.replace(ZWSP, "")
            run = t.getparent()
            if not t.text and run.tag == a("r"):
                run.getparent().remove(run)
    return bytes(etree.tostring(root))


@pytest.mark.parametrize("path", [REAL, FEATURES], ids=["brownbag", "features"])
def test_rebuilt_paragraphs_are_tree_equal_once_normalised(path: Path) -> None:
    """With a target language every translated paragraph is rebuilt: the parts holding units
    are tree-equal to the originals apart from recomputed attributes and merged runs, every
    other member is byte-equal, and the language is the target's."""
    content = path.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [u.text + ZWSP for u in units], target_lang="fr_FR")

    before, after = _members(content), _members(out)
    assert list(after) == list(before)
    rewritten = [name for name in before if after[name] != before[name]]
    assert rewritten and all(TEXT_PARTS.fullmatch(name) for name in rewritten)
    for name in rewritten:
        got = _canonical(_without_zwsp(after[name]), normalise=True)
        assert got == _canonical(before[name], normalise=True), name
    assert [u.text.replace(ZWSP, "") for u in FMT.extract(out)] == [u.text for u in units]
    for name in rewritten:
        for p in etree.fromstring(after[name]).iter(a("p")):
            for run in p.iter(a("r")):
                if run.findtext(a("t")) and run.getparent() is p:
                    assert run.find(a("rPr")).get("lang") == "fr-FR", name
                    assert run.find(a("rPr")).get("err") is None
    for p_before, p_after in zip(_paragraphs(content), _paragraphs(out), strict=True):
        assert _chars(p_after, lambda t: t.replace(ZWSP, "")) == _chars(p_before)


def test_an_invalid_target_language_is_not_written() -> None:
    content = FEATURES.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [u.text for u in units], target_lang='fr"><x')
    assert _members(out) == _members(content)


# --- extraction ---------------------------------------------------------------------------------


def test_units_follow_slide_order_with_diagrams_and_notes() -> None:
    content = REAL.read_bytes()
    units = FMT.extract(content)
    parts: list[str] = []
    for u in units:
        part = u.path.split("#")[0]
        if not parts or parts[-1] != part:
            parts.append(part)
    assert len(parts) == len(set(parts))
    prs = pptx.Presentation(io.BytesIO(content))
    expected = []
    for slide in prs.slides:
        expected.append(str(slide.part.partname).lstrip("/"))
        for rel in slide.part.rels.values():
            if rel.reltype.endswith("/diagramData"):
                expected.append(str(rel.target_part.partname).lstrip("/"))
        if slide.has_notes_slide:
            expected.append(str(slide.notes_slide.part.partname).lstrip("/"))
    assert parts == [p for p in expected if p in parts]
    # slide3.xml is the third slide, but slide8.xml comes before slide9.xml, not after slide10
    assert parts.index("ppt/slides/slide9.xml") < parts.index("ppt/slides/slide10.xml")


def test_slide_order_comes_from_the_presentation_not_part_names() -> None:
    content = FEATURES.read_bytes()
    presentation = _members(content)["ppt/presentation.xml"]
    root = etree.fromstring(presentation)
    sld_ids = root.find("{http://schemas.openxmlformats.org/presentationml/2006/main}sldIdLst")
    sld_ids[:] = list(reversed(sld_ids))
    swapped = _zip_with(content, {"ppt/presentation.xml": etree.tostring(root)})
    first_parts = [u.path.split("#")[0] for u in FMT.extract(swapped)]
    assert first_parts[0] == "ppt/slides/slide3.xml"
    assert first_parts[-1] == "ppt/slides/slide1.xml"


def test_real_deck_sentences_split_over_runs_are_one_unit() -> None:
    texts = [u.text for u in _units(REAL)]
    # six runs, two of them marked misspelt: one sentence, the link a paired tag
    beware = "Beware!, getType() won’t work for ComObjects. <g1>Link to KB article</g1>"
    assert beware in texts
    # bold and italic in mid-sentence: the sentence's own formatting is plain text
    (definition,) = [t for t in texts if "(from Wikipedia)" in t]
    assert definition.startswith("<g1>Definition</g1> <g2>(from Wikipedia)</g2> - Reflection")
    # code cut into six runs (err="1" on some): plain text, no tags
    assert "System.Reflection.Assembly assm = Assembly.LoadFrom(@“c:\\myDLL.dll”);" in texts
    (link,) = [u for u in _units(REAL) if u.text.startswith("MSDN Reflection Overview")]
    assert link.codes[1].start.startswith("<a:r><a:rPr") and "hlinkClick" in link.codes[1].start
    # nine notes pages, some of them with speaker notes
    assert sum(1 for u in _units(REAL) if u.path.startswith("ppt/notesSlides/")) >= 9


def test_smartart_text_is_sent_once_and_translated_in_data_and_drawing() -> None:
    content = REAL.read_bytes()
    units = FMT.extract(content)
    assert not [u for u in units if "/diagrams/drawing" in u.path]  # every cache line matched
    data_texts = {u.text for u in units if "/diagrams/data" in u.path}
    assert "MethodInfo mInfo = t.GetMethod(“MethodName”);" in data_texts
    assert len([u for u in units if u.text == "Invoking a property"]) == 1

    out = FMT.render(content, [_pseudo(u.text) for u in units])
    members = _members(out)
    drawing_texts = []
    for name in ("ppt/diagrams/drawing1.xml", "ppt/diagrams/drawing30.xml"):
        root = etree.fromstring(members[name])
        for p in root.iter(a("p")):
            text = "".join(t.text or "" for t in p.iter(a("t")))
            if text.strip():
                assert text == text.upper(), (name, text)
                drawing_texts.append(text)
    assert "METHODINFO MINFO = T.GETMETHOD(“METHODNAME”);" in drawing_texts
    # the cache keeps its own formatting (its computed size) on the new runs
    drawing30 = etree.fromstring(members["ppt/diagrams/drawing30.xml"])
    assert all(r.find(a("rPr")).get("sz") == "1800" for r in drawing30.iter(a("r")))


def test_a_cache_paragraph_that_matches_nothing_is_a_unit_of_its_own() -> None:
    content = REAL.read_bytes()
    name = "ppt/diagrams/drawing30.xml"
    drawing = _members(content)[name].replace(b"Invoking a property", b"Stale text")
    changed = _zip_with(content, {name: drawing})
    units = FMT.extract(changed)
    (stale,) = [u for u in units if u.text == "Stale text"]
    assert stale.path.startswith(name)
    assert len(units) == len(FMT.extract(content)) + 1
    out = FMT.render(changed, [_pseudo(u.text) for u in units])
    assert b"STALE TEXT" in _members(out)[name]


def test_features_units() -> None:
    units = _units(FEATURES)
    texts = [u.text for u in units]
    assert "Sales grew <g1>twelve percent</g1> in the <g2>northern</g2> region." in texts
    # runs that differ only in lang, dirty or err are one formatting
    assert "Read the colour guide on <g1>our website</g1> before Friday." in texts
    assert "First line<x1/>second line of the same paragraph" in texts
    (field,) = [u for u in units if u.text.startswith("This is slide")]
    assert field.text == "This is slide <x1/> of three."
    assert (
        field.codes[1].start.startswith('<a:fld id="{') and "<a:t>2</a:t>" in field.codes[1].start
    )
    (literal,) = [u for u in units if "explain" in u.text]
    assert literal.text == (
        "<g1>Docs</g1> explain <b>tags</b> & <x2/> literals, \"quoted\" and 'single'."
    )
    (tab,) = [u for u in units if u.text.startswith("Growth")]
    assert tab.text == "Growth<x1/>in percent" and tab.codes[1].start == "\t"
    for text in ("Region", "Strong growth", "Grouped note one", "Grouped note two"):
        assert text in texts  # table cells and group members
    assert "Mention the <g1>record quarter</g1> first." in texts  # notes
    assert texts.count("Shown by every reader<g1> in bold</g1>") == 1  # mc:Fallback echoes it
    assert all(u.text.strip() for u in units)  # the empty paragraph is no unit
    assert "Click to add" not in " ".join(texts)  # layouts and masters are not read


# --- translation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [REAL, FEATURES], ids=["brownbag", "features"])
def test_pseudo_translation_shows_in_slides_tables_groups_and_notes(path: Path) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [_pseudo(u.text) for u in units])

    assert [u.text for u in FMT.extract(out)] == [_pseudo(u.text) for u in units]
    before, after = _members(content), _members(out)
    assert list(after) == list(before)
    for name, data in before.items():  # layouts, masters, media, rels...: untouched
        if not TEXT_PARTS.fullmatch(name):
            assert after[name] == data, name

    paras_before, paras_after = _paragraphs(content), _paragraphs(out)
    assert len(paras_after) == len(paras_before)
    assert sum(1 for p in paras_after if p.text.strip()) > 10
    for p_before, p_after in zip(paras_before, paras_after, strict=True):
        # upper case, but literal tag-like text (a code) and fields (not translated) as they were
        assert p_after.text == _pseudo(p_before.text) or (
            p_after.text == p_before.text and not p_before.runs
        )
        # same links, same formatting kinds; bold stays bold (character by character)
        links = [r.hyperlink.address for r in p_before.runs if r.hyperlink.address]
        assert [r.hyperlink.address for r in p_after.runs if r.hyperlink.address] == links
        assert _kinds(p_after) == _kinds(p_before)
        assert _chars(p_before, _pseudo) == _chars(p_after)


def test_features_pseudo_translation_in_python_pptx() -> None:
    content = FEATURES.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [_pseudo(u.text) for u in units])
    prs = pptx.Presentation(io.BytesIO(out))
    slides = list(prs.slides)
    assert slides[0].shapes.title.text == "QUARTERLY REVIEW"
    body = slides[1].placeholders[1].text_frame.paragraphs
    assert [r.text for r in body[0].runs if r.font.bold] == ["TWELVE PERCENT"]
    assert [r.text for r in body[0].runs if r.font.italic] == ["NORTHERN"]
    assert body[2].text == "FIRST LINE\vSECOND LINE OF THE SAME PARAGRAPH"
    assert body[3].text == ""
    assert body[4].text == "THIS IS SLIDE 2 OF THREE."  # the field keeps its cached text
    (link,) = [r for r in body[1].runs if r.hyperlink.address]
    assert (link.text, link.hyperlink.address) == ("OUR WEBSITE", "https://example.com/guide")
    notes = slides[1].notes_slide.notes_text_frame.text
    assert notes == "MENTION THE RECORD QUARTER FIRST.\nTHEN TAKE QUESTIONS."
    shapes = _shapes(slides[2].shapes)
    (table,) = [s.table for s in shapes if getattr(s, "has_table", False) and s.has_table]
    assert table.cell(0, 1).text == "GROWTH\tIN PERCENT"
    assert table.cell(1, 1).text == "STRONG GROWTH"
    assert table.cell(1, 1).text_frame.paragraphs[0].runs[0].font.italic
    assert [s.text_frame.text for s in shapes if s.name.startswith("TextBox")] == [
        "GROUPED NOTE ONE",
        "GROUPED NOTE TWO",
    ]
    slide3 = _members(out)["ppt/slides/slide3.xml"]
    assert slide3.count(b"SHOWN BY EVERY READER") == 2  # mc:Choice and mc:Fallback


def test_tags_moved_by_the_engine_keep_their_formatting() -> None:
    content = FEATURES.read_bytes()
    units = FMT.extract(content)
    translations = [u.text for u in units]
    i = translations.index("Sales grew <g1>twelve percent</g1> in the <g2>northern</g2> region.")
    translations[i] = "Im <g2>Norden</g2> wuchs der Umsatz um <g1>zwölf Prozent</g1>."
    out = FMT.render(content, translations, target_lang="de")
    body = pptx.Presentation(io.BytesIO(out)).slides[1].placeholders[1].text_frame
    runs = body.paragraphs[0].runs
    assert [(r.text, bool(r.font.bold), bool(r.font.italic)) for r in runs] == [
        ("Im ", False, False),
        ("Norden", False, True),
        (" wuchs der Umsatz um ", False, False),
        ("zwölf Prozent", True, False),
        (".", False, False),
    ]
    assert {r._r.rPr.get("lang") for r in runs} == {"de"}


def test_hostile_engine_loses_no_code_and_the_deck_still_opens() -> None:
    content = REAL.read_bytes()
    units = FMT.extract(content)
    hostile = []
    for i, u in enumerate(units):
        tags = [m.group(0) for m in TAG.finditer(u.text)]
        if i % 3 == 0:  # drops every tag
            hostile.append("<script>&amp; no tags \"'")
        elif i % 3 == 1:  # repeats them, adds unknown ones
            hostile.append(u.text + u.text + "<x99/><g98>junk</g98> <script>&")
        else:  # closing tags first, control characters
            hostile.append("".join(reversed([TAG.sub("", u.text), *tags])) + "\x00\x0b<script>&")
    out = FMT.render(content, hostile)

    back = FMT.extract(out)
    assert len(back) == len(units)
    for got in back:
        assert all(n == 1 for n in tag_counts(got.text).values())
        assert "<script>&" in TAG.sub("", got.text)
    members = _members(out)
    before = _members(content)
    for name in members:
        if TEXT_PARTS.fullmatch(name):  # fields and breaks are all still there
            for local in ("fld", "br", "hlinkClick"):
                count = len(etree.fromstring(members[name]).findall(f".//{a(local)}"))
                original = len(etree.fromstring(before[name]).findall(f".//{a(local)}"))
                assert count == original or (local == "hlinkClick" and count <= original)
    paras = _paragraphs(out)
    assert any("<script>&" in p.text for p in paras)
    assert all(b"<script>" not in members[n] for n in members if TEXT_PARTS.fullmatch(n))


def _plain(text: str, codes: dict[int, Code]) -> str:
    """``text`` without its tags, the tags of tabs (codes) as tabs."""

    def tab(m: re.Match[str]) -> str:
        code = codes.get(int(m.group(3)))
        return "\t" if m.group(2) == "x" and code is not None and code.start == "\t" else ""

    return TAG.sub(tab, text)


def _others(text: str, codes: dict[int, Code]) -> int:
    """How many standalone tags of ``text`` are no tab."""
    return sum(
        1
        for m in TAG.finditer(text)
        if m.group(2) == "x" and codes.get(int(m.group(3)), Code("")).start != "\t"
    )


#: A piece of translated text (a paragraph translated to white space alone is no unit when
#: read again: the pipeline never lets an engine's blank output through).
_piece = (
    st.text(min_size=1, max_size=20)
    .map(lambda s: INVALID_XML_CHARS.sub("", s))
    .filter(lambda s: s.strip() and not TAG.search(s))
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_translation_text_reads_back(data: st.DataObject) -> None:
    """Whatever text comes back lands in the runs as text, with the unit's standalone codes;
    only characters XML 1.0 cannot carry are dropped."""
    content = FEATURES.read_bytes()
    units = FMT.extract(content)
    translations = []
    for u in units:
        tags = [m.group(0) for m in TAG.finditer(u.text)]
        pieces = data.draw(st.lists(_piece, min_size=len(tags) + 1, max_size=len(tags) + 1))
        translations.append(
            pieces[0] + "".join(t + p for t, p in zip(tags, pieces[1:], strict=True))
        )
    back = FMT.extract(FMT.render(content, translations))
    # the text reads back whole; tags are numbered anew (the formatting with the most text is
    # the new paragraph's own), but every standalone code is still there
    pairs = list(zip(units, translations, strict=True))
    assert [_plain(u.text, u.codes) for u in back] == [_plain(t, u.codes) for u, t in pairs]
    assert [_others(u.text, u.codes) for u in back] == [_others(t, u.codes) for u, t in pairs]


def test_wrong_number_of_translations_is_refused() -> None:
    content = FEATURES.read_bytes()
    n = len(FMT.extract(content))
    with pytest.raises(DocumentError, match=f"{n + 1} translations for the {n} units"):
        FMT.render(content, ["x"] * (n + 1))


def test_fixture_matches_its_script(tmp_path: Path) -> None:
    for path in _load_make_pptx().build(tmp_path):
        assert path.read_bytes() == (DOCS / "pptx" / path.name).read_bytes()


def test_format_attributes() -> None:
    assert FMT.name == "pptx" and FMT.extensions == (".pptx",) and FMT.binary
    assert FMT.media_type == (
        "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    )


# --- invalid input --------------------------------------------------------------------------------


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


WORD_TYPES = (
    b'<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
    b'content-types"><Override PartName="/word/document.xml" ContentType="application/'
    b'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
XXE_SLIDE = (
    b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    b'<p:sld xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:a="'
    + A.encode()
    + b'"><a:p><a:r><a:t>&x;</a:t></a:r></a:p></p:sld>'
)


def _invalid() -> list[tuple[bytes, str]]:
    real = REAL.read_bytes()
    features = FEATURES.read_bytes()
    return [
        (b"plain text, not a zip", "not a ZIP archive"),
        (real[: len(real) // 2], "not a readable ZIP archive"),
        (features[:-30], "not a readable ZIP archive"),
        (_zip({"mimetype": b"application/vnd.oasis.opendocument.presentation"}), "Content_Types"),
        (_zip({"[Content_Types].xml": WORD_TYPES, "word/document.xml": b"<w/>"}), "PowerPoint"),
        (_zip_with(features, {"ppt/slides/slide2.xml": b"<p:sld><a:p>"}), "not well-formed"),
        (_zip_with(features, {"ppt/slides/slide2.xml": XXE_SLIDE}), "DOCTYPE"),
        (_zip_with(features, {"ppt/_rels/presentation.xml.rels": b"<Relationships"}), "rels"),
    ]


@pytest.mark.parametrize(
    ("index", "message"),
    [(i, m) for i, (_c, m) in enumerate(_invalid())],
    ids=[
        "not-a-zip",
        "truncated-half",
        "truncated-end",
        "odf-zip",
        "word-document",
        "broken-slide",
        "xxe",
        "broken-rels",
    ],
)
def test_invalid_input_is_a_document_error(index: int, message: str) -> None:
    content = _invalid()[index][0]
    with pytest.raises(DocumentError, match=message):
        FMT.extract(content)
    with pytest.raises(DocumentError, match=message):
        FMT.render(content, [])


# --- size ---------------------------------------------------------------------------------------


def test_time_extraction_of_a_300_slide_deck() -> None:
    """Prints how long a 300-slide deck takes (no assertion on time: machines differ)."""
    prs = pptx.Presentation()
    for i in range(300):
        slide = prs.slides.add_slide(prs.slide_layouts[1])
        slide.shapes.title.text = f"Slide {i + 1}: quarterly figures"
        tf = slide.placeholders[1].text_frame
        tf.text = f"Revenue grew by {i} percent in the region."
        for j in range(4):
            p = tf.add_paragraph()
            p.add_run().text = f"Point {j} on slide {i}, "
            run = p.add_run()
            run.text = "in bold"
            run.font.bold = True
        slide.notes_slide.notes_text_frame.text = f"Speaker notes for slide {i + 1}."
    raw = io.BytesIO()
    prs.save(raw)
    content = raw.getvalue()

    start = time.perf_counter()
    units = FMT.extract(content)
    extracted = time.perf_counter() - start
    start = time.perf_counter()
    out = FMT.render(content, [_pseudo(u.text) for u in units])
    rendered = time.perf_counter() - start
    print(
        f"\n300-slide deck ({len(content)} bytes, {len(units)} units): "
        f"extract {extracted * 1000:.0f} ms, render {rendered * 1000:.0f} ms"
    )
    assert len(units) == 300 * 7
    assert len(FMT.extract(out)) == len(units)


# --- charts --------------------------------------------------------------------------------------

CHARTS = DOCS / "pptx" / "python-pptx_cht-charts.pptx"


def _result(content: bytes) -> tuple[list[str], Rendered]:
    """The segments of ``content`` and the result rendered from their upper-cased
    translations, through the functions the API's document processes run (a read at
    submission, the render of the result)."""
    _units, cut = _cut("pptx", content, "en", False, 100_000)
    upper = [_upper(s) for s in cut.segments]
    return cut.segments, _render("pptx", content, "en", upper, "de")


def _upper(text: str) -> str:
    """``text`` upper-cased outside its tags."""
    pos, out = 0, []
    for m in TAG.finditer(text):
        out += [text[pos : m.start()].upper(), m.group(0)]
        pos = m.end()
    return "".join(out) + text[pos:].upper()


def _charts(content: bytes) -> list[Any]:
    deck = pptx.Presentation(io.BytesIO(content))
    return [shape.chart for slide in deck.slides for shape in slide.shapes if shape.has_chart]


def test_chart_series_names_and_categories_are_translated_with_their_data() -> None:
    """python-pptx's chart deck: its only text is a chart's series names and category labels
    (cached copies of its embedded workbook's cells). Each text is one unit however many
    series repeat it; the chart shows the translations, the embedded workbook's category
    cells hold them too, and the series names, header cells of the workbook's table (which
    the XLSX format keeps: they name the table's columns), are named in a warning."""
    content = CHARTS.read_bytes()
    segments, done = _result(content)
    assert sorted(segments) == [f"Category {n}" for n in range(1, 5)] + [
        f"Series {n}" for n in range(1, 4)
    ]
    (chart,) = _charts(done.content)
    assert list(chart.plots[0].categories) == [f"CATEGORY {n}" for n in range(1, 5)]
    assert [s.name for s in chart.plots[0].series] == [f"SERIES {n}" for n in range(1, 4)]
    # the numbers are untouched
    (before,) = _charts(content)
    assert [list(s.values) for s in chart.plots[0].series] == [
        list(s.values) for s in before.plots[0].series
    ]
    embedded = _members(done.content)["ppt/embeddings/Microsoft_Excel_Sheet1.xlsx"]
    sheet = openpyxl.load_workbook(io.BytesIO(embedded)).active
    assert [sheet[f"A{row}"].value for row in range(2, 6)] == [f"CATEGORY {n}" for n in range(1, 5)]
    assert [sheet[f"{col}1"].value for col in "BCD"] == [f"Series {n}" for n in range(1, 4)]
    (warning,) = done.warnings
    assert "'Series 1', 'Series 2', 'Series 3'" in warning and "embedded workbook" in warning
    # every other member byte-equal
    changed = {n for n, b in _members(done.content).items() if _members(content)[n] != b}
    assert changed == {"ppt/charts/chart1.xml", "ppt/embeddings/Microsoft_Excel_Sheet1.xlsx"}


def test_chart_titles_and_axis_titles_are_translated() -> None:
    """A chart made by python-pptx with a title and axis titles: they are paragraphs of the
    chart part, translated as a slide's, read after their slide's text; the file opens."""
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Quarterly results"
    data = CategoryChartData()
    data.categories = ["North", "South"]
    data.add_series("Revenue", (1.5, 2.5))
    frame = slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(1), Inches(6), Inches(4), data
    )
    chart = frame.chart
    chart.has_title = True
    chart.chart_title.text_frame.text = "Revenue by region"
    chart.category_axis.has_title = True
    chart.category_axis.axis_title.text_frame.text = "Sales region"
    chart.value_axis.has_title = True
    chart.value_axis.axis_title.text_frame.text = "Millions of euros"
    buf = io.BytesIO()
    deck.save(buf)
    content = buf.getvalue()
    segments, done = _result(content)
    assert segments[:4] == [
        "Quarterly results",
        "Revenue by region",
        "Sales region",
        "Millions of euros",
    ]
    (out,) = _charts(done.content)
    assert out.chart_title.text_frame.text == "REVENUE BY REGION"
    assert out.category_axis.axis_title.text_frame.text == "SALES REGION"
    assert out.value_axis.axis_title.text_frame.text == "MILLIONS OF EUROS"
    assert list(out.plots[0].categories) == ["NORTH", "SOUTH"]
    assert [s.name for s in out.plots[0].series] == ["REVENUE"]
    # python-pptx's embedded workbook has no table: every string the chart shows follows
    assert done.warnings == []
    embedded = next(b for n, b in _members(done.content).items() if n.endswith(".xlsx"))
    sheet = openpyxl.load_workbook(io.BytesIO(embedded)).active
    assert [sheet["A2"].value, sheet["A3"].value, sheet["B1"].value] == [
        "NORTH",
        "SOUTH",
        "REVENUE",
    ]
    # an identity translation leaves every member byte-equal
    units = FMT.extract(content)
    assert _members(FMT.render(content, [u.text for u in units])) == _members(content)
