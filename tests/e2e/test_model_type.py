"""A request's ``model_type`` routing to a pool marked for it, as a user sends it (``/v1``
through the SDK and HTTP, the CLI, DeepL's official client and ``/v2/document``), on a fleet of
two pools serving English to Spanish, each a process of its own:

* ``echo`` (an engine that gives the text back, ``tests.identity_engine``), unmarked, the usual
  pool for en->es (``MT_ROUTES=en-es=echo``); it alone serves en->ru;
* ``apertium``, started with ``mtfleet worker --model-type quality_optimized --pairs en-es``.

Which pool translated shows in the text itself (Spanish, or the English sent) as well as in the
job's ``pool``; ``model_type_used`` is the pool's marking, else what was asked for."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import deepl
import httpx
import pytest
import redis

from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.producer.client import MTClient
from tests.conftest import ROOT
from tests.e2e.fleet_control import cli

SHIRT = "The red shirt is in the house."
SHIRT_ES = "La camisa roja es en la casa."  # Apertium's
QUALITY = "quality_optimized"
LATENCY = "latency_optimized"


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    redis.Redis.from_url(redis_server).flushdb()
    env = {
        "MT_REDIS_URL": redis_server,
        "MT_HEARTBEAT_S": "1",
        "MT_AUTH": "required",
        "MT_DEEPL_WAIT_S": "10",
        "MT_ROUTES": "en-es=echo",
        "MT_CHECK_LANGUAGE": "false",  # echo answers in English: a warning would skip the cache
        "MT_PROCESS_PER_LANE": "false",
        "PYTHONPATH": str(ROOT),
    }
    with LocalFleet(redis_url=redis_server, env=env) as f:
        f.start_redis()
        f.start_worker(
            "--engine", "tests.identity_engine:IdentityEngine", "--pool", "echo", name="worker-echo"
        )
        f.start_worker(
            "--engine", "apertium", "--pool", "apertium", "--pairs", "en-es",
            "--model-type", QUALITY, name="worker-apertium",
        )  # fmt: skip
        f.start_api()
        f.wait_ready(90, pool="echo")
        f.wait_ready(90, pool="apertium")
        yield f


@pytest.fixture(scope="module")
def key(fleet: LocalFleet) -> str:
    return fleet.create_api_key("model-types")


def test_a_job_goes_to_the_pool_marked_for_its_model_type(fleet: LocalFleet, key: str) -> None:
    expected = {
        QUALITY: ("apertium", QUALITY, SHIRT_ES),
        "prefer_quality_optimized": ("apertium", QUALITY, SHIRT_ES),
        # no pool is marked latency_optimized: the usual pool, and DeepL's answer
        LATENCY: ("echo", LATENCY, SHIRT),
        None: ("echo", None, SHIRT),
    }
    with MTClient(fleet.api_url, api_key=key) as mt:
        for asked, (pool, used, text) in expected.items():
            job = mt.submit([SHIRT], source="en", target="es", model_type=asked)
            assert (job.pool, job.model_type_used) == (pool, used), asked
            done = mt.wait(job.id, timeout=60)
            assert done.status == "succeeded" and done.model_type_used == used, asked
            assert mt.result(job.id).translations == [text], asked
        # a job that names its pool goes there, whatever it asks for
        named = mt.submit([SHIRT], source="en", target="es", pool="echo", model_type=QUALITY)
        assert (named.pool, named.model_type_used) == ("echo", QUALITY)
        # a pair no marked pool serves: the usual pool translates it, never a refusal
        ru = mt.translation([SHIRT], source="en", target="ru", model_type=QUALITY)
        assert ru.translations == [SHIRT] and ru.model_type_used == QUALITY
        assert mt.get(str(ru.id)).pool == "echo"


def test_v1_translate_says_model_type_used_from_a_job_and_from_the_cache(
    fleet: LocalFleet, key: str
) -> None:
    """The cache-only answer routes by model_type too: each pool's model has its own cache
    entries, so a quality request is never answered with the echo pool's text."""
    text = "The blue table is in the house."
    with MTClient(fleet.api_url, api_key=key) as mt:
        for asked, translation in [
            (QUALITY, "La mesa azul es en la casa."),
            (None, text),
            (LATENCY, text),
        ]:
            first = mt.translation([text], source="en", target="es", model_type=asked)
            again = mt.translation([text], source="en", target="es", model_type=asked)
            used = QUALITY if asked == QUALITY else asked
            assert first.translations == again.translations == [translation], asked
            assert first.model_type_used == again.model_type_used == used, asked
            assert again.id is None and again.cached == 1, asked  # the phrase cache's
    # as raw JSON: the field is there, or absent where nothing was asked
    for asked, used in [(QUALITY, QUALITY), (None, None)]:
        body = {"texts": [text], "source_lang": "en", "target_lang": "es"}
        got = httpx.post(
            f"{fleet.api_url}/v1/translate",
            json=body | ({"model_type": asked} if asked else {}),
            headers={"Authorization": f"Bearer {key}"},
            timeout=30,
        )
        assert got.status_code == 200 and got.json()["model_type_used"] == used, got.text
    bad = httpx.post(
        f"{fleet.api_url}/v1/translate",
        json={"texts": [text], "source_lang": "en", "target_lang": "es", "model_type": "best"},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert bad.status_code == 422 and "model_type" in bad.text


def test_the_official_deepl_client_gets_model_type_used(fleet: LocalFleet, key: str) -> None:
    client = deepl.DeepLClient(key, server_url=fleet.api_url)
    quality = client.translate_text(SHIRT, source_lang="EN", target_lang="ES", model_type=QUALITY)
    assert (quality.text, quality.model_type_used) == (SHIRT_ES, QUALITY)
    fast = client.translate_text(
        [SHIRT, "Add to cart"], source_lang="EN", target_lang="ES", model_type=LATENCY
    )
    assert [(r.text, r.model_type_used) for r in fast] == [
        (SHIRT, LATENCY),
        ("Add to cart", LATENCY),
    ]
    # without source_lang (detected: the whole way, a job)
    detected = client.translate_text(
        "My sister bought a new table.", target_lang="ES", model_type="prefer_quality_optimized"
    )
    assert detected.text == "Mi hermana compró una mesa nueva."
    assert (detected.detected_source_lang, detected.model_type_used) == ("EN", QUALITY)
    plain = client.translate_text(SHIRT, source_lang="EN", target_lang="ES")
    assert (plain.text, plain.model_type_used) == (SHIRT, None)


def test_documents_take_model_type_on_v1_and_deepl(
    fleet: LocalFleet, key: str, tmp_path: Path
) -> None:
    auth = {"Authorization": f"Bearer {key}"}
    html = b"<p>The red shirt is in the house.</p>"
    v1 = httpx.post(
        f"{fleet.api_url}/v1/documents",
        files={"file": ("page.html", html)},
        data={"target_lang": "es", "source_lang": "en", "model_type": QUALITY},
        headers=auth,
        timeout=30,
    )
    assert v1.status_code in (200, 202), v1.text
    assert (v1.json()["pool"], v1.json()["model_type_used"]) == ("apertium", QUALITY)
    deepl_doc = httpx.post(
        f"{fleet.api_url}/v2/document",
        files={"file": ("page.html", html)},
        data={"target_lang": "ES", "source_lang": "EN", "model_type": QUALITY},
        headers={"Authorization": f"DeepL-Auth-Key {key}"},
        timeout=30,
    )
    assert deepl_doc.status_code == 200, deepl_doc.text
    with MTClient(fleet.api_url, api_key=key) as mt:
        job = mt.wait(deepl_doc.json()["document_id"], timeout=60)
    assert (job.pool, job.model_type_used, job.status) == ("apertium", QUALITY, "succeeded")
    refused = httpx.post(
        f"{fleet.api_url}/v1/documents",
        files={"file": ("page.html", html)},
        data={"target_lang": "es", "model_type": "fastest"},
        headers=auth,
        timeout=30,
    )
    assert refused.status_code == 422, refused.text


def test_the_cli_sends_model_type_and_lists_the_marking(
    fleet: LocalFleet, key: str, tmp_path: Path
) -> None:
    said = cli(fleet, "translate", "--from", "en", "--to", "es", "--model-type", QUALITY, SHIRT,
               MT_API_KEY=key)  # fmt: skip
    assert said.returncode == 0, said.stderr
    assert said.stdout == SHIRT_ES + "\n"
    plain = cli(fleet, "translate", "--from", "en", "--to", "es", SHIRT, MT_API_KEY=key)
    assert plain.stdout == SHIRT + "\n", plain.stderr
    wrong = cli(fleet, "translate", "--to", "es", "--model-type", "best", SHIRT, MT_API_KEY=key)
    assert wrong.returncode == 2 and "--model-type" in wrong.stderr

    (tmp_path / "notes.txt").write_text(SHIRT + "\n")
    sent = cli(fleet, "submit", "notes.txt", "--from", "en", "--to", "es", "--model-type",
               QUALITY, "--out", "out", cwd=tmp_path, MT_API_KEY=key)  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    assert (tmp_path / "out" / "notes.es.txt").read_text() == SHIRT_ES + "\n"
    with MTClient(fleet.api_url, api_key=key) as mt:
        assert mt.get(sent.stdout.strip()).pool == "apertium"

    listed = cli(fleet, "pools", "list", "--json", MT_API_KEY=key)
    assert listed.returncode == 0, listed.stderr
    marks = {p["name"]: p["model_type"] for p in json.loads(listed.stdout)}
    assert marks == {"echo": None, "apertium": QUALITY}
    table = cli(fleet, "pools", "list", MT_API_KEY=key).stdout.splitlines()
    assert table[0].endswith("\tadapters\tmodel type")
    assert {line.split("\t")[0]: line.split("\t")[-1] for line in table[1:]} == {
        "echo": "-",
        "apertium": QUALITY,
    }
