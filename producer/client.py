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

Every request is defined once, without I/O, in :mod:`mtfleet.producer.calls`;
:class:`MTClient` and :class:`AsyncMTClient` only send them (and run the few operations that
take several requests, such as :meth:`MTClient.wait`, as the generators defined there).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import httpx
from httpx_sse import SSEError, aconnect_sse, connect_sse

from mtfleet.core.guidance import Guidance
from mtfleet.core.models import ModelType
from mtfleet.core.schemas import (
    DocumentOut,
    GlossaryDetail,
    GlossaryPublic,
    JobPublic,
    JobResultPublic,
    LimitsPublic,
    TranslatePublic,
)
from mtfleet.producer import calls
from mtfleet.producer.calls import (
    DEFAULT_URL,
    APIUnreachable,
    Call,
    JobTimeout,
    MTClientError,
    RetryPolicy,
    env_key,
    env_url,
)
from mtfleet.producer.events import JobFollow
from mtfleet.producer.tm_client import AsyncTranslationMemoryMixin, TranslationMemoryMixin

# The public models are the API's own (one definition, :mod:`mtfleet.core.schemas`); the SDK's
# names for them:
Job = JobPublic
JobResult = JobResultPublic
DocumentResult = DocumentOut
Glossary = GlossaryDetail
Translation = TranslatePublic

T = TypeVar("T")

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


def _client_kwargs(url: str | None, timeout: float, api_key: str | None) -> dict[str, Any]:
    key = env_key(api_key)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return {"base_url": env_url(url), "timeout": timeout, "headers": headers}


class MTClient(TranslationMemoryMixin):
    """The API at ``url`` (default: ``MT_API_URL``, else http://127.0.0.1:8000) with
    ``api_key`` (default: ``MT_API_KEY``). An API restart or a proxy's 502/503/504 is ridden out
    as ``retry`` says; past its budget :class:`APIUnreachable` names the URL tried."""

    def __init__(
        self,
        url: str | None = None,
        *,
        timeout: float = 30.0,
        api_key: str | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.http = httpx.Client(**_client_kwargs(url, timeout, api_key))
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

    def submit(
        self,
        texts: Sequence[str],
        *,
        source: str,
        target: str,
        lane: str | None = None,
        idempotency_key: str | None = None,
        glossary_id: str | None = None,
        callback_url: str | None = None,
        pool: str | None = None,
        adapter: str | None = None,
        guidance: Guidance | None = None,
        style_id: str | None = None,
        translation_memory_id: str | None = None,
        translation_memory_threshold: int | None = None,
        model_type: ModelType | None = None,
    ) -> Job:
        """Queue a job. ``pool``: the pool to translate with (default: the fleet's route for
        the pair); ``adapter``: a LoRA adapter that pool serves; ``model_type``: a pool marked
        for it where one serves the pair (the job's ``model_type_used`` says which);
        ``callback_url`` gets a signed POST when it is final (docs/webhooks.md)."""
        return self._send(
            calls.submit(
                texts,
                source,
                target,
                lane,
                idempotency_key,
                glossary_id,
                callback_url,
                pool=pool,
                adapter=adapter,
                guidance=guidance,
                style_id=style_id,
                translation_memory_id=translation_memory_id,
                translation_memory_threshold=translation_memory_threshold,
                model_type=model_type,
            )
        )

    def submit_document(
        self,
        content: bytes | str,
        *,
        format: str,
        target: str,
        source: str = "auto",
        filename: str | None = None,
        lane: str | None = None,
        idempotency_key: str | None = None,
        glossary_id: str | None = None,
        callback_url: str | None = None,
        pool: str | None = None,
        adapter: str | None = None,
        guidance: Guidance | None = None,
        style_id: str | None = None,
        translation_memory_id: str | None = None,
        translation_memory_threshold: int | None = None,
        model_type: ModelType | None = None,
    ) -> Job:
        """Submit a file (any format of docs/documents.md: HTML, PO, XLSX...); fetch the translated
        file with :meth:`document` once the job is final."""
        return self._send(
            calls.submit_document(
                content,
                format,
                source,
                target,
                lane,
                filename,
                idempotency_key,
                glossary_id,
                callback_url,
                pool=pool,
                adapter=adapter,
                guidance=guidance,
                style_id=style_id,
                translation_memory_id=translation_memory_id,
                translation_memory_threshold=translation_memory_threshold,
                model_type=model_type,
            )
        )

    def document(self, job_id: str, *, partial: bool = False) -> bytes:
        """A document job's translated file (failed sentences keep their source text)."""
        return self._send(calls.document(job_id, partial))

    def get(self, job_id: str, *, wait: float = 0) -> Job:
        return self._send(calls.get(job_id, wait))

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

    def result(self, job_id: str, *, partial: bool = False) -> JobResult:
        return self._send(calls.result(job_id, partial))

    def cancel(self, job_id: str, *, purge: bool = False) -> Job:
        """Cancel a job (finished results are kept). ``purge=True`` also deletes everything
        stored for it (texts, results): the job as it was is returned, and is 404 afterwards."""
        return self._send(calls.cancel(job_id, purge))

    def translate(
        self,
        texts: Sequence[str],
        *,
        source: str,
        target: str,
        timeout: float = 60.0,
        glossary_id: str | None = None,
        pool: str | None = None,
        adapter: str | None = None,
        guidance: Guidance | None = None,
        style_id: str | None = None,
        translation_memory_id: str | None = None,
        translation_memory_threshold: int | None = None,
        model_type: ModelType | None = None,
    ) -> list[str | None]:
        """Translations aligned with ``texts``; None where a segment failed.

        Waits at most ``timeout`` seconds in all (the server holds the request, then the job is
        long-polled); raises :class:`JobTimeout` (with ``job_id``) if it is not done by then.
        """
        return self.translation(
            texts,
            source=source,
            target=target,
            timeout=timeout,
            glossary_id=glossary_id,
            pool=pool,
            adapter=adapter,
            guidance=guidance,
            style_id=style_id,
            translation_memory_id=translation_memory_id,
            translation_memory_threshold=translation_memory_threshold,
            model_type=model_type,
        ).translations

    def translation(
        self,
        texts: Sequence[str],
        *,
        source: str,
        target: str,
        timeout: float = 60.0,
        glossary_id: str | None = None,
        pool: str | None = None,
        adapter: str | None = None,
        guidance: Guidance | None = None,
        style_id: str | None = None,
        translation_memory_id: str | None = None,
        translation_memory_threshold: int | None = None,
        model_type: ModelType | None = None,
    ) -> Translation:
        """:meth:`translate` with everything the answer says: ``translations``, ``errors`` and
        ``warnings`` per segment, ``cached`` (how many the phrase cache answered) and the job's
        ``id`` (None when the cache answered all). ``pool`` and ``adapter``: as in
        :meth:`submit`."""
        return self._run(
            calls.translate(
                texts,
                source,
                target,
                timeout,
                glossary_id,
                pool=pool,
                adapter=adapter,
                guidance=guidance,
                style_id=style_id,
                translation_memory_id=translation_memory_id,
                translation_memory_threshold=translation_memory_threshold,
                model_type=model_type,
            )
        )

    def languages(self) -> dict[str, Any]:
        return self._send(calls.languages())

    def limits(self) -> LimitsPublic:
        """What one job or request may carry on this fleet."""
        return self._send(calls.limits())

    # -- glossaries --------------------------------------------------------------------------
    def create_glossary(
        self,
        name: str,
        *,
        source: str,
        target: str,
        entries: Mapping[str, str] | None = None,
        protected: Sequence[str] | None = None,
        entries_tsv: str | None = None,
    ) -> Glossary:
        """A new glossary: ``entries`` source term -> target term, ``protected`` terms kept
        untranslated in their casing; pass its ``id`` as ``glossary_id`` to submit/translate."""
        return self._send(
            calls.create_glossary(name, source, target, entries, protected, entries_tsv)
        )

    def glossaries(self) -> list[GlossaryPublic]:
        """This key's glossaries (without their terms)."""
        return self._send(calls.glossaries())

    def glossary(self, glossary_id: str) -> Glossary:
        return self._send(calls.glossary(glossary_id))

    def delete_glossary(self, glossary_id: str) -> None:
        self._send(calls.delete_glossary(glossary_id))


class AsyncMTClient(AsyncTranslationMemoryMixin):
    """:class:`MTClient` for asyncio: the same methods, awaited."""

    def __init__(
        self,
        url: str | None = None,
        *,
        timeout: float = 30.0,
        api_key: str | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.http = httpx.AsyncClient(**_client_kwargs(url, timeout, api_key))
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

    async def submit(
        self,
        texts: Sequence[str],
        *,
        source: str,
        target: str,
        lane: str | None = None,
        idempotency_key: str | None = None,
        glossary_id: str | None = None,
        callback_url: str | None = None,
        pool: str | None = None,
        adapter: str | None = None,
        guidance: Guidance | None = None,
        style_id: str | None = None,
        translation_memory_id: str | None = None,
        translation_memory_threshold: int | None = None,
        model_type: ModelType | None = None,
    ) -> Job:
        return await self._send(
            calls.submit(
                texts,
                source,
                target,
                lane,
                idempotency_key,
                glossary_id,
                callback_url,
                pool=pool,
                adapter=adapter,
                guidance=guidance,
                style_id=style_id,
                translation_memory_id=translation_memory_id,
                translation_memory_threshold=translation_memory_threshold,
                model_type=model_type,
            )
        )

    async def submit_document(
        self,
        content: bytes | str,
        *,
        format: str,
        target: str,
        source: str = "auto",
        filename: str | None = None,
        lane: str | None = None,
        idempotency_key: str | None = None,
        glossary_id: str | None = None,
        callback_url: str | None = None,
        pool: str | None = None,
        adapter: str | None = None,
        guidance: Guidance | None = None,
        style_id: str | None = None,
        translation_memory_id: str | None = None,
        translation_memory_threshold: int | None = None,
        model_type: ModelType | None = None,
    ) -> Job:
        return await self._send(
            calls.submit_document(
                content,
                format,
                source,
                target,
                lane,
                filename,
                idempotency_key,
                glossary_id,
                callback_url,
                pool=pool,
                adapter=adapter,
                guidance=guidance,
                style_id=style_id,
                translation_memory_id=translation_memory_id,
                translation_memory_threshold=translation_memory_threshold,
                model_type=model_type,
            )
        )

    async def document(self, job_id: str, *, partial: bool = False) -> bytes:
        return await self._send(calls.document(job_id, partial))

    async def get(self, job_id: str, *, wait: float = 0) -> Job:
        return await self._send(calls.get(job_id, wait))

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

    async def result(self, job_id: str, *, partial: bool = False) -> JobResult:
        return await self._send(calls.result(job_id, partial))

    async def cancel(self, job_id: str, *, purge: bool = False) -> Job:
        return await self._send(calls.cancel(job_id, purge))

    async def translate(
        self,
        texts: Sequence[str],
        *,
        source: str,
        target: str,
        timeout: float = 60.0,
        glossary_id: str | None = None,
        pool: str | None = None,
        adapter: str | None = None,
        guidance: Guidance | None = None,
        style_id: str | None = None,
        translation_memory_id: str | None = None,
        translation_memory_threshold: int | None = None,
        model_type: ModelType | None = None,
    ) -> list[str | None]:
        answer = await self.translation(
            texts,
            source=source,
            target=target,
            timeout=timeout,
            glossary_id=glossary_id,
            pool=pool,
            adapter=adapter,
            guidance=guidance,
            style_id=style_id,
            translation_memory_id=translation_memory_id,
            translation_memory_threshold=translation_memory_threshold,
            model_type=model_type,
        )
        return answer.translations

    async def translation(
        self,
        texts: Sequence[str],
        *,
        source: str,
        target: str,
        timeout: float = 60.0,
        glossary_id: str | None = None,
        pool: str | None = None,
        adapter: str | None = None,
        guidance: Guidance | None = None,
        style_id: str | None = None,
        translation_memory_id: str | None = None,
        translation_memory_threshold: int | None = None,
        model_type: ModelType | None = None,
    ) -> Translation:
        return await self._run(
            calls.translate(
                texts,
                source,
                target,
                timeout,
                glossary_id,
                pool=pool,
                adapter=adapter,
                guidance=guidance,
                style_id=style_id,
                translation_memory_id=translation_memory_id,
                translation_memory_threshold=translation_memory_threshold,
                model_type=model_type,
            )
        )

    async def languages(self) -> dict[str, Any]:
        return await self._send(calls.languages())

    async def limits(self) -> LimitsPublic:
        return await self._send(calls.limits())

    async def create_glossary(
        self,
        name: str,
        *,
        source: str,
        target: str,
        entries: Mapping[str, str] | None = None,
        protected: Sequence[str] | None = None,
        entries_tsv: str | None = None,
    ) -> Glossary:
        return await self._send(
            calls.create_glossary(name, source, target, entries, protected, entries_tsv)
        )

    async def glossaries(self) -> list[GlossaryPublic]:
        return await self._send(calls.glossaries())

    async def glossary(self, glossary_id: str) -> Glossary:
        return await self._send(calls.glossary(glossary_id))

    async def delete_glossary(self, glossary_id: str) -> None:
        await self._send(calls.delete_glossary(glossary_id))
