"""formats/fragments.py: how the drop-in surfaces cut a request's texts into sentences
(DeepL's split_sentences, tag_handling html|xml with its tag lists, LibreTranslate's
format=html) and put them back from the translations."""

from __future__ import annotations

import pytest

from mtfleet.formats.fragments import Cutting, cut, render, structural, xml_problem


def roundtrip(text: str, how: Cutting, translate: dict[str, str]) -> tuple[list[str], str]:
    """The text's segments, and the text put back from ``translate``'s translations of them
    (a segment it does not name keeps its source text)."""
    (segments,) = cut([text], "en", how)
    (out,) = render([text], "en", how, [[translate.get(s) for s in segments]])
    return segments, out


@pytest.mark.parametrize(
    ("split", "segments"),
    [
        ("1", ["Red shirt.", "Blue shoes", "in a new line."]),
        ("nonewlines", ["Red shirt.", "Blue shoes\nin a new line."]),
        ("0", ["Red shirt. Blue shoes\nin a new line."]),
    ],
)
def test_plain_text_splits_as_deepls_split_sentences_says(split: str, segments: list[str]) -> None:
    text = "  Red shirt. Blue shoes\nin a new line.  "
    got, out = roundtrip(text, Cutting(split=split), {})  # type: ignore[arg-type]
    assert got == segments
    assert out == text  # untranslated: byte for byte


def test_plain_text_keeps_its_whitespace_and_treats_tags_as_text() -> None:
    text = "Add <b> and <g1> here.\r\n\r\nSecond."
    segments, out = roundtrip(
        text, Cutting(), {"Add <b> and <x1/> here.": "Pon <b> y <x1/> aquí.", "Second.": "Dos."}
    )
    assert segments == ["Add <b> and <x1/> here.", "Second."]  # a literal <g1> is protected
    assert out == "Pon <b> y <g1> aquí.\r\n\r\nDos."


def test_html_inline_tags_travel_as_codes_and_come_back() -> None:
    text = '<p>Press <b class="x">here</b> now. Then <a href="/y">wait</a>.</p><p>Ok &amp; go</p>'
    segments, out = roundtrip(
        text,
        Cutting(markup="html", split="nonewlines"),
        {
            "Press <g1>here</g1> now.": "Pulsa <g1>aquí</g1> ya.",
            "Then <g2>wait</g2>.": "Luego <g2>espera</g2>.",
            "Ok & go": "Vale y ve",
        },
    )
    assert segments == ["Press <g1>here</g1> now.", "Then <g2>wait</g2>.", "Ok & go"]
    assert out == (
        '<p>Pulsa <b class="x">aquí</b> ya. Luego <a href="/y">espera</a>.</p><p>Vale y ve</p>'
    )


def test_html_ignore_non_splitting_and_splitting_tags() -> None:
    text = "<p>Buy <keep>Nike Air</keep> now.<br>Or <div>later</div> today.</p>"
    ignored, out = roundtrip(
        text,
        Cutting(markup="html", ignore_tags=("keep",), non_splitting_tags=("div",)),
        {"Buy <x1/> now.": "Compra <x1/> ya."},
    )
    assert ignored == ["Buy <x1/> now.", "<x2/>Or <g3>later</g3> today."]
    assert out.startswith("<p>Compra <keep>Nike Air</keep> ya.<br>")
    split, _ = roundtrip(
        "<p>One <b>two</b> three</p>", Cutting(markup="html", splitting_tags=("b",)), {}
    )
    assert split == ["One", "two", "three"]


def test_xml_outline_detection_finds_the_structure() -> None:
    text = "<doc><par>Press <b>here</b> now. Then wait.</par><par>Two</par></doc>"
    assert structural(text) == {"doc", "par"}
    segments, out = roundtrip(
        text,
        Cutting(markup="xml", split="nonewlines"),
        {"Press <g1>here</g1> now.": "Pulsa <g1>aquí</g1> ya.", "Two": "Dos"},
    )
    assert segments == ["Press <g1>here</g1> now.", "Then wait.", "Two"]
    assert out == "<doc><par>Pulsa <b>aquí</b> ya. Then wait.</par><par>Dos</par></doc>"


def test_xml_without_outline_detection_splits_only_on_splitting_tags() -> None:
    text = "<doc><par>One.</par><par>Two.</par></doc>"
    flat, _ = roundtrip(text, Cutting(markup="xml", outline_detection=False), {})
    assert flat == ["<g1><g2>One.</g2><g3>Two.</g3></g1>"]  # every tag inline: one unit
    by_par, _ = roundtrip(
        text, Cutting(markup="xml", outline_detection=False, splitting_tags=("par",)), {}
    )
    assert by_par == ["One.", "Two."]


def test_xml_has_no_html_raw_text_or_void_elements() -> None:
    # <title> holds markup in XML (in HTML it is text only); <source> has content
    text = "<r><title>A <b>bold</b> title</title><source>Kept words</source></r>"
    segments, _ = roundtrip(text, Cutting(markup="xml"), {})
    assert segments == ["A <g1>bold</g1> title", "Kept words"]


def test_texts_without_words_have_no_segments_and_come_back_as_they_were() -> None:
    texts = ["", "  ", "<br/>", "42"]
    how = Cutting(markup="html")
    assert cut(texts, "en", how) == [[], [], [], []]
    assert render(texts, "en", how, [[], [], [], []]) == texts


def test_render_refuses_a_wrong_number_of_translations() -> None:
    with pytest.raises(ValueError, match="1 translations for 2 segments"):
        render(["One. Two."], "en", Cutting(), [["Uno."]])


@pytest.mark.parametrize(
    "text",
    [
        "Hello <b>world</b>",
        "<a>x</a><b/> two top-level elements",
        "Tom &amp; Jerry &#x41; &lt;",
        '<?xml version="1.0"?><doc>x</doc>',
        "",
    ],
)
def test_well_formed_xml_content_has_no_problem(text: str) -> None:
    assert xml_problem(text) is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Hello <b>world</i>", "mismatched tag at line 1, column 17"),  # at the name
        ("line\n<b>x</c>", "mismatched tag at line 2, column 7"),
        ('<?xml version="1.0"?><doc>x</d>', "mismatched tag at line 1, column 30"),
        ("a & b", "not well-formed (invalid token) at line 1, column 4"),
        ("a &nbsp; b", "undefined entity at line 1, column 3"),
        ("<a x=1>y</a>", "not well-formed (invalid token) at line 1, column 6"),
        ("Hello <b>world", "an element is still open at the end of the text"),
        ("<!DOCTYPE x><x/>", "it has a DOCTYPE (DTDs and entities are not accepted)"),
    ],
)
def test_malformed_xml_is_named_where_it_breaks(text: str, problem: str) -> None:
    assert xml_problem(text) == problem
