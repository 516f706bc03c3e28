"""Plain-text files as lines (:func:`mtfleet.formats.text.parse_lines`, the one rule of
`mtfleet submit` and the API's text documents): one segment per line with text, the file
reassembled byte for byte."""

from __future__ import annotations

import pytest

from mtfleet.core.schemas import TextsIn
from mtfleet.formats.text import parse_lines

SHAPES = [
    "",
    "one line",
    "one line\n",
    "a\nb\nc\n",
    "a\nb\nc",
    "\n",
    "\n\n\n",
    "a\n\n\nb\n",
    "   \n\t\nword\n  \n",
    "  indented\n trailing  \n",
    "crlf\r\nfile\r\n",
    "crlf\r\n\r\nblank between\r\nno final",
    "mixed\nends\r\nhere\n",
    "old mac\rline\r",
    "unicode ñandú\n中文\n😀",
    "form\x0cfeed\n",
    "para\u2028sep\x85nel\n",
    "\ufeffbom\r\nfirst\r\n",
]


@pytest.mark.parametrize("text", SHAPES)
def test_round_trip_without_translations(text: str) -> None:
    doc = parse_lines(text)
    assert doc.render([None] * len(doc.segments)) == text


@pytest.mark.parametrize("text", SHAPES)
def test_round_trip_with_identity_translations(text: str) -> None:
    doc = parse_lines(text)
    assert doc.render(list(doc.segments)) == text


def test_segments_skip_blank_and_whitespace_lines() -> None:
    doc = parse_lines("Hello\n\n   \n\tWorld \r\nBye")
    assert doc.segments == ["Hello", "\tWorld ", "Bye"]
    assert doc.segment_lines == [0, 3, 4]
    assert doc.endings == ["\n", "\n", "\n", "\r\n", ""]


def test_a_byte_order_mark_is_no_part_of_the_first_line() -> None:
    doc = parse_lines("\ufeffHello\nWorld\n")
    assert doc.segments == ["Hello", "World"]
    assert doc.render(["Hola", None]) == "\ufeffHola\nWorld\n"


def test_a_line_break_in_a_translation_is_a_space() -> None:
    doc = parse_lines("Red shirt\r\nBlue jeans\r\n")
    out = doc.render(["Camisa \n\n roja", "Vaqueros\u2028azules"])
    assert out == "Camisa roja\r\nVaqueros azules\r\n"


def test_empty_file_has_no_segments() -> None:
    doc = parse_lines("")
    assert doc.segments == []
    assert doc.render([]) == ""


def test_render_replaces_segment_lines_only() -> None:
    doc = parse_lines("Hello\r\n\r\n  \nWorld")
    assert doc.render(["Hola", "Mundo"]) == "Hola\r\n\r\n  \nMundo"


def test_render_none_keeps_source_line() -> None:
    doc = parse_lines("Hello\nWorld\n")
    assert doc.render([None, "Mundo"]) == "Hello\nMundo\n"


@pytest.mark.parametrize("n", [0, 1, 3])
def test_render_wrong_length(n: int) -> None:
    doc = parse_lines("a\nb\n")
    with pytest.raises(ValueError, match="segments"):
        doc.render(["x"] * n)


@pytest.mark.parametrize("sep", ["\x0b", "\x0c", "\x1c", "\x85"])
def test_segments_of_a_text_file_are_accepted_by_the_api(sep: str) -> None:
    doc = parse_lines(f"Page one{sep}Page two\n")
    TextsIn(texts=doc.segments, source_lang="en", target_lang="es")
