"""Webhooks without servers: the outbox scripts on fakeredis (one event per final job, written
by the script that makes it final; claims and leases; attempts), the body built once, Standard
Webhooks signatures as the ``standardwebhooks`` library checks them, secrets and their
rotation, backoff and Retry-After, and which targets are refused.

The deliveries themselves, under kill -9 of a worker, the API and Redis, are in
tests/e2e/test_notifications.py."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import random
import re
import time
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import TypeVar

import fakeredis
import httpx
import pytest
from standardwebhooks import Webhook

from mtfleet.api import metrics
from mtfleet.api.webhooks import targets
from mtfleet.api.webhooks.deliverer import WebhookDeliverer, signature
from mtfleet.core import keys
from mtfleet.core.apikeys import KeyStore, check_webhook_secret, new_webhook_secret
from mtfleet.core.backoff import Backoff, retry_after_s
from mtfleet.core.models import JobStatus, Lane, Progress, SegmentOutcome
from mtfleet.core.outbox import WebhookOutbox, pending
from mtfleet.core.settings import Settings
from mtfleet.core.store import JobRecord, JobStore, new_job_id

T = TypeVar("T")
SERVER = fakeredis.FakeServer()
OWNER = "0123456789abcdef"  # the API key of make_job's jobs
DUE = keys.webhooks_due(OWNER)  # its events' due times


@pytest.fixture
def r() -> fakeredis.FakeRedis:
    client = fakeredis.FakeRedis(server=SERVER, decode_responses=True)
    client.flushall()
    return client


def aclient() -> fakeredis.FakeAsyncRedis:
    return fakeredis.FakeAsyncRedis(server=SERVER, decode_responses=True)


def run(step: Awaitable[T]) -> T:
    """An event-loop step (the deliverer's, submission's) from plain test code."""

    async def go() -> T:
        return await step

    return asyncio.run(go())


@pytest.fixture
def store(r: fakeredis.FakeRedis) -> JobStore:
    return JobStore(r, result_ttl_s=3600)


@pytest.fixture
def outbox(r: fakeredis.FakeRedis) -> WebhookOutbox:
    return WebhookOutbox(r, aclient(), kept_s=3600)  # type: ignore[arg-type]


def make_job(
    store: JobStore,
    total: int = 2,
    *,
    callback: str | None = "https://hooks.example.com/mt",
    cached: int = 0,
    owner: str = "0123456789abcdef",
) -> str:
    now = time.time()
    final = cached == total
    job = JobRecord(
        id=new_job_id(),
        status=JobStatus.succeeded if final else JobStatus.queued,
        source_lang="en",
        target_lang="es",
        lane=Lane.bulk,
        progress=Progress(done=cached, failed=0, total=total),
        cached=cached,
        created_at=now,
        finished_at=now if final else None,
        chunks=1,
        owner=owner,
        callback_url=callback,
    )
    outcomes = {i: SegmentOutcome(translation=f"t{i}", cached=True) for i in range(cached)}
    store.create(job, cached=outcomes, ledger={} if final else {0: "{}"})
    return job.id


def finish(store: JobStore, job_id: str, *, failed: bool = False) -> None:
    outcome = SegmentOutcome(error={"type": "x", "message": "y"}) if failed else None
    store.record(
        job_id,
        [(0, SegmentOutcome(translation="a")), (1, outcome or SegmentOutcome(translation="b"))],
        chunk=0,
    )


# -- the outbox: written with the final state, once --------------------------------------------
def test_a_job_with_a_callback_gets_one_event_when_it_becomes_final(
    store: JobStore, outbox: WebhookOutbox, r: fakeredis.FakeRedis
) -> None:
    job_id = make_job(store)
    assert run(outbox.event(job_id)) is None
    assert outbox.public(store.get(job_id)).state == "waiting"  # type: ignore[union-attr]
    finish(store, job_id, failed=True)
    event = run(outbox.event(job_id))
    assert event is not None
    assert event.webhook_id == f"msg_{job_id}_partial" and event.type == "job.partial"
    assert event.url == "https://hooks.example.com/mt" and event.owner == OWNER
    assert event.snapshot["status"] == "partial" and event.snapshot["failed"] == "1"
    assert r.zscore(DUE, job_id) is not None
    # a redelivered chunk's write changes nothing: still one event, the same
    finish(store, job_id)
    assert run(outbox.event(job_id)) == event
    assert r.zcard(DUE) == 1


def test_no_callback_no_event_and_a_job_failed_for_a_503_sends_none(
    store: JobStore, outbox: WebhookOutbox, r: fakeredis.FakeRedis
) -> None:
    plain = make_job(store, callback=None)
    finish(store, plain)
    refused = make_job(store)  # the client was answered 503: "not accepted"
    store.fail(refused, {"type": "unavailable", "message": "broker"}, notify=False)
    dead = make_job(store)  # a worker failing a job it cannot run: the client hears of it
    store.fail(dead, {"type": "dead_lettered", "message": "malformed"})
    assert run(outbox.event(plain)) is None and run(outbox.event(refused)) is None
    event = run(outbox.event(dead))
    assert event is not None and event.type == "job.failed"
    assert json.loads(event.snapshot["error"])["type"] == "dead_lettered"
    assert r.zcard(DUE) == 1


def test_cancelled_and_answered_at_submission_jobs_get_their_event(
    store: JobStore, outbox: WebhookOutbox
) -> None:
    cancelled = make_job(store)
    store.cancel(cancelled)
    cached = make_job(store, cached=2)  # every text from the phrase cache: final at creation
    assert run(outbox.event(cancelled)).type == "job.cancelled"  # type: ignore[union-attr]
    assert run(outbox.event(cached)).type == "job.succeeded"  # type: ignore[union-attr]


def test_the_body_is_built_once_and_says_what_the_receiver_needs(
    store: JobStore, outbox: WebhookOutbox, r: fakeredis.FakeRedis
) -> None:
    job_id = make_job(store)
    finish(store, job_id)
    event = run(outbox.event(job_id))
    assert event is not None and event.body is None
    body = run(outbox.body(event))
    assert run(outbox.body(event)) == body  # a second deliverer reads the stored bytes
    # the job's data expires (its TTL runs out while the receiver is down): the event keeps
    # what it sends
    r.delete(*(k for k in keys.job_all(job_id) if k != keys.webhook(job_id)))
    stored = run(outbox.event(job_id))
    assert stored is not None and stored.body == body
    payload = json.loads(body)
    assert payload["type"] == "job.succeeded"
    assert payload["timestamp"].endswith("Z")
    data = payload["data"]
    assert data["id"] == job_id and data["status"] == "succeeded"
    assert data["progress"] == {"done": 2, "failed": 0, "total": 2}
    assert data["links"] == {
        "job": f"/v1/jobs/{job_id}",
        "result": f"/v1/jobs/{job_id}/result",
        "events": f"/v1/jobs/{job_id}/events",
    }
    assert "callback_url" not in data and "owner" not in data


def test_a_purge_takes_the_jobs_event_with_it_delivered_or_not(
    store: JobStore, outbox: WebhookOutbox, r: fakeredis.FakeRedis
) -> None:
    job_id = make_job(store)
    finish(store, job_id)
    assert run(outbox.event(job_id)) is not None and r.zscore(DUE, job_id) is not None
    store.purge(job_id)
    assert run(outbox.event(job_id)) is None and r.zscore(DUE, job_id) is None


def test_claims_lease_events_and_attempts_end_them(
    store: JobStore, outbox: WebhookOutbox, r: fakeredis.FakeRedis
) -> None:
    job_id = make_job(store)
    finish(store, job_id)
    now = time.time()
    assert claim(outbox, now) == [(job_id, OWNER)]
    assert claim(outbox, now + 1) == []  # leased: nobody else takes it
    assert claim(outbox, now + 31) == [(job_id, OWNER)]  # its deliverer died: due again
    state = run(
        outbox.record(
            job_id, OWNER, "retry", now=now, status=500, error="HTTP 500", next_at=now + 5
        )
    )
    assert state == "pending" and r.zscore(DUE, job_id) == now + 5
    view = outbox.public(store.get(job_id))
    assert view is not None and view.attempts == 1 and view.last_status == 500
    assert view.next_attempt_at == now + 5 and view.id == f"msg_{job_id}_succeeded"
    assert run(outbox.record(job_id, OWNER, "delivered", now=now + 6, status=204)) == "delivered"
    assert r.zscore(DUE, job_id) is None and r.ttl(keys.webhook(job_id)) > 0
    # a late failure of an attempt whose lease had run out does not bring it back
    assert run(outbox.record(job_id, OWNER, "retry", now=now + 7, next_at=now + 9)) == "delivered"
    assert r.zscore(DUE, job_id) is None
    view = outbox.public(store.get(job_id))
    assert view is not None and view.state == "delivered" and view.delivered_at == now + 6
    assert view.attempts == 2 and view.next_attempt_at is None


def claim(
    outbox: WebhookOutbox, now: float, most: int = 10, share: int = 4, **busy: int
) -> list[tuple[str, str]]:
    return run(outbox.claim(now, 30, most, share=share, busy=busy))


def test_keys_take_turns_at_the_outbox_and_a_key_at_its_share_is_passed_over(
    store: JobStore, outbox: WebhookOutbox, r: fakeredis.FakeRedis
) -> None:
    """Key a's 40 events were due first; key b's one is claimed in the first round all the
    same, and while a holds its share of the caller's slots, b's are claimed and a's wait."""
    flood = [make_job(store, total=1, cached=1, owner="a") for _ in range(40)]
    quiet = make_job(store, total=1, cached=1, owner="b")
    now = time.time() + 1
    assert claim(outbox, now, most=3) == [(flood[0], "a"), (quiet, "b"), (flood[1], "a")]
    later = [make_job(store, total=1, cached=1, owner="b") for _ in range(2)]
    # a has 4 in flight at the caller (its share): only b's are claimed, however many of a's wait
    assert claim(outbox, now + 1, a=4) == [(later[0], "b"), (later[1], "b")]
    assert claim(outbox, now + 1, a=4) == []
    assert [owner for _, owner in claim(outbox, now + 1, a=1)] == ["a"] * 3  # up to its share
    assert pending(r) == 40 + 3
    for job_id, owner in [(f, "a") for f in flood] + [(j, "b") for j in (quiet, *later)]:
        run(outbox.record(job_id, owner, "delivered", now=now + 2, status=200))
    assert pending(r) == 0 and r.zcard(keys.WEBHOOKS_DUE) == 0  # no key keeps a turn


def test_a_410_ends_the_event(
    store: JobStore, outbox: WebhookOutbox, r: fakeredis.FakeRedis
) -> None:
    job_id = make_job(store)
    finish(store, job_id)
    assert run(outbox.record(job_id, OWNER, "gone", now=time.time(), status=410)) == "gone"
    assert pending(r) == 0
    assert (
        run(outbox.record(job_id, OWNER, "retry", now=time.time(), next_at=time.time())) == "gone"
    )
    assert pending(r) == 0


# -- signatures and secrets ----------------------------------------------------------------------
def test_signature_matches_the_spec_test_vector() -> None:
    """The Standard Webhooks test vector (spec repo, libraries/python/tests)."""
    got = signature(
        ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        '{"test": 2432232314}',
    )
    assert got == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_both_secrets_sign_during_a_rotation_and_each_verifies_alone(
    r: fakeredis.FakeRedis,
) -> None:
    clock = [1000.0]
    store = KeyStore(r, cache_s=0, wall=lambda: clock[0], aclient=aclient())  # type: ignore[arg-type]
    key, _ = store.create("shop")
    old = key.webhook_secret
    assert check_webhook_secret(old) == old and run(store.webhook_secrets(key.id)) == [old]
    new = store.rotate_webhook_secret(key.id, keep_old_s=60)
    assert new is not None and new != old
    secrets = run(store.webhook_secrets(key.id))
    assert secrets == [new, old]
    ts = int(time.time())
    body = '{"type":"job.succeeded"}'
    headers = {
        "webhook-id": "msg_1",
        "webhook-timestamp": str(ts),
        "webhook-signature": signature(secrets, "msg_1", ts, body),
    }
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (old, new):  # a receiver on either secret accepts it
        assert Webhook(secret).verify(body, headers) == {"type": "job.succeeded"}
    clock[0] += 61
    assert run(store.webhook_secrets(key.id)) == [new]
    assert store.rotate_webhook_secret(key.id) is not None
    assert len(run(store.webhook_secrets(key.id))) == 1  # no grace asked: the old one stops at once
    assert store.rotate_webhook_secret("f" * 16) is None


def test_webhook_secrets_have_the_spec_form_and_bad_settings_are_refused() -> None:
    secret = new_webhook_secret()
    assert secret.startswith("whsec_") and len(Webhook(secret)._whsecret) == 32
    Settings(webhook_secret=secret)  # type: ignore[arg-type]
    for bad in ("secret", "whsec_", "whsec_c2hvcnQ=", "whsec_!!!"):
        with pytest.raises(ValueError, match="whsec_"):
            Settings(webhook_secret=bad)  # type: ignore[arg-type]


# -- retries --------------------------------------------------------------------------------------
def test_backoff_is_full_jitter_under_a_doubling_ceiling() -> None:
    rng = random.Random(7)
    for attempts, ceiling in ((1, 5), (2, 10), (3, 20), (10, 600), (60, 600)):
        waits = [Backoff(5, 600, jitter="full").wait_s(attempts - 1, rng) for _ in range(200)]
        assert all(0 <= w <= ceiling for w in waits)
        assert max(waits) > ceiling / 2  # spread over the range, not pinned to it


def test_retry_after_in_seconds_or_as_an_http_date() -> None:
    now = 1_800_000_000.0
    assert retry_after_s("120", now) == 120
    date = datetime.fromtimestamp(now + 30, tz=UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert retry_after_s(date, now) == pytest.approx(30)
    assert retry_after_s("soon", now) is None and retry_after_s(None, now) is None


# -- where webhooks may go -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.0.9", "private"),
        ("172.16.5.5", "private"),
        ("169.254.169.254", "link-local"),  # cloud metadata
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("100.64.0.1", "non-public"),  # carrier-grade NAT
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped
        ("2002:7f00:1::1", "loopback"),  # 6to4 of 127.0.0.1
        ("2002:c0a8:0001::1", "private"),  # 6to4 of 192.168.0.1
        ("2002:a9fe:a9fe::", "link-local"),  # 6to4 of the cloud metadata address
        ("fec0::1", "site-local"),
        ("fed0:1234::5", "site-local"),
        ("64:ff9b::a00:1", "private"),  # NAT64 of 10.0.0.1
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "192.0.2.45"),  # Teredo: its client
    ],
)
def test_non_public_addresses_are_refused(address: str, kind: str) -> None:
    why = targets.refusal(ipaddress.ip_address(address))
    assert why is not None and kind in why


def check_callback(url: str, *, allow_private: bool) -> None:
    asyncio.run(targets.check_callback(url, allow_private=allow_private))


def test_public_addresses_pass_and_names_are_resolved_and_checked() -> None:
    assert targets.refusal(ipaddress.ip_address("93.184.216.34")) is None
    assert targets.refusal(ipaddress.ip_address("2606:2800:220:1::1")) is None
    check_callback("https://93.184.216.34/hook", allow_private=False)
    for url in ("http://localhost:8080/x", "http://127.0.0.1/x", "http://[::1]/x"):
        with pytest.raises(targets.TargetRefused, match="MT_WEBHOOK_ALLOW_PRIVATE"):
            check_callback(url, allow_private=False)
        check_callback(url, allow_private=True)
    # the refusal reads as a sentence, for an address and for a name
    with pytest.raises(targets.TargetRefused) as literal:
        check_callback("http://127.0.0.1:9/x", allow_private=False)
    assert literal.value.message.startswith("callback_url host 127.0.0.1 is a loopback address;")
    with pytest.raises(targets.TargetRefused) as named:
        check_callback("http://localhost:9/x", allow_private=False)
    assert re.match(
        r"callback_url host 'localhost' resolves to (127\.0\.0\.1|::1), a loopback address;",
        named.value.message,
    ), named.value.message
    # 93.184.216.34 in IPv6 forms, judged by it alone on every Python (the standard library's
    # tables for 2002::/16 and ::ffff:0:0/96 changed in newer releases)
    for public in ("2002:5db8:d822::1", "::ffff:93.184.216.34", "64:ff9b::5db8:d822"):
        assert targets.refusal(ipaddress.ip_address(public)) is None, public
    # a Teredo address of a public client: its prefix is refused on every Python
    assert targets.refusal(ipaddress.ip_address("2001:0:4136:e378:8000:63bf:a247:27dd"))
    with pytest.raises(targets.TargetRefused, match="resolve"):  # or time out
        check_callback("http://name.invalid/x", allow_private=True)


def test_an_attempt_is_pinned_to_the_address_it_checked() -> None:
    pinned = asyncio.run(targets.pin("https://localhost:8443/hook?a=1", allow_private=True))
    assert pinned.url.host in {"127.0.0.1", "::1"} and pinned.url.port == 8443
    assert pinned.url.path == "/hook" and pinned.url.query == b"a=1"
    assert pinned.headers == {"Host": "localhost:8443"}
    assert pinned.extensions == {"sni_hostname": "localhost"}  # TLS checks the name


def test_an_attempt_refuses_a_target_that_now_resolves_to_a_private_address(
    store: JobStore, outbox: WebhookOutbox, r: fakeredis.FakeRedis
) -> None:
    """Accepted at submission (the name was public then, or the setting was on), refused at
    the attempt: counted as refused and retried, never sent."""
    job_id = make_job(store, callback="http://127.0.0.1:9/hook")
    finish(store, job_id)
    settings = Settings(webhook_secret=new_webhook_secret())  # type: ignore[arg-type]
    keystore = KeyStore(r, cache_s=0, aclient=aclient())  # type: ignore[arg-type]
    r.hset(keys.api_key(OWNER), "webhook_secret", new_webhook_secret())
    deliverer = WebhookDeliverer(settings.webhooks, outbox, keystore, store)
    before = metrics.WEBHOOK_ATTEMPTS.labels("refused")._value.get()

    async def attempt() -> None:
        async with httpx.AsyncClient() as http:
            await deliverer.attempt(http, job_id, OWNER)

    asyncio.run(attempt())
    view = outbox.public(store.get(job_id))
    assert view is not None and view.state == "pending" and view.attempts == 1
    assert view.last_error is not None and "loopback" in view.last_error
    assert view.last_status is None and view.next_attempt_at is not None
    assert metrics.WEBHOOK_ATTEMPTS.labels("refused")._value.get() == before + 1
