"""workers/chunk.py Recheck: a chunk that waited looks the phrase cache up again only while that
pays, as measured (the hits it finds against what a segment costs the engine)."""

from __future__ import annotations

from mtfleet.workers.chunk import Recheck


def test_before_anything_is_measured_every_waiting_chunk_looks() -> None:
    policy = Recheck()
    assert all(policy.wanted(None) for _ in range(50))
    assert policy.wanted(0.003)  # the prior hit ratio pays on a GPU-priced engine


def test_no_hits_on_a_cheap_engine_looks_only_every_sixteenth_chunk() -> None:
    policy = Recheck()
    policy.observe(segments=2000, hits=0, seconds=2000 * 4e-6)
    looks = [policy.wanted(1e-6) for _ in range(64)]
    assert sum(looks) == 64 // Recheck.SAMPLE_EVERY
    assert looks[Recheck.SAMPLE_EVERY - 1]


def test_a_few_hits_per_mille_pay_when_a_segment_costs_milliseconds() -> None:
    policy = Recheck()
    policy.observe(segments=2000, hits=6, seconds=2000 * 5e-6)  # 0.3 %, 5 µs a lookup
    assert all(policy.wanted(0.004) for _ in range(40))  # 4 ms a segment on the engine
    assert not all(policy.wanted(1e-5) for _ in range(40))  # a cheap engine: not worth it


def test_hits_coming_back_turn_the_lookups_back_on() -> None:
    policy = Recheck()
    policy.observe(segments=2000, hits=0, seconds=0.01)
    assert not policy.wanted(0.002)
    policy.observe(segments=1000, hits=300, seconds=0.005)  # the backlog repeats itself now
    assert policy.wanted(0.002)
