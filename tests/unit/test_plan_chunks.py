"""api/service.py plan_chunks: duplicates translate once, cached texts are skipped, sizes hold."""

from __future__ import annotations

import random

import pytest

from mtfleet.api.service import plan_chunks


def flatten_indices(chunks: list) -> list[int]:
    return [i for chunk in chunks for seg in chunk for i in seg.indices]


def test_duplicates_grouped_into_one_segment() -> None:
    chunks = plan_chunks(["a", "b", "a", "c", "a"], set(), chunk_size=10)
    assert len(chunks) == 1
    assert [(s.text, s.indices) for s in chunks[0]] == [("a", [0, 2, 4]), ("b", [1]), ("c", [3])]


def test_cached_indices_excluded() -> None:
    chunks = plan_chunks(["a", "b", "a", "c"], {1, 2}, chunk_size=10)
    assert [(s.text, s.indices) for s in chunks[0]] == [("a", [0]), ("c", [3])]


def test_all_cached_means_no_chunks() -> None:
    assert plan_chunks(["a", "b"], {0, 1}, chunk_size=4) == []
    assert plan_chunks([], set(), chunk_size=4) == []


def test_texts_differing_in_whitespace_are_distinct() -> None:
    chunks = plan_chunks(["a", " a"], set(), chunk_size=4)
    assert [s.text for s in chunks[0]] == ["a", " a"]


@pytest.mark.parametrize(("n", "size"), [(1, 1), (10, 3), (64, 32), (65, 32), (100, 1)])
def test_chunk_sizes(n: int, size: int) -> None:
    chunks = plan_chunks([f"t{i}" for i in range(n)], set(), chunk_size=size)
    assert [len(c) for c in chunks[:-1]] == [size] * (len(chunks) - 1)
    assert 1 <= len(chunks[-1]) <= size
    assert len(chunks) == -(-n // size)


@pytest.mark.parametrize("seed", range(5))
def test_every_uncached_index_exactly_once(seed: int) -> None:
    rng = random.Random(seed)
    texts = [rng.choice("abcdefghij") * rng.randint(1, 3) for _ in range(200)]
    cached = {i for i in range(200) if rng.random() < 0.3}
    chunks = plan_chunks(texts, cached, chunk_size=7)
    indices = flatten_indices(chunks)
    assert sorted(indices) == sorted(set(range(200)) - cached)
    for chunk in chunks:
        assert 1 <= len(chunk) <= 7
        for seg in chunk:
            assert all(texts[i] == seg.text for i in seg.indices)
    distinct = [seg.text for chunk in chunks for seg in chunk]
    assert len(distinct) == len(set(distinct))
