"""API keys: who may call ``/v1``, how fast, and how many characters a day.

A token is ``mt_<key id>_<secret>``: the key id (16 hex digits) names the key's hash in Redis,
which holds only the sha256 of the secret (compared with :func:`hmac.compare_digest`) and the
key's name, creation time, daily character quota, rate and revoked flag. A key made without a
rate is held to ``MT_KEY_RATE`` (read when the key is, so a new value applies to every such
key, old ones included); one made with ``rate="none"`` has none. The token itself is
shown once, when the key is created, and stored nowhere.

Hot path: :meth:`KeyStore.verify` reads a key at most once per ``cache_s`` seconds per process
(one HGETALL; zero round trips while cached), so a revoke takes effect within ``cache_s``
(``MT_AUTH_CACHE_S``). The cache is a ``cachetools.TTLCache``: an entry leaves when its
``cache_s`` is over, and a full cache (a flood of made-up key ids) drops its least recently
used entries, not every key the process knows. The rate check (a GCRA in Lua, one round trip,
only for keys with a rate) and the quota charge (checked and counted in the script that stores
the job it pays for, :class:`Charge`) are atomic in Redis, so any number of API processes share
one budget per key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import math
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

import redis
import redis.asyncio
from cachetools import TTLCache
from pydantic import BaseModel, Field

from mtfleet.core import keys, scripts
from mtfleet.core.errors import (
    InvalidInput,
    QuotaExceeded,
    RateLimited,
    StorageQuotaExceeded,
    Unauthorized,
)
from mtfleet.core.scopes import Family, parse_scopes, stored_scopes

TOKEN_PREFIX = "mt_"
_KEY_ID_HEX = 16
#: Most keys one process keeps verified (and unknown key ids remembered as unknown).
_CACHE_MAX = 10_000
_DAY_S = 86_400
#: How long a day's character count is kept (it is read for ``mtfleet keys list``).
_USAGE_TTL_S = 2 * _DAY_S
#: What the key cache answers for a key id it does not hold (None is an unknown key's entry).
_MISSING: Any = object()
#: What an unknown key's secret is compared with (no secret has this digest).
_UNKNOWN_DIGEST = "0" * 64

#: What a key may do: ``user`` calls the translation API; ``operator`` also reads the fleet's
#: operations data (``GET /v1/ops``, the panel at ``/ops``).
Role = Literal["user", "operator"]
ROLES: tuple[Role, ...] = ("user", "operator")
#: What a webhook signing secret looks like: ``whsec_`` and the base64 of 24-64 random bytes
#: (the Standard Webhooks form, what ``standardwebhooks.Webhook`` takes).
WEBHOOK_SECRET_PREFIX = "whsec_"
_WEBHOOK_SECRET_BYTES = 32


def new_webhook_secret() -> str:
    return (
        WEBHOOK_SECRET_PREFIX
        + base64.b64encode(secrets.token_bytes(_WEBHOOK_SECRET_BYTES)).decode()
    )


def check_webhook_secret(secret: str) -> str:
    """``secret`` if it is a ``whsec_`` secret of 24-64 bytes, else ValueError."""
    body = secret.removeprefix(WEBHOOK_SECRET_PREFIX)
    try:
        raw = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if not secret.startswith(WEBHOOK_SECRET_PREFIX) or not 24 <= len(raw) <= 64:
        raise ValueError("a webhook secret is whsec_ followed by the base64 of 24-64 bytes")
    return secret


# The rate check is a GCRA (core/lua/key_rate.lua): one stored number per key, the theoretical
# arrival time of the next request; a request may come ``burst`` intervals early. The charge
# checks and counts in one step (core/lua/key_charge.lua).


class ApiKey(BaseModel):
    """One API key as stored (never its secret; the secret's digest stays out of dumps)."""

    id: str
    name: str
    created_at: float
    chars_per_day: int | None = Field(None, description="Characters per UTC day; None: no limit.")
    rate: float | None = Field(None, description="Requests per second; None: no limit.")
    rate_default: bool = Field(
        False, description="The rate is MT_KEY_RATE's: the key was made without one."
    )
    storage_mb: int | None = Field(
        None, description="MiB the key may keep in Redis; None: MT_KEY_STORAGE_MB."
    )
    role: Role = Field("user", description="user, or operator: may also read /v1/ops.")
    weight: int = Field(
        1,
        ge=1,
        description="Its share of a pool lane when keys wait for the same workers: a key of "
        "weight 2 gets twice the turns of a key of weight 1 (core/backlog.py).",
    )
    scopes: tuple[Family, ...] | None = Field(
        None,
        description="The route families it may call (core/scopes.py); None: every family.",
    )
    no_trace: bool = Field(
        False,
        description="Every request of the key is no-trace (docs/security.md#no-trace-requests): "
        "nothing of it outlives its delivery, whatever the request says.",
    )
    revoked: bool = False
    revoked_at: float | None = None
    secret_sha256: str = Field("", exclude=True, repr=False)
    webhook_secret: str = Field(
        "", exclude=True, repr=False, description="Signs the key's webhooks ('' : none yet)."
    )


def parse_token(token: str) -> tuple[str, str] | None:
    """(key id, secret) of a well-formed token, else None."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    key_id, sep, secret = token[len(TOKEN_PREFIX) :].partition("_")
    if not sep or not secret or not is_key_id(key_id):
        return None
    return key_id, secret


def is_key_id(text: str) -> bool:
    return len(text) == _KEY_ID_HEX and all(c in "0123456789abcdef" for c in text)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def utc_day(now: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(now))


def seconds_to_utc_midnight(now: float) -> int:
    """Whole seconds until the UTC day rolls over (at least 1)."""
    return max(1, math.ceil(_DAY_S - now % _DAY_S))


def _opt(raw: str | None) -> str | None:
    return raw if raw not in (None, "") else None


#: The largest weight a key may have (its share of a pool lane's turns, core/backlog.py).
MAX_WEIGHT = 1000

#: What a key stores as its rate to have none (``mtfleet keys create --rate none``); a key
#: storing no rate has the default (``MT_KEY_RATE``).
NO_RATE = "none"


def _parse(raw: dict[str, str], default_rate: float | None = None) -> ApiKey:
    chars = _opt(raw.get("chars_per_day"))
    rate = _opt(raw.get("rate"))
    unlimited = rate == NO_RATE
    storage = _opt(raw.get("storage_mb"))
    revoked_at = _opt(raw.get("revoked_at"))
    return ApiKey(
        id=raw["id"],
        name=raw.get("name", ""),
        created_at=float(raw.get("created_at", 0)),
        chars_per_day=int(chars) if chars else None,
        rate=None if unlimited else float(rate) if rate else default_rate,
        rate_default=rate is None and default_rate is not None,
        storage_mb=int(storage) if storage else None,
        role="operator" if raw.get("role") == "operator" else "user",  # keys made before roles
        weight=max(1, int(_opt(raw.get("weight")) or 1)),
        scopes=stored_scopes(raw.get("scopes")),  # keys made before scopes: every family
        no_trace=raw.get("no_trace") == "1",
        revoked=raw.get("revoked") == "1",
        revoked_at=float(revoked_at) if revoked_at else None,
        secret_sha256=raw.get("secret_sha256", ""),
        webhook_secret=raw.get("webhook_secret", ""),
    )


@dataclass
class Storage:
    """An API key's storage quota: what its jobs and glossaries keep in Redis, in bytes. A job
    or glossary reserves its bytes in the same script that writes it (so a refused request
    writes nothing); a purge or a delete gives them back; a job's bytes come back by themselves
    when its data expires."""

    r: redis.Redis
    key_id: str
    limit: int  # bytes

    def redis_keys(self) -> tuple[str, str]:
        return keys.api_key_storage(self.key_id)

    def used(self) -> int:
        return int(self.r.hget(self.redis_keys()[1], "total") or 0)

    def exceeded(self, asked: int, used: int) -> StorageQuotaExceeded:
        """The refusal of ``asked`` bytes with ``used`` in use, with the seconds until the
        oldest job's data expires (its bytes come back then)."""
        oldest = self.r.zrange(self.redis_keys()[0], 0, 0, withscores=True)
        expires = float(oldest[0][1]) if oldest else math.inf
        wait = max(1, math.ceil(expires - time.time())) if math.isfinite(expires) else 3600
        # (only glossaries kept, or none: deleting one frees its bytes at once)
        mib = 1024 * 1024
        return StorageQuotaExceeded(
            f"this request stores about {asked / mib:.1f} MiB and this API key keeps "
            f"{used / mib:.1f} of its {self.limit / mib:.0f} MiB (MT_KEY_STORAGE_MB); purge "
            "jobs (DELETE /v1/jobs/ID?purge=true) or delete glossaries to make room",
            retry_after=wait,
            storage_bytes=self.limit,
            stored_bytes=used,
        )

    def recent_jobs(self, limit: int, now: float | None = None) -> list[str]:
        """Ids of the key's jobs whose data has not expired, newest first (at most ``limit``).
        The quota's sorted set is the key's index of its jobs: a job is scored when its data
        expires (its creation time + ``MT_RESULT_TTL_S``), a live glossary +inf (left out)."""
        now = time.time() if now is None else now
        ids = self.r.zrevrangebyscore(self.redis_keys()[0], "(inf", f"({now}", start=0, num=limit)
        return [str(i) for i in ids]

    def release(self, member: str) -> None:
        self._release(keys=list(self.redis_keys()), args=[member])

    @property
    def _release(self) -> Callable[..., object]:
        return scripts.register(self.r, "storage_release")


#: The reporting tag of the request being served ('' : none): the caller's label for what its
#: characters were for (``X-DeepL-Reporting-Tag``), counted per tag beside the key's day
#: (:attr:`Charge.tags`). Set by the request guard for the request's whole life
#: (:mod:`mtfleet.api.guard`, from the header, after :func:`check_reporting_tag`) and read
#: where the request's characters are charged (:meth:`KeyStore.charge_of`), so every surface's
#: charge counts it without each route passing it on.
REPORTING_TAG: ContextVar[str] = ContextVar("reporting_tag", default="")
#: The longest reporting tag, in characters.
REPORTING_TAG_MAX = 64


def check_reporting_tag(raw: str) -> str:
    """``raw`` as a reporting tag (stripped; '' : none), or :class:`InvalidInput` unless it is
    1-64 printable characters."""
    tag = raw.strip()
    if tag and (len(tag) > REPORTING_TAG_MAX or not tag.isprintable()):
        raise InvalidInput(
            f"a reporting tag (X-DeepL-Reporting-Tag) is 1-{REPORTING_TAG_MAX} printable "
            f"characters; this one has {len(tag)}"
            + ("" if tag.isprintable() else ", some of them not printable")
        )
    return tag


@dataclass
class Charge:
    """Characters a request takes from its key's UTC day, taken in the step that stores what
    they pay for: its job (``core/lua/create_job.lua``), or the answer of a request that makes
    none (:meth:`KeyStore.charge`). Never taken apart from that, so never given back but with
    a job the caller was told was not accepted (:meth:`mtfleet.core.store.JobStore.fail`)."""

    counter: str  # the day's count (keys.api_key_chars)
    chars: int
    limit: int  # -1: none
    now: float
    #: the day's count per reporting tag (keys.api_key_tags; '' : the request has no tag)
    tags: str = ""
    tag: str = ""

    @property
    def ttl_s(self) -> int:
        """How long the day's count is kept (it is read for ``mtfleet keys list``)."""
        return _USAGE_TTL_S

    def exceeded(self, used: int) -> QuotaExceeded:
        """The refusal of these characters with ``used`` spent today."""
        left = max(0, self.limit - used)
        why = (
            f"this request has {self.chars} characters, more than this API key's daily quota "
            f"of {self.limit}"
            if self.chars > self.limit
            else f"daily character quota of this API key reached: {self.chars} characters "
            f"asked, {left} of {self.limit} left today; it resets at 00:00 UTC"
        )
        return QuotaExceeded(
            why,
            retry_after=seconds_to_utc_midnight(self.now),
            chars_per_day=self.limit,
            used_today=used,
        )


class KeyStore:
    """API keys on the durable Redis (``MT_REDIS_URL``); ``r`` must decode responses.
    ``default_rate``: the rate of keys made without one (``MT_KEY_RATE``; None: no limit)."""

    def __init__(
        self,
        r: redis.Redis,
        *,
        cache_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        aclient: redis.asyncio.Redis | None = None,
        default_rate: float | None = None,
    ) -> None:
        self.r = r
        self.default_rate = default_rate
        self.cache_s = cache_s
        self._wall = wall
        # key id -> its key (None: no such key), for cache_s; shared by the event loop
        # (verify_cached) and worker threads (verify), and a TTLCache is not thread-safe
        self._cache: TTLCache[str, ApiKey | None] = TTLCache(_CACHE_MAX, ttl=cache_s, timer=clock)
        self._cache_lock = threading.Lock()
        # for an event loop (the API's: no thread-pool hop): the rate check and the charge run
        # only there
        self.ar = aclient
        self._arate = scripts.register(aclient, "key_rate") if aclient is not None else None
        self._acharge = scripts.register(aclient, "key_charge") if aclient is not None else None

    # -- operator side (mtfleet keys ...) ------------------------------------------------------
    def create(
        self,
        name: str,
        *,
        chars_per_day: int | None = None,
        rate: float | Literal["none"] | None = None,
        storage_mb: int | None = None,
        role: str = "user",
        weight: int = 1,
        no_trace: bool = False,
        scope: str | Iterable[str] | None = None,
    ) -> tuple[ApiKey, str]:
        """A new key and its token (shown once: only the secret's sha256 is stored). ``rate``:
        requests per second; None: the default (``MT_KEY_RATE``, whatever it is when the key
        is used); ``"none"``: no limit. ``scope``: the route families it may call
        (``"translate,documents"``; None or ``"all"``: every one, :mod:`mtfleet.core.scopes`)."""
        families = parse_scopes(scope)
        if role not in ROLES:
            raise InvalidInput(f"a key's role is one of {', '.join(ROLES)}, not {role!r}")
        checked_role: Role = "operator" if role == "operator" else "user"
        name = name.strip()
        if not name or len(name) > 64 or not name.isprintable():
            raise InvalidInput("a key name is 1-64 printable characters")
        if chars_per_day is not None and chars_per_day < 1:
            raise InvalidInput("chars_per_day must be at least 1 (or unset: no limit)")
        if isinstance(rate, str) and rate != NO_RATE:
            raise InvalidInput(f"rate is a number of requests per second, or {NO_RATE!r}")
        if isinstance(rate, float | int) and not 0 < rate <= 1_000_000:
            raise InvalidInput(
                "rate must be above 0 requests per second (or none: no limit; unset: MT_KEY_RATE)"
            )
        if storage_mb is not None and storage_mb < 1:
            raise InvalidInput("storage_mb must be at least 1 (or unset: MT_KEY_STORAGE_MB)")
        if not 1 <= weight <= MAX_WEIGHT:
            raise InvalidInput(f"a key's weight is a whole number from 1 to {MAX_WEIGHT}")
        key_id = secrets.token_hex(_KEY_ID_HEX // 2)
        secret = secrets.token_urlsafe(32)
        key = ApiKey(
            id=key_id,
            name=name,
            created_at=self._wall(),
            chars_per_day=chars_per_day,
            rate=self.default_rate if rate is None else None if rate == NO_RATE else float(rate),
            rate_default=rate is None and self.default_rate is not None,
            storage_mb=storage_mb,
            role=checked_role,
            weight=weight,
            scopes=families,
            no_trace=no_trace,
            secret_sha256=_digest(secret),
            webhook_secret=new_webhook_secret(),
        )
        fields = [
            *("id", key.id, "name", key.name, "created_at", repr(key.created_at)),
            *("chars_per_day", "" if chars_per_day is None else str(chars_per_day)),
            *("rate", "" if rate is None else rate if isinstance(rate, str) else repr(rate)),
            *("storage_mb", "" if storage_mb is None else str(storage_mb)),
            *("role", key.role, "weight", str(weight)),
            *("scopes", ",".join(families) if families is not None else ""),
            *("no_trace", "1" if no_trace else "0"),
            *("revoked", "0", "secret_sha256", key.secret_sha256),
            *("webhook_secret", key.webhook_secret),
        ]
        pipe = self.r.pipeline(transaction=True)
        pipe.hset(keys.api_key(key_id), items=fields)
        pipe.sadd(keys.API_KEYS, key_id)
        pipe.execute()
        return key, f"{TOKEN_PREFIX}{key_id}_{secret}"

    def get(self, key_id: str) -> ApiKey | None:
        raw = self.r.hgetall(keys.api_key(key_id))
        return _parse({str(k): str(v) for k, v in raw.items()}, self.default_rate) if raw else None

    def list_keys(self) -> list[ApiKey]:
        """Every key, revoked ones too, oldest first."""
        ids = sorted(str(i) for i in self.r.smembers(keys.API_KEYS))
        pipe = self.r.pipeline(transaction=False)
        for key_id in ids:
            pipe.hgetall(keys.api_key(key_id))
        found = [
            _parse({str(k): str(v) for k, v in raw.items()}, self.default_rate)
            for raw in pipe.execute()
            if raw
        ]
        return sorted(found, key=lambda k: k.created_at)

    def used_today(self, key_ids: Iterable[str]) -> dict[str, int]:
        """Characters each key submitted on the current UTC day."""
        ids = list(key_ids)
        day = utc_day(self._wall())
        values = self.r.mget([keys.api_key_chars(i, day) for i in ids]) if ids else []
        return {i: int(v or 0) for i, v in zip(ids, values, strict=True)}

    def tags_today(self, key_id: str) -> dict[str, int]:
        """Characters the key submitted on the current UTC day per reporting tag, most first
        ('' : tags past the day's 1,000th)."""
        raw = self.r.hgetall(keys.api_key_tags(key_id, utc_day(self._wall())))
        counts = {str(t): int(n) for t, n in raw.items() if int(n) > 0}
        return dict(sorted(counts.items(), key=lambda tn: (-tn[1], tn[0])))

    def set_weight(self, key_id: str, weight: int) -> ApiKey | None:
        """Set a key's share of the turns (1-MAX_WEIGHT; the release script reads it at every
        turn, so it counts at once); None when there is no such key."""
        if not 1 <= weight <= MAX_WEIGHT:
            raise InvalidInput(f"a key's weight is a whole number from 1 to {MAX_WEIGHT}")
        if not is_key_id(key_id) or not self.r.exists(keys.api_key(key_id)):
            return None
        self.r.hset(keys.api_key(key_id), "weight", weight)
        self._forget(key_id)
        return self.get(key_id)

    def set_scopes(self, key_id: str, scope: str | Iterable[str] | None) -> ApiKey | None:
        """Set the route families a key may call (``"all"`` or None: every one); API
        processes apply it within ``cache_s``. None when there is no such key."""
        families = parse_scopes(scope)
        if not is_key_id(key_id) or not self.r.exists(keys.api_key(key_id)):
            return None
        self.r.hset(keys.api_key(key_id), "scopes", ",".join(families) if families else "")
        self._forget(key_id)
        return self.get(key_id)

    def revoke(self, key_id: str) -> ApiKey | None:
        """Revoke a key (it stays listed); None when there is no such key. API processes stop
        accepting it within ``cache_s`` seconds."""
        if not is_key_id(key_id) or not self.r.exists(keys.api_key(key_id)):
            return None
        self.r.hset(keys.api_key(key_id), items=["revoked", "1", "revoked_at", self._wall()])
        self._forget(key_id)
        return self.get(key_id)

    def rotate_webhook_secret(self, key_id: str, *, keep_old_s: float = 0) -> str | None:
        """A new webhook signing secret for the key (None: no such key). For ``keep_old_s``
        seconds webhooks carry a signature by the previous secret too (the spec's space-separated
        list), so receivers can switch over without missing an event."""
        if not is_key_id(key_id) or not self.r.exists(keys.api_key(key_id)):
            return None
        old = str(self.r.hget(keys.api_key(key_id), "webhook_secret") or "")
        secret = new_webhook_secret()
        fields: list[Any] = ["webhook_secret", secret]
        if old and keep_old_s > 0:
            fields += ["webhook_secret_previous", old]
            fields += ["webhook_secret_previous_until", repr(self._wall() + keep_old_s)]
        pipe = self.r.pipeline(transaction=True)
        pipe.hdel(keys.api_key(key_id), "webhook_secret_previous", "webhook_secret_previous_until")
        pipe.hset(keys.api_key(key_id), items=fields)
        pipe.execute()
        self._forget(key_id)
        return secret

    async def webhook_secrets(self, key_id: str) -> list[str]:
        """The secrets a webhook of the key is signed with now: its own, and the previous one
        while a rotation's grace period lasts (none: the key is gone or has no secret). Read
        on the event loop (``aclient``: submission and the webhook deliverer)."""
        assert self.ar is not None, "KeyStore built without an asyncio client"
        current, previous, until = await self.ar.hmget(
            keys.api_key(key_id),
            ["webhook_secret", "webhook_secret_previous", "webhook_secret_previous_until"],
        )
        found = [str(current)] if current else []
        if previous and until and float(until) > self._wall():
            found.append(str(previous))
        return found

    def delete(self, key_id: str) -> None:
        """Forget a key entirely (``mtfleet keys delete``, after deleting its glossaries:
        :meth:`mtfleet.core.glossary.store.GlossaryStore.delete_owned`; the demo removes the
        key it made). Its jobs expire with their results."""
        now = self._wall()
        days = {utc_day(now - _DAY_S), utc_day(now)}  # what has not expired yet
        self.r.delete(
            keys.api_key(key_id),
            keys.api_key_rate(key_id),
            keys.api_key_interactive(key_id),
            *keys.api_key_storage(key_id),
            *(keys.api_key_chars(key_id, day) for day in days),
            *(keys.api_key_tags(key_id, day) for day in days),
        )
        self.r.srem(keys.API_KEYS, key_id)
        self._forget(key_id)

    # -- API side ------------------------------------------------------------------------------
    def verify(self, token: str) -> ApiKey:
        """The live key a token belongs to (read from Redis unless this process read it less
        than ``cache_s`` ago); raises :class:`Unauthorized`. An unknown key id is remembered
        as unknown as long, and its secret compared against a stand-in digest: a wrong secret
        takes the same path, and the same time, for a known key and an unknown one."""
        key_id, secret = self._parse(token)
        with self._cache_lock:
            hit = self._cache.get(key_id, _MISSING)
        if hit is not _MISSING:
            return self._check(hit, secret)
        key = self.get(key_id)
        if self.cache_s > 0:
            with self._cache_lock:
                self._cache[key_id] = key
        return self._check(key, secret)

    def verify_cached(self, token: str) -> ApiKey | None:
        """:meth:`verify` without touching Redis: None when the key is not cached here (the
        caller then calls :meth:`verify`, e.g. off its event loop)."""
        key_id, secret = self._parse(token)
        with self._cache_lock:
            hit = self._cache.get(key_id, _MISSING)
        if hit is _MISSING:
            return None
        return self._check(hit, secret)

    def _forget(self, key_id: str) -> None:
        """Drop a key this process changed from its cache (read afresh on its next use)."""
        with self._cache_lock:
            self._cache.pop(key_id, None)

    @staticmethod
    def _parse(token: str) -> tuple[str, str]:
        parsed = parse_token(token)
        if parsed is None:
            raise Unauthorized("invalid API key (expected mt_<id>_<secret>)")
        return parsed

    @staticmethod
    def _check(key: ApiKey | None, secret: str) -> ApiKey:
        expected = key.secret_sha256 if key is not None else _UNKNOWN_DIGEST
        if not hmac.compare_digest(_digest(secret), expected) or key is None:
            raise Unauthorized("invalid API key")
        if key.revoked:
            raise Unauthorized("this API key was revoked")
        return key

    async def acheck_rate(self, key: ApiKey) -> None:
        """Count one request against the key's rate (bursts of up to one second's worth), on
        the event loop (``aclient``: every request is checked, so no thread-pool hop);
        raises :class:`RateLimited` with ``retry_after`` (seconds) when it is over."""
        if key.rate is not None:
            assert self._arate is not None, "KeyStore built without an asyncio client"
            self._rated(key, await self._arate(**self._rate_call(key)))

    @staticmethod
    def _rate_call(key: ApiKey) -> dict[str, list[Any]]:
        assert key.rate is not None
        interval_us = max(1, round(1_000_000 / key.rate))
        burst = max(1, math.floor(key.rate))
        return {"keys": [keys.api_key_rate(key.id)], "args": [interval_us, burst]}

    @staticmethod
    def _rated(key: ApiKey, wait_us: Any) -> None:
        if int(wait_us) > 0:
            raise RateLimited(
                f"over this API key's rate of {key.rate:g} requests per second",
                retry_after=max(1, math.ceil(int(wait_us) / 1_000_000)),
            )

    def storage(self, key: ApiKey, default_mb: int) -> Storage:
        """The key's storage quota (``default_mb`` when the key sets none)."""
        mb = key.storage_mb if key.storage_mb is not None else default_mb
        return Storage(self.r, key.id, mb * 1024 * 1024)

    def charge_of(self, key: ApiKey, chars: int) -> Charge:
        """What ``chars`` characters take from the key's UTC day (taken by whoever stores what
        they pay for)."""
        now = self._wall()
        day = utc_day(now)
        limit = -1 if key.chars_per_day is None else key.chars_per_day
        tag = REPORTING_TAG.get()
        tags = keys.api_key_tags(key.id, day) if tag else ""
        return Charge(keys.api_key_chars(key.id, day), chars, limit, now, tags, tag)

    async def check_quota(self, key: ApiKey, chars: int) -> None:
        """Raises :class:`QuotaExceeded` when ``chars`` do not fit what is left of the key's
        day now; takes nothing (the job's creation does). Asked before the work a request
        costs the API (detecting its language), so a key whose quota is spent is refused
        before it, for free."""
        if key.chars_per_day is None:
            return
        assert self.ar is not None, "KeyStore built without an asyncio client"
        charge = self.charge_of(key, chars)
        used = int(await self.ar.get(charge.counter) or 0)
        if used + chars > charge.limit:
            raise charge.exceeded(used)

    async def charge(self, key: ApiKey, chars: int) -> int:
        """Take ``chars`` from the key's UTC day for an answer that makes no job (a job's are
        taken when it is stored), atomically, on the event loop (``aclient``); the day's count
        after. Raises :class:`QuotaExceeded` (``retry_after``: seconds until the day rolls
        over) when they do not fit."""
        assert self._acharge is not None, "KeyStore built without an asyncio client"
        charge = self.charge_of(key, chars)
        ok, used = await self._acharge(
            keys=[charge.counter, charge.tags], args=[chars, charge.limit, charge.ttl_s, charge.tag]
        )
        if not ok:
            raise charge.exceeded(int(used))
        return int(used)
