"""api/service.py plan_chunks: texts are grouped by their normalised form (NFC, no outer
whitespace), so duplicates and texts differing only by outer whitespace translate once, each
index keeping its own whitespace in ``wraps``; cached texts are skipped; sizes hold."""

from __future__ import annotations

import random
import unicodedata

import pytest

from mtfleet.api.chunking import plan_chunks
from mtfleet.core.cache import normalize
from mtfleet.core.models import ChunkMessage, ChunkSegment, Lane


def plan(
    texts: list[str], skip: set[int] | None = None, size: int = 10
) -> list[list[ChunkSegment]]:
    return plan_chunks(texts, [normalize(t) for t in texts], skip or set(), size)


def flatten_indices(chunks: list[list[ChunkSegment]]) -> list[int]:
    return [i for chunk in chunks for seg in chunk for i in seg.indices]


def rebuilt(seg: ChunkSegment, index: int, translation: str) -> str:
    """What the worker delivers for ``index`` when ``seg`` translates to ``translation``."""
    lead, trail = (seg.wraps or {}).get(index, ("", ""))
    return f"{lead}{translation}{trail}"


def test_duplicates_grouped_into_one_segment() -> None:
    chunks = plan(["a", "b", "a", "c", "a"])
    assert len(chunks) == 1
    assert [(s.text, s.indices, s.wraps) for s in chunks[0]] == [
        ("a", [0, 2, 4], None),
        ("b", [1], None),
        ("c", [3], None),
    ]


def test_cached_indices_excluded() -> None:
    chunks = plan(["a", "b", "a", "c"], {1, 2})
    assert [(s.text, s.indices) for s in chunks[0]] == [("a", [0]), ("c", [3])]


def test_all_cached_means_no_chunks() -> None:
    assert plan(["a", "b"], {0, 1}, 4) == []
    assert plan([], set(), 4) == []


def test_texts_differing_only_in_outer_whitespace_are_one_segment_with_wraps() -> None:
    texts = ["a", " a", "a\n", "\t a  ", "b c", " b c "]
    chunks = plan(texts, size=4)
    assert len(chunks) == 1
    a, bc = chunks[0]
    assert (a.text, a.indices) == ("a", [0, 1, 2, 3])
    assert a.wraps == {1: (" ", ""), 2: ("", "\n"), 3: ("\t ", "  ")}  # index 0 has none
    assert (bc.text, bc.indices, bc.wraps) == ("b c", [4, 5], {5: (" ", " ")})
    # inner whitespace is the text's own: it is not a wrap and makes a different segment
    assert [s.text for s in plan(["b c", "b  c"])[0]] == ["b c", "b  c"]


def test_wraps_put_back_give_each_submitted_text() -> None:
    texts = ["  Red shoes", "Red shoes  ", "Red shoes", "\u00a0Red shoes\n"]
    (seg,) = plan(texts)[0]
    assert seg.text == "Red shoes"
    assert [rebuilt(seg, i, seg.text) for i in seg.indices] == texts


def test_composed_and_decomposed_forms_are_one_segment() -> None:
    composed = "Caf\u00e9 au lait"
    decomposed = unicodedata.normalize("NFD", composed)
    assert composed != decomposed
    (seg,) = plan([composed, f" {decomposed}"])[0]
    assert seg.text == composed and seg.indices == [0, 1]
    assert seg.wraps == {1: (" ", "")}


def test_a_skipped_index_leaves_no_wrap_behind() -> None:
    (seg,) = plan([" a", "a", "a "], {0})[0]
    assert seg.indices == [1, 2] and seg.wraps == {2: ("", " ")}


def test_the_segments_survive_the_chunk_message_json() -> None:
    chunks = plan([" a ", "a", "b\n"])
    msg = ChunkMessage(
        job_id="j", chunk=0, lane=Lane.bulk, source="en", target="es",
        segments=chunks[0], enqueued_at=0.0,
    )  # fmt: skip
    back = ChunkMessage.model_validate_json(msg.model_dump_json())
    assert [(s.text, s.indices, s.wraps) for s in back.segments] == [
        ("a", [0, 1], {0: (" ", " ")}),
        ("b", [2], {2: ("", "\n")}),
    ]


@pytest.mark.parametrize(("n", "size"), [(1, 1), (10, 3), (64, 32), (65, 32), (100, 1)])
def test_chunk_sizes(n: int, size: int) -> None:
    chunks = plan([f"t{i}" for i in range(n)], size=size)
    assert [len(c) for c in chunks[:-1]] == [size] * (len(chunks) - 1)
    assert 1 <= len(chunks[-1]) <= size
    assert len(chunks) == -(-n // size)


def test_chunk_size_counts_distinct_texts_not_indices() -> None:
    chunks = plan(["a", " a", "a ", "b", "c"], size=2)
    assert [[s.text for s in c] for c in chunks] == [["a", "b"], ["c"]]


@pytest.mark.parametrize("seed", range(5))
def test_every_uncached_index_exactly_once(seed: int) -> None:
    rng = random.Random(seed)
    texts = [
        rng.choice(["", " ", "\n", "\t "])
        + rng.choice("abcdefghij") * rng.randint(1, 3)
        + rng.choice(["", " ", "  \n"])
        for _ in range(200)
    ]
    cached = {i for i in range(200) if rng.random() < 0.3}
    chunks = plan(texts, cached, 7)
    indices = flatten_indices(chunks)
    assert sorted(indices) == sorted(set(range(200)) - cached)
    for chunk in chunks:
        assert 1 <= len(chunk) <= 7
        for seg in chunk:
            assert seg.text == seg.text.strip()
            assert set(seg.wraps or {}) <= set(seg.indices)
            for i in seg.indices:
                assert normalize(texts[i]) == seg.text
                assert rebuilt(seg, i, seg.text) == texts[i]
    distinct = [seg.text for chunk in chunks for seg in chunk]
    assert len(distinct) == len(set(distinct))
