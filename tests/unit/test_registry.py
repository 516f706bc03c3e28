"""core/registry.py on fakeredis: per-instance heartbeats and liveness, instances that are gone
but may still hold messages (until the reconciler forgets them), and pools with their pairs,
which outlive workers until an operator forgets them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import fakeredis
import pytest

from mtfleet.core import keys
from mtfleet.core.registry import Registry, WorkerInfo

SERVER = fakeredis.FakeServer()


@pytest.fixture
def r() -> fakeredis.FakeRedis:
    client = fakeredis.FakeRedis(server=SERVER, decode_responses=True)
    client.flushall()
    return client


def on_loop(reg: Registry, read: str, *args: Any) -> Any:
    """One of the registry's event-loop reads (the API's), through an asyncio client."""

    async def go() -> Any:
        ar = fakeredis.FakeAsyncRedis(server=SERVER, decode_responses=True)
        return await getattr(Registry(reg.r, ar), read)(*args)  # type: ignore[arg-type]

    return asyncio.run(go())


@pytest.fixture
def reg(r: fakeredis.FakeRedis) -> Registry:
    return Registry(r)


def info(
    instance: str = "i-1",
    name: str = "gpu0@host",
    pairs: list[tuple[str, str]] | None = None,
    **kw: object,
) -> WorkerInfo:
    return WorkerInfo(
        name=name,
        instance=instance,
        engine="apertium",
        model="apertium",
        fingerprint="apertium-abc",
        pairs=pairs if pairs is not None else [("en", "es"), ("es", "en")],
        lanes=["interactive", "bulk"],
        gpus=[0],
        host="host",
        pid=123,
        **kw,  # type: ignore[arg-type]
    )


def test_beat_registers_the_instance_and_its_pairs(reg: Registry, r: fakeredis.FakeRedis) -> None:
    before = time.time()
    reg.beat(info(), ttl_s=15)
    live = reg.live_workers()
    assert [(w.instance, w.name) for w in live] == [("i-1", "gpu0@host")]
    assert live[0].pairs == [("en", "es"), ("es", "en")]
    assert live[0].beat_at >= before
    assert 0 < r.pttl(keys.worker("i-1")) <= 15_000
    assert not r.exists(keys.worker("gpu0@host"))  # keyed by instance, not by Celery name
    assert r.smembers(keys.WORKERS) == {"i-1"}
    assert reg.pairs() == {"apertium": {("en", "es"), ("es", "en")}}
    (pool,) = reg.pools().values()
    assert (pool.name, pool.engine, pool.fingerprint) == ("apertium", "apertium", "apertium-abc")
    assert pool.live() and pool.updated >= before


def test_a_restarted_worker_is_a_new_instance_beside_the_old_one(
    reg: Registry, r: fakeredis.FakeRedis
) -> None:
    reg.beat(info("old", name="gpu0@host"), ttl_s=30)
    reg.beat(info("new", name="gpu0@host"), ttl_s=30)
    assert [w.instance for w in reg.live_workers()] == ["new", "old"]
    reg.leave("old")
    live, gone = reg.instances()
    assert [(w.instance, w.name) for w in live] == [("new", "gpu0@host")]
    assert gone == ["old"]


def test_health_is_part_of_the_beat(reg: Registry) -> None:
    reg.beat(info(healthy=False, unhealthy_reason="engine restarting"), ttl_s=30)
    (w,) = reg.live_workers()
    assert w.healthy is False and w.unhealthy_reason == "engine restarting"
    reg.beat(info(), ttl_s=30)
    (w,) = reg.live_workers()
    assert w.healthy is True and w.unhealthy_reason is None


def test_pools_serving_a_pair(reg: Registry) -> None:
    reg.beat(info(), ttl_s=15)
    reg.beat(info("v", pool="hunyuan", pairs=[("en", "zh"), ("en", "es")]), ttl_s=15)
    pools = sorted(reg.pools())
    assert pools == ["apertium", "hunyuan"]
    assert on_loop(reg, "serving", pools, "en", "es") == ["apertium", "hunyuan"]
    assert on_loop(reg, "serving", pools, "en", "zh") == ["hunyuan"]
    assert on_loop(reg, "serving", pools, "es", "en") == ["apertium"]
    assert on_loop(reg, "serving", pools, "en", "fr") == []
    assert reg.pairs(["hunyuan"]) == {"hunyuan": {("en", "zh"), ("en", "es")}}
    assert on_loop(reg, "aserved_pairs") == {("en", "es"), ("es", "en"), ("en", "zh")}


def test_a_pools_adapters_have_their_fingerprints(reg: Registry) -> None:
    reg.beat(info(pool="hunyuan", adapters={"legal": "vllm-lora-1"}), ttl_s=15)
    pool = reg.pools()["hunyuan"]
    assert pool.fingerprint_for(None) == "apertium-abc"
    assert pool.fingerprint_for("legal") == "vllm-lora-1"
    assert pool.fingerprint_for("medical") is None


def test_forget_pool_takes_it_and_its_pairs_out(reg: Registry) -> None:
    reg.beat(info(), ttl_s=15)
    reg.beat(info("v", pool="old"), ttl_s=15)
    assert reg.forget_pool("old") is True
    assert sorted(reg.pools()) == ["apertium"]
    assert on_loop(reg, "serving", ["old"], "en", "es") == []
    assert reg.forget_pool("old") is False


def test_an_expired_instance_is_gone_but_stays_listed_and_pairs_stay(
    reg: Registry, r: fakeredis.FakeRedis
) -> None:
    reg.beat(info("old"), ttl_s=0.05)
    reg.beat(info("new", pairs=[("en", "fr")]), ttl_s=30)
    time.sleep(0.15)
    live, gone = reg.instances()
    assert [w.instance for w in live] == ["new"] and gone == ["old"]
    assert [w.instance for w in reg.live_workers()] == ["new"]
    # no pruning on read: only the reconciler takes an instance out (forget)
    assert r.smembers(keys.WORKERS) == {"old", "new"}
    assert reg.pairs() == {"apertium": {("en", "es"), ("es", "en"), ("en", "fr")}}


def test_a_deleted_liveness_key_makes_the_instance_gone(
    reg: Registry, r: fakeredis.FakeRedis
) -> None:
    reg.beat(info(), ttl_s=30)
    r.delete(keys.worker("i-1"))
    assert reg.live_workers() == []
    assert reg.instances() == ([], ["i-1"])
    assert r.smembers(keys.WORKERS) == {"i-1"}
    assert ("en", "es") in reg.pairs()["apertium"]
    assert not reg.pools()["apertium"].live(time.time() + 31)


def test_leave_removes_liveness_but_keeps_the_instance_listed(
    reg: Registry, r: fakeredis.FakeRedis
) -> None:
    reg.beat(info("a"), ttl_s=30)
    reg.beat(info("b"), ttl_s=30)
    reg.leave("a")
    assert [w.instance for w in reg.live_workers()] == ["b"]
    assert not r.exists(keys.worker("a"))
    assert r.smembers(keys.WORKERS) == {"a", "b"}  # it may still hold broker messages
    assert reg.instances()[1] == ["a"]
    assert on_loop(reg, "serving", ["apertium"], "en", "es") == ["apertium"]


def test_forget_takes_a_gone_instance_out(reg: Registry, r: fakeredis.FakeRedis) -> None:
    reg.beat(info("a"), ttl_s=30)
    reg.beat(info("b"), ttl_s=30)
    reg.leave("a")
    reg.forget("a")
    assert reg.instances() == (reg.live_workers(), [])
    assert r.smembers(keys.WORKERS) == {"b"}
    reg.forget("never-seen")  # harmless
    assert r.smembers(keys.WORKERS) == {"b"}


def test_a_beat_after_forget_lists_the_instance_again(
    reg: Registry, r: fakeredis.FakeRedis
) -> None:
    reg.beat(info("a"), ttl_s=30)
    reg.forget("a")
    reg.beat(info("a"), ttl_s=30)
    assert r.smembers(keys.WORKERS) == {"a"}
    assert [w.instance for w in reg.live_workers()] == ["a"]


def test_beat_refreshes_ttl_and_the_pools_liveness(reg: Registry) -> None:
    reg.beat(info(), ttl_s=0.5)
    first = reg.pools()["apertium"]
    time.sleep(0.3)
    reg.beat(info(), ttl_s=0.5)
    time.sleep(0.3)  # past the first beat's expiry, within the second's
    assert [w.instance for w in reg.live_workers()] == ["i-1"]
    second = reg.pools()["apertium"]
    assert second.updated > first.updated and second.live() and not first.live()


def test_no_workers(reg: Registry) -> None:
    assert reg.live_workers() == []
    assert reg.instances() == ([], [])
    assert reg.pairs() == {} and reg.pools() == {}
