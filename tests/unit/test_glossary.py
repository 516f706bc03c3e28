"""core/glossary.py: validation, matching (case, word boundaries, longest first, never inside
tags or placeholders), protection as inline tags above the document's own, and restoration."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from mtfleet.core.errors import InvalidInput, UnsupportedLanguage
from mtfleet.core.glossary import Glossary, Matcher, parse_tsv, validate
from mtfleet.formats.base import TAG, tag_counts


def make(
    entries: dict[str, str] | None = None,
    protected: list[str] | None = None,
    *,
    source: str = "en",
    target: str = "es",
    max_terms: int = 100,
    max_term_chars: int = 50,
) -> Glossary:
    return validate(
        name="shop",
        source_lang=source,
        target_lang=target,
        entries=list((entries or {}).items()),
        protected=protected or [],
        max_terms=max_terms,
        max_term_chars=max_term_chars,
    )


SHOP = make(
    {"case": "funda", "New York": "Nueva York", "New York City": "Ciudad de Nueva York"},
    ["iPhone", "PlayStation", "C++", "Zürich"],
)


def protect(text: str, g: Glossary = SHOP) -> tuple[str, str]:
    """(text as the engine gets it, that text restored untranslated)."""
    p = Matcher(g).protect(text)
    return p.text, p.restore(p.text)


# --- validation --------------------------------------------------------------------------------
def test_languages_are_normalised_and_must_differ() -> None:
    g = make({"a": "b"}, source="EN_us", target="ES")
    assert (g.source_lang, g.target_lang) == ("en", "es")
    with pytest.raises(InvalidInput, match="both"):
        make({"a": "b"}, source="en", target="en-GB")
    with pytest.raises(UnsupportedLanguage):
        make({"a": "b"}, source="xx")


@pytest.mark.parametrize(
    ("entries", "protected", "message"),
    [
        ({}, [], "at least one"),
        ({"Case": "funda", "case": "estuche"}, [], "matches the same text"),
        ({"iphone": "teléfono"}, ["iPhone"], "matches the same text"),
        ({}, ["iPhone", "IPHONE"], "matches the same text"),
        ({"  ": "x"}, [], "empty"),
        ({"case": " "}, [], "empty"),
        ({"x" * 51: "y"}, [], "51 characters"),
        ({"<x1/>": "y"}, [], "may not contain"),
        ({"a <b> c": "y"}, [], "may not contain"),
        ({"---": "y"}, [], "no letter or digit"),
        ({"tab\x07": "y"}, [], "control character"),
    ],
)
def test_bad_glossaries_are_refused_with_a_reason(
    entries: dict[str, str], protected: list[str], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        make(entries, protected)


def test_term_count_limit() -> None:
    make({f"t{i}": "x" for i in range(60)}, [f"p{i}" for i in range(40)], max_terms=100)
    with pytest.raises(InvalidInput, match="at most 100"):
        make({f"t{i}": "x" for i in range(61)}, [f"p{i}" for i in range(40)], max_terms=100)


def test_terms_are_normalised() -> None:
    g = make({"  New \t York ": " Nueva  York "}, ["Cafe\u0301"])
    assert g.entries == {"New York": "Nueva York"}
    assert g.protected == ["Café"]  # NFC


def test_version_is_a_content_hash() -> None:
    a = make({"case": "funda", "red": "rojo"}, ["iPhone"])
    b = make({"red": "rojo", "case": "funda"}, ["iPhone"])
    assert a.version == b.version
    assert make({"case": "estuche", "red": "rojo"}, ["iPhone"]).version != a.version
    assert make({"case": "funda", "red": "rojo"}, ["iPhone"], target="fr").version != a.version
    assert make({"case": "funda", "red": "rojo"}, ["iPhone", "iPad"]).version != a.version


def test_parse_tsv() -> None:
    assert parse_tsv("case\tfunda\n\n  \nfree shipping\tenvío gratis\r\n") == [
        ("case", "funda"),
        ("free shipping", "envío gratis"),
    ]
    with pytest.raises(InvalidInput, match="line 2"):
        parse_tsv("case\tfunda\nno tab here\n")
    with pytest.raises(InvalidInput, match="line 1"):
        parse_tsv("a\tb\tc\n")


# --- matching and protection -------------------------------------------------------------------
def test_protected_term_comes_back_in_canonical_casing() -> None:
    engine_sees, restored = protect("The iphone case costs 20 dollars")
    assert "iphone" not in engine_sees.lower() and "case" not in engine_sees
    assert tag_counts(engine_sees) == {"<x1/>": 1, "<x2/>": 1}
    assert restored == "The iPhone funda costs 20 dollars"
    assert protect("IPHONE and Iphone and iPhone")[1] == "iPhone and iPhone and iPhone"


def test_entry_at_a_capital_gets_a_capital() -> None:
    assert protect("Case for the phone")[1] == "Funda for the phone"
    # protected terms keep their own casing even at the start of a sentence
    assert protect("playstation games")[1] == "PlayStation games"


def test_longest_match_wins() -> None:
    assert protect("Flights to New York City and New York")[1] == (
        "Flights to Ciudad de Nueva York and Nueva York"
    )
    # inner whitespace may differ from the glossary's
    assert protect("new \n york")[1] == "Nueva York"


def test_no_match_inside_words() -> None:
    text = "showcase iphones cases Zürichsee"
    engine_sees, restored = protect(text)
    assert engine_sees == text and restored == text
    # Unicode-aware boundaries: a letter with a diacritic is part of the word
    assert protect("casé")[0] == "casé"
    assert protect("in Zürich.")[1] == "in Zürich."
    assert TAG.search(protect("in zürich.")[0])


def test_terms_with_symbols_at_their_edges() -> None:
    engine_sees, restored = protect("Learn c++ now")
    assert TAG.search(engine_sees) and restored == "Learn C++ now"


def test_never_inside_tags_or_placeholders() -> None:
    g = make({"x1": "equis", "g2": "ge", "case": "funda", "name": "nombre"})
    text = '<x1/> <g2>case</g2> {case} {{ name }} %(case)s <a href="case">x1</a>'
    engine_sees, restored = protect(text, g)
    assert restored == '<x1/> <g2>funda</g2> {case} {{ name }} %(case)s <a href="case">equis</a>'
    # the document's own tags are untouched and the new ones are numbered above them
    counts = tag_counts(engine_sees)
    assert counts["<x1/>"] == 1 and counts["<g2>"] == 1 and counts["</g2>"] == 1
    new = {int(m.group(3)) for m in TAG.finditer(engine_sees)} - {1, 2}
    assert new and min(new) > 2


def test_restoration_keeps_document_tags_when_the_engine_moves_them() -> None:
    p = Matcher(SHOP).protect("<g1>Red</g1> iphone <x2/> case")
    assert p.text == "<g1>Red</g1> <x3/> <x2/> <x4/>"
    translated = "<x4/> <x3/> <g1>roja</g1> <x2/>"  # what an engine might return
    assert p.restore(translated) == "funda iPhone <g1>roja</g1> <x2/>"


def test_each_occurrence_gets_its_own_tag() -> None:
    p = Matcher(SHOP).protect("iphone, iPhone and IPHONE")
    assert len(p.placed) == 3 and len(set(tag_counts(p.text))) == 3
    assert p.restore(p.text) == "iPhone, iPhone and iPhone"


def test_a_dropped_term_is_put_back_at_the_end() -> None:
    p = Matcher(SHOP).protect("The iphone case")
    assert p.restore("El <x2/>") == "El funda iPhone"


def test_text_without_matches_is_unchanged() -> None:
    p = Matcher(SHOP).protect("Red shoes <x1/>")
    assert p.text == "Red shoes <x1/>" and not p.codes and p.restore("x <x1/>") == "x <x1/>"


def test_thousands_of_terms_all_match() -> None:
    rng = random.Random(7)
    words = {"".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(4000)}
    terms = sorted(words)[:3000]
    g = make({t: t.upper() for t in terms}, max_terms=5000)
    m = Matcher(g)
    picked = rng.sample(terms, 40)
    p = m.protect(" ".join(picked))
    assert [pl.term.source for pl in p.placed] == picked
    assert p.restore(p.text) == " ".join(t.upper() for t in picked)


def test_cli_reads_tsv_and_csv_term_files(tmp_path: Path) -> None:
    from mtfleet.producer.cli import read_terms_file

    tsv = tmp_path / "terms.tsv"
    tsv.write_text("case\tfunda\n", encoding="utf-8")
    assert parse_tsv(read_terms_file(tsv)) == [("case", "funda")]
    csv = tmp_path / "terms.csv"
    csv.write_text('source,target\ncase,funda\n"screen, protector",protector\n\n', "utf-8")
    assert parse_tsv(read_terms_file(csv)) == [
        ("case", "funda"),
        ("screen, protector", "protector"),
    ]
    bad = tmp_path / "bad.csv"
    bad.write_text("case,funda\na,b,c\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="line 2"):
        read_terms_file(bad)
