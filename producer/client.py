"""Python SDK for the mtfleet HTTP API (httpx), synchronous and asynchronous.

    from mtfleet import MTClient
    with MTClient() as mt:            # MT_API_URL and MT_API_KEY (mtfleet keys create)
        mt.translate(["Red shoes"], source="en", target="es")      # -> ["Zapatos rojos"]
        job = mt.submit(["Red shoes", "Blue hat"], source="en", target="es", lane="bulk")
        mt.wait(job.id)                                             # follows its event stream
        mt.result(job.id).translations

Waiting follows the job's event stream (``GET /v1/jobs/{id}/events``: progress as it happens,
the final state at once), reconnecting with ``Last-Event-ID`` when it breaks and falling back to
the API's ``?wait=`` long poll when it cannot be had (:mod:`mtfleet.producer.events`).

Every operation is defined once, without I/O and with its signature and documentation, in
:mod:`mtfleet.producer.calls` (and :mod:`mtfleet.producer.tm_client`); :class:`_Operations`
names each as a method (:class:`operation`) that :class:`MTClient` runs to the end and
:class:`AsyncMTClient` returns as a coroutine. Only what cannot be a list of requests, following
a job's event stream (:meth:`MTClient.events`), is written for each.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Generator, Iterator
from typing import Any, Generic, ParamSpec, TypeVar, overload

import httpx
from httpx_sse import SSEError, aconnect_sse, connect_sse

from mtfleet.core.guidance import Guidance
from mtfleet.core.schemas import (
    DocumentOut,
    GlossaryDetail,
    JobPublic,
    JobResultPublic,
    TranslatePublic,
)
from mtfleet.producer import calls, tm_client
from mtfleet.producer.calls import (
    DEFAULT_URL,
    APIUnreachable,
    Call,
    Flow,
    JobTimeout,
    MTClientError,
    RetryPolicy,
    env_key,
    env_url,
)
from mtfleet.producer.events import JobFollow

# The public models are the API's own (one definition, :mod:`mtfleet.core.schemas`); the SDK's
# names for them:
Job = JobPublic
JobResult = JobResultPublic
DocumentResult = DocumentOut
Glossary = GlossaryDetail
Translation = TranslatePublic

T = TypeVar("T")
P = ParamSpec("P")

__all__ = [
    "DEFAULT_URL",
    "APIUnreachable",
    "AsyncMTClient",
    "DocumentResult",
    "Glossary",
    "Guidance",
    "Job",
    "JobResult",
    "JobTimeout",
    "MTClient",
    "MTClientError",
    "RetryPolicy",
    "Translation",
]


def _http_kwargs(call: Call[Any]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"json": call.json, "params": call.params, "headers": call.headers}
    if call.timeout is not None:
        kwargs["timeout"] = call.timeout
    return kwargs


def _client_kwargs(
    url: str | None, timeout: float, api_key: str | None, reporting_tag: str | None = None
) -> dict[str, Any]:
    key = env_key(api_key)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if reporting_tag:  # the API counts the requests' characters under it (docs/api.md)
        headers["X-Reporting-Tag"] = reporting_tag
    return {"base_url": env_url(url), "timeout": timeout, "headers": headers}


class operation(Generic[P, T]):
    """One operation of the API, declared once in :mod:`mtfleet.producer.calls` as a function
    that builds its request (a :class:`Call`) or its requests (a :data:`Flow`): on an
    :class:`MTClient` a method that sends them and returns the answer, on an
    :class:`AsyncMTClient` one that returns a coroutine of it, with the builder's signature and
    documentation either way (typed: ``ParamSpec``)."""

    def __init__(self, build: Callable[P, Call[T] | Flow[T]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, client: None, owner: type) -> Callable[P, Call[T] | Flow[T]]: ...
    @overload
    def __get__(self, client: MTClient, owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(
        self, client: AsyncMTClient, owner: type
    ) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, client: Any, owner: type) -> Any:
        if client is None:
            return self.build
        build = self.build

        @functools.wraps(build)
        def method(*args: Any, **kwargs: Any) -> Any:
            return client._do(build(*args, **kwargs))

        return method


class _Operations:
    """Every operation of the SDK, each one line: the two clients share them."""

    submit = operation(calls.submit)
    submit_document = operation(calls.submit_document)
    document = operation(calls.document)
    get = operation(calls.get)
    result = operation(calls.result)
    cancel = operation(calls.cancel)
    translate = operation(calls.translate)
    translation = operation(calls.translation)
    languages = operation(calls.languages)
    limits = operation(calls.limits)
    create_glossary = operation(calls.create_glossary)
    glossaries = operation(calls.glossaries)
    glossary = operation(calls.glossary)
    delete_glossary = operation(calls.delete_glossary)
    create_translation_memory = operation(tm_client.create_translation_memory)
    import_translation_memory = operation(tm_client.import_translation_memory)
    translation_memories = operation(tm_client.translation_memories)
    translation_memory = operation(tm_client.translation_memory)
    add_translation_memory_entries = operation(tm_client.add_translation_memory_entries)
    export_translation_memory = operation(tm_client.export_translation_memory)
    delete_translation_memory = operation(tm_client.delete_translation_memory)


class MTClient(_Operations):
    """The API at ``url`` (default: ``MT_API_URL``, else http://127.0.0.1:8000) with
    ``api_key`` (default: ``MT_API_KEY``); ``reporting_tag``: a label the API counts this
    client's characters under (``X-Reporting-Tag``, read in ``/v2/usage`` and ``mtfleet keys
    usage``). An API restart, a proxy's 502/503/504 and a 429 or
    503 with ``Retry-After`` (the key's rate) are ridden out as ``retry`` says; past its budget
    :class:`APIUnreachable` names the URL tried (a refusal: its error)."""

    def __init__(
        self,
        url: str | None = None,
        *,
        timeout: float = 30.0,
        api_key: str | None = None,
        retry: RetryPolicy | None = None,
        reporting_tag: str | None = None,
    ) -> None:
        self.http = httpx.Client(**_client_kwargs(url, timeout, api_key, reporting_tag))
        self.retry = retry or RetryPolicy()
        self.contacted = False  # whether the API has answered this client yet

    def __enter__(self) -> MTClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _send(self, call: Call[T]) -> T:
        attempts = self.retry.attempts(call, str(self.http.base_url), contacted=self.contacted)
        while True:
            try:
                resp = self.http.request(call.method, call.path, **_http_kwargs(call))
            except httpx.TransportError as exc:
                time.sleep(attempts.after_error(exc))
                continue
            self.contacted = True
            delay = attempts.after_response(resp)
            if delay is None:
                return call.parse(resp)
            time.sleep(delay)

    def _run(self, flow: Generator[Call[Any], Any, T]) -> T:
        try:
            call = next(flow)
            while True:
                call = flow.send(self._send(call))
        except StopIteration as done:
            return done.value

    def _do(self, work: Call[T] | Flow[T]) -> T:
        """An :class:`operation`'s request sent, or its requests run."""
        return self._send(work) if isinstance(work, Call) else self._run(work)

    def wait(
        self,
        job_id: str,
        *,
        timeout: float | None = None,
        poll_s: float = 10.0,
        on_progress: Callable[[Job], None] | None = None,
    ) -> Job:
        """Block until the job is final (or ``timeout`` passes; then the job as it stands),
        following its event stream; ``on_progress`` gets the job at each event."""
        job = None
        for job in self.events(job_id, timeout=timeout, poll_s=poll_s):
            if on_progress:
                on_progress(job)
        assert job is not None  # events() yields at least once
        return job

    def events(
        self, job_id: str, *, timeout: float | None = None, poll_s: float = 10.0
    ) -> Iterator[Job]:
        """The job at each of its events (progress at most a few times a second) until it is
        final, or until ``timeout`` passes. A broken stream is opened again with
        ``Last-Event-ID``; a stream that cannot be had is replaced by the long poll
        (``poll_s`` seconds per request)."""
        follow = JobFollow(job_id, timeout, self.retry, str(self.http.base_url))
        while not follow.expired():
            try:
                with connect_sse(
                    self.http,
                    "GET",
                    follow.path,
                    headers=follow.headers(),
                    timeout=follow.http_timeout(),
                ) as source:
                    opened = follow.opened(source.response)
                    if opened == "final":
                        yield self.get(job_id)
                        return
                    if opened == "poll":
                        break
                    self.contacted = True
                    for sse in source.iter_sse():
                        job = follow.event(sse)
                        if job is None:
                            continue
                        yield job
                        if job.final or follow.expired():
                            return
            except SSEError:
                break
            except httpx.TransportError as exc:
                delay = follow.broken(exc, contacted=self.contacted)
                if delay is None:
                    break
                time.sleep(delay)
        yield from self._poll(job_id, follow.remaining(), poll_s)

    def _poll(self, job_id: str, timeout: float | None, poll_s: float) -> Iterator[Job]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            job = self.get(job_id, wait=poll_s if left is None else min(poll_s, left))
            yield job
            if job.final or (deadline is not None and time.monotonic() >= deadline):
                return


class AsyncMTClient(_Operations):
    """:class:`MTClient` for asyncio: the same methods, awaited."""

    def __init__(
        self,
        url: str | None = None,
        *,
        timeout: float = 30.0,
        api_key: str | None = None,
        retry: RetryPolicy | None = None,
        reporting_tag: str | None = None,
    ) -> None:
        self.http = httpx.AsyncClient(**_client_kwargs(url, timeout, api_key, reporting_tag))
        self.retry = retry or RetryPolicy()
        self.contacted = False  # whether the API has answered this client yet

    async def __aenter__(self) -> AsyncMTClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _send(self, call: Call[T]) -> T:
        attempts = self.retry.attempts(call, str(self.http.base_url), contacted=self.contacted)
        while True:
            try:
                resp = await self.http.request(call.method, call.path, **_http_kwargs(call))
            except httpx.TransportError as exc:
                await asyncio.sleep(attempts.after_error(exc))
                continue
            self.contacted = True
            delay = attempts.after_response(resp)
            if delay is None:
                return call.parse(resp)
            await asyncio.sleep(delay)

    async def _run(self, flow: Generator[Call[Any], Any, T]) -> T:
        try:
            call = next(flow)
            while True:
                call = flow.send(await self._send(call))
        except StopIteration as done:
            return done.value

    async def _do(self, work: Call[T] | Flow[T]) -> T:
        """An :class:`operation`'s request sent, or its requests run."""
        return await (self._send(work) if isinstance(work, Call) else self._run(work))

    async def wait(
        self,
        job_id: str,
        *,
        timeout: float | None = None,
        poll_s: float = 10.0,
        on_progress: Callable[[Job], None] | None = None,
    ) -> Job:
        job = None
        async for job in self.events(job_id, timeout=timeout, poll_s=poll_s):
            if on_progress:
                on_progress(job)
        assert job is not None  # events() yields at least once
        return job

    async def events(
        self, job_id: str, *, timeout: float | None = None, poll_s: float = 10.0
    ) -> AsyncIterator[Job]:
        """:meth:`MTClient.events`, for asyncio."""
        follow = JobFollow(job_id, timeout, self.retry, str(self.http.base_url))
        while not follow.expired():
            try:
                async with aconnect_sse(
                    self.http,
                    "GET",
                    follow.path,
                    headers=follow.headers(),
                    timeout=follow.http_timeout(),
                ) as source:
                    if not follow.is_stream(source.response):
                        await source.response.aread()
                    opened = follow.opened(source.response)
                    if opened == "final":
                        yield await self.get(job_id)
                        return
                    if opened == "poll":
                        break
                    self.contacted = True
                    async for sse in source.aiter_sse():
                        job = follow.event(sse)
                        if job is None:
                            continue
                        yield job
                        if job.final or follow.expired():
                            return
            except SSEError:
                break
            except httpx.TransportError as exc:
                delay = follow.broken(exc, contacted=self.contacted)
                if delay is None:
                    break
                await asyncio.sleep(delay)
        deadline = follow.remaining()
        async for job in self._poll(job_id, deadline, poll_s):
            yield job

    async def _poll(self, job_id: str, timeout: float | None, poll_s: float) -> AsyncIterator[Job]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            job = await self.get(job_id, wait=poll_s if left is None else min(poll_s, left))
            yield job
            if job.final or (deadline is not None and time.monotonic() >= deadline):
                return
