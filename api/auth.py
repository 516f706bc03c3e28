"""Who is calling: the API key in ``Authorization: Bearer``, checked on every ``/v1`` route.

``MT_AUTH=required`` (default): a missing, unknown, malformed or revoked key is 401 with
``WWW-Authenticate: Bearer``; a key over its rate is 429 with ``Retry-After``. ``MT_AUTH=off``
(local development): every request is let through as an anonymous caller whose jobs have no
owner. ``/healthz``, ``/readyz``, ``/metrics`` and the docs take no key.

The dependency is ``async`` and reads Redis only when it must: a key not cached in this
process from the thread pool, a key's rate on the event loop (an asyncio client: the hot path
takes no thread-pool hop).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Annotated

import anyio.to_thread
import redis
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from mtfleet.api.deps import Services
from mtfleet.core.apikeys import ApiKey
from mtfleet.core.errors import Unauthorized
from mtfleet.core.store import JobRecord

log = logging.getLogger(__name__)

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="ApiKey",
    description="An API key from `mtfleet keys create`: `Authorization: Bearer mt_...`.",
)


@dataclass(frozen=True)
class Caller:
    """The API key behind a request; ``key`` is None when the API runs with ``MT_AUTH=off``."""

    key: ApiKey | None

    @property
    def owner(self) -> str:
        """What the caller's jobs store as their owner ('' without auth)."""
        return self.key.id if self.key else ""

    def may_see(self, job: JobRecord) -> bool:
        """A job is visible only to the key that made it (to anyone without auth)."""
        return self.key is None or job.owner == self.key.id


ANONYMOUS = Caller(None)


async def authenticate(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Caller:
    services: Services = request.app.state.services
    if services.settings.auth == "off":
        return ANONYMOUS
    if credentials is None:
        raise Unauthorized("an API key is required: send Authorization: Bearer <key>")
    store = services.apikeys
    token = credentials.credentials
    cached = store.verify_cached(token)
    key = cached if cached is not None else await anyio.to_thread.run_sync(store.verify, token)
    if key.rate is not None:
        try:
            await store.acheck_rate(key)
        except redis.RedisError as exc:
            # The rate state is a write; a Redis that refuses writes (full, read-only replica)
            # must not cost the key its reads.
            if request.method not in ("GET", "HEAD"):
                raise
            log.warning("rate check skipped for a read (Redis refused it): %s", exc)
    return Caller(key)


CallerDep = Annotated[Caller, Depends(authenticate)]
