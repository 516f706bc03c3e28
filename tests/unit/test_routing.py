"""Routing by pair (api/routing.py) over the registry on fakeredis: which pool a pair goes to
(MT_ROUTES, a pool with a live worker, a pool the job names, a LoRA adapter, a model_type),
what is refused and how (422 listing what there is), and MT_ROUTES / MT_PAIRS / MT_POOL /
MT_MODEL_TYPE as settings."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import fakeredis
import pytest
from pydantic import ValidationError

from mtfleet.api.routing import Route, Routing, choose_pool
from mtfleet.core.backlog import Backlog
from mtfleet.core.errors import UnknownPool, UnsupportedLanguage
from mtfleet.core.registry import PoolInfo, Registry, WorkerInfo
from mtfleet.core.settings import Settings, default_pool


def worker(pool: str, pairs: list[tuple[str, str]], **kw: object) -> WorkerInfo:
    return WorkerInfo(
        name=f"{pool}@host",
        instance=f"{pool}-1",
        pool=pool,
        engine=str(kw.pop("engine", "vllm")),
        model=f"{pool}-model",
        fingerprint=f"fp-{pool}",
        pairs=pairs,
        lanes=["interactive", "bulk"],
        **kw,  # type: ignore[arg-type]
    )


SERVER = fakeredis.FakeServer()


@pytest.fixture
def r() -> fakeredis.FakeRedis:
    client = fakeredis.FakeRedis(server=SERVER, decode_responses=True)
    client.flushall()
    return client


class Routed:
    """A :class:`Routing` (its reads on the event loop) driven from plain test code."""

    def __init__(self, r: fakeredis.FakeRedis, **settings: object) -> None:
        ar = fakeredis.FakeAsyncRedis(server=SERVER, decode_responses=True)
        registry = Registry(r, ar)  # type: ignore[arg-type]
        self.routing = Routing(Settings(**settings).backlog, registry, Backlog(r, ttl_s=60))  # type: ignore[arg-type]

    def route(self, *args: Any, **kw: Any) -> Route:
        return asyncio.run(self.routing.route(*args, **kw))


def routing(r: fakeredis.FakeRedis, **settings: object) -> Routed:
    return Routed(r, **settings)


@pytest.fixture
def fleet(r: fakeredis.FakeRedis) -> fakeredis.FakeRedis:
    """hunyuan: en<->zh, en->es; apertium: en<->es; nllb: en->es, en->fr (its worker is gone)."""
    reg = Registry(r)
    reg.beat(
        worker("hunyuan", [("en", "zh"), ("zh", "en"), ("en", "es")], adapters={"legal": "fp-l"}),
        ttl_s=60,
    )
    reg.beat(worker("apertium", [("en", "es"), ("es", "en")], engine="apertium"), ttl_s=60)
    reg.beat(worker("nllb", [("en", "es"), ("en", "fr")], engine="transformers"), ttl_s=0.01)
    time.sleep(0.05)
    return r


def pool(name: str, live: bool = True) -> PoolInfo:
    until = time.time() + (60 if live else -60)
    return PoolInfo(name=name, engine="e", model="m", fingerprint=name, live_until=until)


def test_the_most_specific_route_whose_pool_serves_the_pair_wins() -> None:
    routes = {"en:zh": "hunyuan", "en:*": "nllb", "*:es": "apertium", "*": "apertium"}
    pools = {p: pool(p) for p in ("hunyuan", "nllb", "apertium")}
    assert choose_pool(routes, "en", "zh", ["apertium", "hunyuan"], pools) == "hunyuan"
    assert choose_pool(routes, "en", "es", ["apertium", "nllb"], pools) == "nllb"  # en-* first
    assert choose_pool(routes, "fr", "es", ["apertium", "nllb"], pools) == "apertium"
    # a route to a pool that does not serve the pair is passed over
    assert choose_pool(routes, "en", "zh", ["nllb"], pools) == "nllb"


def test_without_a_route_a_pool_with_a_live_worker_then_the_first_by_name() -> None:
    pools = {"a": pool("a", live=False), "b": pool("b"), "c": pool("c")}
    assert choose_pool({}, "en", "es", ["a", "b", "c"], pools) == "b"
    assert choose_pool({}, "en", "es", ["a"], pools) == "a"  # dead, but the only one
    assert choose_pool({"*": "c"}, "en", "es", ["a", "b", "c"], pools) == "c"


def test_route_picks_a_pool_from_the_registry(fleet: fakeredis.FakeRedis) -> None:
    rt = routing(fleet, routes="en-es=apertium")
    assert rt.route("en", "zh").name == "hunyuan"
    es = rt.route("en", "es")
    assert (es.name, es.fingerprint, es.adapter) == ("apertium", "fp-apertium", None)
    # no route: of the three pools serving en->es, nllb has no live worker; apertium is first
    assert routing(fleet).route("en", "es").name == "apertium"
    assert routing(fleet, routes="*=hunyuan").route("en", "es").name == "hunyuan"
    # a pair only a pool without a live worker serves still goes there (its jobs wait)
    assert routing(fleet).route("en", "fr").name == "nllb"


def test_a_pair_no_pool_serves_is_refused_listing_the_served_pairs(
    fleet: fakeredis.FakeRedis,
) -> None:
    with pytest.raises(UnsupportedLanguage) as info:
        routing(fleet).route("de", "fr")
    assert info.value.message.startswith("no pool serves de->fr; served pairs: ")
    assert "en->fr" in info.value.message and "zh->en" in info.value.message
    assert info.value.details["served"] == ["en->es", "en->fr", "en->zh", "es->en", "zh->en"]


def test_a_job_may_name_its_pool(fleet: fakeredis.FakeRedis) -> None:
    rt = routing(fleet, routes="*=apertium")
    assert rt.route("en", "es", "hunyuan").name == "hunyuan"
    with pytest.raises(UnknownPool) as unknown:
        rt.route("en", "es", "marian")
    assert unknown.value.message == (
        "the fleet has no pool 'marian'; pools: apertium, hunyuan, nllb"
    )
    with pytest.raises(UnknownPool) as wrong:
        rt.route("en", "zh", "apertium")
    assert wrong.value.message == (
        "pool 'apertium' does not serve en->zh; it serves: en->es, es->en"
    )


def test_an_adapter_has_its_own_fingerprint_and_an_unknown_one_is_refused(
    fleet: fakeredis.FakeRedis,
) -> None:
    rt = routing(fleet)
    legal = rt.route("en", "zh", adapter="legal")
    assert (legal.name, legal.fingerprint, legal.adapter) == ("hunyuan", "fp-l", "legal")
    with pytest.raises(UnknownPool) as info:
        rt.route("en", "es", "apertium", adapter="legal")
    assert "pool 'apertium' has no LoRA adapter 'legal'" in info.value.message
    # en->es goes to apertium, but a job naming the adapter goes to the pool that has it
    assert rt.route("en", "es").name == "apertium"
    assert rt.route("en", "es", adapter="legal").name == "hunyuan"
    assert routing(fleet, routes="*=apertium").route("en", "es", adapter="legal").name == "hunyuan"
    with pytest.raises(UnknownPool) as nowhere:
        rt.route("en", "es", adapter="shoes")
    assert nowhere.value.message == (
        "no pool serving en->es has a LoRA adapter 'shoes'; their adapters: legal"
    )


def test_a_pool_that_registers_is_routed_to_at_once(r: fakeredis.FakeRedis) -> None:
    rt = routing(r)
    with pytest.raises(UnsupportedLanguage, match="none yet"):
        rt.route("en", "es")
    Registry(r).beat(worker("apertium", [("en", "es")]), ttl_s=60)
    assert rt.route("en", "es").name == "apertium"  # no second's wait


def test_routes_pairs_and_pool_settings_are_parsed_and_checked() -> None:
    s = Settings(routes="en-zh=hunyuan, EN-*=nllb, *-zh_Hant=hunyuan, *=apertium")
    assert s.backlog.routes == {
        "en:zh": "hunyuan",
        "en:*": "nllb",
        "*:zh-Hant": "hunyuan",
        "*": "apertium",
    }
    assert Settings(routes='{"en-zh": "hunyuan"}').backlog.routes == {"en:zh": "hunyuan"}
    assert Settings(pairs="en-es, ES-EN").worker.offered_pairs == [("en", "es"), ("es", "en")]
    assert Settings(engine="vllm").worker.pool_name == "vllm"
    assert Settings(engine="bench.costengine:CostModelEngine").worker.pool_name == "costmodelengine"
    assert Settings(engine="vllm", pool="hunyuan-fp8").worker.pool_name == "hunyuan-fp8"
    assert default_pool("pkg.mod:My.Engine") == "my-engine"
    for bad in [{"routes": "en-zh"}, {"routes": "xx-zh=a"}, {"pairs": "en"}, {"pool": "Hunyuan"}]:
        with pytest.raises(ValidationError):
            Settings(**bad)  # type: ignore[arg-type]


# --- model_type: pools marked latency_optimized / quality_optimized ---------------------------


def marked(name: str, model_type: str | None, live: bool = True) -> PoolInfo:
    return pool(name, live).model_copy(update={"model_type": model_type})


def test_a_model_type_goes_to_a_pool_marked_for_it_then_the_usual_rule() -> None:
    pools = {
        "marian": marked("marian", None),
        "hunyuan": marked("hunyuan", "quality_optimized"),
        "qwen": marked("qwen", "quality_optimized"),
        "fast": marked("fast", "latency_optimized"),
    }
    serving = ["fast", "hunyuan", "marian", "qwen"]
    routes = {"en:es": "marian", "*": "qwen"}
    # the marked pools win over MT_ROUTES' en-es; among them, MT_ROUTES' "*" picks qwen
    assert choose_pool(routes, "en", "es", serving, pools, model_type="quality_optimized") == "qwen"
    assert choose_pool({}, "en", "es", serving, pools, model_type="quality_optimized") == "hunyuan"
    prefer = "prefer_quality_optimized"
    assert choose_pool(routes, "en", "es", serving, pools, model_type=prefer) == "qwen"
    assert choose_pool(routes, "en", "es", serving, pools, model_type="latency_optimized") == "fast"
    assert choose_pool(routes, "en", "es", serving, pools) == "marian"  # no model_type: as ever
    # among the marked pools, one with a live worker first
    pools["hunyuan"] = marked("hunyuan", "quality_optimized", live=False)
    assert choose_pool({}, "en", "es", serving, pools, model_type="quality_optimized") == "qwen"


def test_no_pool_serving_the_pair_is_marked_for_it_the_usual_pool_translates() -> None:
    """Never a refusal (DeepL refuses quality_optimized on a pair without that model)."""
    pools = {"marian": marked("marian", None), "hunyuan": marked("hunyuan", "quality_optimized")}
    for asked in ("latency_optimized", "quality_optimized", "prefer_quality_optimized"):
        assert choose_pool({"*": "marian"}, "en", "es", ["marian"], pools, model_type=asked) == (
            "marian"
        )
    # a latency request where only a quality-marked pool is marked: the usual rule, which may
    # pick the quality pool (the first by name without a route)
    both = ["hunyuan", "marian"]
    fast = "latency_optimized"
    assert choose_pool({"*": "marian"}, "en", "es", both, pools, model_type=fast) == "marian"
    assert choose_pool({}, "en", "es", both, pools, model_type=fast) == "hunyuan"


def test_model_type_used_is_the_pools_marking_else_what_was_asked() -> None:
    def used(marking: str | None, asked: str | None) -> str | None:
        return Route(marked("p", marking), "fp", None, asked).model_type_used  # type: ignore[arg-type]

    assert used(None, None) is None and used("quality_optimized", None) is None
    assert used("quality_optimized", "latency_optimized") == "quality_optimized"
    assert used("latency_optimized", "quality_optimized") == "latency_optimized"
    # unmarked: DeepL's answer on a pair with one model
    assert used(None, "latency_optimized") == "latency_optimized"
    assert used(None, "quality_optimized") == "quality_optimized"
    assert used(None, "prefer_quality_optimized") == "quality_optimized"


@pytest.fixture
def marked_fleet(r: fakeredis.FakeRedis) -> fakeredis.FakeRedis:
    """en->es: marian (unmarked), hunyuan (quality_optimized; also en->zh); en->fr: marian."""
    reg = Registry(r)
    reg.beat(worker("marian", [("en", "es"), ("en", "fr")]), ttl_s=60)
    reg.beat(
        worker("hunyuan", [("en", "es"), ("en", "zh")], model_type="quality_optimized"),
        ttl_s=60,
    )
    return r


def test_route_follows_the_registered_marking(
    marked_fleet: fakeredis.FakeRedis,
) -> None:
    assert Registry(marked_fleet).pools()["hunyuan"].model_type == "quality_optimized"
    rt = routing(marked_fleet, routes="*=marian")
    q = rt.route("en", "es", model_type="quality_optimized")
    assert (q.name, q.fingerprint, q.model_type_used) == (
        "hunyuan",
        "fp-hunyuan",
        "quality_optimized",
    )
    prefer = rt.route("en", "es", model_type="prefer_quality_optimized")
    assert (prefer.name, prefer.model_type_used) == ("hunyuan", "quality_optimized")
    fast = rt.route("en", "es", model_type="latency_optimized")
    assert (fast.name, fast.model_type_used) == ("marian", "latency_optimized")
    plain = rt.route("en", "es")
    assert (plain.name, plain.model_type_used) == ("marian", None)
    fr = rt.route("en", "fr", model_type="quality_optimized")  # no marked pool serves en->fr
    assert (fr.name, fr.model_type_used) == ("marian", "quality_optimized")
    # a job that names its pool goes there
    named = rt.route("en", "es", "marian", model_type="quality_optimized")
    assert (named.name, named.model_type_used) == ("marian", "quality_optimized")


def test_the_model_type_setting_is_checked() -> None:
    assert Settings().engine.model_type is None
    assert Settings(model_type="quality_optimized").engine.model_type == "quality_optimized"
    with pytest.raises(ValidationError):
        Settings(model_type="prefer_quality_optimized")  # a request's, not a pool's marking
