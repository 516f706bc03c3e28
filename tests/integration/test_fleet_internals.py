"""The fleet's internals on a real ``mtfleet api`` (MT_AUTH=required): /readyz's details and
/metrics are an operator's on the public port, the metrics port (MT_API_METRICS_PORT) serves
scrapers without a key, and a metrics port the API cannot have stops it with a clear line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import httpx
import psutil
import pytest
import redis

from mtfleet.fleet.localfleet import LocalFleet, free_port
from tests.integration.registered import register_pair


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def fleet() -> Iterator[LocalFleet]:
    env = {"MT_AUTH": "required", "MT_API_METRICS_PORT": str(free_port())}
    with LocalFleet(env=env) as f:
        f.start_redis()
        # a worker as its heartbeat leaves it (its name is what must not reach a tenant)
        register_pair(redis.Redis.from_url(f.redis_url), ttl_s=600)
        f.start_api()
        f.env["USER_KEY"] = f.create_api_key("shop")
        f.env["OPERATOR_KEY"] = f.create_api_key("ops", role="operator")
        yield f


def test_internals_are_an_operators_and_the_metrics_port_a_scrapers(fleet: LocalFleet) -> None:
    user, operator = bearer(fleet.env["USER_KEY"]), bearer(fleet.env["OPERATOR_KEY"])
    with httpx.Client(base_url=fleet.api_url, timeout=30) as api:
        # a probe and a tenant: the status, nothing about the fleet
        for headers in ({}, user):
            ready = api.get("/readyz", headers=headers)
            assert ready.status_code == 200 and ready.json() == {"status": "ready"}, headers
            assert "w@test" not in ready.text and "apertium" not in ready.text
        assert api.get("/metrics").status_code == 401
        refused = api.get("/metrics", headers=user)
        assert refused.status_code == 403 and refused.json()["error"]["type"] == "forbidden"
        # an operator: everything
        full = api.get("/readyz", headers=operator).json()
        assert full["pools"]["apertium"]["interactive"] == ["w@test"]
        scraped = api.get("/metrics", headers=operator)
        assert scraped.status_code == 200 and "mt_lane_depth" in scraped.text
    # the metrics port: no key, the same registry (this API's own requests, the fleet's gauges)
    port = int(fleet.env["MT_API_METRICS_PORT"])
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    assert 'mt_api_request_seconds_count{method="GET",route="/readyz",status="200"}' in text
    assert 'mt_lane_live_workers{lane="bulk",pool="apertium"} 1.0' in text
    # on loopback unless MT_API_METRICS_HOST says otherwise
    api_pid = next(p for p in fleet.procs if p.name == "api").popen.pid
    listening = {
        c.laddr.ip
        for c in psutil.Process(api_pid).net_connections("inet")
        if c.status == psutil.CONN_LISTEN and c.laddr.port == port
    }
    assert listening == {"127.0.0.1"}


def run_api(*args: str, env: dict[str, str], timeout: float = 60) -> tuple[int | None, str]:
    """``mtfleet api ARGS`` until it exits (its status and output), or ``timeout`` (None: it
    was still serving; it and its worker processes are stopped)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mtfleet", "api", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **env},
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out


def test_several_api_workers_cannot_share_one_metrics_port(redis_url: str) -> None:
    env = {"MT_REDIS_URL": redis_url, "MT_API_METRICS_PORT": str(free_port())}
    code, out = run_api("--port", str(free_port()), "--workers", "2", env=env, timeout=30)
    assert code == 2, out[-2000:]
    said = " ".join(out.split())
    assert "--workers 2" in said and "MT_API_METRICS_PORT" in said, said


def test_a_taken_metrics_port_stops_the_api_with_a_clear_line(redis_url: str) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    env = {"MT_REDIS_URL": redis_url, "MT_API_METRICS_PORT": str(port)}
    try:
        code, out = run_api("--port", str(free_port()), env=env)
    finally:
        holder.close()
    assert code not in (None, 0), out[-2000:]  # it exits, once, rather than serve without
    assert f"MT_API_METRICS_PORT={port}: cannot serve metrics on 127.0.0.1:{port}" in out, out
