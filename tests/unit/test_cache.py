"""core/cache.py: normalisation, key composition, the Redis round trip, and outage tolerance."""

from __future__ import annotations

import socket
import time

import fakeredis
import pytest
import redis

from mtfleet.core.cache import PhraseCache, lookup, normalize, rewrap, text_digest

FP = "model-a@1"
JOB = "a" * 32


@pytest.fixture
def r() -> fakeredis.FakeRedis:
    return fakeredis.FakeRedis(decode_responses=True)


@pytest.fixture
def cache(r: fakeredis.FakeRedis) -> PhraseCache:
    return PhraseCache(r, ttl_s=3600)


def test_normalize_nfc() -> None:
    assert normalize("e\u0301") == "é"
    assert normalize("Cafe\u0301") == normalize("Café")


def test_normalize_strips_outer_whitespace_only() -> None:
    assert normalize("  Red  shoes \n\t") == "Red  shoes"


def test_same_normalized_text_same_key() -> None:
    """Keys are made from normalised texts (the API normalises each text once; chunks carry
    the normalised form to the worker)."""
    assert PhraseCache.key(FP, "en", "es", normalize("Café")) == PhraseCache.key(
        FP, "en", "es", normalize(" Cafe\u0301\n")
    )
    assert text_digest(normalize("x ")) == text_digest(normalize(" x"))


@pytest.mark.parametrize(
    "other",
    [
        ("model-b@1", "en", "es", "Red shoes", "-"),
        (FP, "en", "fr", "Red shoes", "-"),
        (FP, "de", "es", "Red shoes", "-"),
        (FP, "en", "es", "Red shoe", "-"),
        (FP, "en", "es", "red shoes", "-"),
        (FP, "en", "es", "Red shoes", "glossary-v2"),
    ],
)
def test_key_changes_with_each_component(other: tuple[str, str, str, str, str]) -> None:
    base = PhraseCache.key(FP, "en", "es", "Red shoes", "-")
    assert PhraseCache.key(*other) != base


def test_key_names_its_components_under_prefix() -> None:
    key = PhraseCache.key(FP, "en", "es", "Red shoes", "g7")
    assert key.startswith("mt:cache:")
    assert FP in key and ":g7:" in key and ":en:es:" in key
    assert "Red shoes" not in key  # only a digest of the text


def test_round_trip_with_ttl(cache: PhraseCache, r: fakeredis.FakeRedis) -> None:
    cache.put_many(
        FP, "en", "es", {"Red shoes": "Zapatos rojos", "Blue hat": "Sombrero azul"}, job_id=JOB
    )
    got = cache.get_many(lookup(FP, "en", "es", ["Red shoes", "Green tie", "Blue hat"]))
    assert got == {"Red shoes": "Zapatos rojos", "Blue hat": "Sombrero azul"}
    key = PhraseCache.key(FP, "en", "es", "Red shoes")
    assert 0 < r.ttl(key) <= 3600


def test_lookups_take_normalised_texts(cache: PhraseCache) -> None:
    """The cache keys normalised texts (the API normalises once); the caller puts the outer
    whitespace back (core.cache.rewrap)."""
    cache.put_many(FP, "en", "es", {"Red shoes": "Zapatos rojos"}, job_id=JOB)
    text = "  Red shoes\n"
    assert cache.get_many(lookup(FP, "en", "es", [normalize(text)])) == {
        "Red shoes": "Zapatos rojos"
    }
    assert rewrap(text, "Zapatos rojos") == "  Zapatos rojos\n"


def test_other_model_or_pair_misses(cache: PhraseCache) -> None:
    cache.put_many(FP, "en", "es", {"Red shoes": "Zapatos rojos"}, job_id=JOB)
    assert cache.get_many(lookup("model-b@1", "en", "es", ["Red shoes"])) == {}
    assert cache.get_many(lookup(FP, "en", "fr", ["Red shoes"])) == {}


def test_duplicates_and_empty_inputs(cache: PhraseCache, r: fakeredis.FakeRedis) -> None:
    cache.put_many(FP, "en", "es", {"a": "A"}, job_id=JOB)
    assert cache.get_many(lookup(FP, "en", "es", ["a", "a", "a"])) == {"a": "A"}
    assert cache.get_many(lookup(FP, "en", "es", [])) == {}
    cache.put_many(FP, "en", "es", {}, job_id=JOB)
    assert len(r.keys("mt:cache:model-a*")) == 1


@pytest.mark.parametrize(
    ("original", "translation", "expected"),
    [
        ("  Red shoes\n", "Zapatos rojos", "  Zapatos rojos\n"),
        ("Red shoes", "Zapatos rojos", "Zapatos rojos"),
        ("\tRed shoes", " Zapatos rojos ", "\tZapatos rojos"),
        ("   ", "ignored", "   "),
        ("", "ignored", ""),
    ],
)
def test_rewrap(original: str, translation: str, expected: str) -> None:
    assert rewrap(original, translation) == expected


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_cache_is_a_miss_not_an_error() -> None:
    # Built the way core.redis_conn builds clients (from a URL), with a short connect timeout.
    client = redis.Redis.from_url(
        f"redis://127.0.0.1:{_closed_port()}/0",
        socket_connect_timeout=0.2,
        decode_responses=True,
    )
    cache = PhraseCache(client, ttl_s=60)
    start = time.monotonic()
    assert cache.get_many(lookup(FP, "en", "es", ["Red shoes"])) == {}
    cache.put_many(FP, "en", "es", {"Red shoes": "Zapatos rojos"}, job_id=JOB)
    assert time.monotonic() - start < 3.0


def test_scopes_keep_their_own_entries_and_none_is_shared(cache: PhraseCache) -> None:
    cache.put_many(FP, "en", "es", {"Red shoes": "Zapatos rojos"}, job_id=JOB, scope="key-a")
    assert cache.get_many(lookup(FP, "en", "es", ["Red shoes"], scope="key-a")) == {
        "Red shoes": "Zapatos rojos"
    }
    assert cache.get_many(lookup(FP, "en", "es", ["Red shoes"], scope="key-d")) == {}
    assert cache.get_many(lookup(FP, "en", "es", ["Red shoes"])) == {}  # the shared scope
    cache.put_many(FP, "en", "es", {"Blue hat": "Sombrero azul"}, job_id=JOB)
    assert cache.get_many(lookup(FP, "en", "es", ["Blue hat"])) == {"Blue hat": "Sombrero azul"}
    assert cache.get_many(lookup(FP, "en", "es", ["Blue hat"], scope="key-a")) == {}


def test_forget_removes_the_entries_of_one_job_only(
    cache: PhraseCache, r: fakeredis.FakeRedis
) -> None:
    other = "b" * 32
    many = {f"text {i}": f"texto {i}" for i in range(2500)}  # more than one batch
    cache.put_many(FP, "en", "es", many, job_id=JOB, scope="k")
    cache.put_many(FP, "en", "es", {"Red shoes": "Zapatos rojos"}, job_id=other, scope="k")
    assert r.ttl(f"mt:cache:job:{JOB}") > 0
    cache.forget(JOB)
    assert cache.get_many(lookup(FP, "en", "es", list(many), scope="k")) == {}
    assert cache.get_many(lookup(FP, "en", "es", ["Red shoes"], scope="k")) == {
        "Red shoes": "Zapatos rojos"
    }
    assert not r.exists(f"mt:cache:job:{JOB}")


def test_a_chunk_still_in_flight_writes_no_phrase_after_its_job_was_purged(
    cache: PhraseCache, r: fakeredis.FakeRedis
) -> None:
    """A purge between a chunk's engine call and its cache write (a second delivery of a chunk
    of a job already finished and purged): the write stores nothing, and no entry is left for
    the purge to have missed; another job's writes are untouched."""
    cache.put_many(FP, "en", "es", {"Red shoes": "Zapatos rojos"}, job_id=JOB)
    cache.forget(JOB)
    cache.put_many(FP, "en", "es", {"Blue shoes": "Zapatos azules"}, job_id=JOB)
    assert cache.get_many(lookup(FP, "en", "es", ["Red shoes", "Blue shoes"])) == {}
    assert not r.exists(f"mt:cache:job:{JOB}")
    assert 0 < r.ttl(f"mt:cache:purged:{JOB}") <= cache.job_ttl  # the mark goes in time
    other = "c" * 32
    cache.put_many(FP, "en", "es", {"Blue shoes": "Zapatos azules"}, job_id=other)
    assert cache.get_many(lookup(FP, "en", "es", ["Blue shoes"])) == {
        "Blue shoes": "Zapatos azules"
    }
