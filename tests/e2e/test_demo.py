"""`mtfleet demo` (what `make demo` runs) prints real Spanish and stops what it started."""

from __future__ import annotations

import os
import subprocess
import sys

import redis


def test_demo_translates_and_cleans_up(redis_server: str) -> None:
    client = redis.Redis.from_url(redis_server, decode_responses=True)
    client.flushall()
    env = {**os.environ, "MT_REDIS_URL": redis_server, "MT_HEARTBEAT_S": "1", "COLUMNS": "160"}
    proc = subprocess.run(
        [sys.executable, "-m", "mtfleet.producer.cli", "demo", "--bulk-lines", "80"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "bulk job succeeded: 80/80 lines" in out
    assert "La camisa roja es en la casa." in out  # Apertium's en->es, side by side
    assert "from the phrase cache (identical: True)" in out
    assert "Flower" in out and "http://127.0.0.1:" in out
    # It used the Redis it was given and stopped its worker: no live worker remains.
    assert client.hlen("mt:pairs") >= 1
    assert all(client.get(f"mt:worker:{w}") is None for w in client.smembers("mt:workers"))
