"""Fair shares between API keys (core/backlog.py): a real worker process on the cost-model engine,
the API app with keys required. A key's backlog, however deep, delays another key's job by that
key's turns, not by its size; weights set the shares; every segment of every job is written
once."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.core import keys
from mtfleet.core.apikeys import KeyStore
from mtfleet.core.backlog import Backlog
from mtfleet.fleet.localfleet import LocalFleet
from tests.integration.costfleet import COST_POOL, cost_fleet
from tests.integration.test_faults import FAULT_ENV, celery_children, signal_all

pytestmark = pytest.mark.slow

ENV = {
    **FAULT_ENV,
    "MTBENCH_PRESET": "zero",  # no simulated engine time: the fleet's own work is the measure
    "MT_AUTH": "required",
    "MT_MAX_QUEUE_BULK": "100000",
}


@pytest.fixture
def fair(redis_server: str) -> Iterator[tuple[LocalFleet, TestClient, redis.Redis, KeyStore]]:
    url = redis_server.rsplit("/", 1)[0] + "/8"
    rd = redis.Redis.from_url(url, decode_responses=True)
    rd.flushdb()
    with cost_fleet(url, ENV) as (f, api):
        yield f, api, rd, KeyStore(rd, cache_s=0)


def token(store: KeyStore, name: str, weight: int | None = None) -> str:
    key, secret = store.create(name, rate="none")
    if weight is not None:
        store.set_weight(key.id, weight)
    return secret


def submit(api: TestClient, secret: str, texts: list[str]) -> str:
    resp = api.post(
        "/v1/jobs",
        json={"texts": texts, "source_lang": "en", "target_lang": "es", "lane": "bulk"},
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert resp.status_code == 202, resp.text
    return str(resp.json()["id"])


def progress(rd: redis.Redis, job_ids: list[str]) -> int:
    """Segments done over ``job_ids`` (read from the job hashes: no API call in between)."""
    return sum(int(rd.hget(keys.job(j), "done") or 0) for j in job_ids)


def wait_done(rd: redis.Redis, job_ids: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while any(rd.hget(keys.job(j), "status") != "succeeded" for j in job_ids):
        assert time.monotonic() < deadline, [rd.hget(keys.job(j), "status") for j in job_ids]
        time.sleep(0.1)


def test_a_quiet_keys_job_waits_for_its_turn_not_for_a_noisy_keys_backlog(
    fair: tuple[LocalFleet, TestClient, redis.Redis, KeyStore],
) -> None:
    """Key A queues 40,000 segments, then key B sends 200: B's job is done while most of A's
    backlog still waits, and then all of A's jobs finish, each segment written once."""
    _, api, rd, store = fair
    a, b = token(store, "noisy"), token(store, "quiet")
    noisy = [submit(api, a, [f"noisy job {j} line {i}" for i in range(10_000)]) for j in range(4)]
    quiet = submit(api, b, [f"quiet line {i}" for i in range(200)])
    wait_done(rd, [quiet], timeout=60)
    assert progress(rd, noisy) < 40_000 / 2  # B did not wait for A's backlog
    wait_done(rd, noisy, timeout=300)
    for job_id in [*noisy, quiet]:
        total = int(rd.hget(keys.job(job_id), "total") or 0)
        assert rd.hlen(keys.job_results(job_id)) == total
        assert int(rd.hget(keys.job(job_id), "done") or 0) == total  # each segment once
    assert rd.llen(keys.DEAD_LETTER) == 0
    assert Backlog(rd, ttl_s=60).waiting(COST_POOL, "bulk").total == 0


#: The weights test's engine: a batch engine whose decoding steps take 5 ms (a call of up to 32
#: segments, tens of ms), so the fleet's pace is the engine's (hundreds of segments a second)
#: and a minute of work is a backlog the test can queue in seconds, on any machine.
PACED = {
    **ENV,
    "MTBENCH_MODE": "batch",
    "MTBENCH_STEP_FIXED_S": "0.005",
    "MTBENCH_PER_TOKEN_S": "0",
    "MTBENCH_MAX_NUM_SEQS": "32",
}
WINDOW_S = 60.0


def test_weights_1_1_2_share_the_throughput_1_1_2(redis_server: str) -> None:
    """Three keys with weights 1, 1 and 2, each with work waiting: what they get done over a
    minute, while all three still have work waiting, is 1:1:2 within 15 %."""
    url = redis_server.rsplit("/", 1)[0] + "/8"
    rd = redis.Redis.from_url(url, decode_responses=True)
    rd.flushdb()
    store = KeyStore(rd, cache_s=0)
    with cost_fleet(url, PACED) as (_, api):
        secrets = {n: token(store, n, w) for n, w in (("one", 1), ("two", 1), ("four", 2))}
        # more than a minute of work each, in shares of 1:1:2
        jobs = {
            name: [
                submit(api, s, [f"{name} job {j} line {i}" for i in range(10_000)])
                for j in range(2 * w)
            ]
            for (name, s), w in zip(secrets.items(), (1, 1, 2), strict=True)
        }
        backlog = Backlog(rd, ttl_s=60)
        ids = {name: store.verify(s).id for name, s in secrets.items()}
        # the window opens once the broker queue's first fill (key one's alone: it came first)
        # is done: from then on, what is released and done is the keys' turns
        while sum(progress(rd, j) for j in jobs.values()) < 2 * 32 * 32:
            time.sleep(0.2)
        start, t0 = {name: progress(rd, j) for name, j in jobs.items()}, time.monotonic()
        done = dict.fromkeys(jobs, 0)
        while time.monotonic() - t0 < WINDOW_S:
            time.sleep(1)
            waiting = backlog.waiting(COST_POOL, "bulk").by_key
            if min(waiting.get(key_id, 0) for key_id in ids.values()) < 8:
                break  # a key is about to run out: its share would go to the others
            done = {name: progress(rd, j) - start[name] for name, j in jobs.items()}
        assert time.monotonic() - t0 >= WINDOW_S, f"a key ran out of work: {done}"
        for name, job_ids in jobs.items():  # the rest is not needed: its chunks leave
            for job_id in job_ids:
                headers = {"Authorization": f"Bearer {secrets[name]}"}
                assert api.delete(f"/v1/jobs/{job_id}", headers=headers).status_code == 200
    unit = sum(done.values()) / 4
    assert unit >= 2_000, done  # dozens of turns each
    for name, share in (("one", 1), ("two", 1), ("four", 2)):
        assert done[name] == pytest.approx(share * unit, rel=0.15), done


def outage_and_a_sigterm(redis_url: str, tmp_path: Path, jobs: int, segments: int) -> None:
    """``jobs`` jobs of ``segments`` segments in chunks of 2 queued at once; while they run, the
    engine is away for 6 s, then the worker is stopped with SIGTERM (its launcher starts it
    again). Every segment is written once, nothing is dead-lettered, nothing is left waiting."""
    down = tmp_path / "engine-down"
    env = {
        **FAULT_ENV,
        "MTBENCH_PRESET": "zero",
        "MT_CHUNK_SIZE": "2",
        "MTBENCH_DOWN_FILE": str(down),
        "MT_MAX_QUEUE_BULK": "1000000",
    }
    rd = redis.Redis.from_url(redis_url, decode_responses=True)
    rd.flushdb()
    with cost_fleet(redis_url, env) as (fleet, api):
        ids = []
        for j in range(jobs):
            resp = api.post(
                "/v1/jobs",
                json={
                    "texts": [f"job {j} line {i}" for i in range(segments)],
                    "source_lang": "en",
                    "target_lang": "es",
                    "lane": "bulk",
                },
            )
            assert resp.status_code == 202, resp.text
            ids.append(resp.json()["id"])
        assert Backlog(rd, ttl_s=60).waiting(COST_POOL, "bulk").total >= jobs * segments // 2 * 0.9
        total = jobs * segments
        deadline = time.monotonic() + 600

        def until(done: int) -> None:
            while progress(rd, ids) < done:
                assert time.monotonic() < deadline, progress(rd, ids)
                time.sleep(0.2)

        until(total // 10)
        down.touch()  # the engine is away ...
        time.sleep(6)
        down.unlink()  # ... and back
        until(total // 2)
        worker = celery_children(fleet.procs[-1])
        assert signal_all(worker, signal.SIGTERM)  # a warm stop mid-way: the launcher restarts it
        wait_done(rd, ids, timeout=deadline - time.monotonic())
    for job_id in ids:
        assert rd.hlen(keys.job_results(job_id)) == segments
        assert int(rd.hget(keys.job(job_id), "done") or 0) == segments
    assert rd.llen(keys.DEAD_LETTER) == 0
    assert Backlog(rd, ttl_s=60).waiting(COST_POOL, "bulk").total == 0


def test_an_outage_and_a_stopped_worker_lose_nothing_at_depth(
    redis_server: str, tmp_path: Path
) -> None:
    outage_and_a_sigterm(redis_server.rsplit("/", 1)[0] + "/9", tmp_path, jobs=1, segments=4_000)


@pytest.mark.soak
def test_soak_20000_queued_chunks_an_outage_and_a_stopped_worker(
    redis_server: str, tmp_path: Path
) -> None:
    outage_and_a_sigterm(redis_server.rsplit("/", 1)[0] + "/9", tmp_path, jobs=4, segments=10_000)
