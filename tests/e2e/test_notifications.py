"""A job's end reaches its owner: webhooks and the event stream, on real processes.

One fleet for the module: a private Redis with AOF, a real ``mtfleet api`` (API keys on, so each
key signs with its own secret), a worker running the benchmarks' cost-model engine (20 ms steps,
output ``<es> text``), and a webhook receiver in the test process that verifies every attempt
with ``standardwebhooks`` and fails the first ones as told. Test settings: backoff from 0.3 s,
at most 2 s; pings every 0.5 s. The Redis kill is last: it restarts Redis under the fleet.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.api.app import create_app
from mtfleet.core import keys
from mtfleet.core.apikeys import KeyStore, new_webhook_secret
from mtfleet.core.schemas import JobPublic
from mtfleet.core.settings import Settings
from mtfleet.fleet.localfleet import LocalFleet, redis_server_command
from mtfleet.producer.client import MTClient
from tests.e2e.fleet_control import worker_paused
from tests.e2e.webhook_receiver import Attempt, Receiver
from tests.integration.costfleet import COST_ENGINE
from tests.integration.test_faults import kill_while_holding
from tests.support import in_process

pytestmark = pytest.mark.slow

ENV = {
    **COST_ENGINE,
    "MT_AUTH": "required",
    "MT_WEBHOOK_ALLOW_PRIVATE": "true",  # the receiver is on 127.0.0.1
    "MT_WEBHOOK_BACKOFF_FIRST_S": "0.3",
    "MT_WEBHOOK_BACKOFF_MAX_S": "2",
    "MT_WEBHOOK_POLL_S": "0.2",
    "MT_WEBHOOK_TIMEOUT_S": "5",
    "MT_SSE_PING_S": "0.5",
    "MT_SSE_PROGRESS_S": "0.2",
    "MT_CHUNK_SIZE": "32",
    "MTBENCH_MAX_NUM_SEQS": "64",
    # a killed worker's chunks come back within seconds
    "MT_VISIBILITY_TIMEOUT_S": "10",
    "MT_RESTORE_INTERVAL_S": "1",
    "MT_RECONCILE_INTERVAL_S": "1",
}


@pytest.fixture(scope="module")
def fleet() -> Iterator[LocalFleet]:
    with LocalFleet(env=ENV) as f:
        f.start_redis()  # private, appendonly yes
        f.start_api()
        f.start_worker("--lanes", "interactive,bulk")  # last: the kill helper's procs[-1]
        f.wait_ready(60)
        yield f


@pytest.fixture(scope="module")
def rd(fleet: LocalFleet) -> redis.Redis:
    assert fleet.redis_url
    return redis.Redis.from_url(fleet.redis_url, decode_responses=True)


@pytest.fixture(scope="module")
def token(fleet: LocalFleet) -> str:
    return fleet.create_api_key("notifications")


@pytest.fixture(scope="module")
def scrape(fleet: LocalFleet) -> Callable[[], str]:
    """The API's /metrics, read with an operator key (it is an operator's)."""
    headers = {"Authorization": f"Bearer {fleet.create_api_key('ops', role='operator')}"}
    return lambda: httpx.get(f"{fleet.api_url}/metrics", headers=headers, timeout=10).text


@pytest.fixture(scope="module")
def receiver(rd: redis.Redis, token: str) -> Iterator[Receiver]:
    key = KeyStore(rd, cache_s=0).get(token.split("_")[1])
    assert key is not None and key.webhook_secret.startswith("whsec_")
    rec = Receiver([key.webhook_secret])
    yield rec
    rec.close()


@pytest.fixture(scope="module")
def api(fleet: LocalFleet, token: str) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=fleet.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    ) as client:
        yield client


def submit(
    api: httpx.Client, texts: list[str], callback: str | None = None, lane: str = "bulk"
) -> str:
    body = {"texts": texts, "source_lang": "en", "target_lang": "es", "lane": lane}
    if callback:
        body["callback_url"] = callback
    resp = api.post("/v1/jobs", json=body)
    assert resp.status_code in (200, 202), resp.text  # 200: answered from the phrase cache
    return str(resp.json()["id"])


def one_event_verified(attempts: list[Attempt], job_id: str) -> dict:  # type: ignore[type-arg]
    """Every attempt of a job's webhook: one webhook-id, verified, the same bytes; its body."""
    assert attempts
    assert {a.webhook_id for a in attempts} == {f"msg_{job_id}_succeeded"}
    assert [a.verified for a in attempts] == ["ok"] * len(attempts)
    assert len({a.body for a in attempts}) == 1
    assert all(a.headers["content-type"] == "application/json" for a in attempts)
    payload: dict = json.loads(attempts[0].body)  # type: ignore[type-arg]
    assert payload["type"] == "job.succeeded" and payload["data"]["id"] == job_id
    return payload


def settled_hook(client: httpx.Client, job_id: str, timeout: float) -> dict:  # type: ignore[type-arg]
    """The job's webhook once it is no longer pending. The receiver records an attempt before it
    answers, so the sender records the outcome on the job a moment after the receiver saw it."""
    deadline = time.monotonic() + timeout
    while (hook := client.get(f"/v1/jobs/{job_id}").json()["webhook"])["state"] == "pending":
        assert time.monotonic() < deadline, hook
        time.sleep(0.1)
    return hook  # type: ignore[no-any-return]


def metric(text: str, line_start: str) -> float:
    return sum(float(x.rsplit(" ", 1)[1]) for x in text.splitlines() if x.startswith(line_start))


def test_submission_refuses_private_targets_and_jobs_with_nothing_to_sign_with(
    fleet: LocalFleet, rd: redis.Redis, api: httpx.Client
) -> None:
    """Without MT_WEBHOOK_ALLOW_PRIVATE a private or loopback callback is a 422 naming the
    address; a key with no secret (made before webhooks) is told how to get one, and the CLI
    gives it one; MT_AUTH=off without MT_WEBHOOK_SECRET refuses callbacks."""
    assert fleet.redis_url
    strict = Settings(redis_url=fleet.redis_url, auth="off", webhook_secret=new_webhook_secret())  # type: ignore[arg-type]
    with TestClient(create_app(in_process(strict))) as app:
        for url, why in (
            ("http://127.0.0.1:9/hook", "loopback"),
            ("http://localhost/hook", "loopback"),
            ("http://[::1]/hook", "loopback"),
            ("http://10.0.0.7/hook", "private"),
            ("http://169.254.169.254/latest", "link-local"),
        ):
            resp = app.post(
                "/v1/jobs",
                json={
                    "texts": ["a"],
                    "source_lang": "en",
                    "target_lang": "es",
                    "callback_url": url,
                },
            )
            assert resp.status_code == 422, resp.text
            err = resp.json()["error"]
            assert err["type"] == "invalid_callback_url" and why in err["message"], err
        # the same on /v1/translate, even for texts the phrase cache could answer at once
        resp = app.post(
            "/v1/translate",
            json={
                "texts": ["Summer sale"],
                "source_lang": "en",
                "target_lang": "es",
                "callback_url": "http://127.0.0.1:9/hook",
            },
        )
        assert resp.status_code == 422 and "loopback" in resp.text, resp.text
        resp = app.post(
            "/v1/jobs",
            json={"texts": ["a"], "source_lang": "en", "target_lang": "es", "callback_url": "x"},
        )
        assert resp.status_code == 422 and "http" in resp.json()["error"]["message"]
    with TestClient(create_app(in_process(Settings(redis_url=fleet.redis_url, auth="off")))) as app:
        resp = app.post(
            "/v1/translate",
            json={
                "texts": ["a"],
                "source_lang": "en",
                "target_lang": "es",
                "callback_url": "https://hooks.example.com/x",
            },
        )
        assert resp.status_code == 422 and "MT_WEBHOOK_SECRET" in resp.text
    # a key without a secret (as made before webhooks): refused, then given one by the operator
    legacy = fleet.create_api_key("legacy")
    key_id = legacy.split("_")[1]
    rd.hdel(keys.api_key(key_id), "webhook_secret")
    body = {
        "texts": ["a"],
        "source_lang": "en",
        "target_lang": "es",
        "callback_url": "http://127.0.0.1:9/x",
    }
    auth = {"Authorization": f"Bearer {legacy}"}
    resp = api.post("/v1/jobs", json=body, headers=auth)
    assert resp.status_code == 422 and f"rotate-webhook-secret {key_id}" in resp.text
    cli = subprocess.run(
        [sys.executable, "-m", "mtfleet", "keys", "rotate-webhook-secret", key_id],
        env={**os.environ, **fleet.env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.strip() == rd.hget(keys.api_key(key_id), "webhook_secret")  # the current
    resp = api.post("/v1/jobs", json=body, headers=auth)
    assert resp.status_code == 202, resp.text
    purged = resp.json()["id"]
    api.delete(f"/v1/jobs/{purged}", params={"purge": "true"}, headers=auth)
    # its event goes with it, whether the job had ended (due to 127.0.0.1:9) or not
    assert (
        not rd.exists(keys.webhook(purged)) and rd.zscore(keys.webhooks_due(key_id), purged) is None
    )


def test_a_worker_killed_mid_job_still_gives_one_webhook_id_per_job_and_identical_bodies(
    fleet: LocalFleet,
    rd: redis.Redis,
    api: httpx.Client,
    receiver: Receiver,
    scrape: Callable[[], str],
) -> None:
    """Done-when: kill -9 of the worker twice while two jobs run; the receiver fails the first
    attempts (500, then 429 with Retry-After: 1, then 200). Each job: exactly one distinct
    webhook-id, every attempt verified by standardwebhooks, identical bodies, Retry-After
    honoured; the attempts are on the job and in the metrics."""
    jobs = {}
    for n in range(2):
        url = receiver.script(f"kill/{n}", 500, (429, {"Retry-After": "1"}))
        texts = [f"line {i} of job {n} that survives kills" for i in range(1200)]
        jobs[submit(api, texts, url)] = f"kill/{n}"
    first = next(iter(jobs))
    kill_while_holding(fleet, api, rd, first, kills=2, within_s=120, mid_batch_s=0.3, pause_s=1.5)  # type: ignore[arg-type]
    receiver.wait_for(
        lambda: all(receiver.delivered(p) for p in jobs.values()), 180, "both delivered"
    )
    for job_id, path in jobs.items():
        attempts = receiver.attempts[path]
        assert [a.answered for a in attempts] == [500, 429, 200], attempts
        payload = one_event_verified(attempts, job_id)
        assert payload["data"]["progress"] == {"done": 1200, "failed": 0, "total": 1200}
        assert payload["data"]["links"]["result"] == f"/v1/jobs/{job_id}/result"
        assert attempts[2].at - attempts[1].at >= 0.9  # Retry-After: 1 (a lower bound)
        assert int(attempts[0].headers["webhook-timestamp"]) <= int(
            attempts[2].headers["webhook-timestamp"]
        )
        assert api.get(f"/v1/jobs/{job_id}").json()["callback_url"] == receiver.url(path)
        hook = settled_hook(api, job_id, 30)
        assert hook["state"] == "delivered" and hook["attempts"] == 3, hook
        assert hook["last_status"] == 200 and hook["delivered_at"] >= hook["last_attempt_at"] - 1
        assert hook["id"] == f"msg_{job_id}_succeeded" and hook["next_attempt_at"] is None
        assert rd.hlen(keys.job_results(job_id)) == 1200
    text = scrape()
    assert metric(text, 'mt_webhook_attempts_total{outcome="delivered"}') >= 2
    assert metric(text, 'mt_webhook_attempts_total{outcome="http_error"}') >= 4
    assert metric(text, "mt_webhooks_pending ") == 0


def test_a_410_stops_the_attempts(
    rd: redis.Redis, api: httpx.Client, receiver: Receiver, token: str
) -> None:
    url = receiver.script("gone", 410)
    job_id = submit(api, ["Red shoes", "Blue hat"], url)
    receiver.wait_for(lambda: bool(receiver.attempts["gone"]), 60, "the first attempt")
    hook = settled_hook(api, job_id, 30)
    assert hook["state"] == "gone" and hook["attempts"] == 1 and hook["last_status"] == 410
    assert rd.zscore(keys.webhooks_due(token.split("_")[1]), job_id) is None  # nothing more
    assert len(receiver.attempts["gone"]) == 1


def test_translate_with_a_callback_makes_a_job_even_when_the_cache_answers_it(
    api: httpx.Client, receiver: Receiver
) -> None:
    body = {"texts": ["Summer sale", "Winter sale"], "source_lang": "en", "target_lang": "es"}
    first = api.post("/v1/translate", json=body)  # translated by the worker, cached
    assert first.status_code == 200 and first.json()["cached"] == 0, first.text
    url = receiver.script("translate")
    again = api.post("/v1/translate", json={**body, "callback_url": url})
    answer = again.json()
    assert again.status_code == 200 and answer["cached"] == 2 and answer["id"], answer
    receiver.wait_for(lambda: bool(receiver.delivered("translate")), 60, "the event")
    payload = one_event_verified(receiver.attempts["translate"], answer["id"])
    assert payload["data"]["cached"] == 2


def test_translate_that_turns_async_and_a_document_upload_each_get_their_webhook(
    fleet: LocalFleet, api: httpx.Client, receiver: Receiver
) -> None:
    translate_url, doc_url = receiver.script("translate-202"), receiver.script("document")
    body = {
        "texts": ["The late parcel", "The slow train"],
        "source_lang": "en",
        "target_lang": "es",
        "timeout": 0.5,
        "callback_url": translate_url,
    }
    with worker_paused(fleet):  # nothing is translated: the request's wait runs out
        waited = api.post("/v1/translate", json=body)
        assert waited.status_code == 202, waited.text
        doc = api.post(
            "/v1/documents",
            data={"target_lang": "es", "source_lang": "en", "callback_url": doc_url},
            files={"file": ("notes.md", b"# The red shirt\n\nThe blue house.\n", "text/markdown")},
        )
        assert doc.status_code == 202, doc.text
        assert not receiver.attempts["translate-202"] and not receiver.attempts["document"]
    for name, job_id in (("translate-202", waited.json()["id"]), ("document", doc.json()["id"])):
        receiver.wait_for(lambda n=name: bool(receiver.delivered(n)), 60, f"the {name} event")
        payload = one_event_verified(receiver.attempts[name], job_id)
        assert payload["data"]["status"] == "succeeded"
    assert payload["data"]["links"]["document"] == f"/v1/jobs/{doc.json()['id']}/document"


def test_a_deepl_document_upload_with_a_callback_gets_its_webhook(
    fleet: LocalFleet, token: str, receiver: Receiver
) -> None:
    """DeepL's document upload takes mtfleet's ``callback_url`` form field (an extension):
    the document job's final state is POSTed, signed, like any job's."""
    url = receiver.script("deepl-doc", 500)  # one failure first: retried, same event
    resp = httpx.post(
        f"{fleet.api_url}/v2/document",
        headers={"Authorization": f"DeepL-Auth-Key {token}"},
        data={"target_lang": "ES", "source_lang": "EN", "callback_url": url},
        files={"file": ("notes.txt", b"The red shirt.\nThe blue house.\n", "text/plain")},
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    job_id = resp.json()["document_id"]
    receiver.wait_for(lambda: bool(receiver.delivered("deepl-doc")), 60, "the document's event")
    payload = one_event_verified(receiver.attempts["deepl-doc"], job_id)
    assert len(receiver.attempts["deepl-doc"]) == 2
    assert payload["data"]["links"]["document"] == f"/v1/jobs/{job_id}/document"
    refused = httpx.post(
        f"{fleet.api_url}/v2/document",
        headers={"Authorization": f"DeepL-Auth-Key {token}"},
        data={"target_lang": "ES", "callback_url": "ftp://example.com/x"},
        files={"file": ("notes.txt", b"The red shirt.\n", "text/plain")},
        timeout=30,
    )
    assert refused.status_code == 400 and "callback_url" in refused.json()["message"]


def test_a_keys_slow_receiver_holds_only_its_share_of_the_delivery_slots(
    fleet: LocalFleet, rd: redis.Redis
) -> None:
    """Key A's receiver stops answering while 24 of A's jobs end; key B's webhook, due after all
    of A's, is delivered while A's first attempts still hang: A holds at most its share of the
    API's 16 delivery slots and the keys take turns at the outbox, so B does not wait for A's
    attempts to time out (before: B's event came after 16 of A's attempts, 0.8 s -> 42.7 s)."""
    tokens = {name: fleet.create_api_key(name, rate="none") for name in ("flood", "quiet")}
    secrets = [KeyStore(rd, cache_s=0).get(t.split("_")[1]) for t in tokens.values()]
    rec = Receiver([key.webhook_secret for key in secrets if key is not None])
    clients = {
        name: httpx.Client(
            base_url=fleet.api_url, headers={"Authorization": f"Bearer {t}"}, timeout=60
        )
        for name, t in tokens.items()
    }
    try:
        slow = rec.stall("slow")
        flood = [submit(clients["flood"], [f"flooded line {i}"], slow) for i in range(24)]
        for job_id in flood:  # every one of A's events is due before B's job is made
            final = clients["flood"].get(f"/v1/jobs/{job_id}", params={"wait": 30}).json()
            assert final["status"] == "succeeded", final
        rec.wait_for(lambda: len(rec.attempts["slow"]) >= 4, 30, "A's first attempts")
        quiet = submit(clients["quiet"], ["the quiet key's line"], rec.url("quiet"))
        rec.wait_for(lambda: bool(rec.attempts["quiet"]), 60, "B's webhook")
        # A's attempts hang until they time out: had A all 16 slots, B's would come after them
        assert len(rec.attempts["slow"]) < 16, len(rec.attempts["slow"])
        one_event_verified(rec.attempts["quiet"], quiet)
        rec.release("slow")
        for job_id in flood:  # nothing of A's is lost: each is delivered once it answers
            hook = settled_hook(clients["flood"], job_id, 60)
            assert hook["state"] == "delivered", hook
    finally:
        rec.close()
        for client in clients.values():
            client.close()


def read_events(resp: httpx.Response, stop_after: int | None = None) -> list[dict[str, str]]:
    """The stream's blocks as field -> value (a comment as ``comment``), as a client reads the
    raw lines; stops after ``stop_after`` progress events (the connection is then dropped)."""
    blocks: list[dict[str, str]] = []
    block: dict[str, str] = {}
    progress = 0
    for line in resp.iter_lines():
        if line == "":
            if block:
                blocks.append(block)
                progress += block.get("event") == "job.progress"
                if stop_after is not None and progress >= stop_after:
                    return blocks
            block = {}
            continue
        name, _, value = line.partition(":")
        block["comment" if name == "" else name] = value.strip()
    if block:
        blocks.append(block)
    return blocks


def test_the_event_stream_gives_progress_pings_a_final_event_and_resumes(
    fleet: LocalFleet, api: httpx.Client
) -> None:
    job_id = submit(api, [f"line {i} of a streamed job" for i in range(1500)])
    path = f"/v1/jobs/{job_id}/events"
    with api.stream("GET", path) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        assert resp.headers["cache-control"] == "no-store"
        assert resp.headers["x-accel-buffering"] == "no"
        before = read_events(resp, stop_after=4)  # then the client goes away mid-stream
    progress = [b for b in before if b.get("event") == "job.progress"]
    assert before[0]["retry"] == "3000" and len(progress) == 4
    seen = [int(b["id"]) for b in progress]
    assert seen == sorted(seen)
    pings = [b for b in before if "comment" in b]
    assert pings and all(set(p) == {"comment"} for p in pings)  # no id on a ping
    last = progress[-1]["id"]
    with api.stream("GET", path, headers={"Last-Event-ID": last}) as resp:
        after = read_events(resp)  # to the end: the server closes after the final event
    events = [b for b in after if "event" in b]
    assert events[-1]["event"] == "job.succeeded" and events[-1]["id"] == "final"
    final = JobPublic.model_validate_json(events[-1]["data"])
    assert final.progress.done == 1500 and final.final
    resumed = [int(b["id"]) for b in events[:-1]]
    assert all(i > int(last) for i in resumed)  # nothing the client had, nothing skipped back
    assert resumed == sorted(resumed)
    assert api.get(path, headers={"Last-Event-ID": "final"}).status_code == 204
    with api.stream("GET", path) as resp:  # a finished job: its final event, then the end
        again = [b for b in read_events(resp) if "event" in b]
    assert [b["event"] for b in again] == ["job.succeeded"]
    assert api.get(f"/v1/jobs/{'0' * 32}/events").status_code == 404


def test_mtfleet_submit_follows_the_event_stream_instead_of_polling(
    fleet: LocalFleet, token: str, tmp_path: Path, scrape: Callable[[], str]
) -> None:
    lines = [f"Catalogue line {i}" for i in range(1500)]
    (tmp_path / "catalogue.txt").write_text("\n".join(lines) + "\n")

    def requests(route: str) -> float:
        text = scrape()
        return metric(text, f'mt_api_request_seconds_count{{method="GET",route="{route}"')

    streams, polls = requests("/v1/jobs/{job_id}/events"), requests("/v1/jobs/{job_id}")
    args = ["submit", "catalogue.txt", "--to", "es", "--from", "en", "--out", "out"]
    proc = subprocess.run(
        [sys.executable, "-m", "mtfleet", *args],
        cwd=tmp_path,
        env={**os.environ, **fleet.env, "MT_API_URL": fleet.api_url, "MT_API_KEY": token},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    out = (tmp_path / "out" / "catalogue.es.txt").read_text().splitlines()
    assert out == [f"<es> {line}" for line in lines]
    assert requests("/v1/jobs/{job_id}/events") > streams
    assert requests("/v1/jobs/{job_id}") - polls <= 3  # a look before, the result after


def test_the_api_killed_while_an_event_is_pending_delivers_it_after_restart(
    fleet: LocalFleet, api: httpx.Client, receiver: Receiver, token: str, scrape: Callable[[], str]
) -> None:
    """kill -9 of the API with a webhook pending (the receiver answering 503): the restarted
    API delivers it, same id and bytes. An SDK client following another job's event stream
    through the kill reconnects (Last-Event-ID) and gets the final state."""
    url = receiver.script("api-kill", *[(503, {"Retry-After": "1"})] * 1000)
    followed = submit(api, [f"line {i} followed through a restart" for i in range(3000)])
    seen: list[JobPublic] = []
    got: dict[str, JobPublic] = {}

    def follow() -> None:
        with MTClient(fleet.api_url, api_key=token) as mt:
            got["job"] = mt.wait(followed, timeout=180, on_progress=seen.append)

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    job_id = submit(api, ["Green shoes", "Grey hat"], url, lane="interactive")  # not behind it
    receiver.wait_for(lambda: bool(receiver.attempts["api-kill"]), 60, "a first attempt")
    api_proc = next(p for p in fleet.procs if p.name == "api")
    os.kill(api_proc.popen.pid, signal.SIGKILL)
    api_proc.popen.wait()
    assert not got, "the followed job ended before the kill"
    receiver.scripts["api-kill"].clear()  # the receiver is healthy again: 200 from now on
    assert fleet.restart_dead() and not receiver.delivered("api-kill")
    receiver.wait_for(lambda: bool(receiver.delivered("api-kill")), 120, "delivered after restart")
    attempts = receiver.attempts["api-kill"]
    one_event_verified(attempts, job_id)
    assert len(receiver.delivered("api-kill")) == 1
    follower.join(180)
    assert got["job"].status.value == "succeeded" and got["job"].progress.done == 3000
    settled = [j.progress.done + j.progress.failed for j in seen]
    assert settled == sorted(settled) and seen[-1].final
    # the restarted process's own counts: the follower came back on the stream (a stream is
    # counted when the server has closed it, which may be just after the client has read it)
    streams = 'mt_api_request_seconds_count{method="GET",route="/v1/jobs/{job_id}/events"'
    deadline = time.monotonic() + 10
    while metric(scrape(), streams) < 1:
        assert time.monotonic() < deadline, "the follower did not come back on the stream"
        time.sleep(0.1)


def test_redis_killed_and_restarted_from_its_aof_loses_no_event(
    fleet: LocalFleet, api: httpx.Client, receiver: Receiver
) -> None:
    """kill -9 of redis-server (AOF, fsync every second) with a webhook pending: after the
    restart the event is still there and is delivered, same id and bytes. Last: it restarts
    the fleet's Redis."""
    url = receiver.script("redis-kill", *[(503, {})] * 1000)
    job_id = submit(api, ["Pink shoes", "Black hat"], url)
    receiver.wait_for(lambda: bool(receiver.attempts["redis-kill"]), 60, "a first attempt")
    time.sleep(1.5)  # past the AOF's one-second fsync
    redis_proc = next(p for p in fleet.procs if p.name == "redis")
    os.kill(redis_proc.popen.pid, signal.SIGKILL)
    redis_proc.popen.wait()
    assert fleet.redis_url
    port = int(fleet.redis_url.rsplit(":", 1)[1].split("/")[0])
    receiver.scripts["redis-kill"].clear()
    time.sleep(0.5)
    fleet._spawn("redis-restarted", redis_server_command(port, fleet.workdir, appendonly=True))
    receiver.wait_for(
        lambda: bool(receiver.delivered("redis-kill")), 120, "delivered after restart"
    )
    one_event_verified(receiver.attempts["redis-kill"], job_id)
    assert len(receiver.delivered("redis-kill")) == 1
