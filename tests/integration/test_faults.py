"""Faults on real processes: a worker killed with -9 again and again, a worker stopped with
SIGTERM mid-batch. Expected: every job that got a 2xx completes, each segment with exactly one
result, the same results as a run without faults.

The engine is the benchmarks' cost-model engine (deterministic output ``<es> text``, 20 ms
steps), so a few thousand segments take seconds and every output can be checked. Test settings
make redelivery take seconds: a 10 s visibility timeout and 1 s restore sweeps.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator

import psutil
import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.core import keys
from mtfleet.fleet.localfleet import LocalFleet, Proc, redis_server_command
from tests.integration.costfleet import COST_POOL, cost_fleet, held

pytestmark = pytest.mark.slow

# Redelivery within seconds: a 10 s visibility timeout, restore sweeps every second.
# Lost chunks (workers/reconciler.py) are found by sweeps every second.
FAULT_ENV = {
    "MTBENCH_MAX_NUM_SEQS": "64",
    "MT_CHUNK_SIZE": "32",
    "MT_VISIBILITY_TIMEOUT_S": "10",
    "MT_RESTORE_INTERVAL_S": "1",
    "MT_RECONCILE_INTERVAL_S": "1",
}


def signal_all(procs: list[psutil.Process], sig: int) -> int:
    """Send ``sig`` to each process still alive (one may exit between listing and signal);
    returns how many got it."""
    sent = 0
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, sig)
            sent += 1
    return sent


def celery_children(launcher: Proc) -> list[psutil.Process]:
    """The launcher's living Celery workers (one killed a moment ago and not yet reaped by the
    launcher is a zombie whose command line cannot be read: not among them)."""
    try:
        kids = psutil.Process(launcher.popen.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    living = []
    for kid in kids:
        try:
            # python -m mtfleet.workers, and Celery's title once it has started: [celeryd: ...]
            if any(mark in " ".join(kid.cmdline()) for mark in ("mtfleet.workers", "celeryd")):
                living.append(kid)
        except (psutil.ZombieProcess, psutil.NoSuchProcess):
            continue
    return living


@pytest.fixture
def faulty(redis_server: str) -> Iterator[tuple[LocalFleet, TestClient, redis.Redis]]:
    url = redis_server.rsplit("/", 1)[0] + "/5"
    rd = redis.Redis.from_url(url, decode_responses=True)
    rd.flushdb()
    with cost_fleet(url, FAULT_ENV) as (fleet, api):
        yield fleet, api, rd


def kill_while_holding(
    fleet: LocalFleet,
    api: TestClient,
    rd: redis.Redis,
    job_id: str,
    *,
    kills: int,
    within_s: float,
    mid_batch_s: float,
    pause_s: float,
    poll_s: float = 0.1,
    unfinished: bool = False,
) -> None:
    """SIGKILL the Celery worker ``kills`` times while the job runs and the worker holds
    chunks (``mid_batch_s`` after seeing it hold some; ``pause_s`` to restart). With
    ``unfinished``, the job must not finish before the last kill."""
    done = 0
    deadline = time.monotonic() + within_s
    while done < kills:
        assert time.monotonic() < deadline, fleet.procs[-1].log_tail(40)
        job = api.get(f"/v1/jobs/{job_id}").json()
        if unfinished:
            assert job["status"] in {"queued", "running"}, f"finished after {done} kills"
        kids = celery_children(fleet.procs[-1])
        if kids and held(rd) and job["status"] == "running":
            time.sleep(mid_batch_s)
            if signal_all(kids, signal.SIGKILL):
                done += 1
            time.sleep(pause_s)
        time.sleep(poll_s)


def submit(api: TestClient, texts: list[str]) -> str:
    resp = api.post(
        "/v1/jobs", json={"texts": texts, "source_lang": "en", "target_lang": "es", "lane": "bulk"}
    )
    assert resp.status_code == 202, resp.text
    return str(resp.json()["id"])


def wait_final(  # type: ignore[type-arg]
    api: TestClient, job_id: str, timeout: float, fleet: LocalFleet | None = None
) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        resp = api.get(f"/v1/jobs/{job_id}", params={"wait": 2})
        job = resp.json()
        if resp.status_code == 503:  # Redis restarting: the API says so, a client retries
            assert "Retry-After" in resp.headers
        elif job["status"] in {"succeeded", "partial", "failed", "cancelled"}:
            return job  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, (
            job,
            fleet.procs[-1].log_tail(60) if fleet is not None else "",
        )
        time.sleep(0.1)


def test_sigkilled_worker_loses_nothing_and_duplicates_nothing(
    faulty: tuple[LocalFleet, TestClient, redis.Redis],
) -> None:
    """F1/F2: the Celery worker is killed with -9 three times while it holds chunks (in the
    engine and prefetched); the launcher restarts it, the chunks come back, the job completes."""
    fleet, api, rd = faulty
    texts = [f"segment {i} of the job that survives kills" for i in range(3000)]
    job_id = submit(api, texts)
    kill_while_holding(fleet, api, rd, job_id, kills=3, within_s=120, mid_batch_s=0.3, pause_s=1.5)
    job = wait_final(api, job_id, timeout=180)
    assert job["status"] == "succeeded", job
    assert job["progress"] == {"done": 3000, "failed": 0, "total": 3000}
    result = api.get(f"/v1/jobs/{job_id}/result").json()
    assert result["translations"] == [f"<es> {t}" for t in texts]
    assert rd.hlen(keys.job_results(job_id)) == 3000  # one result per segment
    assert rd.llen(keys.DEAD_LETTER) == 0


def test_sigterm_mid_batch_finishes_or_gives_back(
    faulty: tuple[LocalFleet, TestClient, redis.Redis],
) -> None:
    """F5: SIGTERM to the Celery worker while it works: a warm shutdown finishes the chunks
    in hand; nothing is lost, and the restarted worker takes the rest."""
    fleet, api, rd = faulty
    texts = [f"segment {i} of the job that survives a stop" for i in range(1500)]
    job_id = submit(api, texts)
    deadline = time.monotonic() + 60
    while not (held(rd) and celery_children(fleet.procs[-1])):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.3)
    signal_all(celery_children(fleet.procs[-1]), signal.SIGTERM)
    job = wait_final(api, job_id, timeout=180)
    assert job["status"] == "succeeded", job
    result = api.get(f"/v1/jobs/{job_id}/result").json()
    assert result["translations"] == [f"<es> {t}" for t in texts]


def test_client_kill_on_every_connection_recovers_without_loss(
    faulty: tuple[LocalFleet, TestClient, redis.Redis],
) -> None:
    """F8: Redis drops every client connection (CLIENT KILL) five times during a job, and
    pauses all clients once; workers and the API reconnect, nothing is lost or doubled."""
    fleet, api, rd = faulty
    texts = [f"segment {i} of the job whose connections drop" for i in range(2000)]
    job_id = submit(api, texts)
    deadline = time.monotonic() + 60
    while api.get(f"/v1/jobs/{job_id}").json()["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    rd.execute_command("CLIENT", "PAUSE", "1500", "ALL")
    for _ in range(5):
        time.sleep(0.5)
        rd.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
        rd.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
    job = wait_final(api, job_id, timeout=180, fleet=fleet)
    assert job["status"] == "succeeded", job
    assert job["progress"] == {"done": 2000, "failed": 0, "total": 2000}
    result = api.get(f"/v1/jobs/{job_id}/result").json()
    assert result["translations"] == [f"<es> {t}" for t in texts]


def test_redis_killed_and_restarted_from_its_aof_loses_no_accepted_job() -> None:
    """F6: kill -9 redis-server mid-job and start it again on the same files (AOF, fsync every
    second): the accepted job completes, every segment once, with the right results."""
    with cost_fleet(None, FAULT_ENV) as (fleet, api):
        redis_proc = fleet.procs[0]  # private, appendonly yes, files in fleet.workdir
        assert fleet.redis_url is not None
        port = int(fleet.redis_url.rsplit(":", 1)[1].split("/")[0])
        texts = [f"segment {i} of the job that outlives its Redis" for i in range(2000)]
        job_id = submit(api, texts)
        time.sleep(1.5)  # past the AOF's one-second fsync: the accepted job is on disk
        os.kill(redis_proc.popen.pid, signal.SIGKILL)
        redis_proc.popen.wait()
        time.sleep(1.0)
        fleet._spawn("redis-restarted", redis_server_command(port, fleet.workdir, appendonly=True))
        job = wait_final(api, job_id, timeout=180)
        assert job["status"] == "succeeded", job
        assert job["progress"] == {"done": 2000, "failed": 0, "total": 2000}
        result = api.get(f"/v1/jobs/{job_id}/result").json()
        assert result["translations"] == [f"<es> {t}" for t in texts]


def test_poison_chunk_that_kills_the_worker_is_dead_lettered_and_the_fleet_goes_on(
    redis_server: str,
) -> None:
    """F3 + F10: one segment kills the worker process every time it is translated; after
    MT_MAX_DELIVERIES its chunk goes to the dead-letter list and fails with the reason, the job
    ends partial, the rest is translated. A segment on which the engine raises fails alone."""
    url = redis_server.rsplit("/", 1)[0] + "/6"
    rd = redis.Redis.from_url(url, decode_responses=True)
    rd.flushdb()
    env = {
        **FAULT_ENV,
        "MTBENCH_CRASH_ON": "POISON",
        "MTBENCH_FAIL_ON": "BROKEN",
        "MT_CHUNK_SIZE": "4",
        "MT_MAX_DELIVERIES": "2",
    }
    with cost_fleet(url, env) as (_fleet, api):
        texts = [f"line {i}" for i in range(40)]
        texts[13] = "a POISON line"  # chunk 3 (indices 12-15)
        texts[30] = "a BROKEN line"
        job_id = submit(api, texts)
        job = wait_final(api, job_id, timeout=150)
        assert job["status"] == "partial", job
        result = api.get(f"/v1/jobs/{job_id}/result").json()
        failed = {e["index"]: e for e in result["errors"]}
        assert set(failed) == {12, 13, 14, 15, 30}
        assert {failed[i]["type"] for i in (12, 13, 14, 15)} == {"dead_lettered"}
        assert "injected fault" in failed[30]["message"]
        ok = [i for i in range(40) if i not in failed]
        assert [result["translations"][i] for i in ok] == [f"<es> {texts[i]}" for i in ok]
        letters = rd.lrange(keys.DEAD_LETTER, 0, -1)
        deliveries = rd.hgetall(keys.chunk_deliveries(job_id))
        assert len(letters) == 1 and job_id in letters[0], (letters, deliveries)
        # the fleet goes on: a new job is translated by the restarted worker
        resp = api.post(
            "/v1/translate",
            json={"texts": ["after the poison"], "source_lang": "en", "target_lang": "es"},
        )
        assert resp.json()["translations"] == ["<es> after the poison"]


def test_a_dead_workers_chunks_come_back_within_a_minute_at_the_default_settings(
    redis_server: str,
) -> None:
    """F2 at the shipped defaults (1 h visibility timeout, 5 s heartbeat, 30 s lost-chunk
    sweeps): the Celery worker *process* is killed with -9 mid-job (an OOM kill, a lost node),
    holding chunks in the engine and prefetched. Its heartbeat expires, the reconciler of the
    restarted worker puts what it held back on the queue, and every job completes within about a
    minute of the kill, each segment with exactly one result."""
    url = redis_server.rsplit("/", 1)[0] + "/6"
    rd = redis.Redis.from_url(url, decode_responses=True)
    rd.flushdb()
    env = {"MTBENCH_MAX_NUM_SEQS": "64", "MT_CHUNK_SIZE": "32", "MT_HEARTBEAT_S": "5"}
    with cost_fleet(url, env) as (fleet, api):
        texts = {
            n: [f"job {n} segment {i} of a dead worker" for i in range(1500)] for n in range(3)
        }
        jobs = {n: submit(api, t) for n, t in texts.items()}
        deadline = time.monotonic() + 60
        while not (held(rd) and rd.hlen(keys.job_results(jobs[0]))):
            assert time.monotonic() < deadline, fleet.procs[-1].log_tail(40)
            time.sleep(0.05)
        victims = celery_children(fleet.procs[-1])
        assert signal_all(victims, signal.SIGKILL)
        killed_at = time.monotonic()
        for n, job_id in jobs.items():
            job = wait_final(api, job_id, timeout=120, fleet=fleet)
            assert job["status"] == "succeeded", job
            result = api.get(f"/v1/jobs/{job_id}/result").json()
            assert result["translations"] == [f"<es> {t}" for t in texts[n]]
            assert rd.hlen(keys.job_results(job_id)) == 1500  # one result per segment
        back_in = time.monotonic() - killed_at
        assert back_in < 75, back_in
        assert rd.llen(keys.DEAD_LETTER) == 0
        log = fleet.procs[-1].log_path.read_text(errors="replace")
        assert "is gone holding" in log  # the rescue brought them back, not the 1 h timeout


def test_a_redelivered_chunk_of_ten_thousand_repeated_lines_completes(redis_server: str) -> None:
    """A product feed of 10,000 lines with 3 distinct texts is one chunk of 3 segments filling
    10,000 indices. Its worker is killed with -9 while it translates it; on the redelivery the
    chunk's scripts look up 10,000 indices at once (Lua's unpack stops near 8,000 values: this
    once failed after the delivery counter moved, and requeued the chunk forever). It
    completes, every line translated."""
    url = redis_server.rsplit("/", 1)[0] + "/6"
    rd = redis.Redis.from_url(url, decode_responses=True)
    rd.flushdb()
    # the slow request (1.5 s, for the kill to land inside it) fits the engine deadline: a
    # quarter of FAULT_ENV's 10 s visibility timeout
    env = {**FAULT_ENV, "MTBENCH_SLOW_ON": "SLOWLY:1.5", "MT_HEARTBEAT_S": "1"}
    with cost_fleet(url, env) as (fleet, api):
        lines = ["Red shoes", "Blue hat, SLOWLY made", "Green bag"]
        texts = [lines[i % 3] for i in range(10_000)]
        job_id = submit(api, texts)
        deadline = time.monotonic() + 60
        while not held(rd):
            assert time.monotonic() < deadline, fleet.procs[-1].log_tail(40)
            time.sleep(0.05)
        time.sleep(0.5)  # inside the slow request
        assert signal_all(celery_children(fleet.procs[-1]), signal.SIGKILL)
        job = wait_final(api, job_id, timeout=120, fleet=fleet)
        assert job["status"] == "succeeded", job
        assert job["progress"] == {"done": 10_000, "failed": 0, "total": 10_000}
        result = api.get(f"/v1/jobs/{job_id}/result").json()
        assert result["translations"] == [f"<es> {t}" for t in texts]
        assert int(rd.hget(keys.chunk_deliveries(job_id), "0") or 0) == 2


def test_redis_full_under_noeviction_refuses_new_work_and_loses_no_result(
    faulty: tuple[LocalFleet, TestClient, redis.Redis],
) -> None:
    """F7 + F9: Redis runs out of memory (maxmemory with noeviction) in the middle of a job:
    result writes fail after translating, and the API answers 503 with Retry-After instead of
    accepting work it cannot record. The job is never final without its results; once memory
    is back it completes, every segment once."""
    fleet, api, rd = faulty
    texts = [f"segment {i} of the job that meets a full Redis" for i in range(1500)]
    job_id = submit(api, texts)
    deadline = time.monotonic() + 60
    while rd.hlen(keys.job_results(job_id)) < 100:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    rd.config_set("maxmemory-policy", "noeviction")
    rd.config_set("maxmemory", "1mb")  # far below what the job already uses
    try:
        t0 = time.monotonic()
        refused = api.post(
            "/v1/jobs",
            json={"texts": ["new work"], "source_lang": "en", "target_lang": "es"},
        )
        assert refused.status_code == 503, refused.text
        assert refused.headers["Retry-After"]
        assert time.monotonic() - t0 < 5
        stuck_at = rd.hlen(keys.job_results(job_id))
        for _ in range(20):  # 3 s: writes fail, workers retry
            job = api.get(f"/v1/jobs/{job_id}").json()
            assert job["status"] not in {"succeeded", "partial", "failed"}, job
            time.sleep(0.15)
        assert rd.hlen(keys.job_results(job_id)) == stuck_at  # nothing written meanwhile
    finally:
        rd.config_set("maxmemory", "0")
    job = wait_final(api, job_id, timeout=120, fleet=fleet)
    assert job["status"] == "succeeded", job
    assert job["progress"] == {"done": 1500, "failed": 0, "total": 1500}
    result = api.get(f"/v1/jobs/{job_id}/result").json()
    assert result["translations"] == [f"<es> {t}" for t in texts]


def test_the_same_idempotency_key_sent_concurrently_makes_one_job(
    faulty: tuple[LocalFleet, TestClient, redis.Redis],
) -> None:
    """F11: twenty clients send the same request with the same Idempotency-Key at once, to a
    real API process: one job, every client gets its id, each chunk executes once."""
    import concurrent.futures

    import httpx

    fleet, _api, rd = faulty
    base = fleet.start_api()
    body = {
        "texts": [f"idempotent line {i}" for i in range(200)],
        "source_lang": "en",
        "target_lang": "es",
    }

    def post(_: int) -> httpx.Response:
        return httpx.post(
            f"{base}/v1/jobs", json=body, headers={"Idempotency-Key": "order-42"}, timeout=30
        )

    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(post, range(20)))
    assert {a.status_code for a in answers} <= {200, 202}, [a.text for a in answers]
    ids = {a.json()["id"] for a in answers}
    assert len(ids) == 1
    job_id = ids.pop()
    with httpx.Client(base_url=base, timeout=30) as client:
        deadline = time.monotonic() + 60
        while client.get(f"/v1/jobs/{job_id}", params={"wait": 2}).json()["status"] != "succeeded":
            assert time.monotonic() < deadline
        job_hashes = [k for k in rd.scan_iter(keys.job("*")) if k.count(":") == 2]
        assert job_hashes == [keys.job(job_id)]  # one job, no other
        deliveries = rd.hgetall(keys.chunk_deliveries(job_id))
        assert deliveries and set(deliveries.values()) == {"1"}, deliveries
        result = client.get(f"/v1/jobs/{job_id}/result").json()
        assert result["translations"] == [f"<es> {t}" for t in body["texts"]]


def test_cancel_during_processing_skips_the_rest_and_keeps_what_finished(
    faulty: tuple[LocalFleet, TestClient, redis.Redis],
) -> None:
    """F12: a job cancelled while its chunks run: no chunk starts after the cancel, those in
    flight finish (the job is `cancelling` meanwhile), then it is `cancelled` with final
    counters; the results written are kept and served."""
    _fleet, api, rd = faulty
    texts = [f"segment {i} of the job that is cancelled" for i in range(3000)]
    job_id = submit(api, texts)
    deadline = time.monotonic() + 60
    while rd.hlen(keys.job_results(job_id)) < 200:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert api.delete(f"/v1/jobs/{job_id}").json()["status"] in {"cancelling", "cancelled"}
    job = api.get(f"/v1/jobs/{job_id}", params={"wait": 30}).json()
    assert job["status"] == "cancelled"  # the chunks in flight finished
    kept = rd.hlen(keys.job_results(job_id))
    assert kept == job["progress"]["done"] + job["progress"]["failed"]
    time.sleep(3)
    assert rd.hlen(keys.job_results(job_id)) == kept < 3000  # the rest was skipped
    assert api.get(f"/v1/jobs/{job_id}").json()["progress"] == job["progress"]  # final
    result = api.get(f"/v1/jobs/{job_id}/result").json()
    done = [i for i, t in enumerate(result["translations"]) if t is not None]
    assert len(done) == kept
    assert all(result["translations"][i] == f"<es> {texts[i]}" for i in done)
    assert (
        rd.llen(keys.queue(COST_POOL, "bulk")) == 0
    )  # skipped chunks were consumed, not left behind


@pytest.mark.soak
def test_soak_ten_kills_during_a_5000_segment_job(
    faulty: tuple[LocalFleet, TestClient, redis.Redis],
) -> None:
    """F1 soak: ten SIGKILLs of the Celery worker during a 5,000-segment bulk job, each while
    it holds chunks; the job completes with the results of a run without faults."""
    fleet, api, rd = faulty
    texts = [f"segment {i} of the soak job" for i in range(5000)]
    job_id = submit(api, texts)
    kill_while_holding(
        fleet,
        api,
        rd,
        job_id,
        kills=10,
        within_s=400,
        mid_batch_s=0.2,
        pause_s=1.0,
        poll_s=0.05,
        unfinished=True,
    )
    job = wait_final(api, job_id, timeout=300, fleet=fleet)
    assert job["status"] == "succeeded", job
    assert job["progress"] == {"done": 5000, "failed": 0, "total": 5000}
    result = api.get(f"/v1/jobs/{job_id}/result").json()
    assert result["translations"] == [f"<es> {t}" for t in texts]
    assert rd.hlen(keys.job_results(job_id)) == 5000
    assert rd.llen(keys.DEAD_LETTER) == 0
