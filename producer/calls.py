"""Every request the SDK makes, defined once and without I/O.

A :class:`Call` is one HTTP request and how to read its answer; the operations that take
several requests (waiting for a job, translating with a fallback to the job) are generators
that yield calls and are sent their answers. :class:`~mtfleet.producer.client.MTClient` and
:class:`~mtfleet.producer.client.AsyncMTClient` differ only in how they send a call, so the
synchronous and asynchronous SDKs cannot drift apart.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx

from mtfleet.core.schemas import GlossaryDetail, GlossaryPublic, JobPublic, JobResultPublic

DEFAULT_URL = "http://127.0.0.1:8000"
#: The longest the API holds a /v1/translate request before it answers 202 with the job.
SERVER_WAIT_MAX_S = 300.0

T = TypeVar("T")


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


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and how its answer becomes a value (errors raise MTClientError)."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    json: Any = None
    params: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    timeout: float | None = None  # None: the client's own


Flow = Generator[Call[Any], Any, T]


def checked(resp: httpx.Response) -> httpx.Response:
    """The answer, or MTClientError with the API's error type and message."""
    if resp.status_code >= 400:
        try:
            err = resp.json().get("error", {})
        except ValueError:
            err = {}
        raise MTClientError(
            resp.status_code, err.get("type", "http_error"), err.get("message", resp.text[:500])
        )
    return resp


def _json(resp: httpx.Response) -> dict[str, Any]:
    data: dict[str, Any] = checked(resp).json()
    return data


def _job(resp: httpx.Response) -> JobPublic:
    return JobPublic.model_validate(_json(resp))


def _idempotency(key: str | None) -> dict[str, str] | None:
    return {"Idempotency-Key": key} if key else None


def _with(body: dict[str, Any], **optional: Any) -> dict[str, Any]:
    body.update({k: v for k, v in optional.items() if v})
    return body


# -- jobs --------------------------------------------------------------------------------------
def _new_job(
    body: dict[str, Any], lane: str | None, glossary_id: str | None, idempotency_key: str | None
) -> Call[JobPublic]:
    return Call(
        "POST",
        "/v1/jobs",
        _job,
        json=_with(body, lane=lane, glossary_id=glossary_id),
        headers=_idempotency(idempotency_key),
    )


def submit(
    texts: Sequence[str],
    source: str,
    target: str,
    lane: str | None,
    idempotency_key: str | None,
    glossary_id: str | None,
) -> Call[JobPublic]:
    body = {"texts": list(texts), "source_lang": source, "target_lang": target}
    return _new_job(body, lane, glossary_id, idempotency_key)


def document_body(content: bytes | str, fmt: str, filename: str | None) -> dict[str, Any]:
    """A document as the API takes it: text as text, anything else (and docx) base64."""
    if isinstance(content, str):
        doc: dict[str, Any] = {"content": content}
    elif fmt == "docx":
        doc = {"content": base64.b64encode(content).decode(), "encoding": "base64"}
    else:
        try:
            doc = {"content": content.decode("utf-8"), "encoding": "text"}
        except UnicodeDecodeError:
            doc = {"content": base64.b64encode(content).decode(), "encoding": "base64"}
    return _with({**doc, "format": fmt}, filename=filename)


def submit_document(
    content: bytes | str,
    fmt: str,
    source: str,
    target: str,
    lane: str | None,
    filename: str | None,
    idempotency_key: str | None,
    glossary_id: str | None,
) -> Call[JobPublic]:
    body = {
        "document": document_body(content, fmt, filename),
        "source_lang": source,
        "target_lang": target,
    }
    return _new_job(body, lane, glossary_id, idempotency_key)


def _partial(partial: bool) -> dict[str, str] | None:
    return {"partial": "true"} if partial else None


def document(job_id: str, partial: bool) -> Call[bytes]:
    return Call(
        "GET",
        f"/v1/jobs/{job_id}/document",
        lambda r: checked(r).content,
        params=_partial(partial),
    )


def get(job_id: str, wait: float) -> Call[JobPublic]:
    return Call(
        "GET",
        f"/v1/jobs/{job_id}",
        _job,
        params={"wait": wait} if wait else None,
        timeout=max(wait + 10, 30),
    )


def result(job_id: str, partial: bool) -> Call[JobResultPublic]:
    return Call(
        "GET",
        f"/v1/jobs/{job_id}/result",
        lambda r: JobResultPublic.model_validate(_json(r)),
        params=_partial(partial),
    )


def cancel(job_id: str, purge: bool) -> Call[JobPublic]:
    return Call("DELETE", f"/v1/jobs/{job_id}", _job, params={"purge": "true"} if purge else None)


def languages() -> Call[dict[str, Any]]:
    return Call("GET", "/v1/languages", _json)


def wait(
    job_id: str,
    timeout: float | None,
    poll_s: float,
    on_progress: Callable[[JobPublic], None] | None,
) -> Flow[JobPublic]:
    """Long-poll until the job is final (or ``timeout`` passes: then the job as it stands)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        step = poll_s if deadline is None else max(0.0, min(poll_s, deadline - time.monotonic()))
        job: JobPublic = yield get(job_id, step)
        if on_progress:
            on_progress(job)
        if job.final or (deadline is not None and time.monotonic() >= deadline):
            return job


def translate(
    texts: Sequence[str], source: str, target: str, timeout: float, glossary_id: str | None
) -> Flow[list[str | None]]:
    """/v1/translate; past the server's wait, the job is long-polled up to ``timeout`` in all
    (JobTimeout when it is not done by then)."""
    deadline = time.monotonic() + timeout
    server_wait = min(timeout, SERVER_WAIT_MAX_S)
    body = {"texts": list(texts), "source_lang": source, "target_lang": target}
    answer: httpx.Response = yield Call(
        "POST",
        "/v1/translate",
        checked,
        json=_with(body, glossary_id=glossary_id, timeout=server_wait),
        timeout=server_wait + 10,
    )
    data = answer.json()
    if answer.status_code != 202:
        return list(data["translations"])
    job = yield from wait(data["id"], max(0.0, deadline - time.monotonic()), 10.0, None)
    if not job.final:
        raise JobTimeout(job.id, timeout)
    done: JobResultPublic = yield result(job.id, False)
    return done.translations


# -- glossaries --------------------------------------------------------------------------------
def create_glossary(
    name: str,
    source: str,
    target: str,
    entries: Mapping[str, str] | None,
    protected: Sequence[str] | None,
    entries_tsv: str | None,
) -> Call[GlossaryDetail]:
    body = {
        "name": name,
        "source_lang": source,
        "target_lang": target,
        "entries": dict(entries or {}),
        "protected": list(protected or []),
    }
    return Call(
        "POST",
        "/v1/glossaries",
        lambda r: GlossaryDetail.model_validate(_json(r)),
        json=_with(body, entries_tsv=entries_tsv),
    )


def glossaries() -> Call[list[GlossaryPublic]]:
    return Call(
        "GET",
        "/v1/glossaries",
        lambda r: [GlossaryPublic.model_validate(g) for g in _json(r)["glossaries"]],
    )


def glossary(glossary_id: str) -> Call[GlossaryDetail]:
    return Call(
        "GET",
        f"/v1/glossaries/{glossary_id}",
        lambda r: GlossaryDetail.model_validate(_json(r)),
    )


def _nothing(resp: httpx.Response) -> None:
    checked(resp)


def delete_glossary(glossary_id: str) -> Call[None]:
    return Call("DELETE", f"/v1/glossaries/{glossary_id}", _nothing)
