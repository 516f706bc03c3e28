"""The dead-letter list has a bounded life and an operator's commands: entries are capped in
number and age (written through the worker's own path, JobStore.dead_letter), and
`mtfleet dead-letters list | retry | purge` acts on chunks a real worker (Apertium) dead-lettered:
a retried chunk is translated and its job ends again, a purged entry is gone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.api.app import create_app
from mtfleet.core import keys
from mtfleet.core.deadletters import DeadLetters
from mtfleet.core.settings import Settings
from mtfleet.core.store import JobStore
from mtfleet.fleet.localfleet import LocalFleet
from tests.integration.registered import register_pair
from tests.support import free_port_run, in_process

MAX_DELIVERIES = 2


def entry(job_id: str, chunk: int, at: float) -> str:
    """A dead-letter entry as the worker writes one (workers/chunk.py dead_letter)."""
    return json.dumps(
        {"job_id": job_id, "chunk": chunk, "reason": "poison", "at": at, "lane": "bulk"}
    )


def listed(r: redis.Redis) -> list[tuple[str, int]]:
    return [(e["job_id"], e["chunk"]) for e in map(json.loads, r.lrange(keys.DEAD_LETTER, 0, -1))]


def test_the_list_keeps_its_newest_entries_within_its_cap_and_age(r: redis.Redis) -> None:
    store = JobStore(r, result_ttl_s=600, dead_letters=DeadLetters(r, max_entries=3, ttl_s=3600))
    now = time.time()
    job = "a" * 32
    # listed two hours ago, when its age was up to an hour
    assert store.dead_letter(job, 0, entry(job, 0, now - 7200))
    assert store.dead_letter(job, 1, entry(job, 1, now))
    assert listed(r) == [(job, 1)]  # the old one is past its age
    for chunk in range(2, 6):
        assert store.dead_letter(job, chunk, entry(job, chunk, now))
    assert listed(r) == [(job, 5), (job, 4), (job, 3)]  # the newest three
    assert not store.dead_letter(job, 5, entry(job, 5, now))  # once per chunk
    # the list itself goes an hour after its newest entry, whatever is added later or not
    assert 3500 < r.ttl(keys.DEAD_LETTER) <= 3600


def mtfleet(redis_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mtfleet", "dead-letters", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MT_REDIS_URL": redis_url, "COLUMNS": "200"},
    )


@pytest.fixture(scope="module")
def settings(redis_server: str) -> Settings:
    redis.Redis.from_url(redis_server).flushall()
    return Settings(redis_url=redis_server, chunk_size=1, max_deliveries=MAX_DELIVERIES)


@pytest.fixture(scope="module")
def api(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(in_process(settings))) as client:
        yield client


@pytest.fixture(scope="module")
def poisoned(api: TestClient, settings: Settings) -> Iterator[tuple[LocalFleet, list[str]]]:
    """Three jobs of two one-text chunks each; chunk 0 of each had killed as many workers as
    it may (its delivery count at MT_MAX_DELIVERIES) before one worker starts: it dead-letters
    those, translates the rest."""
    r = redis.Redis.from_url(settings.redis.redis_url, decode_responses=True)
    register_pair(r, ttl_s=30)  # the pool is known before its worker starts
    jobs = []
    for n in range(3):
        texts = [f"The poison pill number {n}.", f"The healthy apple number {n}."]
        resp = api.post("/v1/jobs", json={"texts": texts, "source_lang": "en", "target_lang": "es"})
        assert resp.status_code == 202, resp.text
        jobs.append(resp.json()["id"])
        r.hset(keys.chunk_deliveries(jobs[-1]), "0", MAX_DELIVERIES)
    fleet = LocalFleet(
        redis_url=settings.redis.redis_url,
        env={
            "MT_REDIS_URL": settings.redis.redis_url,
            "MT_HEARTBEAT_S": "1",
            "MT_MAX_DELIVERIES": str(MAX_DELIVERIES),
            "MT_WORKER_METRICS_PORT": str(free_port_run(2)),  # a process per lane: +1
        },
    )
    fleet.start_redis()
    fleet.start_worker("--engine", "apertium", "--concurrency", "2")
    try:
        for job_id in jobs:
            assert wait_final(api, job_id)["status"] == "partial", fleet.procs[-1].log_tail()
        yield fleet, jobs
    finally:
        fleet.stop()


def wait_final(api: TestClient, job_id: str, timeout: float = 60) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + timeout
    while True:
        job = api.get(f"/v1/jobs/{job_id}", params={"wait": 5}).json()
        if job["status"] in {"succeeded", "partial", "failed", "cancelled"}:
            return job  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, job
        time.sleep(0.05)


def test_an_operator_lists_retries_and_purges_dead_letters(
    api: TestClient, settings: Settings, poisoned: tuple[LocalFleet, list[str]]
) -> None:
    url = settings.redis.redis_url
    _fleet, (retried, purged, expired) = poisoned
    shown = mtfleet(url, "list", "--json")
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)
    assert {(row["job_id"], row["chunk"]) for row in rows} == {(j, 0) for j in poisoned[1]}
    assert all("delivered 3 times" in row["reason"] for row in rows)
    table = mtfleet(url, "list", retried)
    assert table.returncode == 0 and retried in table.stdout and "1 dead letter(s)" in table.stderr

    # retry: the chunk is translated this time and the job ends again, whole
    again = mtfleet(url, "retry", retried)
    assert again.returncode == 0, again.stderr
    assert f"job {retried} chunk 0: sent again; 1 segment(s) pending again" in again.stdout
    job = wait_final(api, retried)
    assert job["status"] == "succeeded", job
    assert job["progress"] == {"done": 2, "failed": 0, "total": 2}
    out = api.get(f"/v1/jobs/{retried}/result").json()["translations"]
    assert "veneno" in out[0] and "manzana" in out[1]
    r = redis.Redis.from_url(url, decode_responses=True)
    assert r.hget(keys.chunk_deliveries(retried), "0") == "1"  # counted from zero again

    # purge: the entry is gone for good; the job is left as it was
    gone = mtfleet(url, "purge", purged, "--chunk", "0")
    assert gone.returncode == 0 and "purged 1 dead letter(s)" in gone.stdout
    assert api.get(f"/v1/jobs/{purged}").json()["status"] == "partial"

    # a job that no longer exists cannot be retried; its entry stays until purged
    JobStore(r, result_ttl_s=600).purge(expired)
    missed = mtfleet(url, "retry", "--all")
    assert missed.returncode == 1
    assert f"job {expired} chunk 0: not retried: its job expired or was purged" in missed.stderr
    assert {row["job_id"] for row in json.loads(mtfleet(url, "list", "--json").stdout)} == {expired}
    assert mtfleet(url, "purge", "--all").stdout.strip() == "purged 1 dead letter(s)"
    assert json.loads(mtfleet(url, "list", "--json").stdout) == []
    nothing = mtfleet(url, "retry", retried)
    assert nothing.returncode == 1 and f"no dead letter for job {retried}" in nothing.stderr
    wrong = mtfleet(url, "purge")
    assert wrong.returncode == 2 and "name a job id (and --chunk N), or --all" in wrong.stderr
