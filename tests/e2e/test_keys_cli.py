"""API keys as an operator and a client use them: `mtfleet keys create|list|revoke` against
Redis, then the real `mtfleet api` process (MT_AUTH=required) through the CLI and the SDK,
including the purge route."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
import redis

from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.producer.client import AsyncMTClient, MTClient, MTClientError
from tests.integration.registered import register_pair


def mtfleet(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mtfleet", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


@pytest.fixture
def api_url(redis_url: str, r: redis.Redis) -> Iterator[str]:
    register_pair(r, ttl_s=300)
    # revokes must show at once in this test: no in-process cache of keys
    env = {"MT_REDIS_URL": redis_url, "MT_AUTH": "required", "MT_AUTH_CACHE_S": "0"}
    with LocalFleet(redis_url=redis_url, env=env) as fleet:
        fleet.start_redis()
        yield fleet.start_api()


def test_operator_makes_lists_revokes_and_deletes_keys_that_clients_use(
    redis_url: str, api_url: str, r: redis.Redis
) -> None:
    made = mtfleet("keys", "create", "--name", "shop1", "--chars-per-day", "1000", "--json")
    assert made.returncode == 0, made.stderr
    shop1 = json.loads(made.stdout)
    token = shop1["token"]
    assert token.startswith(f"mt_{shop1['id']}_") and shop1["chars_per_day"] == 1000

    plain = mtfleet("keys", "create", "--name", "shop2", "--rate", "50")
    assert plain.returncode == 0 and "shown only this once" in plain.stderr
    other = plain.stdout.strip()  # stdout is the token alone: TOKEN=$(mtfleet keys create ...)
    assert other.startswith("mt_") and "\n" not in other

    listed = mtfleet("keys", "list", "--json")
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert set(rows) == {"shop1", "shop2"} and rows["shop2"]["rate"] == 50
    assert token not in listed.stdout and "secret" not in listed.stdout
    assert "shop1" in mtfleet("keys", "list").stdout

    # the CLI client: no key is a one-line 401; --api-key or MT_API_KEY lets it in
    refused = mtfleet("languages", "--url", api_url)
    assert refused.returncode == 1 and "401 (unauthorized)" in refused.stderr.replace("\n", " ")
    assert "Traceback" not in refused.stderr
    assert mtfleet("languages", "--url", api_url, "--api-key", token).returncode == 0
    assert mtfleet("languages", "--url", api_url, env={"MT_API_KEY": token}).returncode == 0

    # the SDK: a job is its key's alone; purge (CLI, sync and async SDK) deletes it
    texts = ["Red shoes", "Blue shirt"]
    with MTClient(api_url, api_key=token) as mt, MTClient(api_url, api_key=other) as them:
        job = mt.submit(texts, source="en", target="es")
        with pytest.raises(MTClientError) as exc:
            them.get(job.id)
        assert exc.value.status == 404
        purged = mtfleet("cancel", job.id, "--purge", "--url", api_url, "--api-key", token)
        assert purged.returncode == 0, purged.stderr
        assert json.loads(purged.stdout)["status"] == "cancelled"
        with pytest.raises(MTClientError) as exc:
            mt.get(job.id)
        assert exc.value.status == 404

        second = mt.submit(texts, source="en", target="es")
        assert mt.cancel(second.id, purge=True).id == second.id
        with pytest.raises(MTClientError):
            mt.result(second.id, partial=True)
        kept = mt.submit(texts, source="en", target="es")  # no worker here: nothing in flight
        assert mt.cancel(kept.id).status.value == "cancelled"
        assert mt.get(kept.id).status.value == "cancelled"

    async def async_purge() -> int:
        async with AsyncMTClient(api_url, api_key=token) as amt:
            third = await amt.submit(texts, source="en", target="es")
            await amt.cancel(third.id, purge=True)
            try:
                await amt.get(third.id)
            except MTClientError as err:
                return err.status
            return 200

    assert asyncio.run(async_purge()) == 404

    # revoke: the key stops working (this API caches nothing), and stays listed as revoked
    revoked = mtfleet("keys", "revoke", shop1["id"])
    assert revoked.returncode == 0 and "shop1" in revoked.stdout
    after = mtfleet("languages", "--url", api_url, "--api-key", token)
    assert after.returncode == 1 and "revoked" in after.stderr
    rows = {row["name"]: row for row in json.loads(mtfleet("keys", "list", "--json").stdout)}
    assert rows["shop1"]["revoked"] and not rows["shop2"]["revoked"]
    assert rows["shop1"]["chars_today"] == 4 * sum(map(len, texts))  # four jobs submitted
    unknown = mtfleet("keys", "revoke", "0" * 16)
    assert unknown.returncode == 1 and "no API key" in unknown.stderr

    # delete: the key is gone from the list, refused, and its glossaries went with it
    with MTClient(api_url, api_key=other) as them:
        g = them.create_glossary("brands", source="en", target="es", protected=["iPhone"])
    shop2 = rows["shop2"]["id"]
    deleted = mtfleet("keys", "delete", shop2)
    assert deleted.returncode == 0, deleted.stderr
    assert (
        f"deleted key {shop2} (shop2), 1 glossary(ies), 0 style rule(s) and 0 translation "
        "memory(ies)" in deleted.stdout
    )
    names = {row["name"] for row in json.loads(mtfleet("keys", "list", "--json").stdout)}
    assert names == {"shop1"}
    gone = mtfleet("languages", "--url", api_url, "--api-key", other)
    assert gone.returncode == 1 and "401" in gone.stderr
    assert r.hget(f"mt:glossary:{g.id}", "deleted") == "1"
    assert mtfleet("keys", "delete", shop2).returncode == 1


def test_an_operator_key_is_made_with_role_operator(redis_url: str) -> None:
    env = {"MT_REDIS_URL": redis_url}
    made = mtfleet("keys", "create", "--name", "ops", "--role", "operator", "--json", env=env)
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["role"] == "operator"
    assert mtfleet("keys", "create", "--name", "shop", env=env).returncode == 0
    rows = {
        row["name"]: row["role"]
        for row in json.loads(mtfleet("keys", "list", "--json", env=env).stdout)
    }
    assert rows == {"ops": "operator", "shop": "user"}
    table = mtfleet("keys", "list", env=env).stdout.splitlines()
    assert table[0].split("\t")[-4:] == ["role", "weight", "scopes", "state"]
    assert any(line.split("\t")[-4:] == ["operator", "1", "all", "active"] for line in table[1:])
    refused = mtfleet("keys", "create", "--name", "x", "--role", "admin", env=env)
    assert refused.returncode == 2 and "role" in refused.stderr


def test_a_key_made_without_a_rate_has_the_default_and_rate_none_has_none(
    redis_url: str,
) -> None:
    env = {"MT_KEY_RATE": "7"}
    plain = json.loads(mtfleet("keys", "create", "--name", "plain", "--json", env=env).stdout)
    assert plain["rate"] == 7 and plain["rate_default"] is True
    free = mtfleet("keys", "create", "--name", "free", "--rate", "none", "--json", env=env)
    assert free.returncode == 0, free.stderr
    assert json.loads(free.stdout)["rate"] is None
    bad = mtfleet("keys", "create", "--name", "bad", "--rate", "fast")
    assert bad.returncode == 2 and "or none for no limit" in bad.stderr
    table = mtfleet("keys", "list", env={"MT_KEY_RATE": "9"}).stdout  # the setting, when read
    rows = {line.split("\t")[1]: line.split("\t")[4] for line in table.splitlines()[1:]}
    assert rows == {"plain": "9 (default)", "free": "none"}


def test_a_keys_weight_is_set_at_creation_and_changed_later(redis_url: str, r: redis.Redis) -> None:
    """The weight is a key's share of the turns when keys' work waits for the same workers
    (core/backlog.py reads it from the key at every turn)."""
    env = {"MT_REDIS_URL": redis_url}
    made = mtfleet("keys", "create", "--name", "night", "--weight", "3", "--json", env=env)
    assert made.returncode == 0, made.stderr
    key = json.loads(made.stdout)
    assert key["weight"] == 3 and r.hget(f"mt:apikey:{key['id']}", "weight") == "3"
    changed = mtfleet("keys", "set-weight", key["id"], "5", env=env)
    assert changed.returncode == 0 and "weight 5" in changed.stdout
    rows = {
        row["name"]: row for row in json.loads(mtfleet("keys", "list", "--json", env=env).stdout)
    }
    assert rows["night"]["weight"] == 5
    assert mtfleet("keys", "set-weight", key["id"], "0", env=env).returncode == 2
    assert mtfleet("keys", "set-weight", "0" * 16, "2", env=env).returncode == 1
