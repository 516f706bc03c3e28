"""core/apikeys.py on fakeredis: tokens, hashed storage, verification, the revoke bound of the
in-process cache, the daily quota and its day boundary."""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections.abc import Awaitable
from typing import TypeVar

import fakeredis
import pytest

from mtfleet.core import keys
from mtfleet.core.apikeys import KeyStore, parse_token, seconds_to_utc_midnight, utc_day
from mtfleet.core.errors import InvalidInput, QuotaExceeded, Unauthorized


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


T = TypeVar("T")


@pytest.fixture
def r() -> fakeredis.FakeRedis:
    return fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True)


def on_loop(r: fakeredis.FakeRedis, **kw: object) -> KeyStore:
    """A store whose charges run on the event loop (the API's), on ``r``'s server."""
    server = r.connection_pool.connection_kwargs["server"]
    ar = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    return KeyStore(r, aclient=ar, **kw)  # type: ignore[arg-type]


def run(step: Awaitable[T]) -> T:
    async def go() -> T:
        return await step

    return asyncio.run(go())


def test_token_shape_and_parsing(r: fakeredis.FakeRedis) -> None:
    key, token = KeyStore(r).create("shop1")
    assert re.fullmatch(r"mt_[0-9a-f]{16}_[A-Za-z0-9_-]{40,}", token)
    parsed = parse_token(token)
    assert parsed is not None and parsed[0] == key.id
    for bad in (
        "",
        "mt_",
        token.removeprefix("mt_"),
        f"mt_{key.id}_",
        f"mt_{key.id}",
        f"mt_A{key.id[1:]}_x",  # an upper-case hex digit (key.id.upper() is key.id when the
        # id has no letter: one id in ~1,800, which a make test run drew)
        f"mt_{key.id[:-1]}_x",
        f"xx_{key.id}_x",
    ):
        assert parse_token(bad) is None, bad


def test_only_the_secrets_digest_is_stored(r: fakeredis.FakeRedis) -> None:
    key, token = KeyStore(r).create("shop1", chars_per_day=500, rate=2.5)
    secret = token.split("_", 2)[2]
    stored = r.hgetall(keys.api_key(key.id))
    assert stored["secret_sha256"] == hashlib.sha256(secret.encode()).hexdigest()
    everything = " ".join(" ".join(r.hgetall(k).values()) for k in r.keys("mt:apikey:*"))
    assert secret not in everything and token not in everything
    assert r.smembers(keys.API_KEYS) == {key.id}
    # what the store reads back is what it was given; dumps never carry the digest
    found = KeyStore(r).get(key.id)
    assert found is not None
    assert (found.name, found.chars_per_day, found.rate) == ("shop1", 500, 2.5)
    assert not found.revoked
    assert "secret_sha256" not in found.model_dump()


def test_verify_accepts_the_token_and_nothing_close_to_it(r: fakeredis.FakeRedis) -> None:
    store = KeyStore(r, cache_s=0)
    key, token = store.create("shop1")
    _, other = store.create("shop2")
    assert store.verify(token).id == key.id
    wrong_secret = f"mt_{key.id}_{other.split('_', 2)[2]}"
    unknown_id = f"mt_{'0' * 16}_{token.split('_', 2)[2]}"
    for bad in (wrong_secret, unknown_id, token + "x", token[:-1], "Bearer " + token, "nonsense"):
        with pytest.raises(Unauthorized):
            store.verify(bad)


def test_revoked_key_is_refused_and_stays_listed(r: fakeredis.FakeRedis) -> None:
    store = KeyStore(r, cache_s=0)
    key, token = store.create("shop1")
    revoked = store.revoke(key.id)
    assert revoked is not None and revoked.revoked and revoked.revoked_at
    with pytest.raises(Unauthorized, match="revoked"):
        store.verify(token)
    assert [k.id for k in store.list_keys()] == [key.id]
    assert store.revoke("0" * 16) is None
    assert store.revoke("not-an-id") is None


def test_a_revoke_reaches_other_processes_within_the_cache_time(r: fakeredis.FakeRedis) -> None:
    clock = Clock()
    api = KeyStore(r, cache_s=5, clock=clock)  # an API process
    operator = KeyStore(r, cache_s=0)  # `mtfleet keys revoke`, another process
    key, token = operator.create("shop1")
    assert api.verify(token).id == key.id
    operator.revoke(key.id)
    clock.t += 4.9
    assert api.verify_cached(token) is not None  # still trusted: within the documented bound
    assert api.verify(token).id == key.id
    clock.t += 0.2
    assert api.verify_cached(token) is None  # the cached entry is stale: read again
    with pytest.raises(Unauthorized, match="revoked"):
        api.verify(token)


def test_cached_verification_still_checks_the_secret(r: fakeredis.FakeRedis) -> None:
    store = KeyStore(r, cache_s=60, clock=Clock())
    key, token = store.create("shop1")
    assert store.verify_cached(token) is None  # nothing cached yet
    store.verify(token)
    assert store.verify_cached(token) is not None
    with pytest.raises(Unauthorized):
        store.verify_cached(f"mt_{key.id}_not-the-secret")


@pytest.mark.parametrize(
    ("name", "limits"),
    [
        ("", {}),
        ("   ", {}),
        ("x" * 65, {}),
        ("tab\there", {}),
        ("ok", {"chars_per_day": 0}),
        ("ok", {"rate": 0}),
        ("ok", {"rate": -1.0}),
    ],
)
def test_create_refuses_bad_names_and_limits(
    r: fakeredis.FakeRedis, name: str, limits: dict[str, float]
) -> None:
    with pytest.raises(InvalidInput):
        KeyStore(r).create(name, **limits)  # type: ignore[arg-type]
    assert r.keys("*") == []


def test_list_is_oldest_first_and_delete_forgets(r: fakeredis.FakeRedis) -> None:
    wall = Clock(1_000_000.0)
    store = on_loop(r, wall=wall)
    first, _ = store.create("b-first")
    wall.t += 1
    second, _ = store.create("a-second")
    assert [k.id for k in store.list_keys()] == [first.id, second.id]
    run(store.charge(first, 5))
    store.delete(first.id)
    assert [k.id for k in store.list_keys()] == [second.id]
    assert store.get(first.id) is None
    assert not any(first.id in k for k in r.keys("*"))


def test_utc_day_boundaries() -> None:
    midnight = 20_000 * 86_400.0  # some UTC midnight
    assert seconds_to_utc_midnight(midnight) == 86_400
    assert seconds_to_utc_midnight(midnight - 0.5) == 1
    assert seconds_to_utc_midnight(midnight - 3600) == 3600
    assert (
        utc_day(midnight - 1)
        != utc_day(midnight)
        == time.strftime("%Y-%m-%d", time.gmtime(midnight))
    )


def test_quota_is_checked_charged_and_refused(r: fakeredis.FakeRedis) -> None:
    wall = Clock(20_000 * 86_400.0 + 80_000)  # 6,400 s before a UTC midnight
    store = on_loop(r, wall=wall)
    key, _ = store.create("shop1", chars_per_day=20)
    assert run(store.charge(key, 12)) == 12
    with pytest.raises(QuotaExceeded) as exc:
        run(store.charge(key, 9))
    err = exc.value.as_dict()
    assert err["type"] == "quota_exceeded" and err["retry_after"] == 6_400
    assert "8 of 20 left today" in err["message"]
    run(store.check_quota(key, 8))  # a check takes nothing
    with pytest.raises(QuotaExceeded, match="8 of 20 left today"):
        run(store.check_quota(key, 9))
    assert run(store.charge(key, 8)) == 20  # exactly up to the limit
    assert store.used_today([key.id]) == {key.id: 20}
    with pytest.raises(QuotaExceeded, match="more than this API key's daily quota"):
        run(store.charge(key, 21))
    # a new UTC day starts from zero
    wall.t += 6_400
    assert run(store.charge(key, 20)) == 20


def test_keys_without_a_quota_still_count_their_characters(r: fakeredis.FakeRedis) -> None:
    store = on_loop(r)
    key, _ = store.create("shop1")
    for _ in range(3):
        run(store.charge(key, 1_000_000))
    assert store.used_today([key.id]) == {key.id: 3_000_000}
    assert store.used_today([]) == {}


def test_a_key_has_a_role_user_unless_made_an_operator(r: fakeredis.FakeRedis) -> None:
    store = KeyStore(r, cache_s=0)
    user, user_token = store.create("shop")
    op, op_token = store.create("ops", role="operator")
    assert (user.role, op.role) == ("user", "operator")
    assert store.verify(user_token).role == "user"
    assert store.verify(op_token).role == "operator"
    assert {k.name: k.role for k in store.list_keys()} == {"shop": "user", "ops": "operator"}
    with pytest.raises(InvalidInput, match="role"):
        store.create("x", role="admin")
    r.hdel(keys.api_key(user.id), "role")  # a key made before roles existed
    assert store.verify(user_token).role == "user"


def test_a_flood_of_made_up_key_ids_does_not_empty_the_cache(r: fakeredis.FakeRedis) -> None:
    """The cache holds 10,000 keys: past that the least recently used leave one by one (a key
    in use stays trusted without a Redis read), not every key at once."""
    store = KeyStore(r, cache_s=60, clock=Clock())
    _, token = store.create("shop1")
    store.verify(token)
    for n in range(10_000):
        if n == 5_000:
            store.verify(token)  # in use: the most recently used again
        with pytest.raises(Unauthorized):
            store.verify(f"mt_{n:016x}_made-up-secret-made-up-secret-made-up-secret")
    assert store.verify_cached(token) is not None
