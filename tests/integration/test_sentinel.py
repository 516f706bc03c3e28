"""Redis high availability: the fleet on a Sentinel URL, and the primary lost mid-job.

A primary, its replica and three Sentinels run on loopback (:mod:`tests.integration.sentinels`);
the API (``mtfleet api``) and a worker (the cost-model engine) are real processes on the
``sentinel://`` URL, the job store, the broker and the phrase cache all through it. The primary
is SIGKILLed while jobs run and new ones keep arriving; it comes back (as an init system would
restart it) and the Sentinels make it a replica of the new primary.

With ``MT_REDIS_MIN_REPLICAS=1`` (docs/reliability.md, "Redis high availability") the API
accepts a job only once the replica holds it, so the promoted replica has every accepted job:
each completes, every segment once, with the right result. A submission the fleet cannot
confirm meanwhile is refused with 503, never a 500. The timeline is printed (``-s``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import redis

from mtfleet.core.models import JobStatus
from mtfleet.core.redis_conn import connect
from mtfleet.core.store import JobStore
from mtfleet.fleet.localfleet import LocalFleet, free_port
from tests.integration.costfleet import COST_ENGINE, COST_POOL
from tests.integration.sentinels import PASSWORD, SENTINEL_PASSWORD, SentinelGroup, Server
from tests.integration.test_redis_security import make_certs
from tests.support import in_process

# Redelivery within seconds, as in the fault tests (test_faults.FAULT_ENV).
HA_ENV = {
    **COST_ENGINE,
    "MTBENCH_MAX_NUM_SEQS": "64",
    "MT_CHUNK_SIZE": "32",
    "MT_VISIBILITY_TIMEOUT_S": "10",
    "MT_RESTORE_INTERVAL_S": "1",
    "MT_RECONCILE_INTERVAL_S": "1",
    "MT_REDIS_MIN_REPLICAS": "1",
    "MT_REDIS_REPLICA_TIMEOUT_MS": "500",
}
FINAL = {"succeeded", "partial", "failed", "cancelled"}


@pytest.fixture
def group(tmp_path: Path) -> Iterator[SentinelGroup]:
    g = SentinelGroup(tmp_path / "sentinel-group")
    try:
        g.start()
        yield g
    finally:
        g.stop()


@dataclass
class Submissions:
    """Small jobs sent one after another on a thread, each answer recorded."""

    api_url: str
    accepted: list[tuple[float, str, list[str]]] = field(default_factory=list)  # t, id, texts
    refused: list[tuple[float, int, str]] = field(default_factory=list)  # t, status, type
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        with httpx.Client(base_url=self.api_url, timeout=15) as client:
            n = 0
            while not self.stop.is_set():
                n += 1
                texts = [f"order {n} line {i}" for i in range(5)]
                body = {"texts": texts, "source_lang": "en", "target_lang": "es", "lane": "bulk"}
                try:
                    resp = client.post("/v1/jobs", json=body)
                except httpx.HTTPError as exc:
                    self.refused.append((time.time(), 0, type(exc).__name__))
                else:
                    if resp.status_code in (200, 202):
                        self.accepted.append((time.time(), resp.json()["id"], texts))
                    else:
                        kind = resp.json()["error"]["type"]
                        self.refused.append((time.time(), resp.status_code, kind))
                self.stop.wait(0.1)


def done_count(client: httpx.Client, job_ids: list[str]) -> int:
    total = 0
    for job_id in job_ids:
        resp = client.get(f"/v1/jobs/{job_id}")
        if resp.status_code == 200:
            total += resp.json()["progress"]["done"]
    return total


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_primary_killed_mid_job_loses_no_accepted_job(group: SentinelGroup) -> None:
    with LocalFleet(redis_url=group.url(), env=HA_ENV) as fleet:
        fleet.start_redis()  # the group answers: reused, nothing started
        assert not fleet.private_redis
        fleet.start_worker("--lanes", "interactive,bulk")
        api_url = fleet.start_api()
        fleet.wait_ready(60)
        client = httpx.Client(base_url=api_url, timeout=15)

        before: dict[str, list[str]] = {}
        for j in range(4):
            texts = [f"segment {i} of job {j} that outlives its primary" for i in range(400)]
            resp = client.post(
                "/v1/jobs",
                json={"texts": texts, "source_lang": "en", "target_lang": "es", "lane": "bulk"},
            )
            assert resp.status_code == 202, resp.text
            before[resp.json()["id"]] = texts
        stream = Submissions(api_url)
        sender = threading.Thread(target=stream.run, daemon=True)
        sender.start()
        group.wait(lambda: done_count(client, list(before)) > 200, 60, "progress before the kill")

        done_at_kill = done_count(client, list(before))
        t_kill = time.time()
        old = group.kill_primary()
        t_promoted = group.wait(lambda: group.primary_port() not in (None, old), 30, "failover")
        group.restart(old)  # as systemd would; the Sentinels make it a replica

        def moved() -> bool:
            try:
                return done_count(client, list(before)) > done_at_kill
            except httpx.HTTPError:
                return False

        t_progress = group.wait(moved, 60, "work after the failover")
        t_rejoined = group.wait(lambda: group.role(old) == "slave", 60, "old primary back")
        group.wait(lambda: any(t > t_rejoined for t, _, _ in stream.accepted), 30, "new jobs")
        time.sleep(2)
        stream.stop.set()
        sender.join(30)

        jobs = {**before, **{job_id: texts for _, job_id, texts in stream.accepted}}
        deadline = time.monotonic() + 120
        pending = set(jobs)
        while pending:
            for job_id in list(pending):
                resp = client.get(f"/v1/jobs/{job_id}")
                assert resp.status_code in (200, 503), resp.text  # never lost (404), never 500
                if resp.status_code == 200 and resp.json()["status"] in FINAL:
                    pending.discard(job_id)
            assert time.monotonic() < deadline, (pending, fleet.procs[0].log_tail(40))
            time.sleep(0.2)
        t_all_done = time.time()

        for job_id, texts in jobs.items():
            job = client.get(f"/v1/jobs/{job_id}").json()
            assert job["status"] == "succeeded", job
            assert job["progress"] == {"done": len(texts), "failed": 0, "total": len(texts)}
            result = client.get(f"/v1/jobs/{job_id}/result").json()
            assert result["translations"] == [f"<es> {t}" for t in texts]
        assert {status for _, status, _ in stream.refused} <= {0, 503}, stream.refused
        after = [t for t, _, _ in stream.accepted if t > t_kill]
        refused = [t for t, _, _ in stream.refused if t > t_kill]
        assert after, "no job was accepted after the failover"

        def at(t: float | None) -> str:
            return "-" if t is None else f"{t - t_kill:+7.2f} s"

        print("\nfailover timeline (seconds from the primary's SIGKILL)")
        timeline = [
            (
                f"primary SIGKILLed ({len(before)} jobs of 400 accepted, {done_at_kill} done)",
                t_kill,
            ),
            ("first submission refused (503)", min(refused) if refused else None),
            ("Sentinels promoted the replica", t_promoted),
            ("first job accepted after the kill", min(after)),
            ("the worker records results again", t_progress),
            ("last submission refused", max(refused) if refused else None),
            ("old primary back, a replica of the new one", t_rejoined),
            (f"all {len(jobs)} accepted jobs succeeded, each segment once", t_all_done),
        ]
        for t, what in sorted((t, w) for w, t in timeline if t is not None):
            print(f"  {at(t)}  {what}")
        kinds = sorted({k for _, _, k in stream.refused})
        print(f"  submissions: {len(stream.accepted)} accepted, {len(refused)} refused {kinds}")
        client.close()


def test_a_job_no_replica_confirms_is_refused_and_not_kept(redis_url: str) -> None:
    """``MT_REDIS_MIN_REPLICAS=1`` on a Redis without replicas: the job is written, WAIT times
    out, the job is failed and its idempotency key released, and the caller gets 503
    ``not_replicated``; with 0 the same call is accepted."""
    from fastapi.testclient import TestClient

    from mtfleet.api.app import create_app
    from mtfleet.core.settings import Settings

    body = {"texts": ["a lamp"], "source_lang": "en", "target_lang": "es"}
    settings = Settings(redis_url=redis_url, redis_min_replicas=1, redis_replica_timeout_ms=50)
    registry_pool(redis_url)
    with TestClient(create_app(in_process(settings))) as api:
        resp = api.post("/v1/jobs", json=body, headers={"Idempotency-Key": "k1"})
        assert resp.status_code == 503, resp.text
        assert resp.json()["error"]["type"] == "not_replicated"
        assert "Retry-After" in resp.headers
    store = JobStore(connect(redis_url), result_ttl_s=60)
    jobs = [k for k in store.r.scan_iter("mt:job:*") if k.count(":") == 2]
    assert len(jobs) == 1
    assert store.get(jobs[0].split(":")[2]).status == JobStatus.failed
    with TestClient(create_app(in_process(Settings(redis_url=redis_url)))) as api:
        again = api.post("/v1/jobs", json=body, headers={"Idempotency-Key": "k1"})
        assert again.status_code == 202, again.text  # the key was released: a new job


def registry_pool(redis_url: str) -> None:
    """Make the cost-model pool known (as a worker's first heartbeat would) so a job routes."""
    from mtfleet.core.registry import Registry, WorkerInfo

    info = WorkerInfo(
        name="cpu@test",
        instance=f"test.{uuid.uuid4().hex[:6]}",
        pool=COST_POOL,
        engine="costmodel",
        model="costmodel:cpu-small",
        fingerprint="fp",
        pairs=[("en", "es")],
        lanes=["interactive", "bulk"],
    )
    Registry(connect(redis_url)).beat(info, ttl_s=60)


def answers(url: str) -> bool:
    """The primary behind the Sentinels answers (not yet while either is still starting:
    the Sentinel names a primary that does not listen yet, MasterNotFoundError)."""
    try:
        return bool(connect(url).ping())
    except redis.ConnectionError:
        return False


def test_fleet_runs_over_sentinels_with_tls(tmp_path: Path) -> None:
    """``sentinels://``: TLS to the Sentinel and to the primary (the test CA, a client
    certificate), passwords for both; a job completes through the API and a worker."""
    certs = make_certs(tmp_path)
    tls = [
        "--tls-cert-file", str(certs["server.pem"]), "--tls-key-file", str(certs["server.key"]),
        "--tls-ca-cert-file", str(certs["ca.pem"]),
    ]  # fmt: skip
    primary, sentinel_port = free_port(), free_port()
    server_args = [
        "redis-server", "--port", "0", "--tls-port", str(primary), "--bind", "127.0.0.1",
        "--save", "", "--dir", str(tmp_path), "--requirepass", PASSWORD, *tls,
    ]  # fmt: skip
    conf = tmp_path / "sentinel.conf"
    conf.write_text(
        f"port 0\ntls-port {sentinel_port}\nbind 127.0.0.1\ndir {tmp_path}\n"
        f"tls-cert-file {certs['server.pem']}\ntls-key-file {certs['server.key']}\n"
        f"tls-ca-cert-file {certs['ca.pem']}\ntls-replication yes\n"
        f"requirepass {SENTINEL_PASSWORD}\n"
        f"sentinel monitor tlsmaster 127.0.0.1 {primary} 1\n"
        f"sentinel auth-pass tlsmaster {PASSWORD}\n"
    )
    servers = [
        Server(primary, tmp_path / "primary", server_args),
        Server(sentinel_port, tmp_path / "sentinel", ["redis-server", str(conf), "--sentinel"]),
    ]
    url = (
        f"sentinels://:{PASSWORD}@127.0.0.1:{sentinel_port}/0?master=tlsmaster"
        f"&sentinel_password={SENTINEL_PASSWORD}&ssl_ca_certs={certs['ca.pem']}"
        f"&ssl_certfile={certs['client.pem']}&ssl_keyfile={certs['client.key']}"
    )
    try:
        for server in servers:
            server.start()
        SentinelGroup.wait(lambda: answers(url), 20, "TLS Sentinel and primary")
        with LocalFleet(redis_url=url, env=HA_ENV | {"MT_REDIS_MIN_REPLICAS": "0"}) as fleet:
            fleet.start_redis()
            assert not fleet.private_redis
            fleet.start_worker("--lanes", "interactive,bulk")
            api_url = fleet.start_api()
            fleet.wait_ready(60)
            texts = [f"The sealed parcel {i}." for i in range(40)]
            with httpx.Client(base_url=api_url, timeout=15) as client:
                resp = client.post(
                    "/v1/jobs", json={"texts": texts, "source_lang": "en", "target_lang": "es"}
                )
                assert resp.status_code == 202, resp.text
                job_id = resp.json()["id"]
                deadline = time.monotonic() + 60
                while client.get(f"/v1/jobs/{job_id}").json()["status"] not in FINAL:
                    assert time.monotonic() < deadline, fleet.procs[0].log_tail()
                    time.sleep(0.1)
                result = client.get(f"/v1/jobs/{job_id}/result").json()
                assert result["translations"] == [f"<es> {t}" for t in texts]
    finally:
        for server in servers:
            server.stop()
