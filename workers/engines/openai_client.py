"""HTTP to an OpenAI-compatible server (vLLM's server, TGI, SGLang, llama.cpp): the models it
serves, one chat completion with retries, and the gate that keeps at most N requests open.

What a request's failure becomes, after its retries (``MT_OPENAI_RETRIES``, backoff 0.5 s
doubling to 8 s with jitter; a ``Retry-After`` up to 30 s is followed):

======================================================  =======  ==================================
what happened                                           retried  then
======================================================  =======  ==================================
the server cannot be reached (refused, reset, DNS,      yes      ``EngineUnavailable``: the server
connect timeout)                                                 is down; the chunk goes back to
                                                                 the queue, the worker reports
                                                                 itself unhealthy and waits for it
429, 502, 503, 504                                      yes      ``EngineUnavailable`` (overloaded
                                                                 or down), as above
500 and other 5xx                                       yes      ``EngineError``: the segment fails
                                                                 alone (it may be what breaks it)
no answer within ``MT_OPENAI_TIMEOUT_S``                no       ``EngineTimeout``: fails alone
400 naming the context length                           no       ``SegmentTooLong``: fails alone
401, 403 (the key), 404 (no such model or path)         no       ``EngineUnavailable``
any other 4xx                                           no       ``EngineError`` with the server's
                                                                 message
======================================================  =======  ==================================

``aiohttp``, not ``httpx`` (the SDK's client) nor the ``openai`` package: with 256 requests
open, httpx's connection pool costs the worker about 17 ms of CPU per request where aiohttp's
costs about 1 ms (measured here against vLLM's server: the pool scans its connections on every
request), and a thin worker's CPU is most of what it spends. The ``openai`` package is built on
httpx, retries on its own (twice by default, on the same statuses, multiplying ours), and adds
nothing to reading three fields; the sampling parameters vLLM and SGLang take beyond OpenAI's
(``top_k``, ``repetition_penalty``) are plain JSON here. The retry loop is a dozen lines rather
than a library's (tenacity) because the gate slot must be given up while it sleeps.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from mtfleet.core.backoff import Backoff, retry_after_s
from mtfleet.core.errors import EngineError, EngineTimeout, EngineUnavailable, SegmentTooLong

log = logging.getLogger(__name__)

RETRY_DOWN = frozenset({429, 502, 503, 504})  # retried; still failing: the server is down
RETRIES = Backoff(first_s=0.5, max_s=8.0, jitter="equal")
RETRY_AFTER_MAX_S = 30.0
CONNECT_TIMEOUT_S = 5.0
_CONTEXT = re.compile(
    r"context length|max_model_len|maximum context|too long|max_total_tokens", re.IGNORECASE
)


class PriorityGate:
    """At most ``limit`` holders at once; waiters go in lowest priority value first
    (interactive 0 before bulk 1), in arrival order within one. On one event loop.

    asyncio's ``Semaphore`` wakes waiters in arrival order only, and no library offers a
    priority semaphore; this is one heap of futures.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    async def acquire(self, priority: int) -> None:
        if self.held < self.limit and not self._waiting:
            self.held += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (priority, next(self._order), fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()  # a slot was handed over as it was cancelled: pass it on
            raise

    def release(self) -> None:
        while self._waiting:
            fut = heapq.heappop(self._waiting)[2]
            if not fut.done():
                fut.set_result(None)  # the slot passes straight to the next waiter
                return
        self.held -= 1

    @property
    def waiting(self) -> int:
        return sum(1 for _, _, fut in self._waiting if not fut.done())


@dataclass(frozen=True)
class Completion:
    text: str
    truncated: bool  # finish_reason "length": the output hit max_tokens
    tokens_out: int | None


@dataclass(frozen=True)
class Answer:
    """A server's HTTP answer, read whole."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)  # names lower-cased

    def json(self) -> Any:
        return json.loads(self.body)


def detail(answer: Answer) -> str:
    """The server's own words about a failed request (OpenAI's, vLLM's and TGI's shapes)."""
    try:
        body = answer.json()
    except ValueError:
        return answer.body.decode("utf-8", "replace").strip()[:300]
    err = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(err, dict):
        err = err.get("message") or err
    return str(err)[:300]


def backoff_s(attempt: int, retry_after: str | None = None) -> float:
    """Seconds before retry ``attempt`` (0-based): exponential with jitter, or the server's
    ``Retry-After`` (seconds or an HTTP date) when that is longer, at most 30 s."""
    delay = RETRIES.wait_s(attempt)
    wanted = retry_after_s(retry_after, time.time())
    if wanted is not None:
        delay = max(delay, min(wanted, RETRY_AFTER_MAX_S))
    return delay


class OpenAIServer:
    """One server: its session (made and used on one event loop), the gate, the retries."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        concurrency: int,
        timeout_s: float,
        retries: int,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout_s = timeout_s
        self.retries = retries
        self.concurrency = concurrency
        self.gate = PriorityGate(concurrency)
        self._session: aiohttp.ClientSession | None = None

    # -- HTTP --------------------------------------------------------------------------------
    def session(self) -> aiohttp.ClientSession:
        """The connection pool (on the running loop), made at first use."""
        if self._session is None:
            self._session = aiohttp.ClientSession(
                headers=self.headers,
                connector=aiohttp.TCPConnector(limit=self.concurrency + 2),
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=CONNECT_TIMEOUT_S, sock_read=self.timeout_s
                ),
            )
        return self._session

    async def _request(self, method: str, path: str, body: Any = None, **kw: Any) -> Answer:
        async with self.session().request(method, self.base_url + path, json=body, **kw) as resp:
            headers = {k.lower(): v for k, v in resp.headers.items()}
            return Answer(resp.status, await resp.read(), headers)

    def unreachable(self, exc: BaseException) -> str:
        return (
            f"the OpenAI-compatible server at {self.base_url} cannot be reached "
            f"({type(exc).__name__}: {exc or 'no detail'})"
        )

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    # -- the served models -------------------------------------------------------------------
    def models_now(self) -> dict[str, dict[str, Any]]:
        """``GET /models`` from a thread without a loop (pre-flight): id -> entry;
        EngineUnavailable saying why when the server does not answer as an OpenAI API."""

        async def ask() -> dict[str, dict[str, Any]]:
            try:
                return await self.wait_for_models(0)
            finally:
                await self.aclose()

        return asyncio.run(ask())

    async def wait_for_models(self, wait_s: float) -> dict[str, dict[str, Any]]:
        """``GET /models`` until the server answers (a server still loading, or restarting),
        for at most ``wait_s`` seconds."""
        deadline = time.monotonic() + wait_s
        attempt = 0
        while True:
            try:
                answer = await self._request(
                    "GET", "/models", timeout=aiohttp.ClientTimeout(total=CONNECT_TIMEOUT_S)
                )
                if answer.status not in RETRY_DOWN:
                    return self._models(answer)
                why = f"it answers {answer.status} {detail(answer)}"
            except (aiohttp.ClientError, TimeoutError) as exc:
                why = self.unreachable(exc)
            left = deadline - time.monotonic()
            if left <= 0:
                if wait_s <= 0:
                    raise EngineUnavailable(why)
                raise EngineUnavailable(f"{why} (waited {wait_s:.0f}s, MT_OPENAI_WAIT_S)")
            if attempt % 10 == 0:
                log.warning("waiting for the server: %s", why)
            attempt += 1
            await asyncio.sleep(min(2.0, left))

    def _models(self, answer: Answer) -> dict[str, dict[str, Any]]:
        where = f"{self.base_url}/models"
        if answer.status in (401, 403):
            raise EngineUnavailable(
                f"{where} refused the API key ({answer.status}): set MT_OPENAI_API_KEY to "
                "the key the server expects"
            )
        if answer.status != 200:
            raise EngineUnavailable(
                f"{where} answered {answer.status} {detail(answer)}: is MT_OPENAI_BASE_URL "
                "an OpenAI API, /v1 included?"
            )
        try:
            return {str(m["id"]): m for m in answer.json()["data"]}
        except (ValueError, KeyError, TypeError) as exc:
            raise EngineUnavailable(f"{where} did not answer as an OpenAI API: {exc}") from exc

    # -- one chat completion ------------------------------------------------------------------
    async def chat(self, body: dict[str, Any], priority: int) -> Completion:
        """One chat completion through the gate, retried as the module docs say."""
        attempt = 0
        while True:
            await self.gate.acquire(priority)
            try:
                answer = await self._request("POST", "/chat/completions", body)
            except aiohttp.SocketTimeoutError as exc:
                raise EngineTimeout(
                    f"the server did not answer within {self.timeout_s:.0f}s (MT_OPENAI_TIMEOUT_S)"
                ) from exc
            except (aiohttp.ClientError, TimeoutError) as exc:
                failure: str | Answer = self.unreachable(exc)
            else:
                if answer.status == 200:
                    return self._completion(answer)
                if answer.status not in RETRY_DOWN and answer.status < 500:
                    raise self._refused(answer)
                failure = answer
            finally:
                self.gate.release()
            if attempt >= self.retries:
                raise self._gave_up(failure, attempt + 1)
            said = None
            if isinstance(failure, Answer):
                said = failure.headers.get("retry-after")
            await asyncio.sleep(backoff_s(attempt, said))
            attempt += 1

    @staticmethod
    def _completion(answer: Answer) -> Completion:
        try:
            body = answer.json()
            choice = body["choices"][0]
            text = choice["message"].get("content") or ""
            usage = body.get("usage") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise EngineError(f"the server's answer is not a chat completion: {exc}") from exc
        tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
        return Completion(
            str(text).strip(),
            truncated=choice.get("finish_reason") == "length",
            tokens_out=tokens if isinstance(tokens, int) else None,
        )

    def _refused(self, answer: Answer) -> EngineError:
        why = detail(answer)
        if answer.status in (401, 403):
            return EngineUnavailable(
                f"the server refused the API key ({answer.status} {why}): MT_OPENAI_API_KEY"
            )
        if answer.status == 404:
            return EngineUnavailable(f"the server answered 404 ({why}): model or URL not served")
        if answer.status == 400 and _CONTEXT.search(why):
            return SegmentTooLong(f"segment too long for the model: {why}")
        return EngineError(f"the server refused the request ({answer.status}): {why}")

    def _gave_up(self, failure: str | Answer, attempts: int) -> EngineError:
        if isinstance(failure, str):
            return EngineUnavailable(f"{failure}; {attempts} attempt(s)")
        said = f"{failure.status} {detail(failure)}"
        if failure.status in RETRY_DOWN:
            return EngineUnavailable(
                f"the server at {self.base_url} answered {said} to {attempts} attempt(s): "
                "overloaded or down"
            )
        return EngineError(f"the server failed the request ({said}) {attempts} time(s)")
