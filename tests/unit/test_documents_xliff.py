"""formats/xliff.py: XLIFF 1.2 and 2.x sources in, filled targets out.

The round-trip contract for XLIFF: rendering the extracted source texts fills every target with
a copy of its source, and the rest of the tree (everything outside the targets and their state
attributes) is unchanged. Targets are read back by moving each target into its source's place
and extracting again, so the same extractor reads what render wrote.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from mtfleet.formats import for_name, for_upload
from mtfleet.formats.base import TAG, DocumentError, Unit, tag_counts
from mtfleet.formats.xliff import XliffFormat

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents" / "xliff"
FILES = sorted(FIXTURES.glob("*.xlf"))
FMT = XliffFormat()
V1 = "urn:oasis:names:tc:xliff:document:1.2"
V2 = "urn:oasis:names:tc:xliff:document:2.0"
XML_NS = "http://www.w3.org/XML/1998/namespace"
INVALID_XML_CHARS = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _parse(content: bytes) -> Any:
    return etree.fromstring(content, etree.XMLParser(resolve_entities=False))


def _holders(root: Any) -> list[tuple[Any, Any, Any]]:
    """(holder, its source-like element, its target or None) for every 1.2 trans-unit and 2.x
    segment; the source-like element is the seg-source when there is one."""
    ns = etree.QName(root).namespace
    q = (lambda local: f"{{{ns}}}{local}") if ns else (lambda local: local)
    out = []
    for holder in [*root.iter(q("trans-unit")), *root.iter(q("segment"))]:
        source = holder.find(q("seg-source"))
        if source is None:
            source = holder.find(q("source"))
        out.append((holder, source, holder.find(q("target"))))
    return out


def _targets_as_sources(content: bytes) -> list[Unit]:
    """Extract again after moving each target's content into its source's place."""
    root = _parse(content)
    for _holder, source, target in _holders(root):
        if target is not None:
            for child in list(source):
                source.remove(child)
            source.text = target.text
            for child in target:
                source.append(copy.deepcopy(child))
    return FMT.extract(etree.tostring(root.getroottree()))


def _inner(el: Any) -> str:
    """An element's content, canonical (C14N), without the element's own tag."""
    el = copy.deepcopy(el)
    el.tag, el.tail = "wrapper", None
    el.attrib.clear()
    return etree.tostring(el, method="c14n2").decode()


def _without_targets(content: bytes) -> str:
    """Canonical XML with the unit/segment targets removed (the whitespace before each target
    goes with it) and the state attributes render sets dropped."""
    root = _parse(content)
    for holder, _source, target in _holders(root):
        if etree.QName(holder).localname == "segment":
            holder.attrib.pop("state", None)
        if target is not None:
            previous = target.getprevious()
            previous.tail = target.tail
            holder.remove(target)
    return etree.tostring(root.getroottree(), method="c14n2").decode()


def _pseudo(text: str) -> str:
    """Upper-case the text outside the tags: a translation that keeps every tag."""
    out, pos = [], 0
    for m in TAG.finditer(text):
        out += [text[pos : m.start()].upper(), m.group(0)]
        pos = m.end()
    return "".join([*out, text[pos:].upper()])


def _inline_elements(el: Any) -> list[tuple[str, list[tuple[str, str]]]]:
    """The tags and attributes of the elements inside ``el``, sorted."""
    return sorted((str(e.tag), sorted(e.attrib.items())) for e in el.iterdescendants())


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_identity_round_trip_fills_targets_with_the_sources(path: Path) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    assert units, "every fixture has translatable units"
    out = FMT.render(content, [u.text for u in units])

    assert _targets_as_sources(out) == units
    assert _without_targets(out) == _without_targets(content)
    for holder, source, target in _holders(_parse(out)):
        if holder.get("translate") == "no" or holder.getparent().get("translate") == "no":
            continue
        assert target is not None, holder.get("id")
        assert _inner(target) == _inner(source)
        state = target.get("state") if etree.QName(holder).localname != "segment" else None
        assert (state or holder.get("state")) == "translated"


def test_fixtures_cover_both_versions_and_the_inline_elements() -> None:
    seen: set[str] = set()
    for path in FILES:
        root = _parse(path.read_bytes())
        seen |= {
            f"{etree.QName(e).namespace}:{etree.QName(e).localname}"
            for e in root.iter(etree.Element)
        }
    for local in ("g", "x", "bx", "ex", "ph", "bpt", "ept", "it", "mrk", "seg-source", "note"):
        assert f"{V1}:{local}" in seen, local
    for local in ("pc", "ph", "sc", "ec", "mrk", "cp", "sm", "em", "ignorable"):
        assert f"{V2}:{local}" in seen, local


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_pseudo_translation_keeps_every_code_exactly_once(path: Path) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    out = FMT.render(content, [_pseudo(u.text) for u in units])

    back = _targets_as_sources(out)
    assert [u.text for u in back] == [_pseudo(u.text) for u in units]
    assert [u.codes for u in back] == [u.codes for u in units]
    for u in back:
        assert all(n == 1 for n in tag_counts(u.text).values())
    for _holder, source, target in _holders(_parse(out)):
        if target is not None:
            assert _inline_elements(target) == _inline_elements(source)


def test_translate_no_units_and_groups_are_left_alone() -> None:
    paths = {u.path for p in FILES for u in FMT.extract(p.read_bytes())}
    assert not any(p.endswith(("#sku", "#legal-1", "#tu3")) or "/brand/" in p for p in paths), paths
    content = (FIXTURES / "v12_product_sheet.xlf").read_bytes()
    out = _parse(FMT.render(content, [u.text for u in FMT.extract(content)]))
    for tu in out.iter(f"{{{V1}}}trans-unit"):
        has_target = tu.find(f"{{{V1}}}target") is not None
        assert has_target == (tu.get("id") not in {"sku", "legal-1"}), tu.get("id")


def test_a_code_only_source_is_not_sent_but_its_target_copies_the_source() -> None:
    content = (FIXTURES / "v12_product_sheet.xlf").read_bytes()
    units = FMT.extract(content)
    assert not any(u.path.endswith("#spec-codes-only") for u in units)
    out = _parse(FMT.render(content, [u.text for u in units]))
    (tu,) = [t for t in out.iter(f"{{{V1}}}trans-unit") if t.get("id") == "spec-codes-only"]
    assert _inner(tu.find(f"{{{V1}}}target")) == _inner(tu.find(f"{{{V1}}}source"))


def test_literal_tag_text_is_protected_and_comes_back_as_text() -> None:
    content = (FIXTURES / "v12_product_sheet.xlf").read_bytes()
    units = FMT.extract(content)
    (literal,) = [u for u in units if u.path.endswith("#spec-literal")]
    assert "<g1>" not in literal.text and len(literal.codes) == 2
    translations = [_pseudo(u.text) for u in units]
    out = _parse(FMT.render(content, translations))
    (tu,) = [t for t in out.iter(f"{{{V1}}}trans-unit") if t.get("id") == "spec-literal"]
    target = tu.find(f"{{{V1}}}target")
    assert len(target) == 0
    assert target.text == "TEMPLATES USE <g1> AND <x2/> AS LITERAL TEXT & MORE."


def test_existing_targets_are_replaced_keeping_their_attributes() -> None:
    content = (FIXTURES / "v12_existing_targets.xlf").read_bytes()
    units = FMT.extract(content)
    out = _parse(FMT.render(content, [_pseudo(u.text) for u in units]))
    targets = {tu.get("id"): tu.find(f"{{{V1}}}target") for tu in out.iter(f"{{{V1}}}trans-unit")}
    assert targets["checkout.title"].text == "CHECKOUT"
    assert targets["checkout.title"].get(f"{{{XML_NS}}}lang") == "de"
    assert targets["checkout.items"].get("state") == "translated"
    assert targets["checkout.items"].get("state-qualifier") == "fuzzy-match"
    assert "".join(targets["checkout.items"].itertext()) == "YOU HAVE  ITEMS IN YOUR CART."
    # the alternative translation is not a target of the unit and is untouched
    alt = out.find(f".//{{{V1}}}alt-trans/{{{V1}}}target")
    assert "".join(alt.itertext()) == "Sie haben  Artikel im Warenkorb."
    assert all(t is not None and t.get("state") == "translated" for t in targets.values())


def test_segmented_units_fill_a_target_that_mirrors_the_seg_source() -> None:
    content = (FIXTURES / "okapi_memoq_style.xlf").read_bytes()
    units = FMT.extract(content)
    assert [u.path.rsplit("#", 1)[1] for u in units] == ["tu1/0", "tu1/1", "tu2/0", "tu2/1", "tu4"]
    out = _parse(FMT.render(content, [_pseudo(u.text) for u in units]))
    (tu2,) = [t for t in out.iter(f"{{{V1}}}trans-unit") if t.get("id") == "tu2"]
    target = tu2.find(f"{{{V1}}}target")
    assert target.get(f"{{{XML_NS}}}lang") == "es-es"  # kept from the existing target
    segs = [m for m in target if m.get("mtype") == "seg"]
    assert [m.get("mid") for m in segs] == ["0", "1"]
    assert "".join(segs[0].itertext()) == "TWO-YEAR WARRANTY."
    assert "".join(segs[1].itertext()) == "DETAILS AT TRAIL.EXAMPLE/WARRANTY."
    assert [etree.QName(e).localname for e in target] == ["mrk", "x", "mrk"]  # lb between them
    assert [etree.QName(e).localname for e in segs[1]] == ["bx", "ex"]


def test_the_target_language_is_named_where_targets_are_written() -> None:
    # issue 40 item 4: a file whose targets were German (1.2) or French (2.0) names the target
    v1 = (FIXTURES / "v12_existing_targets.xlf").read_bytes()
    out = _parse(FMT.render(v1, [u.text for u in FMT.extract(v1)], target_lang="es"))
    assert [f.get("target-language") for f in out.iter(f"{{{V1}}}file")] == ["es", "es"]
    langs = [t.get(f"{{{XML_NS}}}lang") for t in out.iter(f"{{{V1}}}target")]
    assert "de" not in langs and "es" in langs  # a target's own xml:lang follows
    v2 = (FIXTURES / "v20_app_strings.xlf").read_bytes()
    assert (
        _parse(FMT.render(v2, [u.text for u in FMT.extract(v2)], target_lang="fr")).get("trgLang")
        == "fr"
    )
    without = _parse(FMT.render(v2, [u.text for u in FMT.extract(v2)]))
    assert without.get("trgLang") is None


def test_a_file_with_nothing_to_translate_keeps_the_language_it_names() -> None:
    content = (
        f'<xliff version="1.2" xmlns="{V1}"><file original="a" source-language="en" '
        'target-language="de" datatype="plaintext"><body><trans-unit id="1" translate="no">'
        "<source>Keep</source><target>Behalten</target></trans-unit></body></file>"
        '<file original="b" source-language="en" target-language="de" datatype="plaintext">'
        '<body><trans-unit id="2"><source>Pay</source><target>Zahlen</target></trans-unit>'
        "</body></file></xliff>"
    ).encode()
    out = _parse(FMT.render(content, ["Pagar"], target_lang="es"))
    assert [f.get("target-language") for f in out.iter(f"{{{V1}}}file")] == ["de", "es"]


def test_oasis_everything_core_is_translated_whole_and_names_its_target() -> None:
    """The OASIS "everything core" sample (microsoft/XLIFF2-Object-Model): French targets,
    translate="no" on the file overridden by units and groups, <pc>/<ph> with dataRef,
    subFlows, originalData, ignorable, skeleton, mda:metadata, order= and xml:space."""
    content = (FIXTURES / "xliff2-om_everything-core.xlf").read_bytes()
    units = FMT.extract(content)
    assert [u.path for u in units] == [
        "f1/tu1/1", "f1/tu1/2", "f1/tu3/1", "f1/tu3end/1", "f1/tu2/s1"
    ]  # fmt: skip
    out = FMT.render(content, [_pseudo(u.text) for u in units], target_lang="es")
    root = _parse(out)
    assert root.get("trgLang") == "es" and root.get("srcLang") == "en"
    named = out.replace(b'trgLang="es"', b'trgLang="fr"')
    assert _without_targets(named) == _without_targets(content)  # skeleton, metadata, notes...
    targets = {
        (h.getparent().get("id"), h.get("id")): t for h, _s, t in _holders(root) if t is not None
    }
    assert len(targets) == len(units)  # every segment, the French ones replaced
    assert "".join(targets["tu1", "1"].itertext()) == "SAMPLE SEGMENT."
    assert targets["tu1", "1"].get("order") == "3"
    assert targets["tu1", "2"].get("order") == "1"
    assert targets["tu1", "2"].get(f"{{{XML_NS}}}space") == "default"
    inline = targets["tu2", "s1"]
    assert _inline_elements(inline) == _inline_elements(inline.getparent().find(f"{{{V2}}}source"))
    assert "".join(inline.itertext()) == "SPECIAL TEXT AND MORE\n."
    assert _targets_as_sources(FMT.render(content, [u.text for u in units])) == units


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_hostile_engine_loses_no_code_and_its_text_is_escaped(path: Path) -> None:
    content = path.read_bytes()
    units = FMT.extract(content)
    hostile = []
    for i, u in enumerate(units):
        tags = [m.group(0) for m in TAG.finditer(u.text)]
        if i % 3 == 0:  # drops every tag
            hostile.append("<script>&amp; dropped all tags")
        elif i % 3 == 1:  # repeats every tag and adds one that does not exist
            hostile.append(u.text + u.text + "<x99/><g98>junk</g98> <script>&")
        else:  # closes before opening, stray control characters
            hostile.append("".join(reversed([TAG.sub("", u.text), *tags])) + "\x00\x1b<script>&")
    out = FMT.render(content, hostile)
    back = _targets_as_sources(out)  # parses as XML; every target reads back as a unit
    assert len(back) == len(units)
    for original, got in zip(units, back, strict=True):
        assert sorted(c.start for c in got.codes.values()) == sorted(
            c.start for c in original.codes.values()
        )
        assert all(n == 1 for n in tag_counts(got.text).values())
        assert "<script>&" in TAG.sub("", got.text)
    assert b"<script>" not in out


def test_wrong_number_of_translations_is_refused() -> None:
    content = (FIXTURES / "v20_app_strings.xlf").read_bytes()
    n = len(FMT.extract(content))
    with pytest.raises(DocumentError, match=f"{n - 1} translations for the {n} units"):
        FMT.render(content, ["x"] * (n - 1))


BILLION_LAUGHS = (
    b'<?xml version="1.0"?>\n<!DOCTYPE xliff [\n<!ENTITY lol "lol">\n'
    + b"".join(
        b'<!ENTITY lol%d "%s">\n' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
        for i in range(1, 10)
    )
    + b']>\n<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file '
    b'original="a" source-language="en"><body><trans-unit id="1"><source>&lol9;</source>'
    b"</trans-unit></body></file></xliff>"
)
XXE = (
    b'<?xml version="1.0"?>\n<!DOCTYPE xliff [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
    b'<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file original="a" '
    b'source-language="en"><body><trans-unit id="1"><source>&xxe;</source></trans-unit>'
    b"</body></file></xliff>"
)
EXTERNAL_DTD = (
    b'<?xml version="1.0"?>\n<!DOCTYPE xliff SYSTEM "http://attacker.example/x.dtd">\n'
    b'<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"/>'
)
QUADRATIC = (
    b'<!DOCTYPE xliff [<!ENTITY a "' + b"A" * 50_000 + b'">]>'
    b'<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file><body>'
    b'<trans-unit id="1"><source>'
    + b"&a;" * 5_000
    + b"</source></trans-unit></body></file></xliff>"
)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (BILLION_LAUGHS, "DOCTYPE"),
        (XXE, "DOCTYPE"),
        (EXTERNAL_DTD, "DOCTYPE"),
        (QUADRATIC, "DOCTYPE"),
        (b"", "not well-formed|empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not well-formed"),
        (b"<xliff><file>", "not well-formed"),
        (b"<html><body>hi</body></html>", "not an XLIFF document"),
        (b'<xliff xmlns="urn:oasis:names:tc:xliff:document:3.0" version="3.0"/>', "unsupported"),
        (b'<xliff version="2.0"/>', "unsupported"),  # 2.x without its namespace
    ],
    ids=[
        "billion-laughs",
        "xxe",
        "external-dtd",
        "quadratic-blowup",
        "empty",
        "binary",
        "truncated",
        "html",
        "xliff-3",
        "v2-without-namespace",
    ],
)
def test_hostile_or_invalid_input_is_a_document_error(content: bytes, message: str) -> None:
    with pytest.raises(DocumentError, match=message):
        FMT.extract(content)
    with pytest.raises(DocumentError, match=message):
        FMT.render(content, [])


def test_utf16_document_keeps_its_encoding() -> None:
    text = (FIXTURES / "v20_app_strings.xlf").read_text("utf-8")
    content = text.replace('encoding="UTF-8"', 'encoding="UTF-16"').encode("utf-16")
    units = FMT.extract(content)
    assert units == FMT.extract((FIXTURES / "v20_app_strings.xlf").read_bytes())
    out = FMT.render(content, [_pseudo(u.text) for u in units])
    assert out.startswith((b"\xff\xfe", b"\xfe\xff"))
    assert "WELCOME BACK" in out.decode("utf-16")


def test_registered_under_its_name_and_extensions() -> None:
    assert isinstance(for_name("xliff"), XliffFormat)
    assert isinstance(for_upload(b"", "shop.de.XLF"), XliffFormat)
    assert isinstance(for_upload(b"", "app.xliff"), XliffFormat)


_piece = st.text(max_size=30).filter(lambda s: not TAG.search(s))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize("name", ["v12_product_sheet.xlf", "v20_app_strings.xlf"])
def test_any_translation_text_reads_back_from_the_targets(name: str, data: st.DataObject) -> None:
    """Whatever text an engine returns (markup characters, entities, control characters) lands
    in the target as text, with the unit's tags in place; only characters XML 1.0 cannot carry
    at all are dropped."""
    content = (FIXTURES / name).read_bytes()
    units = FMT.extract(content)
    translations = []
    for u in units:
        tags = [m.group(0) for m in TAG.finditer(u.text)]
        pieces = data.draw(st.lists(_piece, min_size=len(tags) + 1, max_size=len(tags) + 1))
        pieces[0] = "a" + pieces[0]  # some text, so the target is a unit again
        translations.append(
            pieces[0] + "".join(t + p for t, p in zip(tags, pieces[1:], strict=True))
        )
    back = _targets_as_sources(FMT.render(content, translations))
    assert [u.text for u in back] == [INVALID_XML_CHARS.sub("", t) for t in translations]
