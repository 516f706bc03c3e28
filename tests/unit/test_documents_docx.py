"""formats/docx.py: paragraphs of a .docx in, the same document with translated runs out.

The round-trip contract for DOCX (the ZIP is written anew, so bytes are not compared): after
rendering the extracted texts, the rewritten parts (document, headers, footers, footnotes) are
tree-equal to the originals and every other member is byte-equal. For what Word writes besides
(runs split by revision ids, proofing marks), the trees are equal once those are normalised.
Fixtures come from tests/fixtures/documents/make_docx.py; python-docx reads the results.
"""

from __future__ import annotations

import importlib.util
import io
import re
import struct
import zipfile
from pathlib import Path
from typing import Any

import docx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from mtfleet.api.parsing import _cut, _render
from mtfleet.formats import for_name, for_upload
from mtfleet.formats.base import TAG, DocumentError, Unit, tag_counts
from mtfleet.formats.docx import DocxFormat
from mtfleet.formats.ooxml import MAX_UNCOMPRESSED_BYTES

DOCS = Path(__file__).resolve().parents[1] / "fixtures" / "documents"
PRODUCT = DOCS / "docx" / "product_sheet.docx"
WORD = DOCS / "docx" / "word_features.docx"
FMT = DocxFormat()
W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
TEXT_PARTS = re.compile(r"word/(document|header\d*|footer\d*|footnotes|endnotes)\.xml")
INVALID_XML_CHARS = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def w(local: str) -> str:
    return f"{{{W}}}{local}"


def _load_make_docx() -> Any:
    spec = importlib.util.spec_from_file_location("make_docx", DOCS / "make_docx.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _members(content: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(content)) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def _canonical(xml: bytes, *, normalise: bool = False) -> str:
    root = etree.fromstring(xml)
    if normalise:
        _normalise(root)
    return etree.tostring(root, method="c14n2").decode()


def _normalise(root: Any) -> None:
    """What Word writes that a rebuilt paragraph does not keep: proofing marks, rendered page
    breaks, revision ids on runs, runs split with equal formatting, needless xml:space."""
    for el in list(root.iter(w("proofErr"), w("lastRenderedPageBreak"))):
        el.getparent().remove(el)
    for run in root.iter(w("r")):
        for name in [a for a in run.attrib if a.startswith(w("rsid"))]:
            del run.attrib[name]
    for parent in list(root.iter()):
        prev = None
        for child in list(parent):
            if prev is not None and child.tag == prev.tag == w("r") and _rpr(child) == _rpr(prev):
                for grandchild in list(child):
                    if grandchild.tag != w("rPr"):
                        prev.append(grandchild)
                parent.remove(child)
                continue
            prev = child
    for run in root.iter(w("r")):
        last = None
        for child in list(run):
            if last is not None and child.tag == last.tag == w("t"):
                last.text = (last.text or "") + (child.text or "")
                run.remove(child)
                continue
            last = child
    for t in root.iter(w("t")):
        t.attrib.pop(XML_SPACE, None)
        if t.text and t.text != t.text.strip():
            t.set(XML_SPACE, "preserve")


def _rpr(run: Any) -> bytes:
    rpr = run.find(w("rPr"))
    return b"" if rpr is None else bytes(etree.tostring(rpr))


def _pseudo(text: str) -> str:
    """Upper-case the text outside the tags: a translation that keeps every tag."""
    out, pos = [], 0
    for m in TAG.finditer(text):
        out += [text[pos : m.start()].upper(), m.group(0)]
        pos = m.end()
    return "".join([*out, text[pos:].upper()])


def _code_kinds(unit: Unit) -> dict[int, tuple[bool, str]]:
    """Each code: paired or not, and its markup up to the first text it may hold."""
    return {n: (c.paired, c.start.split(">", 1)[0]) for n, c in unit.codes.items()}


def _count(content: bytes, *locals_: str) -> dict[str, int]:
    counts = dict.fromkeys(locals_, 0)
    for name, data in _members(content).items():
        if TEXT_PARTS.fullmatch(name):
            root = etree.fromstring(data)
            for local in locals_:
                counts[local] += sum(1 for _ in root.iter(w(local)))
    return counts


# --- round trip ---------------------------------------------------------------------------------


def test_identity_round_trip_keeps_every_part() -> None:
    content = PRODUCT.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [u.text for u in units])

    before, after = _members(content), _members(out)
    assert list(after) == list(before)  # same members, same order
    for name, data in before.items():
        if TEXT_PARTS.fullmatch(name):
            assert _canonical(after[name]) == _canonical(data), name
        else:
            assert after[name] == data, name
    with zipfile.ZipFile(io.BytesIO(content)) as a, zipfile.ZipFile(io.BytesIO(out)) as b:
        assert [(i.date_time, i.compress_type) for i in a.infolist()] == [
            (i.date_time, i.compress_type) for i in b.infolist()
        ]
    assert FMT.extract(out) == units


def test_identity_round_trip_of_word_output_is_equal_once_normalised() -> None:
    content = WORD.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [u.text for u in units])

    before, after = _members(content), _members(out)
    assert list(after) == list(before)
    for name, data in before.items():
        if TEXT_PARTS.fullmatch(name):
            assert _canonical(after[name], normalise=True) == _canonical(data, normalise=True)
        else:
            assert after[name] == data, name
    assert FMT.extract(out) == units


def test_units_cover_body_tables_lists_headers_footers_footnotes_and_text_boxes() -> None:
    product = {u.text: u for u in FMT.extract(PRODUCT.read_bytes())}
    for text in ("Feature", "Men: S to XXL", "Women: XS to XL", "Packs into its own hood"):
        assert text in product  # table cell, nested table cell, bullet item
    assert product["TrailCo product sheet"].path.startswith("word/header")
    (footer,) = [u for u in product.values() if u.path.startswith("word/footer")]
    assert footer.text == "Page <x1/> of the <g2>spring catalogue</g2>"
    assert "PAGE" in footer.codes[1].start and "fldCharType" in footer.codes[1].start

    word = FMT.extract(WORD.read_bytes())
    texts = [u.text for u in word]
    assert texts.count("Free shipping over <g1>50 EUR</g1>") == 2  # DrawingML and VML
    (note,) = [u for u in word if u.path.startswith("word/footnotes.xml")]
    assert note.text == "<x1/> Tested for <g2>48 hours</g2> of rain."
    (first,) = [u for u in word if u.text.startswith("<x1/>Every colour")]  # runs merged
    assert "proofErr" not in "".join(c.start for c in first.codes.values())


def test_runs_links_breaks_tabs_and_images_become_tags() -> None:
    units = {u.path: u for u in FMT.extract(PRODUCT.read_bytes())}
    texts = [u.text for u in units.values()]
    assert (
        "The <g1>Trail Runner Pro</g1> is our <g2>lightest</g2> waterproof jacket, with "
        "<g3>taped seams</g3>." in texts
    )
    (link,) = [u for u in units.values() if u.text.startswith("Read the")]
    assert link.text == "Read the <g1>care guide</g1> before the first wash."
    assert link.codes[1].start.startswith("<w:hyperlink r:id=")
    (lines,) = [u for u in units.values() if u.text.startswith("Colours")]
    assert lines.text == "Colours: black, blue<x1/>Sizes: S to XL"
    (price,) = [u for u in units.values() if u.text.startswith("Price")]
    assert price.text == "Price:<x1/><g2>129 EUR</g2>"
    (image,) = [u for u in units.values() if u.text.startswith("Made by")]
    assert image.codes[1].start.startswith("<w:drawing>")
    (literal,) = [u for u in units.values() if u.text.startswith("Template tags")]
    assert literal.text == "Template tags like <x1/> and <x2/> stay literal."


# --- translation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [PRODUCT, WORD], ids=["product_sheet", "word_features"])
def test_pseudo_translation_keeps_formatting_links_images_and_fields(path: Path) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [_pseudo(u.text) for u in units])

    back = FMT.extract(out)
    assert [u.text for u in back] == [_pseudo(u.text) for u in units]
    assert [_code_kinds(u) for u in back] == [_code_kinds(u) for u in units]
    elements = ("drawing", "hyperlink", "tab", "br", "fldChar", "instrText", "footnoteReference")
    assert _count(out, *elements) == _count(content, *elements)
    assert _members(out).keys() == _members(content).keys()  # images and rels still there

    document = docx.Document(io.BytesIO(out))  # python-docx opens it
    if path == PRODUCT:
        runs = [r for p in document.paragraphs for r in p.runs]
        assert [r.text for r in runs if r.bold and not r.italic] == ["TRAIL RUNNER PRO", "ZIPPED"]
        assert [r.text for r in runs if r.italic and not r.bold] == ["LIGHTEST"]
        assert [r.text for r in runs if r.bold and r.italic] == ["TAPED SEAMS"]
        (link,) = [h for p in document.paragraphs for h in p.hyperlinks]
        assert (link.text, link.url) == ("CARE GUIDE", "https://trail.example/care?lang=en&v=2")
        assert len(document.inline_shapes) == 2
        assert document.tables[0].cell(2, 1).tables[0].cell(0, 0).text == "MEN: S TO XXL"
        assert document.sections[0].header.paragraphs[0].text == "TRAILCO PRODUCT SHEET"


def test_hostile_engine_loses_no_code_and_its_text_is_escaped() -> None:
    content = PRODUCT.read_bytes()
    units = FMT.extract(content)
    hostile = []
    for i, u in enumerate(units):
        tags = [m.group(0) for m in TAG.finditer(u.text)]
        if i % 3 == 0:  # drops every tag
            hostile.append("<script>&amp; no tags")
        elif i % 3 == 1:  # repeats them, adds unknown ones
            hostile.append(u.text + u.text + "<x99/><g98>junk</g98> <script>&")
        else:  # closing tags first, control characters
            hostile.append("".join(reversed([TAG.sub("", u.text), *tags])) + "\x00\x0b<script>&")
    out = FMT.render(content, hostile)

    elements = ("drawing", "hyperlink", "tab", "br", "fldChar", "instrText")
    assert _count(out, *elements) == _count(content, *elements)
    back = FMT.extract(out)
    assert len(back) == len(units)
    for original, got in zip(units, back, strict=True):
        assert all(n == 1 for n in tag_counts(got.text).values())
        assert "<script>&" in TAG.sub("", got.text)
        # every standalone code is back (paired ones around no text may vanish with it)
        kinds = sorted(k for k in _code_kinds(original).values() if not k[0])
        assert sorted(k for k in _code_kinds(got).values() if not k[0]) == kinds
    document = docx.Document(io.BytesIO(out))
    assert any("<script>&" in p.text for p in document.paragraphs)
    assert b"<script>" not in _members(out)["word/document.xml"]


def test_a_link_moved_into_another_link_is_put_beside_it() -> None:
    make = _load_make_docx()
    doc = docx.Document()
    p = doc.add_paragraph("See ")
    make.add_hyperlink(p, "sizes", "https://trail.example/sizes")
    p.add_run(" and ")
    make.add_hyperlink(p, "returns", "https://trail.example/returns")
    buf = io.BytesIO()
    doc.save(buf)
    content = buf.getvalue()
    (unit,) = FMT.extract(content)
    assert unit.text == "See <g1>sizes</g1> and <g2>returns</g2>"

    out = FMT.render(content, ["Ver <g1>tallas y <g2>devoluciones</g2> hoy</g1>"])
    body = etree.fromstring(_members(out)["word/document.xml"])
    links = list(body.iter(w("hyperlink")))
    assert not any(link.find(f".//{w('hyperlink')}") is not None for link in links)
    assert ["".join(link.itertext()) for link in links] == ["tallas y ", "devoluciones", " hoy"]
    assert links[0].get(R_ID) == links[2].get(R_ID) != links[1].get(R_ID)
    assert docx.Document(io.BytesIO(out)).paragraphs[0].text == "Ver tallas y devoluciones hoy"


def test_wrong_number_of_translations_is_refused() -> None:
    content = PRODUCT.read_bytes()
    n = len(FMT.extract(content))
    with pytest.raises(DocumentError, match=f"{n + 1} translations for the {n} units"):
        FMT.render(content, ["x"] * (n + 1))


def test_fixtures_match_their_script(tmp_path: Path) -> None:
    for path in _load_make_docx().build(tmp_path):
        assert FMT.extract(path.read_bytes()) == FMT.extract(
            (DOCS / "docx" / path.name).read_bytes()
        )


def test_registered_under_its_name_and_extension() -> None:
    fmt = for_name("docx")
    assert isinstance(fmt, DocxFormat) and fmt.binary
    assert fmt.media_type.endswith("wordprocessingml.document")
    assert isinstance(for_upload(b"", "Catalogue.DOCX"), DocxFormat)


_piece = st.text(min_size=1, max_size=20).filter(lambda s: not TAG.search(s))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_translation_text_reads_back(data: st.DataObject) -> None:
    """Whatever text comes back (markup characters, control characters, spaces at the ends)
    lands in the runs as text, with the unit's tags where they were put; only characters XML
    1.0 cannot carry are dropped."""
    content = PRODUCT.read_bytes()
    units = FMT.extract(content)
    translations = []
    for u in units:
        tags = [m.group(0) for m in TAG.finditer(u.text)]
        pieces = data.draw(st.lists(_piece, min_size=len(tags) + 1, max_size=len(tags) + 1))
        pieces = [INVALID_XML_CHARS.sub("", p) or "b" for p in pieces]
        pieces[0] = "a" + pieces[0]  # text first: the paragraph's own formatting comes first
        translations.append(
            pieces[0] + "".join(t + p for t, p in zip(tags, pieces[1:], strict=True))
        )
    back = FMT.extract(FMT.render(content, translations))
    assert [u.text for u in back] == translations


# --- hostile and invalid input --------------------------------------------------------------------


def _docx_with(document_xml: bytes) -> bytes:
    """The product sheet with its document part replaced."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(PRODUCT.read_bytes())) as zin, zipfile.ZipFile(out, "w") as z:
        for info in zin.infolist():
            data = document_xml if info.filename == "word/document.xml" else zin.read(info)
            z.writestr(info, data)
    return out.getvalue()


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


def _patch_sizes(content: bytes, size: int) -> bytes:
    """Rewrite every member's declared uncompressed size (local and central headers)."""
    data = bytearray(content)
    with zipfile.ZipFile(io.BytesIO(content)) as z:
        for info in z.infolist():
            struct.pack_into("<I", data, info.header_offset + 22, size)
    (entries, directory) = struct.unpack_from("<H4xI", data, len(data) - 22 + 10)
    pos = directory
    for _ in range(entries):
        struct.pack_into("<I", data, pos + 24, size)
        name, extra, comment = struct.unpack_from("<HHH", data, pos + 28)
        pos += 46 + name + extra + comment
    return bytes(data)


CONTENT_TYPES = (
    b'<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
    b'content-types"><Override PartName="/xl/workbook.xml" ContentType="application/'
    b'vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>'
)
XXE_DOCUMENT = (
    b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    b'<w:document xmlns:w="' + W.encode() + b'"><w:body><w:p><w:r><w:t>&x;</w:t></w:r></w:p>'
    b"</w:body></w:document>"
)
LAUGHS_DOCUMENT = (
    b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa">'
    + b"".join(
        b'<!ENTITY %s "%s">' % (bytes([98 + i]), (b"&%s;" % bytes([97 + i])) * 10) for i in range(8)
    )
    + b']><w:document xmlns:w="'
    + W.encode()
    + b'"><w:body><w:p><w:r><w:t>&i;</w:t></w:r></w:p></w:body></w:document>'
)


def _bombs() -> list[tuple[bytes, str]]:
    product = PRODUCT.read_bytes()
    return [
        (b"plain text, not a zip", "not a ZIP archive"),
        (product[:2000], "not a readable ZIP archive"),
        (_zip({"mimetype": b"application/vnd.oasis.opendocument.text"}), "no \\[Content_Types"),
        (_zip({"[Content_Types].xml": CONTENT_TYPES, "xl/workbook.xml": b"<w/>"}), "not a Word"),
        (_zip({"[Content_Types].xml": b"<Types"}), "not well-formed"),
        (_docx_with(XXE_DOCUMENT), "DOCTYPE"),
        (_docx_with(LAUGHS_DOCUMENT), "DOCTYPE"),
        (_docx_with(b"<w:document>"), "not well-formed"),
        # declares more than the limit: refused before anything is decompressed
        (_patch_sizes(product, MAX_UNCOMPRESSED_BYTES // 8), "the limit is"),
        # declares less than it inflates to: the read stops at the declared size and fails
        (_patch_sizes(product, 100), "cannot be read|larger than it declares"),
    ]


@pytest.mark.parametrize(
    ("index", "message"),
    [(i, m) for i, (_c, m) in enumerate(_bombs())],
    ids=[
        "not-a-zip",
        "truncated-zip",
        "odf-zip",
        "spreadsheet",
        "broken-content-types",
        "xxe",
        "billion-laughs",
        "broken-document",
        "zip-bomb-declared",
        "zip-bomb-lying",
    ],
)
def test_hostile_or_invalid_input_is_a_document_error(index: int, message: str) -> None:
    content = _bombs()[index][0]
    with pytest.raises(DocumentError, match=message):
        FMT.extract(content)
    with pytest.raises(DocumentError, match=message):
        FMT.render(content, [])


def test_too_many_members_is_refused() -> None:
    from mtfleet.formats.ooxml import MAX_MEMBERS

    content = _zip({f"junk/{i}": b"" for i in range(MAX_MEMBERS + 1)})
    with pytest.raises(DocumentError, match=f"the limit is {MAX_MEMBERS}"):
        FMT.extract(content)


# --- comments ------------------------------------------------------------------------------------

COMMENTS = DOCS / "docx" / "pandoc_comments.docx"
_ANCHORS = {f"{{{W}}}{n}" for n in ("commentRangeStart", "commentRangeEnd", "commentReference")}


def _upper(text: str) -> str:
    """``text`` upper-cased outside its tags."""
    pos, out = 0, []
    for m in TAG.finditer(text):
        out += [text[pos : m.start()].upper(), m.group(0)]
        pos = m.end()
    return "".join(out) + text[pos:].upper()


def _anchors(document_xml: bytes) -> list[list[tuple[str, str | None]]]:
    """Per paragraph of the body, its comment anchors and text pieces in order: each anchor as
    (its kind, its comment's id), each text as ("text", None)."""
    out = []
    for p in etree.fromstring(document_xml).iter(f"{{{W}}}p"):
        seq: list[tuple[str, str | None]] = []
        for el in p.iter(*_ANCHORS, f"{{{W}}}t"):
            if el.tag == f"{{{W}}}t":
                if not seq or seq[-1] != ("text", None):
                    seq.append(("text", None))
            else:
                seq.append((etree.QName(el).localname, el.get(f"{{{W}}}id")))
        out.append(seq)
    return out


def test_comments_are_translated_and_stay_anchored() -> None:
    """pandoc's comments test file (ranges across paragraphs, a comment inside a comment, a
    comment of several paragraphs), through the functions the API's document processes run:
    every comment's text is translated, each comment keeps its id, author and the paragraph
    ids its replies and state point at, and its anchors stay where they were in the text."""
    content = COMMENTS.read_bytes()
    _units, cut = _cut("docx", content, "en", False, 100_000)
    assert "<x1/>I left a comment." in cut.segments  # the comment's mark: a code
    assert "See?" in cut.segments and "<x1/>Do something else." in cut.segments
    out = _render("docx", content, "en", [_upper(s) for s in cut.segments], "de").content
    before, after = _members(content), _members(out)
    # the comments read back translated, as python-docx reads them
    comments = {c.comment_id: c for c in docx.Document(io.BytesIO(out)).comments}
    originals = {c.comment_id: c for c in docx.Document(io.BytesIO(content)).comments}
    assert comments.keys() == originals.keys() and len(comments) == 5
    for cid, comment in comments.items():
        assert comment.text == originals[cid].text.upper()
        assert comment.author == originals[cid].author
    assert comments[2].text == "THIS ONE HAS MULTIPLE PARAGRAPHS.\n\nSEE?"
    # each comment still starts with its mark, and keeps its paragraphs' ids
    old_c, new_c = (
        etree.fromstring(before["word/comments.xml"]),
        etree.fromstring(after["word/comments.xml"]),
    )
    para_id = "{http://schemas.microsoft.com/office/word/2010/wordml}paraId"
    assert [p.get(para_id) for p in new_c.iter(f"{{{W}}}p")] == [
        p.get(para_id) for p in old_c.iter(f"{{{W}}}p")
    ]
    assert len(list(new_c.iter(f"{{{W}}}annotationRef"))) == 5
    # the anchors in the body: the same ids, in the same places among its text
    assert _anchors(after["word/document.xml"]) == _anchors(before["word/document.xml"])
    assert b"COMMENT IN A COMMENT" in after["word/document.xml"]
    # the metadata parts are copied as they are
    for name in before:
        if name not in ("word/document.xml", "word/comments.xml"):
            assert after[name] == before[name], name
