"""Units -> segments -> units: sentence splitting (never inside a tag pair or a protected span),
whitespace, and restore(). Segments keep protected spans as raw text: the worker protects them,
once, for every segment it translates (workers/checks.py::prepare)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtfleet.formats import for_upload, pipeline
from mtfleet.formats.base import TAG, Code, Unit, UnitBuilder, restore, tag_counts
from mtfleet.formats.pipeline import assemble, plan, protect, sentences, spans
from mtfleet.workers.checks import prepare


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


@pytest.mark.parametrize(
    "want",
    [
        ["Visit www.example.com.", "Then click Buy."],
        ["Update to v1.2.3.", "It fixes bugs."],
        ["It costs $5.50 today.", "Buy now."],
        # unmasked, the segmenter cuts these at "www." and "Example." (capitals follow)
        ["Call Dr. Smith at www.Example.Com/Help.", "Now."],
        ["Visit www.Shop.Example.com today.", "Then pay."],
        ["Open https://Docs.Example.com/A.B today.", "Then pay."],
        ["Install v1.2.3 first.", "Then v2.0.0 later."],
        ["Mail Jane.Doe@Example.Com today.", "Thanks."],
        ["Use {User.Name} here.", "Done."],
    ],
)
def test_plan_keeps_spans_raw_and_never_splits_inside_one(want: list[str]) -> None:
    text = " ".join(want)
    p = plan([Unit(text)], "en")
    assert p.segments == want  # the spans as written: no <xN/> for them
    assert all(not TAG.search(s) for s in p.segments)
    for start, end in spans(text):
        assert any(text[start:end] in s for s in p.segments), text[start:end]
    assert assemble(p, p.segments) == [text]


def test_sentences_map_cuts_back_to_the_unmasked_text() -> None:
    text = "Call Dr. Smith at www.Example.Com/Help. Now. Pay $5.50 at v1.2.3. Done."
    parts = sentences(text, "en")
    assert "".join(parts) == text
    for start, end in spans(text):
        assert sum(text[start:end] in part for part in parts) == 1


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
    assert p.segments == [
        "<g1>Free shipping</g1> on orders over $50.",
        "Dr. Smith <x2/> agrees!",
        "Email support@example.com for SKU-1234-X.",  # spans raw: the worker protects them
    ]
    assert p.units[0].layout == [0, "  ", 1, " "]
    assert p.units[1].layout == ["   "] and p.units[2].layout == ["42 <x1/>"]  # nothing to say
    assert assemble(p, p.segments) == [u.text for u in units]


def test_the_worker_protects_a_document_segment_once_and_restores_it() -> None:
    p = plan([Unit("<g1>Order</g1> SKU-1234-X at https://a.example/p today.", {})], "en")
    (segment,) = p.segments
    prep = prepare(segment, None)
    # the format's own tags stay; the spans become standalone tags numbered after them
    assert prep.text == "<g1>Order</g1> <x2/> at <x3/> today."
    assert prep.restore(prep.text) == segment


def test_a_failed_segment_keeps_its_source() -> None:
    units = [Unit("One sentence here. Visit https://a.example today.")]
    p = plan(units, "en")
    assert p.segments == ["One sentence here.", "Visit https://a.example today."]
    assert assemble(p, [None, "Visite https://a.example hoy."]) == [
        "One sentence here. Visite https://a.example hoy."
    ]
    assert assemble(p, [None, None]) == [units[0].text]
    assert assemble(p, ["", "Visite hoy."]) == ["One sentence here. Visite hoy."]  # empty: source


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
    (out,) = assemble(p, p.segments)
    assert out == unit.text
    assert tag_counts(out) == tag_counts(unit.text)
    assert all(s == s.strip() and s for s in p.segments)


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"
CORPUS = sorted(
    p
    for p in FIXTURES.rglob("*")
    if p.is_file()
    and p.suffix not in (".py", ".pyc")  # (the fixture scripts and their bytecode)
    and p.parent.name not in ("unread", "broken")
)


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_pipeline_is_transparent_on_every_corpus_file(path: Path) -> None:
    """Sentence splitting and reassembly change nothing, and neither does the worker's span
    protection of each segment: with an engine that returns its input, a file rendered through
    the whole pipeline equals the file rendered from its units directly (which the format tests
    compare with the original)."""
    content = path.read_bytes()
    fmt = for_upload(content, path.name)
    units = fmt.extract(content)
    p = plan(units, "en")
    assert all(s == s.strip() and s for s in p.segments)
    # what the worker does to each segment around an identity engine
    through_worker = []
    for s in p.segments:
        prep = prepare(s, None)
        have = tag_counts(prep.text)
        assert all(have.get(t, 0) == n for t, n in tag_counts(s).items())  # own tags kept
        through_worker.append(prep.restore(prep.text))
    assert through_worker == p.segments
    texts = assemble(p, through_worker)
    assert texts == [u.text for u in units]
    assert fmt.render(content, texts) == fmt.render(content, [u.text for u in units])


# --- spans: the window the expression runs over never hides a span -------------------------------
_PIECES = [
    "20 kg", "20\nkg", "20\tkg", "5.5 GHz", "$50", "$ 5.50", "SKU-1234-X", "AB12-CD34", "v1.2.3",
    "1.2.3", "{name}", "%s", "www.x.com", "https://a.b/c?d=1", "a@b.com", "100%", "12", "x1",
    "3cm", "o123:", "word", "the", "Item", "<x1/>", "<g1>", "</g1>", "-", ".", ",", "9", "kg",
    "ABC-9", "2024-01-02", "€ 3", "3 €", "12px", "mAh", "1,5 l", "\n", "  ", "\t", "A1-B2",
    "GB", "°C", "50°C",
]  # fmt: skip


def _every_span(text: str) -> list[tuple[int, int]]:
    """The definition spans() must match: the expression over the whole text, outside tags."""
    found: list[tuple[int, int]] = []
    pos = 0
    for part in pipeline._split_keep_tags(text):
        if not TAG.fullmatch(part):
            found += [(pos + m.start(), pos + m.end()) for m in pipeline._PROTECT.finditer(part)]
        pos += len(part)
    return [(a, b) for a, b in found if text[a:b].strip()]


@settings(max_examples=3000, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_PIECES), st.sampled_from(["", " ", "  ", ". ", ", ", "\n"])),
        min_size=1,
        max_size=12,
    )
)
def test_spans_finds_every_span_the_whole_text_expression_finds(
    parts: list[tuple[str, str]],
) -> None:
    text = "".join(a + b for a, b in parts)
    assert pipeline.spans(text) == _every_span(text)


def test_each_sentence_gets_its_units_other_sentences_nearest_first() -> None:
    p = plan(
        [
            Unit("Anna bought shoes. She wore them on Monday. They were too tight."),
            Unit("Free delivery."),
            Unit("One. Two."),
        ],
        "en",
    )
    assert p.unit_of == [0, 0, 0, 1, 2, 2]
    got = pipeline.surrounding(p.segments, p.unit_of, 256)
    assert got == [
        "She wore them on Monday. They were too tight.",
        "Anna bought shoes. They were too tight.",
        "Anna bought shoes. She wore them on Monday.",
        None,  # alone in its unit
        "Two.",
        "One.",
    ]
    # 0 tokens: off
    assert pipeline.surrounding(p.segments, p.unit_of, 0) == [None] * 6


def test_the_context_is_bounded_and_the_sentence_before_comes_first() -> None:
    sentences = [f"Sentence number {n} is here." for n in range(9)]
    unit_of = [0] * 9
    # 8 tokens = 32 bytes: one neighbour of 27 bytes (+1) fits, two do not
    got = pipeline.surrounding(sentences, unit_of, 8)
    assert got[4] == "Sentence number 3 is here."
    assert got[0] == "Sentence number 1 is here."  # nothing before: the one after
    # 16 tokens = 64 bytes: the one before and the one after
    assert pipeline.surrounding(sentences, unit_of, 16)[4] == (
        "Sentence number 3 is here. Sentence number 5 is here."
    )
    # a neighbour longer than the whole budget leaves the sentence without context
    assert pipeline.surrounding(["x" * 100, "Short."], [0, 0], 8) == ["Short.", None]
