"""Units -> segments -> units: protection, sentence splitting, whitespace, and restore()."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mtfleet.core.documents import for_filename
from mtfleet.core.documents.base import TAG, Code, Unit, UnitBuilder, restore, tag_counts
from mtfleet.core.documents.pipeline import assemble, plan, protect, sentences


@pytest.mark.parametrize(
    "span",
    [
        "https://shop.example.com/p?id=1&ref=mail",
        "www.example.org/help",
        "support@example.com",
        "{name}",
        "{{count}}",
        "%s",
        "%1$s",
        "%(user)s",
        "${total}",
        "SKU-12345",
        "AB12-CD34",
        "v2.10.3",
        "20 kg",
        "5.5GHz",
        "$1,299.99",
        "€50",
        "30%",
    ],
)
def test_protected_spans_become_one_standalone_tag(span: str) -> None:
    text, codes = protect(f"Before {span} after.", 1)
    assert text == "Before <x1/> after."
    assert codes == {1: Code(span)}


@pytest.mark.parametrize(
    "text",
    [
        "50% discount today",
        "Use the USB-C cable",
        "Note: call me",
        "T-SHIRT sale",
        "a 10 minute walk",
    ],
)
def test_ordinary_words_are_not_protected(text: str) -> None:
    protected, codes = protect(text, 1)
    for code in codes.values():  # whatever is protected is a number-like token, never a word
        assert not code.start.isalpha()
    assert TAG.sub("", protected).split()[-1] == text.split()[-1]


def test_protection_never_touches_existing_tags_and_numbers_after_them() -> None:
    text, codes = protect("<g1>Visit https://a.example</g1> <x2/>", 3)
    assert text == "<g1>Visit <x3/></g1> <x2/>"
    assert codes == {3: Code("https://a.example")}


def test_sentences_concatenate_to_the_text_and_never_split_a_paired_tag() -> None:
    text = "First one. <g1>Second one. Third one.</g1> Fourth one."
    parts = sentences(text, "en")
    assert "".join(parts) == text
    assert parts[0] == "First one. "
    assert any("<g1>Second one. Third one.</g1>" in p for p in parts)


def test_plan_and_assemble_round_trip_with_an_identity_engine() -> None:
    units = [
        Unit(
            "<g1>Free shipping</g1> on orders over $50.  Dr. Smith <x2/> agrees! ",
            {1: Code("<b>", "</b>"), 2: Code("<br/>")},
        ),
        Unit("   "),
        Unit("42 <x1/>", {1: Code("<img/>")}),
        Unit("Email support@example.com for SKU-1234-X."),
    ]
    p = plan(units, "en")
    assert "<g1>Free shipping</g1> on orders over <x3/>." in p.segments
    assert all(s == s.strip() for s in p.segments)
    assert not any("support@example.com" in s for s in p.segments)  # protected
    out = assemble(p, p.segments)
    assert out.texts == [u.text for u in units]
    assert out.warnings == []


def test_a_failed_segment_keeps_its_source_and_a_lost_tag_is_put_back() -> None:
    units = [Unit("One sentence here. Visit https://a.example today.")]
    p = plan(units, "en")
    assert len(p.segments) == 2
    # the engine failed on the first and dropped the placeholder in the second
    out = assemble(p, [None, "Visite hoy."])
    assert out.texts[0].startswith("One sentence here. Visite hoy.")
    assert "https://a.example" in out.texts[0]  # appended, not lost
    assert out.warnings and "missing" in out.warnings[0][1]


def test_restore_escapes_text_closes_open_pairs_and_drops_unknown_tags() -> None:
    codes = {1: Code("<b>", "</b>"), 2: Code("<br>")}
    r = restore("a <g1>b & <g9>c<x2/><x2/>", codes, escape=lambda s: s.replace("&", "&amp;"))
    assert r.text == "a <b>b &amp; c<br></b>"
    assert len(r.warnings) == 3  # unknown g9, repeated x2, g1 not closed


def test_unit_builder_protects_literal_tag_text() -> None:
    b = UnitBuilder()
    b.text("literal <x1/> in the text and ")
    b.open("<i>", "</i>")
    b.text("italic")
    b.close()
    unit = b.build()
    assert unit.text == "literal <x1/> in the text and <g2>italic</g2>"
    assert unit.codes[1] == Code("<x1/>")
    assert restore(unit.text, unit.codes).text == "literal <x1/> in the text and <i>italic</i>"


words = st.text(
    alphabet=st.characters(categories=("L", "N", "Zs", "P"), exclude_characters="<>"),
    min_size=0,
    max_size=60,
)


@given(st.lists(words, min_size=1, max_size=5))
def test_any_unit_round_trips_through_plan_and_assemble(parts: list[str]) -> None:
    b = UnitBuilder()
    for i, part in enumerate(parts):
        if i % 2:
            b.open("<em>", "</em>")
            b.text(part)
            b.close()
        else:
            b.text(part)
    unit = b.build()
    p = plan([unit], "en")
    out = assemble(p, p.segments)
    assert out.texts == [unit.text]
    assert tag_counts(out.texts[0]) == tag_counts(unit.text)


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"
CORPUS = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix != ".py")


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_pipeline_is_transparent_on_every_corpus_file(path: Path) -> None:
    """Protection, sentence splitting and reassembly change nothing: with an engine that
    returns its input, a file rendered through the whole pipeline equals the file rendered
    from its units directly (which the format tests compare with the original)."""
    fmt = for_filename(path.name)
    content = path.read_bytes()
    units = fmt.extract(content)
    p = plan(units, "en")
    out = assemble(p, p.segments)
    assert out.warnings == []
    assert out.texts == [u.text for u in units]
    assert fmt.render(content, out.texts) == fmt.render(content, [u.text for u in units])
    assert all(s == s.strip() and s for s in p.segments)
