"""Redis clients with the timeouts a service needs (one pool per URL per process), for plain,
TLS (``rediss://``) and Sentinel URLs (:mod:`mtfleet.core.redis_urls` reads them).

Every client decodes responses to ``str``; timeouts are short so a dead Redis turns into a quick
503 at the API instead of a hung request. A Sentinel client (redis-py's ``redis.sentinel`` and
``redis.asyncio.sentinel``) asks the Sentinels for the primary when it connects, and a
connection that meets a demoted primary reconnects.
"""

from __future__ import annotations

import threading
from typing import Any

import redis
import redis.asyncio
import redis.asyncio.sentinel
import redis.sentinel

from mtfleet.core.redis_urls import is_sentinel, parse_sentinel, split_tls

_lock = threading.Lock()
_clients: dict[tuple[str, float], redis.Redis] = {}


def _options(socket_timeout: float) -> dict[str, Any]:
    return {
        "decode_responses": True,
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": 2.0,
        "health_check_interval": 15,
        "max_connections": 512,
    }


def open_client(url: str, *, socket_timeout: float = 5.0) -> redis.Redis:
    """A new client for ``url`` (a plain, TLS or Sentinel URL) with its own pool."""
    if is_sentinel(url):
        s = parse_sentinel(url)
        manager = redis.sentinel.Sentinel(
            list(s.sentinels), sentinel_kwargs=s.sentinel_kwargs(), **_options(socket_timeout)
        )
        return manager.master_for(s.master, redis_class=redis.Redis, **s.server_kwargs())
    plain, tls = split_tls(url)
    return redis.Redis.from_url(plain, **_options(socket_timeout), **(tls or {}))


def connect(url: str, *, socket_timeout: float = 5.0) -> redis.Redis:
    """A shared client for ``url`` (thread-safe; each process builds its own pool)."""
    key = (url, socket_timeout)
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = open_client(url, socket_timeout=socket_timeout)
            _clients[key] = client
        return client


def connect_async(url: str, *, socket_timeout: float = 5.0) -> redis.asyncio.Redis:
    """An asyncio client for ``url``, with the same options as :func:`connect`, for one event
    loop (the API's: its hot path awaits Redis on the loop instead of hopping to a thread).
    The caller owns it and closes it (``aclose``) with its loop.

    Its pool *blocks*: with every connection in use, a command waits up to
    ``socket_timeout`` for one to come back instead of failing at once
    (``MaxConnectionsError``): a burst of requests queues for a moment, it does not fail."""
    if is_sentinel(url):
        s = parse_sentinel(url)
        manager = redis.asyncio.sentinel.Sentinel(
            list(s.sentinels), sentinel_kwargs=s.sentinel_kwargs(), **_options(socket_timeout)
        )
        return manager.master_for(s.master, redis_class=redis.asyncio.Redis, **s.server_kwargs())
    plain, tls = split_tls(url)
    pool = redis.asyncio.BlockingConnectionPool.from_url(
        plain, timeout=socket_timeout, **_options(socket_timeout), **(tls or {})
    )
    return redis.asyncio.Redis.from_pool(pool)
