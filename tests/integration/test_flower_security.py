"""Flower hardened: basic auth always on (no empty password; the default one on loopback only),
customer text never in anything Flower shows, and worker remote control that can be off.

The fleet is a worker process running the cost-model engine (``costfleet``), made slow enough
(50 ms steps) that its chunks are still running while Flower inspects the worker; Flower runs
as ``mtfleet flower``, as an operator starts it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.core.broker import make_celery
from mtfleet.core.errors import ConfigError
from mtfleet.core.settings import Settings
from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.workers.flower import DEFAULT_FLOWER_PASSWORD, check_flower_auth, flower_argv
from tests.integration.costfleet import cost_fleet

SECRET = "Quokka-confidential"  # in every submitted text, never in a summary
FAIL_ON = "detonator-phrase"  # a segment holding it fails in the engine


# --- basic auth ---------------------------------------------------------------------------------
@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_default_password_is_accepted_on_loopback_with_a_warning(host: str) -> None:
    warning = check_flower_auth(host, "admin", DEFAULT_FLOWER_PASSWORD)
    assert warning is not None and "MT_FLOWER_PASSWORD" in warning


@pytest.mark.parametrize(
    ("host", "user", "password", "problem"),
    [
        ("127.0.0.1", "admin", "", "empty"),
        ("0.0.0.0", "admin", DEFAULT_FLOWER_PASSWORD, "default password"),
        ("10.1.2.3", "admin", DEFAULT_FLOWER_PASSWORD, "default password"),
        ("flower.internal", "admin", DEFAULT_FLOWER_PASSWORD, "default password"),
        # Flower splits its credential list at commas: "x" would become a credential alone.
        ("127.0.0.1", "admin", "long-secret,x", "comma"),
        ("127.0.0.1", "ad,min", "long-secret", "comma"),
        ("127.0.0.1", "ad:min", "long-secret", "colon"),
    ],
)
def test_unsafe_credentials_are_refused(host: str, user: str, password: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        check_flower_auth(host, user, password)


def test_a_real_password_passes_anywhere() -> None:
    assert check_flower_auth("0.0.0.0", "admin", "a-long-real-secret") is None


def test_flower_never_keeps_state_in_a_pickle() -> None:
    assert "--persistent=False" in flower_argv("127.0.0.1", 5555)


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"MT_FLOWER_PASSWORD": ""}, "empty"),
        ({"MT_FLOWER_HOST": "0.0.0.0"}, "default password"),
        ({"MT_FLOWER_PASSWORD": "secret,admin"}, "comma"),
    ],
)
def test_mtfleet_flower_refuses_to_start(redis_url: str, env: dict[str, str], problem: str) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MT_FLOWER")}
    proc = subprocess.run(
        [sys.executable, "-m", "mtfleet", "flower", "--port", "1"],
        env={**base, "MT_REDIS_URL": redis_url, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert problem in proc.stderr


# --- customer text -------------------------------------------------------------------------------
SLOW = {
    "MTBENCH_STEP_FIXED_S": "0.05",
    "MTBENCH_FAIL_ON": FAIL_ON,
    "MT_CHUNK_SIZE": "8",
    "MT_WORKER_CONCURRENCY": "4",
}


@pytest.fixture
def slow_fleet(redis_server: str) -> Iterator[tuple[LocalFleet, TestClient]]:
    url = redis_server.rsplit("/", 1)[0] + "/7"
    redis.Redis.from_url(url).flushdb()
    with cost_fleet(url, SLOW) as fleet_api:
        yield fleet_api


def wait_listening(flower: str, auth: tuple[str, str]) -> None:
    """Until Flower has received a worker's heartbeat event: its event receiver is subscribed,
    so it will see every task event from now on (events are not replayed)."""
    deadline = time.monotonic() + 30
    while not any(
        httpx.get(f"{flower}/api/workers?status=1", auth=auth, timeout=10).json().values()
    ):
        assert time.monotonic() < deadline, "Flower never saw a worker heartbeat"
        time.sleep(0.2)


def submit(api: TestClient, texts: list[str]) -> str:
    resp = api.post(
        "/v1/jobs", json={"texts": texts, "source_lang": "en", "target_lang": "es", "lane": "bulk"}
    )
    assert resp.status_code == 202, resp.text
    return str(resp.json()["id"])


def test_flower_shows_summaries_never_customer_text(
    slow_fleet: tuple[LocalFleet, TestClient],
) -> None:
    """While chunks run, Flower's worker page (remote control: active and reserved tasks) and,
    afterwards, its task list and task pages (events: args, kwargs, result, exception) show
    the chunk's summary, never a submitted text; nor does a failing segment's error. Flower
    runs with the default password here: it starts on loopback, warns, and still wants it."""
    fleet, api = slow_fleet
    flower = fleet.start_flower()
    assert httpx.get(f"{flower}/api/tasks", timeout=10).status_code == 401
    assert "WARNING" in fleet.procs[-1].log_tail(200)
    auth = ("admin", DEFAULT_FLOWER_PASSWORD)
    wait_listening(flower, auth)

    texts = [f"{SECRET} parcel {i} goes to the blue house." for i in range(120)]
    texts[7] = f"{SECRET} {FAIL_ON} number seven."
    job_id = submit(api, texts)

    # While the job runs: Flower inspects the worker (active, reserved, scheduled tasks).
    workers: dict[str, Any] = {}
    deadline = time.monotonic() + 60
    while not workers:
        workers = httpx.get(f"{flower}/api/workers", auth=auth, timeout=10).json()
        assert time.monotonic() < deadline
    (name,) = workers
    # Flower asks for active tasks with safe=True, but not for reserved or scheduled ones, and
    # `celery inspect active` / `query_task` (anyone on the broker) ask without it.
    inspect = make_celery(Settings(redis_url=fleet.redis_url or "")).control.inspect(
        destination=[name], timeout=5
    )
    seen: list[dict[str, Any]] = []
    while not (seen and any(t.get("time_start") for t in seen)):
        assert api.get(f"/v1/jobs/{job_id}").json()["status"] in {"queued", "running"}, (
            "the job finished before its tasks could be inspected"
        )
        resp = httpx.get(
            f"{flower}/api/workers",
            params={"workername": name, "refresh": 1},
            auth=auth,
            timeout=30,
        )
        assert resp.status_code == 200, resp.text
        page = resp.json()[name]
        active = (inspect.active() or {}).get(name, [])
        queried = (inspect.query_task(*[t["id"] for t in active]) or {}).get(name, {})
        shown = json.dumps([page, active, queried])
        assert SECRET not in shown and FAIL_ON not in shown
        seen += page["active"] + page["reserved"] + active + [i for _, i in queried.values()]
    assert all(t["args"].startswith(f"(job={job_id} chunk=") for t in seen), seen

    job = api.get(f"/v1/jobs/{job_id}", params={"wait": 60}).json()
    assert job["status"] == "partial" and job["progress"]["failed"] == 1, job

    # Afterwards: the task list and every task's own page.
    deadline = time.monotonic() + 30
    while True:
        tasks = httpx.get(f"{flower}/api/tasks", auth=auth, timeout=10).json()
        mine = {tid: t for tid, t in tasks.items() if f"job={job_id}" in (t.get("args") or "")}
        if len(mine) == 15 and all(t["state"] == "SUCCESS" for t in mine.values()):
            break
        assert time.monotonic() < deadline, mine
        time.sleep(0.3)
    pages = [httpx.get(f"{flower}/api/task/info/{tid}", auth=auth, timeout=10).text for tid in mine]
    shown = json.dumps(tasks) + "".join(pages)
    assert SECRET not in shown and FAIL_ON not in shown
    assert "parcel" not in shown and "blue house" not in shown
    for t in mine.values():
        assert t["kwargs"] == "{}" and "segments=8" in t["args"]


# --- remote control ------------------------------------------------------------------------------
def pong(settings: Settings) -> list[dict[str, Any]]:
    return list(make_celery(settings).control.ping(timeout=2.0))


def test_worker_answers_remote_control_unless_switched_off(redis_server: str) -> None:
    url = redis_server.rsplit("/", 1)[0] + "/8"
    redis.Redis.from_url(url).flushdb()
    settings = Settings(redis_url=url)
    off = {"MT_WORKER_REMOTE_CONTROL": "false", "MT_FLOWER_PASSWORD": "remote-off-test"}
    with cost_fleet(url, off) as (fleet, api):
        flower, auth = fleet.start_flower(), ("admin", "remote-off-test")
        wait_listening(flower, auth)
        # The worker is up (/readyz) and works, but nobody can command or inspect it.
        job_id = submit(api, ["Switched off."])
        job = api.get(f"/v1/jobs/{job_id}", params={"wait": 30}).json()
        assert job["status"] == "succeeded", job
        assert pong(settings) == []
        # Flower still sees the worker online and its tasks: both come from events.
        deadline = time.monotonic() + 30
        while True:
            online = httpx.get(f"{flower}/api/workers?status=1", auth=auth, timeout=10).json()
            tasks = httpx.get(f"{flower}/api/tasks", auth=auth, timeout=10).json()
            if any(online.values()) and any(job_id in (t["args"] or "") for t in tasks.values()):
                break
            assert time.monotonic() < deadline, (online, tasks)
            time.sleep(0.3)
    with cost_fleet(url, {}) as (fleet, _api):
        # Ready (/readyz) may come a moment before the worker's pidbox has subscribed.
        deadline = time.monotonic() + 30
        while not (replies := pong(settings)):
            assert time.monotonic() < deadline, fleet.procs[-1].log_tail()
        assert len(replies) == 1 and next(iter(replies[0].values())) == {"ok": "pong"}
