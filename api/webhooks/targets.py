"""Where a webhook may go: public addresses only (SSRF), checked twice.

At submission (:func:`check_callback`, a 422 naming the address) and again at every attempt
(:func:`pin`), because what a name resolves to can change between the two. An attempt then
connects to the very address it checked: the URL's host is replaced by that address, the
``Host`` header and the TLS server name (``sni_hostname``, which certificate verification also
uses) keep the name, so DNS cannot point the connection elsewhere after the check (rebinding).
``MT_WEBHOOK_ALLOW_PRIVATE=true`` lifts the address rule (tests, single-network deployments);
the resolution and the pinning stay.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass, field
from typing import Any

import httpx

from mtfleet.core.errors import InvalidInput

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: How long resolving a callback URL's host may take.
RESOLVE_TIMEOUT_S = 5.0


class TargetRefused(InvalidInput):
    """A callback URL that points at an address webhooks may not go to (HTTP 422)."""

    code = "invalid_callback_url"


#: NAT64's well-known prefix (RFC 6052): an IPv4 address in its last 32 bits.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def embedded(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries to reach (IPv4-mapped ``::ffff:``, 6to4
    ``2002::/16``, Teredo's client, NAT64 ``64:ff9b::/96``), or None."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def refusal(ip: IPAddress) -> str | None:
    """Why webhooks may not go to ``ip`` (None: a public address): "a loopback address"...
    An IPv6 address that carries an IPv4 one is judged by that one: an IPv4-mapped, 6to4 or
    NAT64 address by it alone, whatever the standard library's tables say of its prefix (they
    changed in newer 3.11 releases and distributions' backports, Debian's 3.11.2 among them:
    6to4's ``2002::/16`` became private and an IPv4-mapped address is judged by its IPv4 one,
    where earlier releases said the reverse), a Teredo address by its client and its prefix.
    Site-local ``fec0::/10`` (deprecated, still routed on some networks) is refused."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = embedded(ip)
        if inner is not None:
            why = refusal(inner)
            if why is not None:
                return f"{why} ({inner}, inside {ip})"
            if ip.teredo is None:
                return None
        if ip.is_site_local:
            return "a site-local address"
    for kind, bad in (
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("unspecified", ip.is_unspecified),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
        ("non-public", not ip.is_global),
    ):
        if bad:
            return f"a {kind} address"
    return None


def _port(url: httpx.URL) -> int:
    return url.port or (443 if url.scheme == "https" else 80)


def _addresses(infos: list[Any]) -> list[IPAddress]:
    seen: dict[str, IPAddress] = {}
    for *_, sockaddr in infos:
        host = str(sockaddr[0]).split("%", 1)[0]  # an IPv6 scope id is not part of the address
        seen.setdefault(host, ipaddress.ip_address(host))
    return list(seen.values())


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _judge(url: httpx.URL, found: list[IPAddress], allow_private: bool) -> IPAddress:
    if not found:
        raise TargetRefused(f"callback_url host {url.host!r} does not resolve to an address")
    if not allow_private:
        for ip in found:
            why = refusal(ip)
            if why is not None:
                where = (
                    f"callback_url host {ip} is {why}"
                    if _literal(url.host) is not None
                    else f"callback_url host {url.host!r} resolves to {ip}, {why}"
                )
                raise TargetRefused(
                    f"{where}; webhooks go to public addresses only (the operator may allow "
                    "others with MT_WEBHOOK_ALLOW_PRIVATE=true, as `mtfleet demo` does)"
                )
    return found[0]


async def resolve(url: httpx.URL, timeout: float = RESOLVE_TIMEOUT_S) -> list[IPAddress]:
    """The addresses of ``url``'s host (at most ``timeout`` seconds; the loop's resolver)."""
    literal = _literal(url.host)
    if literal is not None:
        return [literal]
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(url.host, _port(url), type=socket.SOCK_STREAM), timeout
        )
    except TimeoutError:
        raise TargetRefused(
            f"callback_url host {url.host!r} did not resolve within {timeout:g}s"
        ) from None
    except (OSError, UnicodeError):
        return []
    return _addresses(infos)


async def check_callback(url: str, *, allow_private: bool) -> None:
    """At submission: ``url`` may be a job's callback_url (else TargetRefused, a 422)."""
    parsed = httpx.URL(url)
    _judge(parsed, await resolve(parsed), allow_private)


@dataclass(frozen=True)
class Pinned:
    """A request to a checked address: the URL with the address as its host, and what keeps
    the name for the server (the Host header, the TLS server name)."""

    url: httpx.URL
    headers: dict[str, str] = field(default_factory=dict)
    extensions: dict[str, Any] = field(default_factory=dict)


async def pin(url: str, *, allow_private: bool) -> Pinned:
    """At each attempt: resolve ``url`` again, check the address (TargetRefused) and pin the
    request to it."""
    parsed = httpx.URL(url)
    ip = _judge(parsed, await resolve(parsed), allow_private)
    if _literal(parsed.host) is not None:
        return Pinned(parsed)
    host = parsed.host if parsed.port is None else f"{parsed.host}:{parsed.port}"
    extensions = {"sni_hostname": parsed.host} if parsed.scheme == "https" else {}
    return Pinned(parsed.copy_with(host=str(ip)), {"Host": host}, extensions)
