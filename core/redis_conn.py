"""Redis clients with the timeouts a service needs (one pool per URL per process).

Every client decodes responses to ``str``; timeouts are short so a dead Redis turns into a quick
503 at the API instead of a hung request. ``rediss://`` URLs get TLS from redis-py itself.
"""

from __future__ import annotations

import threading

import redis

_lock = threading.Lock()
_clients: dict[tuple[str, float], redis.Redis] = {}


def connect(url: str, *, socket_timeout: float = 5.0) -> redis.Redis:
    """A shared client for ``url`` (thread-safe; each process builds its own pool)."""
    key = (url, socket_timeout)
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = redis.Redis.from_url(
                url,
                decode_responses=True,
                socket_timeout=socket_timeout,
                socket_connect_timeout=2.0,
                health_check_interval=15,
                max_connections=512,
            )
            _clients[key] = client
        return client


def reset() -> None:
    """Forget pooled clients (after a fork, or in tests that restart Redis on a new port)."""
    with _lock:
        for client in _clients.values():
            client.close()
        _clients.clear()
