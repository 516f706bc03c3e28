"""Redis clients with the timeouts a service needs (one pool per URL per process), and the TLS
options of a ``rediss://`` URL.

Every client decodes responses to ``str``; timeouts are short so a dead Redis turns into a quick
503 at the API instead of a hung request. Credentials travel in the URL
(``redis://USER:PASSWORD@host:port/db``, an ACL user); TLS options in its query
(:func:`split_tls`).
"""

from __future__ import annotations

import os
import ssl
import threading
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis
import redis.asyncio

_lock = threading.Lock()
_clients: dict[tuple[str, float], redis.Redis] = {}

_CERT_REQS = {"required": ssl.CERT_REQUIRED, "optional": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_FILES = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile")
_BOOLS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
TLS_PARAMS = (*_FILES, "ssl_cert_reqs", "ssl_check_hostname")


def split_tls(url: str) -> tuple[str, dict[str, Any] | None]:
    """``url`` without its TLS query parameters, and the TLS options they give (None unless the
    URL is ``rediss://``).

    A ``rediss://`` connection verifies the server: its certificate against ``ssl_ca_certs``
    (or the system's CAs) and its host name, unless the URL says ``ssl_cert_reqs=none`` (or
    ``ssl_check_hostname=false``); ``ssl_certfile`` and ``ssl_keyfile`` give a client
    certificate. redis-py, kombu (Celery's broker connection) and Flower each read TLS options
    differently, and kombu alone would not verify at all, so mtfleet parses them here once and
    hands every client the same dict (redis-py's ``SSLConnection`` keywords, which is also what
    Celery's ``broker_use_ssl`` takes). Raises ``ValueError`` for an unknown ``ssl_*``
    parameter, a bad value, a file that is not there, or TLS options on a plain URL.
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    given = {k: v for k, v in query if k.startswith("ssl_")}
    rest = [(k, v) for k, v in query if not k.startswith("ssl_")]
    plain = urlunsplit(parts._replace(query=urlencode(rest)))
    if parts.scheme != "rediss":
        if given:
            raise ValueError(f"{', '.join(sorted(given))}: TLS options need a rediss:// URL")
        return plain, None
    unknown = sorted(set(given) - set(TLS_PARAMS))
    if unknown:
        raise ValueError(f"unknown TLS option(s) {', '.join(unknown)}; known: {TLS_PARAMS}")
    reqs = given.get("ssl_cert_reqs", "required").lower()
    if reqs not in _CERT_REQS:
        raise ValueError(f"ssl_cert_reqs={reqs!r}: use required, optional or none")
    check = given.get("ssl_check_hostname", "true").lower()
    if check not in _BOOLS:
        raise ValueError(f"ssl_check_hostname={check!r}: use true or false")
    options: dict[str, Any] = {
        "ssl_cert_reqs": _CERT_REQS[reqs],
        "ssl_check_hostname": _BOOLS[check] and reqs != "none",
    }
    for name in _FILES:
        if name in given:
            if not os.path.isfile(given[name]):
                raise ValueError(f"{name}={given[name]!r}: no such file")
            options[name] = given[name]
    if ("ssl_certfile" in options) != ("ssl_keyfile" in options):
        raise ValueError("a client certificate needs both ssl_certfile and ssl_keyfile")
    return plain, options


def _options(url: str, socket_timeout: float) -> tuple[str, dict[str, Any]]:
    """What every client of ``url`` is built with: the plain URL and its keywords."""
    plain, tls = split_tls(url)
    return plain, {
        "decode_responses": True,
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": 2.0,
        "health_check_interval": 15,
        "max_connections": 512,
        **(tls or {}),
    }


def connect(url: str, *, socket_timeout: float = 5.0) -> redis.Redis:
    """A shared client for ``url`` (thread-safe; each process builds its own pool)."""
    key = (url, socket_timeout)
    with _lock:
        client = _clients.get(key)
        if client is None:
            plain, options = _options(url, socket_timeout)
            client = redis.Redis.from_url(plain, **options)
            _clients[key] = client
        return client


def connect_async(url: str, *, socket_timeout: float = 5.0) -> redis.asyncio.Redis:
    """An asyncio client for ``url``, with the same options as :func:`connect`, for one event
    loop (the API's: its hot path awaits Redis on the loop instead of hopping to a thread).
    The caller owns it and closes it (``aclose``) with its loop."""
    plain, options = _options(url, socket_timeout)
    return redis.asyncio.Redis.from_url(plain, **options)


def reset() -> None:
    """Forget pooled clients (after a fork, or in tests that restart Redis on a new port)."""
    with _lock:
        for client in _clients.values():
            client.close()
        _clients.clear()
