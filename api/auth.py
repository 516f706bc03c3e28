"""Who is calling: the API key in ``Authorization: Bearer``, checked on every ``/v1`` route.

``MT_AUTH=required`` (default): a missing, unknown, malformed or revoked key is 401 with
``WWW-Authenticate: Bearer``; a key over its rate is 429 with ``Retry-After``. ``MT_AUTH=off``
(local development): every request is let through as an anonymous caller whose jobs have no
owner. ``/healthz``, the docs and the pages (``/``, ``/ops``: they sign in from the browser,
:mod:`api.routes.pages`) take no key. ``/v1/ops`` and ``/metrics`` need an operator key (403
for a user key); ``/readyz`` answers anyone its status, and only an operator key its details
(:func:`sees_internals`). With ``MT_AUTH=off`` all of it is open like everything else. A key
limited to some route families (``mtfleet keys create --scope``) is 403 on a route of another
family, on every surface (:func:`caller_for`, :mod:`mtfleet.core.scopes`).

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
from mtfleet.api.guard import client_address
from mtfleet.core import scopes
from mtfleet.core.apikeys import ApiKey
from mtfleet.core.errors import Forbidden, RateLimited, Unauthorized
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
    return await caller_for(
        request,
        credentials.credentials if credentials is not None else None,
        "an API key is required: send Authorization: Bearer <key>",
    )


async def caller_for(request: Request, token: str | None, missing: str) -> Caller:
    """The caller behind ``token`` (however its surface sends it: a Bearer header here, a
    DeepL-Auth-Key header, LibreTranslate's ``api_key`` field, Crowdin's key in the URL), its
    scopes and rate checked; :class:`Unauthorized` (``missing`` when there is no token) unless
    ``MT_AUTH=off``. A bad key counts against its client address
    (:class:`~mtfleet.api.guard.AuthFailures`): past ``MT_AUTH_FAILURES_PER_MINUTE`` it is
    :class:`RateLimited` instead. A key whose scopes do not hold the route's family is
    :class:`Forbidden` (every surface's routes come through here, whatever the guard saw)."""
    services: Services = request.app.state.services
    if services.settings.keys.auth == "off":
        return ANONYMOUS
    if not token:
        raise Unauthorized(missing)
    store = services.apikeys
    try:
        cached = store.verify_cached(token)
        key = cached if cached is not None else await anyio.to_thread.run_sync(store.verify, token)
    except Unauthorized as exc:
        raise services.auth_failures.refusal(client_address(request.scope), exc) from None
    route = request.scope.get("route")  # its template: Crowdin's path holds the key
    scopes.check(key.scopes, getattr(route, "path", None) or request.scope["path"])
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


async def operator(caller: CallerDep) -> Caller:
    """The caller, if its key is an operator's (``mtfleet keys create --role operator``)."""
    if caller.key is not None and caller.key.role != "operator":
        raise Forbidden(
            "this needs an operator key (mtfleet keys create --role operator); this key's "
            f"role is {caller.key.role}"
        )
    return caller


async def sees_internals(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> bool:
    """Whether the caller may see the fleet's internals (workers, hosts, pools) on a route that
    answers everyone as well (``/readyz``): an operator key, or anyone with ``MT_AUTH=off``.
    No key, a user key, a bad key or one over its rate is no error here, only the short answer
    (a probe sends no key); a bad key still counts against its address."""
    token = credentials.credentials if credentials is not None else None
    try:
        caller = await caller_for(request, token, "no key")
    except (Unauthorized, RateLimited, redis.RedisError):
        return False
    return caller.key is None or caller.key.role == "operator"
