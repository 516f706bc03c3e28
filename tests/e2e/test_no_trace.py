"""Privacy and the phrase cache per request, on a real fleet (API keys required, an Apertium
worker translating English to Spanish, webhooks to a receiver in this process), checked by
reading Redis after each request: a no-trace request leaves neither its texts nor their
translations anywhere in Redis once delivered (phrase cache, job hashes, results, ledgers,
webhook events, the broker's queues), its result reads once and then answers 410, its webhook
carries the result and takes it away; ``use_cache`` no and overwrite skip the cache's read (a
planted entry is not served) and no writes nothing, overwrite writes over; an API key made with
``mtfleet keys create --no-trace`` makes every request of it no-trace."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from mtfleet.core import keys
from mtfleet.core.apikeys import KeyStore, parse_token
from mtfleet.core.cache import PhraseCache
from mtfleet.core.registry import Registry
from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.producer.client import MTClient, MTClientError
from tests.e2e.fleet_control import APERTIUM_WORKER, cli, cli_env
from tests.e2e.webhook_receiver import Receiver

pytestmark = pytest.mark.slow

ENV = {
    "MT_HEARTBEAT_S": "1",
    "MT_AUTH": "required",
    "MT_AUTH_CACHE_S": "0",
    "MT_WEBHOOK_ALLOW_PRIVATE": "true",  # the receiver is on 127.0.0.1
    "MT_WEBHOOK_POLL_S": "0.2",
    "MT_WEBHOOK_BACKOFF_FIRST_S": "0.3",
}


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    redis.Redis.from_url(redis_server).flushdb()
    with LocalFleet(redis_url=redis_server, env=ENV) as f:
        f.start_redis()
        f.start_worker(*APERTIUM_WORKER)
        f.start_api()
        f.wait_ready(240)
        yield f


@pytest.fixture(scope="module")
def rd(fleet: LocalFleet) -> redis.Redis:
    assert fleet.redis_url
    return redis.Redis.from_url(fleet.redis_url, decode_responses=True)


@pytest.fixture(scope="module")
def token(fleet: LocalFleet) -> str:
    return fleet.create_api_key("privacy")


@pytest.fixture(scope="module")
def api(fleet: LocalFleet, token: str) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=fleet.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as client:
        yield client


def key_id(token: str) -> str:
    parsed = parse_token(token)
    assert parsed is not None
    return parsed[0]


def values(rd: redis.Redis, key: str) -> list[str]:
    """Everything a key holds, as text: a string, a hash's fields and values, a list's, a
    set's or sorted set's members, a stream's entries."""
    kind = rd.type(key)
    if kind == "string":
        return [str(rd.get(key) or "")]
    if kind == "hash":
        return [x for kv in rd.hgetall(key).items() for x in kv]
    if kind == "list":
        return list(rd.lrange(key, 0, -1))
    if kind == "set":
        return list(rd.smembers(key))
    if kind == "zset":
        return list(rd.zrange(key, 0, -1))
    if kind == "stream":
        return [json.dumps(fields) for _, fields in rd.xrange(key)]
    return []


def decoded(value: str) -> str:
    """A broker message's body is base64 inside its JSON (kombu): the text, decoded too."""
    try:
        message = json.loads(value)
    except ValueError:
        return value
    if isinstance(message, list) and message and isinstance(message[0], str):
        return value + "".join(decoded(m) for m in message if isinstance(m, str))
    if isinstance(message, dict) and isinstance(message.get("body"), str):
        try:
            return value + base64.b64decode(message["body"]).decode(errors="replace")
        except ValueError:
            return value
    return value


def where(rd: redis.Redis, *texts: str) -> list[str]:
    """The Redis keys (with the text found) that hold any of ``texts``, in a key's name or
    anything it holds."""
    found = []
    for key in rd.scan_iter(count=1000):
        held = " ".join([key, *(decoded(v) for v in values(rd, key))])
        found += [f"{key}: {t!r}" for t in texts if t in held]
    return found


def phrase_key(rd: redis.Redis, token: str, text: str) -> str:
    """Where the phrase cache keeps ``text``'s English-to-Spanish translation for this key."""
    pool = Registry(rd).pools()["apertium"]
    return PhraseCache.key(pool.fingerprint, "en", "es", text, scope=key_id(token))


def translate(api: httpx.Client, text: str, **fields: object) -> httpx.Response:
    body = {"texts": [text], "source_lang": "en", "target_lang": "es", "timeout": 60, **fields}
    return api.post("/v1/translate", json=body)


def wait_delivered(api: httpx.Client, job_id: str) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + 30
    while True:
        job = api.get(f"/v1/jobs/{job_id}").json()
        if job.get("delivered_at") is not None:
            return job  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, job
        time.sleep(0.2)


def test_a_no_trace_translation_leaves_no_text_in_redis_logs_or_metrics(
    fleet: LocalFleet, rd: redis.Redis, api: httpx.Client, token: str
) -> None:
    text = "The old fisherman repaired his green boat."
    got = translate(api, text, no_trace=True)
    assert got.status_code == 200, got.text
    answer = got.json()
    translation = answer["translations"][0]
    assert translation and translation != text and answer["id"]
    assert where(rd, text, translation) == []
    assert not rd.exists(phrase_key(rd, token, text))
    job = api.get(f"/v1/jobs/{answer['id']}").json()
    assert job["no_trace"] is True and job["delivered_at"] is not None
    again = api.get(f"/v1/jobs/{answer['id']}/result")
    assert again.status_code == 410, again.text
    error = again.json()["error"]
    assert error["type"] == "result_delivered" and "no-trace" in error["message"]
    logs = " ".join(p.log_path.read_text(errors="replace") for p in fleet.procs)
    assert text not in logs and translation not in logs
    operator = fleet.create_api_key("ops", role="operator")
    metrics = httpx.get(
        f"{fleet.api_url}/metrics", headers={"Authorization": f"Bearer {operator}"}, timeout=10
    ).text
    assert text not in metrics and translation not in metrics

    # the same text without no_trace: stored, and cached (the scan above could see it)
    plain = translate(api, text)
    assert plain.status_code == 200 and plain.json()["translations"] == [translation]
    assert where(rd, translation)
    assert rd.get(phrase_key(rd, token, text)) == translation


def test_a_no_trace_job_is_read_once_then_410(
    fleet: LocalFleet, rd: redis.Redis, api: httpx.Client, token: str
) -> None:
    texts = ["My grandmother planted three apple trees.", "The library closes at night."]
    with MTClient(fleet.api_url, api_key=token) as mt:
        job = mt.submit(texts, source="en", target="es", no_trace=True)
        assert mt.wait(job.id, timeout=60).status == "succeeded"
        assert rd.hlen(keys.job_results(job.id)) == 2  # kept until it is read
        first = mt.result(job.id)
        assert all(first.translations) and first.translations != texts
        assert where(rd, *texts, *first.translations) == []
        with pytest.raises(MTClientError) as second:
            mt.result(job.id)
        assert second.value.status == 410 and second.value.type == "result_delivered"
        seen = mt.get(job.id)
        assert seen.status == "succeeded" and seen.no_trace and seen.delivered_at is not None
    assert not rd.exists(keys.job_results(job.id))


def test_a_no_trace_jobs_webhook_carries_its_result_and_takes_it_away(
    rd: redis.Redis, api: httpx.Client, token: str
) -> None:
    key = KeyStore(rd, cache_s=0).get(key_id(token))
    assert key is not None
    receiver = Receiver([key.webhook_secret])
    try:
        text = "The baker sells fresh bread every morning."
        body = {
            "texts": [text],
            "source_lang": "en",
            "target_lang": "es",
            "no_trace": True,
            "callback_url": receiver.url("hook"),
        }
        made = api.post("/v1/jobs", json=body)
        assert made.status_code == 202, made.text
        job_id = made.json()["id"]
        receiver.wait_for(lambda: bool(receiver.delivered("hook")), 60, "the webhook")
        attempt = receiver.delivered("hook")[0]
        assert attempt.verified == "ok"
        payload = json.loads(attempt.body)
        assert payload["data"]["id"] == job_id and payload["data"]["no_trace"] is True
        translation = payload["result"]["translations"][0]
        assert translation and translation != text
        wait_delivered(api, job_id)
        gone = api.get(f"/v1/jobs/{job_id}/result")
        assert gone.status_code == 410, gone.text
        assert where(rd, text, translation) == []
        assert api.get(f"/v1/jobs/{job_id}").json()["webhook"]["state"] == "delivered"
    finally:
        receiver.close()


def test_no_trace_documents_are_downloaded_once(rd: redis.Redis, api: httpx.Client) -> None:
    page = "<p>The museum opens a new room in spring.</p>"
    made = api.post(
        "/v1/jobs",
        json={
            "document": {"format": "html", "content": page},
            "source_lang": "en",
            "target_lang": "es",
            "no_trace": True,
        },
    )
    assert made.status_code == 202, made.text
    job_id = made.json()["id"]
    api.get(f"/v1/jobs/{job_id}", params={"wait": 30})
    first = api.get(f"/v1/jobs/{job_id}/document")
    assert first.status_code == 200 and b"<p>" in first.content, first.text
    assert where(rd, "The museum opens a new room in spring.", first.text) == []
    assert not rd.exists(keys.job_document(job_id)) and not rd.exists(keys.job_rendered(job_id))
    assert api.get(f"/v1/jobs/{job_id}/document").status_code == 410
    assert api.get(f"/v1/jobs/{job_id}/result").status_code == 410
    refused = api.post(
        "/v1/jobs",
        json={
            "document": {"format": "html", "content": page},
            "target_lang": "es",
            "no_trace": True,
            "callback_url": "http://127.0.0.1:9/hook",
        },
    )
    assert refused.status_code == 422 and "callback_url" in refused.text


def test_use_cache_no_neither_reads_nor_writes_the_cache(
    rd: redis.Redis, api: httpx.Client, token: str
) -> None:
    planted_text = "The cat is black and white."
    rd.set(phrase_key(rd, token, planted_text), "PLANTED", ex=600)
    assert translate(api, planted_text).json()["translations"] == ["PLANTED"]  # yes reads it
    got = translate(api, planted_text, use_cache="no")
    assert got.status_code == 200, got.text
    assert got.json()["translations"][0] not in ("PLANTED", None)
    assert got.json()["cached"] == 0
    assert rd.get(phrase_key(rd, token, planted_text)) == "PLANTED"  # not written over

    fresh = "The small river runs behind the church."
    got = translate(api, fresh, use_cache="no")
    assert got.status_code == 200 and got.json()["translations"][0]
    assert not rd.exists(phrase_key(rd, token, fresh))


def test_use_cache_overwrite_writes_fresh_translations_over_the_cache(
    rd: redis.Redis, api: httpx.Client, token: str
) -> None:
    text = "The teacher opens the window."
    rd.set(phrase_key(rd, token, text), "STALE", ex=600)
    got = translate(api, text, use_cache="overwrite")
    assert got.status_code == 200, got.text
    fresh = got.json()["translations"][0]
    assert fresh not in ("STALE", None)
    assert rd.get(phrase_key(rd, token, text)) == fresh
    again = translate(api, text).json()
    assert again["translations"] == [fresh] and again["cached"] == 1


def test_the_default_still_caches(rd: redis.Redis, api: httpx.Client, token: str) -> None:
    text = "The children play football in the park."
    first = translate(api, text).json()
    assert first["cached"] == 0 and first["translations"][0], first
    assert rd.get(phrase_key(rd, token, text)) == first["translations"][0]
    assert translate(api, text).json()["cached"] == 1


def test_no_trace_with_overwrite_is_refused(api: httpx.Client) -> None:
    got = translate(api, "The door is open.", no_trace=True, use_cache="overwrite")
    assert got.status_code == 422
    assert "overwrite" in got.text and "no_trace" in got.text


def mtfleet_keys(fleet: LocalFleet, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mtfleet", "keys", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=cli_env(fleet),
    )


def test_a_no_trace_key_makes_every_request_no_trace(fleet: LocalFleet, rd: redis.Redis) -> None:
    made = mtfleet_keys(fleet, "create", "--name", "private", "--no-trace", "--json")
    assert made.returncode == 0, made.stderr
    created = json.loads(made.stdout)
    assert created["no_trace"] is True
    listed = mtfleet_keys(fleet, "list", "--json")
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["private"]["no_trace"] is True
    assert "no-trace" in mtfleet_keys(fleet, "list").stdout
    headers = {"Authorization": f"Bearer {created['token']}"}
    with httpx.Client(base_url=fleet.api_url, headers=headers, timeout=60) as private:
        for asked in ({}, {"no_trace": False}):  # the key's default wins
            text = f"The farmer counts his {'sheep' if asked else 'cows'} in the field."
            got = translate(private, text, **asked)
            assert got.status_code == 200, got.text
            translation = got.json()["translations"][0]
            assert where(rd, text, translation) == []
            assert private.get(f"/v1/jobs/{got.json()['id']}/result").status_code == 410
        refused = translate(private, "The door is open.", use_cache="overwrite")
        assert refused.status_code == 422 and "API key is no-trace" in refused.text
    mtfleet_keys(fleet, "delete", created["id"])


def test_the_cli_translates_no_trace_and_without_the_cache(
    fleet: LocalFleet, rd: redis.Redis, token: str, tmp_path: Path
) -> None:
    text = "The nurse walks to the hospital."
    done = cli(
        fleet, "translate", "--from", "en", "--to", "es", "--no-trace", text, MT_API_KEY=token
    )
    assert done.returncode == 0, done.stderr
    translation = done.stdout.strip()
    assert translation and translation != text
    assert where(rd, text, translation) == []

    rd.set(phrase_key(rd, token, text), "PLANTED", ex=600)
    fresh = cli(
        fleet,
        "translate",
        "--from",
        "en",
        "--to",
        "es",
        "--use-cache",
        "no",
        text,
        MT_API_KEY=token,
    )
    assert fresh.returncode == 0 and fresh.stdout.strip() == translation
    lines = tmp_path / "notes.txt"
    lines.write_text("The pharmacy is next to the bank.\n")
    sent = cli(
        fleet,
        "submit",
        str(lines),
        "--to",
        "es",
        "--from",
        "en",
        "--no-trace",
        "--out",
        str(tmp_path / "out"),
        MT_API_KEY=token,
    )
    assert sent.returncode == 0, sent.stderr
    written = (tmp_path / "out" / "notes.es.txt").read_text().strip()
    assert written and written != "The pharmacy is next to the bank."
    assert where(rd, "The pharmacy is next to the bank.", written) == []
    bad = cli(fleet, "translate", "--to", "es", "--use-cache", "maybe", text, MT_API_KEY=token)
    assert bad.returncode == 2 and "maybe" in bad.stderr


def test_an_upload_asks_for_no_trace_in_its_form(rd: redis.Redis, api: httpx.Client) -> None:
    text = "The garden gate is painted blue."
    made = api.post(
        "/v1/documents",
        files={"file": ("note.txt", text.encode(), "text/plain")},
        data={"source_lang": "en", "target_lang": "es", "no_trace": "true"},
    )
    assert made.status_code == 202, made.text
    job_id = made.json()["id"]
    assert made.json()["no_trace"] is True
    api.get(f"/v1/jobs/{job_id}", params={"wait": 30})
    first = api.get(f"/v1/jobs/{job_id}/document")
    assert first.status_code == 200, first.text
    assert where(rd, text, first.text.strip()) == []
    assert api.get(f"/v1/jobs/{job_id}/document").status_code == 410
    bad = api.post(
        "/v1/documents",
        files={"file": ("note.txt", text.encode(), "text/plain")},
        data={"target_lang": "es", "use_cache": "sometimes"},
    )
    assert bad.status_code == 422 and "'overwrite'" in bad.text


def test_deepls_client_with_a_no_trace_key(fleet: LocalFleet, rd: redis.Redis) -> None:
    """DeepL has no such option: a no-trace key gives its client the same answers, twice for
    the same text (the drop-in's resend record goes with the result), and leaves nothing."""
    import deepl

    store = KeyStore(rd, cache_s=0)
    key, token = store.create("deepl-private", no_trace=True)
    try:
        client = deepl.DeepLClient(token, server_url=fleet.api_url)
        text = "The bridge over the river is very old."
        first = client.translate_text(text, source_lang="EN", target_lang="ES")
        again = client.translate_text(text, source_lang="EN", target_lang="ES")
        assert first.text == again.text and first.text != text
        assert where(rd, text, first.text) == []

        page = b"<p>The lighthouse keeper writes a long letter.</p>"
        handle = client.translate_document_upload(
            io.BytesIO(page), source_lang="EN", target_lang="ES", filename="letter.html"
        )
        deadline = time.monotonic() + 60
        while not client.translate_document_get_status(handle).done:
            assert time.monotonic() < deadline
            time.sleep(0.3)
        out = io.BytesIO()
        client.translate_document_download(handle, out)
        assert b"<p>" in out.getvalue() and out.getvalue() != page
        inner = out.getvalue().decode().removeprefix("<p>").split("</p>")[0]
        assert where(rd, "The lighthouse keeper writes a long letter.", inner) == []
        with pytest.raises(deepl.DeepLException):  # downloaded once, as DeepL deletes it
            client.translate_document_download(handle, io.BytesIO())
    finally:
        store.delete(key.id)
