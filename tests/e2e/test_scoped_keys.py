"""Scoped keys and reporting tags against a real ``mtfleet api`` (keys required) and a real
Apertium worker (English to Spanish), each a process of its own, the keys made with the real
``mtfleet keys`` CLI. A key scoped to ``translate`` translates through the official ``deepl``
client, ``/v1``, LibreTranslate and Crowdin, and is refused (403, a sentence naming the family
and its scopes, in each surface's shape) on glossaries, documents, Write and usage; a reporting
tag (``X-DeepL-Reporting-Tag``, ``X-Reporting-Tag``) counts the characters a request is charged
per tag, read back from ``/v2/usage``, ``mtfleet keys usage`` and Redis, each key its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import deepl
import httpx
import pytest
import redis

from mtfleet.core import keys
from mtfleet.core.apikeys import parse_token, utc_day
from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.producer.client import MTClient
from tests.e2e.fleet_control import APERTIUM_WORKER

SHIRT = "The red shirt is in the house."
TABLE = "My sister bought a new table."
DOG = "The dog sleeps in the garden."


def mtfleet(redis_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mtfleet", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200", "MT_REDIS_URL": redis_url},
        check=False,
    )


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    redis.Redis.from_url(redis_server).flushdb()
    # a set-scope must show at once in this test: no in-process cache of keys
    env = {"MT_HEARTBEAT_S": "1", "MT_AUTH": "required", "MT_AUTH_CACHE_S": "0"}
    with LocalFleet(redis_url=redis_server, env=env) as f:
        f.start_redis()
        f.start_worker(*APERTIUM_WORKER)
        f.start_api()
        f.wait_ready(240)
        yield f


def create_key(fleet: LocalFleet, name: str, *options: str) -> str:
    """A key made as an operator makes one (its token)."""
    assert fleet.redis_url
    made = mtfleet(fleet.redis_url, "keys", "create", "--name", name, *options, "--json")
    assert made.returncode == 0, made.stderr
    return str(json.loads(made.stdout)["token"])


@pytest.fixture(scope="module")
def scoped(fleet: LocalFleet) -> str:
    return create_key(fleet, "translate-only", "--scope", "translate")


def refusal(family: str, where: str, scopes: str = "translate") -> str:
    return (
        f"this API key may not use {family} ({where}): its scopes are {scopes}; an operator "
        "can allow it with mtfleet keys set-scope"
    )


def test_the_official_client_with_a_key_scoped_to_translate(fleet: LocalFleet, scoped: str) -> None:
    client = deepl.DeepLClient(scoped, server_url=fleet.api_url)
    out = client.translate_text(SHIRT, source_lang="EN", target_lang="ES")
    assert isinstance(out, deepl.TextResult) and out.text.startswith("La camisa")
    assert any(lang.code == "ES" for lang in client.get_target_languages())  # any key's
    refused = {
        "glossaries (/v2/glossaries)": lambda: client.create_glossary(
            "shop", "EN", "ES", {"shirt": "camiseta"}
        ),
        "glossaries (/v3/glossaries)": client.list_multilingual_glossaries,
        "documents (/v2/document)": lambda: client.translate_document_upload(
            b"The house.", target_lang="ES", filename="a.txt"
        ),
        "write (/v2/write/rephrase)": lambda: client.rephrase_text(SHIRT, target_lang="EN-US"),
        "usage (/v2/usage)": client.get_usage,
    }
    for where, call in refused.items():
        with pytest.raises(deepl.AuthorizationException) as caught:
            call()
        assert caught.value.http_status_code == 403
        family, _, path = where.partition(" ")
        assert refusal(family, path.strip("()")) in str(caught.value), where


def test_v1_libretranslate_and_crowdin_with_the_scoped_key(fleet: LocalFleet, scoped: str) -> None:
    url, bearer = fleet.api_url, {"Authorization": f"Bearer {scoped}"}
    body = {"texts": [TABLE], "source_lang": "en", "target_lang": "es"}
    ok = httpx.post(f"{url}/v1/translate", json=body, headers=bearer, timeout=60)
    assert ok.status_code in (200, 202), ok.text  # (202: still running past its wait)
    got = httpx.get(f"{url}/v1/glossaries", headers=bearer, timeout=30)
    assert got.status_code == 403
    assert got.json() == {
        "error": {"type": "forbidden", "message": refusal("glossaries", "/v1/glossaries")}
    }
    # a document upload is refused before its body is read
    upload = httpx.post(
        f"{url}/v1/documents",
        files={"file": ("a.txt", b"The house." * 1000)},
        data={"target_lang": "es", "source_lang": "en"},
        headers=bearer,
        timeout=30,
    )
    assert upload.status_code == 403
    assert upload.json()["error"]["message"] == refusal("documents", "/v1/documents")
    # /v1/jobs takes texts and documents: its body says which family it needs
    texts = httpx.post(f"{url}/v1/jobs", json=body, headers=bearer, timeout=30)
    assert texts.status_code in (200, 202), texts.text
    doc = {"document": {"format": "txt", "content": "The house."}}
    document = httpx.post(
        f"{url}/v1/jobs", json={**body, "texts": None, **doc}, headers=bearer, timeout=30
    )
    assert document.status_code == 403
    assert document.json()["error"]["message"] == refusal("documents", "POST /v1/jobs")
    # LibreTranslate: the key in the body
    lt = f"{url}/libretranslate"
    for _ in range(5):  # 503 while still translating past the wait: the resend joins it
        translated = httpx.post(
            f"{lt}/translate",
            json={"q": DOG, "source": "en", "target": "es", "api_key": scoped},
            timeout=60,
        )
        if translated.status_code != 503:
            break
    assert translated.status_code == 200, translated.text
    assert "jardín" in translated.json()["translatedText"]
    file = httpx.post(
        f"{lt}/translate_file",
        files={"file": ("a.txt", b"The house.")},
        data={"source": "en", "target": "es", "api_key": scoped},
        timeout=30,
    )
    assert file.status_code == 403
    assert file.json() == {"error": refusal("documents", "/libretranslate/translate_file")}
    # Crowdin: the key in the URL; a key without translate may not install the translator
    usage_only = create_key(fleet, "usage-only", "--scope", "usage")
    crowdin = httpx.get(f"{url}/crowdin/{usage_only}/manifest.json", timeout=30)
    assert crowdin.status_code == 403
    assert crowdin.json() == {
        "error": {"message": refusal("translate", "/crowdin/{key}/manifest.json", "usage")}
    }
    assert httpx.get(f"{url}/crowdin/{scoped}/manifest.json", timeout=30).status_code == 200


def test_the_operator_sees_and_changes_a_keys_scopes(fleet: LocalFleet, scoped: str) -> None:
    assert fleet.redis_url
    parsed = parse_token(scoped)
    assert parsed is not None
    key_id = parsed[0]
    listed = mtfleet(fleet.redis_url, "keys", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    row = next(k for k in json.loads(listed.stdout) if k["id"] == key_id)
    assert row["scopes"] == ["translate"]
    table = mtfleet(fleet.redis_url, "keys", "list").stdout
    assert "\tscopes\t" in table.splitlines()[0]
    assert f"{key_id}\t" in table and "\ttranslate\tactive" in table
    bad = mtfleet(fleet.redis_url, "keys", "create", "--name", "x", "--scope", "translat")
    assert bad.returncode == 2 and "unknown scope translat" in bad.stderr
    client = deepl.DeepLClient(scoped, server_url=fleet.api_url)
    changed = mtfleet(fleet.redis_url, "keys", "set-scope", key_id, "translate,usage")
    assert changed.returncode == 0 and "may call translate,usage" in changed.stdout
    assert client.get_usage().character.valid  # now its scope
    mtfleet(fleet.redis_url, "keys", "set-scope", key_id, "translate")
    with pytest.raises(deepl.AuthorizationException):
        client.get_usage()


def test_reporting_tags_are_counted_per_tag_and_per_key(fleet: LocalFleet) -> None:
    assert fleet.redis_url
    url = fleet.api_url
    token, other = create_key(fleet, "tagged"), create_key(fleet, "other")
    client = deepl.DeepLClient(token, server_url=url)
    client.headers["X-DeepL-Reporting-Tag"] = "shop-eu"
    client.translate_text([SHIRT, TABLE], source_lang="EN", target_lang="ES")
    client.headers["X-DeepL-Reporting-Tag"] = "shop-us"
    client.translate_text(DOG, source_lang="EN", target_lang="ES")
    client.translate_text(SHIRT, source_lang="EN", target_lang="ES")  # from the phrase cache
    # /v1 under either name; an Idempotency-Key's replay is charged (and counted) once
    for _ in range(2):
        v1 = httpx.post(
            f"{url}/v1/jobs",
            json={"texts": ["The house."], "source_lang": "en", "target_lang": "es"},
            headers={
                "Authorization": f"Bearer {token}",
                "X-Reporting-Tag": "nightly import",
                "Idempotency-Key": "import-1",
            },
            timeout=30,
        )
        assert v1.status_code in (200, 202), v1.text
    with MTClient(url, api_key=token, reporting_tag="sdk") as mt:  # the SDK's own
        assert mt.translate(["The table."], source="en", target="es", timeout=60)
    untagged = httpx.post(
        f"{url}/v1/translate",
        json={"texts": ["The dog."], "source_lang": "en", "target_lang": "es"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert untagged.status_code == 200, untagged.text
    # the other key's tag stays its own
    theirs = deepl.DeepLClient(other, server_url=url)
    theirs.headers["X-DeepL-Reporting-Tag"] = "shop-eu"
    theirs.translate_text("The house is red.", source_lang="EN", target_lang="ES")

    expected = {
        "shop-eu": len(SHIRT) + len(TABLE),
        "shop-us": len(DOG) + len(SHIRT),
        "nightly import": len("The house."),
        "sdk": len("The table."),
    }
    total = sum(expected.values()) + len("The dog.")
    usage = client.get_usage()  # the official client still reads its fields
    assert usage.character.count == total and usage.character.limit is not None
    raw = httpx.get(f"{url}/v2/usage", headers={"Authorization": f"DeepL-Auth-Key {token}"})
    assert raw.status_code == 200 and raw.json()["reporting_tags"] == expected
    theirs_raw = httpx.get(f"{url}/v2/usage", headers={"Authorization": f"DeepL-Auth-Key {other}"})
    assert theirs_raw.json()["reporting_tags"] == {"shop-eu": len("The house is red.")}

    parsed = parse_token(token)
    assert parsed is not None
    key_id = parsed[0]
    cli = mtfleet(fleet.redis_url, "keys", "usage", key_id, "--json")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == {
        "id": key_id,
        "chars_today": total,
        "chars_per_tag_today": expected,
    }
    assert "shop-eu\t59" in mtfleet(fleet.redis_url, "keys", "usage", key_id).stdout
    r = redis.Redis.from_url(fleet.redis_url, decode_responses=True)
    stored = r.hgetall(keys.api_key_tags(key_id, utc_day(time.time())))
    assert {t: int(n) for t, n in stored.items()} == expected


@pytest.mark.parametrize(
    ("tag", "why"),
    [("x" * 65, "this one has 65"), ("tab\there", "some of them not printable")],
)
def test_a_bad_reporting_tag_is_refused_in_each_surfaces_shape(
    fleet: LocalFleet, scoped: str, tag: str, why: str
) -> None:
    url = fleet.api_url
    header = {"X-DeepL-Reporting-Tag": tag}
    deepl_answer = httpx.post(
        f"{url}/v2/translate",
        json={"text": [SHIRT], "target_lang": "ES"},
        headers={"Authorization": f"DeepL-Auth-Key {scoped}", **header},
        timeout=30,
    )
    assert deepl_answer.status_code == 400
    message = deepl_answer.json()["message"]
    assert message.startswith("a reporting tag (X-DeepL-Reporting-Tag) is 1-64 printable")
    assert why in message
    v1 = httpx.post(
        f"{url}/v1/translate",
        json={"texts": [SHIRT], "source_lang": "en", "target_lang": "es"},
        headers={"Authorization": f"Bearer {scoped}", "X-Reporting-Tag": tag},
        timeout=30,
    )
    assert v1.status_code == 422 and v1.json()["error"]["type"] == "invalid_input"
    lt = httpx.post(
        f"{url}/libretranslate/translate",
        json={"q": SHIRT, "source": "en", "target": "es", "api_key": scoped},
        headers=header,
        timeout=30,
    )
    assert lt.status_code == 400 and lt.json()["error"] == message
