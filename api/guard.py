"""What a request may cost the API before the app sees it: authenticated first, its body bounded
in size and in time, failed keys throttled per client.

:class:`RequestGuard` is a plain ASGI middleware in front of the app:

1. a ``/v1`` request is authenticated from its headers (:meth:`KeyStore.verify`, cached per
   process) **before a byte of its body is read**: an unauthenticated upload is 401 at once and
   costs no memory (a DeepL ``/v2`` request the same way, from ``Authorization:
   DeepL-Auth-Key``, and 403: each surface answers in its own words,
   :mod:`mtfleet.api.surfaces`); a key limited to some route families calling another one is
   403 there too (:mod:`mtfleet.core.scopes`);
2. a bad key from a client address that sent ``MT_AUTH_FAILURES_PER_MINUTE`` of them in the
   last minute is 429 ``rate_limited`` instead (:class:`AuthFailures`, one per API process,
   shared with the routes that read their key from the body: LibreTranslate's). Only the bad
   keys are throttled: a valid key is verified and served whatever its address sent, since
   behind a proxy one address is every client's. The address is the peer's, or the
   X-Forwarded-For of a proxy in ``MT_TRUSTED_PROXIES`` (uvicorn's proxy headers, which
   ``mtfleet api`` honours from those addresses only);
3. a body over ``MT_MAX_REQUEST_BYTES`` is 413 (at once with a Content-Length; a chunked one
   is read up to the limit);
4. the whole body must arrive within ``MT_BODY_TIMEOUT_S``: a client that trickles it, or
   stops before its last byte, is answered 408 and its connection closed;
5. a ``/v1`` body is JSON or a multipart upload: one that parses as JSON is taken as JSON
   whatever its ``Content-Type`` says (``curl -d`` declares a form), any other is 415;
6. the body is then handed to the app in one piece, with the request's reporting tag
   (``X-DeepL-Reporting-Tag`` or ``X-Reporting-Tag``, on every surface: 1-64 printable
   characters, else 400 or ``/v1``'s 422) set for the request's life
   (:data:`~mtfleet.core.apikeys.REPORTING_TAG`): its characters are counted per tag where
   they are charged.

Slow *headers* are the server's business: :class:`HeaderTimeoutProtocol` (the uvicorn HTTP
protocol ``mtfleet api`` runs) closes a connection whose request headers are not complete
``MT_HEADER_TIMEOUT_S`` after its first byte (or after it opened).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from typing import Any

import anyio
import anyio.to_thread
import redis
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from mtfleet.api.surfaces import V1, Render, Surface, answer, surface_for
from mtfleet.core import scopes
from mtfleet.core.apikeys import REPORTING_TAG, KeyStore, check_reporting_tag
from mtfleet.core.errors import Forbidden, InvalidInput, RateLimited, Unauthorized, Unavailable
from mtfleet.core.settings.api import ApiSettings

_BODY_METHODS = {"POST", "PUT", "PATCH"}
_WINDOW_S = 60.0
#: The headers a caller's reporting tag comes in (DeepL's, and one without its name).
TAG_HEADERS = (b"x-deepl-reporting-tag", b"x-reporting-tag")


def client_address(scope: Scope) -> str:
    """The address the bad-key throttle counts: the peer's, or the client a trusted proxy
    names (``MT_TRUSTED_PROXIES``: uvicorn has rewritten ``client`` from X-Forwarded-For)."""
    return str((scope.get("client") or ("?", 0))[0])


class AuthFailures:
    """Failed authentications per client address over the last minute (bounded memory: at
    most ``limit`` timestamps per address, and the oldest addresses go first past 10,000).

    What it slows down is the bad keys alone (:meth:`refusal`): a valid key is never asked
    about. A bad key's own cost stays bounded without it: a malformed token is refused before
    Redis, and a key id read once is remembered (:meth:`KeyStore.verify`, ``MT_AUTH_CACHE_S``).
    """

    def __init__(self, limit: int, clock: Any = time.monotonic) -> None:
        self.limit = limit
        self.clock = clock
        self._seen: dict[str, deque[float]] = {}

    def _recent(self, client: str) -> deque[float] | None:
        times = self._seen.get(client)
        if times is None:
            return None
        cutoff = self.clock() - _WINDOW_S
        while times and times[0] <= cutoff:
            times.popleft()
        if not times:
            del self._seen[client]
            return None
        return times

    def retry_after(self, client: str) -> int:
        """Seconds this client must wait (0: it may try)."""
        times = self._recent(client)
        if times is None or len(times) < self.limit:
            return 0
        return max(1, int(times[0] + _WINDOW_S - self.clock()) + 1)

    def add(self, client: str) -> None:
        times = self._recent(client)
        if times is None:
            if len(self._seen) >= 10_000:
                self._seen.pop(next(iter(self._seen)))
            times = self._seen[client] = deque(maxlen=self.limit)
        times.append(self.clock())

    def refusal(self, client: str, exc: Unauthorized) -> Unauthorized | RateLimited:
        """What a bad key from ``client`` is answered: ``exc`` (counted), or past the limit
        :class:`RateLimited` with ``retry_after`` (not counted: the minute drains)."""
        wait = self.retry_after(client)
        if wait:
            return RateLimited(
                f"too many requests with an invalid API key from this address; retry in {wait} s",
                retry_after=wait,
            )
        self.add(client)
        return exc


def reporting_tag(headers: dict[bytes, bytes]) -> str:
    """The request's reporting tag ('' : none), or :class:`InvalidInput` for one that is not
    1-64 printable characters (UTF-8)."""
    raw = next((headers[h] for h in TAG_HEADERS if h in headers), b"")
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise InvalidInput("a reporting tag (X-DeepL-Reporting-Tag) must be UTF-8") from None
    return check_reporting_tag(text)


class RequestGuard:
    def __init__(
        self,
        app: ASGIApp,
        settings: ApiSettings,
        auth_required: bool,
        surfaces: tuple[Surface, ...] = (V1,),
    ) -> None:
        """``settings``: a request's limits (``MT_MAX_REQUEST_BYTES``, ``MT_BODY_TIMEOUT_S``);
        ``auth_required``: every request names an API key (``MT_AUTH=required``)."""
        self.app = app
        self.limit = settings.max_request_bytes
        self.body_timeout_s = settings.body_timeout_s
        self.auth = auth_required
        self.surfaces = surfaces

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        surface = surface_for(self.surfaces, scope["path"])
        render = surface.render if surface is not None else V1.render
        try:
            tag = reporting_tag(headers)
        except InvalidInput as exc:
            await self._send(send, answer(surface or V1, exc))
            return
        if (
            self.auth
            and surface is not None
            and surface.schemes
            and not await self._authenticated(scope, headers, send, surface)
        ):
            return
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            too_large = f"request body over {self.limit} bytes"
            await self._send(send, render(413, "payload_too_large", too_large))
            return
        if scope["method"] not in _BODY_METHODS and length is None:
            await self._serve(scope, receive, send, tag)
            return
        body = await self._read(receive, send, render)
        if body is None:
            return
        if surface is V1 and body and not await self._json_declared(scope, headers, body, send):
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self._serve(scope, replay, send, tag)

    async def _serve(self, scope: Scope, receive: Receive, send: Send, tag: str) -> None:
        """The app, with the request's reporting tag set while it serves it."""
        if not tag:
            await self.app(scope, receive, send)
            return
        token = REPORTING_TAG.set(tag)
        try:
            await self.app(scope, receive, send)
        finally:
            REPORTING_TAG.reset(token)

    async def _json_declared(
        self, scope: Scope, headers: dict[bytes, bytes], body: bytearray, send: Send
    ) -> bool:
        """A ``/v1`` body is JSON, or a multipart upload. ``curl -d '{...}'`` declares
        ``application/x-www-form-urlencoded`` (and some clients ``text/plain``): a body that
        parses as JSON is taken as JSON whatever it declares; any other body not declared
        JSON or multipart is 415, naming the header to send. False: answered here."""
        ctype = headers.get(b"content-type", b"").decode("latin-1").strip().lower()
        media = ctype.split(";", 1)[0].strip()
        if media.startswith("multipart/") or media == "application/json" or media.endswith("+json"):
            return True
        try:
            json.loads(body)
        except ValueError:
            declared = f"declared {media!r}" if media else "declared no Content-Type"
            message = (
                f"the request body must be JSON, sent with Content-Type: application/json "
                f"(or a multipart/form-data upload to /v1/documents); this one {declared} and "
                "is not JSON"
            )
            await self._send(send, V1.render(415, "unsupported_media_type", message))
            return False
        scope["headers"] = [
            (k, v) for k, v in scope.get("headers", ()) if k.lower() != b"content-type"
        ] + [(b"content-type", b"application/json")]
        return True

    async def _authenticated(
        self, scope: Scope, headers: dict[bytes, bytes], send: Send, surface: Surface
    ) -> bool:
        """Check the key before anything else; answer 401 (in the surface's words), or 429
        past the bad-key limit, and return False if it is not valid."""
        scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        if scheme.lower() not in surface.schemes or not token.strip():
            if scope["method"] in _BODY_METHODS:
                await self._refuse(send, surface, scope, Unauthorized(surface.missing_key))
                return False
            return True  # the route answers 401 (or serves an open page)
        store: KeyStore = scope["app"].state.services.apikeys
        try:
            key = store.verify_cached(token.strip())
            if key is None:
                key = await anyio.to_thread.run_sync(store.verify, token.strip())
            scopes.check(key.scopes, scope["path"])
        except Unauthorized as exc:
            await self._refuse(send, surface, scope, exc)
            return False
        except Forbidden as exc:
            await self._send(send, answer(surface, exc))
            return False
        except redis.RedisError as exc:
            await self._send(send, answer(surface, Unavailable.because("the key store", exc)))
            return False
        return True

    async def _refuse(self, send: Send, surface: Surface, scope: Scope, exc: Unauthorized) -> None:
        """A bad key's answer: 401 (in the surface's words), or 429 past the address's limit."""
        failures: AuthFailures = scope["app"].state.services.auth_failures
        await self._send(send, answer(surface, failures.refusal(client_address(scope), exc)))

    async def _read(self, receive: Receive, send: Send, render: Render) -> bytearray | None:
        """The whole body within the deadline and the size limit (else answered, None)."""
        body = bytearray()
        with anyio.move_on_after(self.body_timeout_s) as scope:
            while True:
                message = await receive()
                if message["type"] != "http.request":  # client went away
                    return None
                body += message.get("body", b"")
                if len(body) > self.limit:
                    too_large = f"request body over {self.limit} bytes"
                    await self._send(send, render(413, "payload_too_large", too_large))
                    return None
                if not message.get("more_body", False):
                    return body
        assert scope.cancelled_caught
        late = (
            f"the request body did not arrive within {self.body_timeout_s:g} s (MT_BODY_TIMEOUT_S)"
        )
        await self._send(send, render(408, "request_timeout", late), close=True)
        return None

    @staticmethod
    async def _send(send: Send, resp: Response, *, close: bool = False) -> None:
        """Answer with ``resp`` (an error: the app never sees the request)."""
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in resp.headers.items()]
        if close:
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": resp.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": resp.body})


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, plus a deadline on each request's headers
    (``MT_HEADER_TIMEOUT_S``): a connection that opens and says nothing, or sends part of its
    headers and stops, is closed when it passes (uvicorn has a keep-alive timeout between
    requests, none on the headers themselves). The deadline is the app's ``Settings``: uvicorn
    builds the protocol, not the app, and hands each connection the lifespan's state, where
    :func:`~mtfleet.api.app.create_app` puts them (``mtfleet api`` runs the lifespan)."""

    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(
                self.app_state["settings"].api.header_timeout_s, self._headers_too_slow
            )

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.close()
