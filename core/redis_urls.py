"""Redis URLs: the TLS options of a ``rediss://`` URL, Redis Sentinel URLs, and the Celery
broker settings a URL makes; parsing only, no client (:mod:`mtfleet.core.redis_conn` connects),
so the settings check a URL without importing redis-py.

Credentials travel in the URL (``redis://USER:PASSWORD@host:port/db``, an ACL user); TLS options
in its query (:func:`split_tls`).

A **Sentinel URL** names the Sentinels that watch a primary and its replicas instead of one
server (:func:`parse_sentinel`)::

    sentinel://[USER:PASSWORD@]HOST:26379,HOST2:26379,HOST3:26379/DB?master=NAME
        [&sentinel_username=U&sentinel_password=P]
    sentinels://...   (TLS to the Sentinels and to the servers; ssl_* options as rediss://)

Every connection maker reads it here: the job store's and the phrase cache's clients
(:mod:`mtfleet.core.redis_conn`) and the Celery broker (:func:`kombu_broker`: kombu's own
``sentinel://`` transport with ``master_name``). The URL's user and password are those of the
Redis servers, as with ``redis://``; ``sentinel_password`` (and ``sentinel_username``)
authenticate to the Sentinels themselves (their ``requirepass``/ACL), which is often a
different secret.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

_CERT_REQS = {"required": ssl.CERT_REQUIRED, "optional": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_FILES = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile")
_BOOLS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
TLS_PARAMS = (*_FILES, "ssl_cert_reqs", "ssl_check_hostname")
#: URL schemes that name Redis Sentinels (``sentinels``: with TLS).
SENTINEL_SCHEMES = ("sentinel", "sentinels")
#: Query parameters of a Sentinel URL besides the TLS ones.
SENTINEL_PARAMS = ("master", "sentinel_username", "sentinel_password")
SENTINEL_PORT = 26379
#: Seconds to wait for a Sentinel's answer (it answers from memory).
SENTINEL_TIMEOUT_S = 2.0


def _tls_options(given: dict[str, str]) -> dict[str, Any]:
    """redis-py's ``SSLConnection`` keywords from a URL's ``ssl_*`` parameters."""
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
    return options


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
    return plain, _tls_options(given)


@dataclass(frozen=True)
class SentinelURL:
    """What a ``sentinel://`` (or ``sentinels://``) URL names."""

    sentinels: tuple[tuple[str, int], ...]  # (host, port) of each Sentinel
    master: str  # the name the Sentinels monitor the primary under
    db: int = 0
    username: str | None = None  # the Redis servers' credentials (an ACL user)
    password: str | None = None
    sentinel_username: str | None = None  # the Sentinels' own
    sentinel_password: str | None = None
    tls: dict[str, Any] | None = None  # redis-py SSL keywords (sentinels://)

    def server_kwargs(self) -> dict[str, Any]:
        """Connection keywords for the primary (and replicas): db, credentials, TLS."""
        out: dict[str, Any] = {"db": self.db, "username": self.username, "password": self.password}
        if self.tls is not None:
            out.update(ssl=True, **self.tls)
        return out

    def sentinel_kwargs(self) -> dict[str, Any]:
        """Connection keywords for the Sentinels themselves."""
        out: dict[str, Any] = {
            "socket_timeout": SENTINEL_TIMEOUT_S,
            "socket_connect_timeout": SENTINEL_TIMEOUT_S,
            "username": self.sentinel_username,
            "password": self.sentinel_password,
        }
        if self.tls is not None:
            out.update(ssl=True, **self.tls)
        return out


def is_sentinel(url: str) -> bool:
    return url.partition("://")[0].lower() in SENTINEL_SCHEMES  # not urlsplit: parse_sentinel


def _host_port(text: str) -> tuple[str, int]:
    try:
        parts = urlsplit(f"//{text}")
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise ValueError(f"Sentinel address {text!r}: {exc}") from None
    if not host:
        raise ValueError(f"Sentinel address {text!r} has no host")
    return host, port or SENTINEL_PORT


def parse_sentinel(url: str) -> SentinelURL:
    """The Sentinels, master name, database, credentials and TLS options of a Sentinel URL;
    ``ValueError`` saying what is wrong (no master name, no Sentinel, a bad port or database,
    an unknown parameter, a TLS option on ``sentinel://``)."""
    # The Sentinels' list is split here, not by urlsplit: Pythons with the fixes for bracketed
    # hosts (CVE-2024-11168, CVE-2025-0938; newer 3.11 releases, Debian's 3.11.2) refuse a
    # netloc with anything before a bracket, and a list of Sentinels has one before its second
    # IPv6 address.
    scheme, _, rest = url.partition("://")
    end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    netloc = rest[:end]
    parts = urlsplit(f"{scheme}://sentinels{rest[end:]}")
    if parts.scheme not in SENTINEL_SCHEMES:
        raise ValueError(f"not a Sentinel URL: {parts.scheme}://")
    userinfo, _, hosts = netloc.rpartition("@")
    sentinels = tuple(_host_port(h.strip()) for h in hosts.split(",") if h.strip())
    if not sentinels:
        raise ValueError("a Sentinel URL names at least one Sentinel: sentinel://HOST:26379/0")
    username, password = None, None
    if userinfo:
        user, sep, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if sep else None
    path = parts.path.strip("/")
    if path and not path.isdigit():
        raise ValueError(f"database {path!r}: a number, as in sentinel://HOST:26379/0")
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted(k for k in query if k not in SENTINEL_PARAMS and not k.startswith("ssl_"))
    if unknown:
        raise ValueError(
            f"unknown Sentinel URL parameter(s) {', '.join(unknown)}; known: "
            f"{', '.join(SENTINEL_PARAMS)} and the ssl_* options of sentinels://"
        )
    master = query.get("master", "").strip()
    if not master:
        raise ValueError("a Sentinel URL needs the master's name: ?master=mymaster")
    given = {k: v for k, v in query.items() if k.startswith("ssl_")}
    if parts.scheme == "sentinel" and given:
        raise ValueError(f"{', '.join(sorted(given))}: TLS options need a sentinels:// URL")
    return SentinelURL(
        sentinels=sentinels,
        master=master,
        db=int(path or 0),
        username=username,
        password=password,
        sentinel_username=query.get("sentinel_username") or None,
        sentinel_password=query.get("sentinel_password") or None,
        tls=_tls_options(given) if parts.scheme == "sentinels" else None,
    )


def check_url(url: str) -> None:
    """Raise ``ValueError`` when ``url`` is not one mtfleet can connect to (settings use it)."""
    if is_sentinel(url):
        parse_sentinel(url)
    else:
        split_tls(url)


@dataclass(frozen=True)
class KombuBroker:
    """How Celery (kombu) reaches the broker named by a URL."""

    url: str  # broker_url
    use_ssl: dict[str, Any] | None  # broker_use_ssl
    transport_options: dict[str, Any]  # merged into broker_transport_options


def kombu_broker(url: str) -> KombuBroker:
    """The Celery broker settings for ``url``.

    TLS options go in ``broker_use_ssl``, not the URL: kombu alone would not verify a
    ``rediss://`` server, and Flower's broker view reads only ``broker_use_ssl``. A Sentinel URL
    becomes kombu's own form, one ``sentinel://`` URL per Sentinel joined by ``;``, with the
    master name and the Sentinels' credentials in the transport options (kombu's
    ``SentinelChannel``)."""
    if not is_sentinel(url):
        plain, tls = split_tls(url)
        return KombuBroker(plain, tls, {})
    s = parse_sentinel(url)
    auth = ""
    if s.username or s.password:
        auth = f"{quote(s.username or '', safe='')}:{quote(s.password or '', safe='')}@"
    hosts = ";".join(
        f"sentinel://{auth}{f'[{h}]' if ':' in h else h}:{p}/{s.db}" for h, p in s.sentinels
    )
    options: dict[str, Any] = {"master_name": s.master, "sentinel_kwargs": s.sentinel_kwargs()}
    return KombuBroker(hosts, s.tls, options)
