"""XLIFF as a job's result (formats/xliff.py ``render_result``): a segment the output
check withheld is left untranslated as XLIFF says it (no target, 2.x ``state="initial"``, or a
segmented 1.2 target marked ``needs-translation``), never its English source marked translated,
nor an earlier target in another language left standing under the new target language (issue 40
item 4). The document goes the way the service sends it (tests/support.py
:func:`document_result`); the files are read back with lxml."""

from __future__ import annotations

from pathlib import Path

from lxml import etree

from tests.support import document_result

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents" / "xliff"
INJECTED = "<script>alert(1)</script>"  # an answer the markup check withholds

V12 = b"""<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file source-language="en" target-language="fr" datatype="plaintext" original="a.txt">
    <body>
      <trans-unit id="1"><source>Add to cart</source><target>Ajouter au panier</target></trans-unit>
      <trans-unit id="2"><source>Free shipping</source></trans-unit>
      <trans-unit id="3">
        <source>Buy now. Pay later.</source>
        <seg-source><mrk mtype="seg" mid="1">Buy now.</mrk> <mrk mtype="seg"
          mid="2">Pay later.</mrk></seg-source>
      </trans-unit>
    </body>
  </file>
</xliff>
"""

V20 = b"""<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.0" srcLang="en" trgLang="fr">
  <file id="f1">
    <unit id="1"><segment><source>Add to cart</source><target>Ajouter au panier</target>
      </segment></unit>
    <unit id="2"><segment><source>Free shipping</source></segment></unit>
  </file>
</xliff>
"""


def withholding(*bad: str):
    def engine(text: str) -> str:
        return f"ES {text}" + (INJECTED if text in bad else "")

    return engine


def test_a_withheld_12_unit_has_no_target_and_its_old_french_is_gone() -> None:
    out = document_result("xliff", "a.xlf", V12, withholding("Add to cart"), "es")
    root = etree.fromstring(out.data())
    ns = {"x": "urn:oasis:names:tc:xliff:document:1.2"}
    tu1, tu2, _ = root.findall(".//x:trans-unit", ns)
    assert tu1.find("x:target", ns) is None  # not "Add to cart" marked translated, not French
    assert tu2.find("x:target", ns).text == "ES Free shipping"
    assert tu2.find("x:target", ns).get("state") == "translated"
    assert root.find("x:file", ns).get("target-language") == "es"
    assert any("untranslated" in w for w in out.warnings)


def test_a_withheld_segment_of_a_segmented_12_unit_marks_the_target_needs_translation() -> None:
    out = document_result("xliff", "a.xlf", V12, withholding("Pay later."), "es")
    root = etree.fromstring(out.data())
    ns = {"x": "urn:oasis:names:tc:xliff:document:1.2"}
    target = root.findall(".//x:trans-unit", ns)[2].find("x:target", ns)
    assert target.get("state") == "needs-translation"
    marks = [m.text for m in target.iter("{urn:oasis:names:tc:xliff:document:1.2}mrk")]
    assert marks == ["ES Buy now.", "Pay later."]


def test_a_withheld_20_segment_is_initial_without_a_target() -> None:
    out = document_result("xliff", "a.xlf", V20, withholding("Add to cart"), "es")
    root = etree.fromstring(out.data())
    ns = {"x": "urn:oasis:names:tc:xliff:document:2.0"}
    seg1, seg2 = root.findall(".//x:segment", ns)
    assert seg1.get("state") == "initial" and seg1.find("x:target", ns) is None
    assert seg2.get("state") == "translated"
    assert seg2.find("x:target", ns).text == "ES Free shipping"
    assert root.get("trgLang") == "es"


def test_nothing_withheld_writes_every_target_translated() -> None:
    real = (FIXTURES / "xliff2-om_everything-core.xlf").read_bytes()
    out = document_result("xliff", "e.xlf", real, withholding(), "es")
    root = etree.fromstring(out.data())
    ns = {"x": "urn:oasis:names:tc:xliff:document:2.0"}
    assert root.get("trgLang") == "es"
    assert not out.warnings
    assert all(s.get("state") != "initial" for s in root.findall(".//x:segment", ns))
