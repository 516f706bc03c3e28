"""core/registry.py on fakeredis: heartbeats, liveness, pruning, and pairs that outlive workers."""

from __future__ import annotations

import time

import fakeredis
import pytest

from mtfleet.core import keys
from mtfleet.core.registry import Registry, WorkerInfo


@pytest.fixture
def r() -> fakeredis.FakeRedis:
    return fakeredis.FakeRedis(decode_responses=True)


@pytest.fixture
def reg(r: fakeredis.FakeRedis) -> Registry:
    return Registry(r)


def info(name: str = "gpu0@host", pairs: list[tuple[str, str]] | None = None) -> WorkerInfo:
    return WorkerInfo(
        name=name,
        engine="apertium",
        model="apertium",
        fingerprint="apertium-abc",
        pairs=pairs if pairs is not None else [("en", "es"), ("es", "en")],
        lanes=["interactive", "bulk"],
        gpus=[0],
        host="host",
        pid=123,
    )


def test_beat_registers_worker_and_pairs(reg: Registry, r: fakeredis.FakeRedis) -> None:
    before = time.time()
    reg.beat(info(), ttl_s=15)
    live = reg.live_workers()
    assert [w.name for w in live] == ["gpu0@host"]
    assert live[0].pairs == [("en", "es"), ("es", "en")]
    assert live[0].beat_at >= before
    assert 0 < r.pttl(keys.worker("gpu0@host")) <= 15_000
    assert set(reg.pairs()) == {("en", "es"), ("es", "en")}


def test_pair_lookup(reg: Registry) -> None:
    reg.beat(info(), ttl_s=15)
    p = reg.pair("en", "es")
    assert p is not None
    assert (p.source, p.target, p.engine, p.fingerprint) == ("en", "es", "apertium", "apertium-abc")
    assert reg.pair("en", "fr") is None
    assert reg.pair("es", "en") is not None


def test_expired_worker_is_pruned_but_pairs_stay(reg: Registry, r: fakeredis.FakeRedis) -> None:
    reg.beat(info("old@host"), ttl_s=0.05)
    reg.beat(info("new@host", pairs=[("en", "fr")]), ttl_s=30)
    time.sleep(0.15)
    assert [w.name for w in reg.live_workers()] == ["new@host"]
    assert r.smembers(keys.WORKERS) == {"new@host"}
    assert set(reg.pairs()) == {("en", "es"), ("es", "en"), ("en", "fr")}
    assert reg.pair("en", "es") is not None


def test_deleted_worker_key_is_not_live(reg: Registry, r: fakeredis.FakeRedis) -> None:
    reg.beat(info(), ttl_s=30)
    r.delete(keys.worker("gpu0@host"))
    assert reg.live_workers() == []
    assert r.smembers(keys.WORKERS) == set()
    assert ("en", "es") in reg.pairs()


def test_leave_removes_liveness_keeps_pairs(reg: Registry, r: fakeredis.FakeRedis) -> None:
    reg.beat(info("a@host"), ttl_s=30)
    reg.beat(info("b@host"), ttl_s=30)
    reg.leave("a@host")
    assert [w.name for w in reg.live_workers()] == ["b@host"]
    assert not r.exists(keys.worker("a@host"))
    assert reg.pair("en", "es") is not None


def test_beat_refreshes_ttl_and_pair_timestamp(reg: Registry, r: fakeredis.FakeRedis) -> None:
    reg.beat(info(), ttl_s=0.5)
    first = reg.pair("en", "es")
    assert first is not None
    time.sleep(0.3)
    reg.beat(info(), ttl_s=0.5)
    time.sleep(0.3)  # past the first beat's expiry, within the second's
    assert [w.name for w in reg.live_workers()] == ["gpu0@host"]
    second = reg.pair("en", "es")
    assert second is not None and second.updated > first.updated


def test_no_workers(reg: Registry) -> None:
    assert reg.live_workers() == []
    assert reg.pairs() == {}
