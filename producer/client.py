"""Python SDK for the mtfleet HTTP API (httpx), synchronous and asynchronous.

    from mtfleet.producer import MTClient
    with MTClient("http://127.0.0.1:8000", api_key="mt_...") as mt:   # mtfleet keys create
        mt.translate(["Red shoes"], source="en", target="es")      # -> ["Zapatos rojos"]
        job = mt.submit(lines, source="en", target="es", lane="bulk")
        mt.wait(job.id)                                             # long-polls, no busy loop
        mt.result(job.id).translations

Waiting uses the API's ``?wait=`` long poll, so a waiting client costs one request per
``poll_s`` seconds at most and wakes as soon as the job is final.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx

from mtfleet.core.schemas import (
    DocumentOut,
    GlossaryDetail,
    GlossaryPublic,
    JobPublic,
    JobResultPublic,
)

DEFAULT_URL = "http://127.0.0.1:8000"


class MTClientError(Exception):
    """An error answer from the API (``status`` is the HTTP status)."""

    def __init__(self, status: int, type_: str, message: str) -> None:
        super().__init__(f"{status} {type_}: {message}")
        self.status = status
        self.type = type_
        self.message = message


class JobTimeout(TimeoutError):
    """A job did not finish within the time the caller gave; it goes on running."""

    def __init__(self, job_id: str, timeout: float) -> None:
        super().__init__(f"job {job_id} not finished after {timeout:.0f}s; it is still running")
        self.job_id = job_id


# The public models are the API's own (one definition, :mod:`mtfleet.core.schemas`); the SDK's
# names for them:
Job = JobPublic
JobResult = JobResultPublic
DocumentResult = DocumentOut
Glossary = GlossaryDetail


def _check(resp: httpx.Response) -> dict[str, Any]:
    if resp.status_code >= 400:
        try:
            err = resp.json().get("error", {})
        except ValueError:
            err = {}
        raise MTClientError(
            resp.status_code, err.get("type", "http_error"), err.get("message", resp.text[:500])
        )
    data: dict[str, Any] = resp.json()
    return data


def _job_body(
    texts: Sequence[str], source: str, target: str, lane: str | None, glossary_id: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"texts": list(texts), "source_lang": source, "target_lang": target}
    if lane:
        body["lane"] = lane
    return _with_glossary(body, glossary_id)


def _with_glossary(body: dict[str, Any], glossary_id: str | None) -> dict[str, Any]:
    if glossary_id:
        body["glossary_id"] = glossary_id
    return body


def _translate_body(
    texts: Sequence[str], source: str, target: str, server_wait: float, glossary_id: str | None
) -> dict[str, Any]:
    return {**_job_body(texts, source, target, None, glossary_id), "timeout": server_wait}


def _glossary_body(
    name: str,
    source: str,
    target: str,
    entries: Mapping[str, str] | None,
    protected: Sequence[str] | None,
    entries_tsv: str | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "source_lang": source, "target_lang": target}
    body["entries"] = dict(entries or {})
    body["protected"] = list(protected or [])
    if entries_tsv:
        body["entries_tsv"] = entries_tsv
    return body


def _document_body(
    content: bytes | str,
    fmt: str,
    source: str,
    target: str,
    lane: str | None,
    filename: str | None,
) -> dict[str, Any]:
    if isinstance(content, bytes):
        try:
            doc: dict[str, Any] = {"content": content.decode("utf-8"), "encoding": "text"}
        except UnicodeDecodeError:
            doc = {"content": base64.b64encode(content).decode(), "encoding": "base64"}
        if fmt == "docx":
            doc = {"content": base64.b64encode(content).decode(), "encoding": "base64"}
    else:
        doc = {"content": content}
    doc["format"] = fmt
    if filename:
        doc["filename"] = filename
    body: dict[str, Any] = {"document": doc, "source_lang": source, "target_lang": target}
    if lane:
        body["lane"] = lane
    return body


def _headers(idempotency_key: str | None) -> dict[str, str]:
    return {"Idempotency-Key": idempotency_key} if idempotency_key else {}


def _purge_params(purge: bool) -> dict[str, str] | None:
    return {"purge": "true"} if purge else None


class MTClient:
    def __init__(
        self, url: str = DEFAULT_URL, *, timeout: float = 30.0, api_key: str | None = None
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(base_url=url, timeout=timeout, headers=headers)

    def __enter__(self) -> MTClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def submit(
        self,
        texts: Sequence[str],
        *,
        source: str,
        target: str,
        lane: str | None = None,
        idempotency_key: str | None = None,
        glossary_id: str | None = None,
    ) -> Job:
        resp = self.http.post(
            "/v1/jobs",
            json=_job_body(texts, source, target, lane, glossary_id),
            headers=_headers(idempotency_key),
        )
        return Job.model_validate(_check(resp))

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
    ) -> Job:
        """Submit a file (text, markdown, html, json, srt, xliff, docx); fetch the translated
        file with :meth:`document` once the job is final."""
        body = _document_body(content, format, source, target, lane, filename)
        resp = self.http.post(
            "/v1/jobs",
            json=_with_glossary(body, glossary_id),
            headers=_headers(idempotency_key),
        )
        return Job.model_validate(_check(resp))

    def document(self, job_id: str, *, partial: bool = False) -> bytes:
        """A document job's translated file (failed sentences keep their source text)."""
        resp = self.http.get(
            f"/v1/jobs/{job_id}/document", params={"partial": "true"} if partial else None
        )
        if resp.status_code >= 400:
            _check(resp)
        return resp.content

    def get(self, job_id: str, *, wait: float = 0) -> Job:
        resp = self.http.get(
            f"/v1/jobs/{job_id}",
            params={"wait": wait} if wait else None,
            timeout=max(wait + 10, 30),
        )
        return Job.model_validate(_check(resp))

    def wait(
        self,
        job_id: str,
        *,
        timeout: float | None = None,
        poll_s: float = 10.0,
        on_progress: Callable[[Job], None] | None = None,
    ) -> Job:
        """Block until the job is final (or ``timeout`` passes; then the job as it stands)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = (
                poll_s if deadline is None else max(0.0, min(poll_s, deadline - time.monotonic()))
            )
            job = self.get(job_id, wait=step)
            if on_progress:
                on_progress(job)
            if job.final or (deadline is not None and time.monotonic() >= deadline):
                return job

    def result(self, job_id: str, *, partial: bool = False) -> JobResult:
        resp = self.http.get(
            f"/v1/jobs/{job_id}/result", params={"partial": "true"} if partial else None
        )
        return JobResult.model_validate(_check(resp))

    def cancel(self, job_id: str, *, purge: bool = False) -> Job:
        """Cancel a job (finished results are kept). ``purge=True`` also deletes everything
        stored for it (texts, results): the job as it was is returned, and is 404 afterwards."""
        resp = self.http.delete(f"/v1/jobs/{job_id}", params=_purge_params(purge))
        return Job.model_validate(_check(resp))

    def translate(
        self,
        texts: Sequence[str],
        *,
        source: str,
        target: str,
        timeout: float = 60.0,
        glossary_id: str | None = None,
    ) -> list[str | None]:
        """Translations aligned with ``texts``; None where a segment failed.

        Waits at most ``timeout`` seconds in all (the server holds the request, then the job is
        long-polled); raises :class:`JobTimeout` (with ``job_id``) if it is not done by then.
        """
        deadline = time.monotonic() + timeout
        server_wait = min(timeout, 300.0)
        resp = self.http.post(
            "/v1/translate",
            json=_translate_body(texts, source, target, server_wait, glossary_id),
            timeout=server_wait + 10,
        )
        data = _check(resp)
        if resp.status_code != 202:
            return list(data["translations"])
        job = self.wait(data["id"], timeout=max(0.0, deadline - time.monotonic()))
        if not job.final:
            raise JobTimeout(job.id, timeout)
        return self.result(job.id).translations

    def languages(self) -> dict[str, Any]:
        return _check(self.http.get("/v1/languages"))

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
        body = _glossary_body(name, source, target, entries, protected, entries_tsv)
        return Glossary.model_validate(_check(self.http.post("/v1/glossaries", json=body)))

    def glossaries(self) -> list[GlossaryPublic]:
        """This key's glossaries (without their terms)."""
        data = _check(self.http.get("/v1/glossaries"))
        return [GlossaryPublic.model_validate(g) for g in data["glossaries"]]

    def glossary(self, glossary_id: str) -> Glossary:
        return Glossary.model_validate(_check(self.http.get(f"/v1/glossaries/{glossary_id}")))

    def delete_glossary(self, glossary_id: str) -> None:
        resp = self.http.delete(f"/v1/glossaries/{glossary_id}")
        if resp.status_code >= 400:
            _check(resp)


class AsyncMTClient:
    def __init__(
        self, url: str = DEFAULT_URL, *, timeout: float = 30.0, api_key: str | None = None
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.AsyncClient(base_url=url, timeout=timeout, headers=headers)

    async def __aenter__(self) -> AsyncMTClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def submit(
        self,
        texts: Sequence[str],
        *,
        source: str,
        target: str,
        lane: str | None = None,
        idempotency_key: str | None = None,
        glossary_id: str | None = None,
    ) -> Job:
        resp = await self.http.post(
            "/v1/jobs",
            json=_job_body(texts, source, target, lane, glossary_id),
            headers=_headers(idempotency_key),
        )
        return Job.model_validate(_check(resp))

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
    ) -> Job:
        body = _document_body(content, format, source, target, lane, filename)
        resp = await self.http.post(
            "/v1/jobs",
            json=_with_glossary(body, glossary_id),
            headers=_headers(idempotency_key),
        )
        return Job.model_validate(_check(resp))

    async def document(self, job_id: str, *, partial: bool = False) -> bytes:
        resp = await self.http.get(
            f"/v1/jobs/{job_id}/document", params={"partial": "true"} if partial else None
        )
        if resp.status_code >= 400:
            _check(resp)
        return resp.content

    async def get(self, job_id: str, *, wait: float = 0) -> Job:
        resp = await self.http.get(
            f"/v1/jobs/{job_id}",
            params={"wait": wait} if wait else None,
            timeout=max(wait + 10, 30),
        )
        return Job.model_validate(_check(resp))

    async def wait(self, job_id: str, *, timeout: float | None = None, poll_s: float = 10.0) -> Job:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = (
                poll_s if deadline is None else max(0.0, min(poll_s, deadline - time.monotonic()))
            )
            job = await self.get(job_id, wait=step)
            if job.final or (deadline is not None and time.monotonic() >= deadline):
                return job

    async def result(self, job_id: str, *, partial: bool = False) -> JobResult:
        resp = await self.http.get(
            f"/v1/jobs/{job_id}/result", params={"partial": "true"} if partial else None
        )
        return JobResult.model_validate(_check(resp))

    async def cancel(self, job_id: str, *, purge: bool = False) -> Job:
        """As :meth:`MTClient.cancel`."""
        resp = await self.http.delete(f"/v1/jobs/{job_id}", params=_purge_params(purge))
        return Job.model_validate(_check(resp))

    async def translate(
        self,
        texts: Sequence[str],
        *,
        source: str,
        target: str,
        timeout: float = 60.0,
        glossary_id: str | None = None,
    ) -> list[str | None]:
        """As :meth:`MTClient.translate`."""
        deadline = time.monotonic() + timeout
        server_wait = min(timeout, 300.0)
        resp = await self.http.post(
            "/v1/translate",
            json=_translate_body(texts, source, target, server_wait, glossary_id),
            timeout=server_wait + 10,
        )
        data = _check(resp)
        if resp.status_code != 202:
            return list(data["translations"])
        job = await self.wait(data["id"], timeout=max(0.0, deadline - time.monotonic()))
        if not job.final:
            raise JobTimeout(job.id, timeout)
        return (await self.result(job.id)).translations

    async def languages(self) -> dict[str, Any]:
        return _check(await self.http.get("/v1/languages"))

    # -- glossaries (as MTClient's) ------------------------------------------------------------
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
        body = _glossary_body(name, source, target, entries, protected, entries_tsv)
        return Glossary.model_validate(_check(await self.http.post("/v1/glossaries", json=body)))

    async def glossaries(self) -> list[GlossaryPublic]:
        data = _check(await self.http.get("/v1/glossaries"))
        return [GlossaryPublic.model_validate(g) for g in data["glossaries"]]

    async def glossary(self, glossary_id: str) -> Glossary:
        resp = await self.http.get(f"/v1/glossaries/{glossary_id}")
        return Glossary.model_validate(_check(resp))

    async def delete_glossary(self, glossary_id: str) -> None:
        resp = await self.http.delete(f"/v1/glossaries/{glossary_id}")
        if resp.status_code >= 400:
            _check(resp)
