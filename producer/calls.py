"""Every request the SDK makes, defined once and without I/O.

A :class:`Call` is one HTTP request and how to read its answer; the operations that take
several requests (waiting for a job, translating with a fallback to the job) are generators
that yield calls and are sent their answers. :class:`~mtfleet.producer.client.MTClient` and
:class:`~mtfleet.producer.client.AsyncMTClient` differ only in how they send a call, so the
synchronous and asynchronous SDKs cannot drift apart.
"""

from __future__ import annotations

import base64
import os
import time
import uuid
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypedDict, TypeVar, Unpack

import httpx

from mtfleet.core.backoff import Backoff, retry_after_s
from mtfleet.core.guidance import Guidance
from mtfleet.core.models import ModelType, UseCache
from mtfleet.core.schemas import (
    GlossaryDetail,
    GlossaryPublic,
    JobPublic,
    JobResultPublic,
    LimitsPublic,
    TranslatePublic,
)

DEFAULT_URL = "http://127.0.0.1:8000"
#: Statuses that mean "the API (or a proxy in front of it) is restarting": worth another try.
RETRY_STATUSES = frozenset({502, 503, 504})
#: "Too many requests": the API refused the request before doing anything with it (the key's
#: rate, its interactive share, a lane's depth, its quota), so any request may be sent again,
#: when the answer's ``Retry-After`` says when.
REFUSED = 429
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


class APIUnreachable(ConnectionError):
    """The API could not be reached (or kept answering 502/503/504) for the whole retry
    budget; ``url`` is the address tried."""

    def __init__(self, url: str, cause: str, tries: int, elapsed_s: float) -> None:
        super().__init__(
            f"cannot reach the mtfleet API at {url} ({cause}; {tries} tries over "
            f"{elapsed_s:.0f}s). Is `mtfleet api` running there? Point the client elsewhere "
            "with MT_API_URL (CLI: --url)."
        )
        self.url = url


def env_url(url: str | None) -> str:
    """The API URL: ``url``, else ``MT_API_URL``, else :data:`DEFAULT_URL`."""
    return url or os.environ.get("MT_API_URL") or DEFAULT_URL


def env_key(api_key: str | None) -> str | None:
    """The API key: ``api_key``, else ``MT_API_KEY`` (None: send none)."""
    return api_key or os.environ.get("MT_API_KEY") or None


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

    @property
    def idempotent(self) -> bool:
        """Whether sending it twice does no harm: a read, a cancel, or a request that carries
        an Idempotency-Key (the API answers a repeat with the job the first one made)."""
        return (
            self.method == "GET"
            or (self.method == "DELETE" and self.path.startswith("/v1/jobs/"))
            or bool(self.headers and "Idempotency-Key" in self.headers)
        )


@dataclass(frozen=True)
class RetryPolicy:
    """How a client rides out an API restart, a proxy's 502/503/504 and the API's own "not
    now" (429 or 503 with ``Retry-After``: the key's rate, a busy lane): exponential backoff
    with jitter, ``first_s`` doubling up to ``max_s``, added to the server's ``Retry-After``
    when it gives one, for at most ``budget_s`` in all.

    A request that never reached the API (connection refused, connect timeout) or that it
    refused with a 429 is tried again whatever it is; one that may have reached it (a transport
    error after sending, a 502/503/504) only when it is :attr:`Call.idempotent`. A 429 without
    ``Retry-After``, or whose ``Retry-After`` is past the budget (a day's quota spent), is the
    caller's error at once. A client that has never had an answer gives up after
    ``first_contact_s``: a wrong URL or an API that is not started is said at once, not after
    the whole budget."""

    budget_s: float = 30.0
    first_s: float = 0.25
    max_s: float = 4.0
    first_contact_s: float = 3.0

    @property
    def backoff(self) -> Backoff:
        return Backoff(self.first_s, self.max_s, jitter="equal")

    def attempts(self, call: Call[Any], url: str, *, contacted: bool) -> Attempts:
        return Attempts(self, call, url, contacted)


#: Errors raised before the request left this machine: always safe to send again.
NOT_SENT: tuple[type[Exception], ...] = (httpx.ConnectError, httpx.ConnectTimeout)


@dataclass
class Attempts:
    """The retry state of one call: ``after_error`` / ``after_response`` give the seconds to
    sleep before the next try, or None (the response stands), or raise."""

    policy: RetryPolicy
    call: Call[Any]
    url: str
    contacted: bool  # whether the API has answered this client (the whole budget is its)
    started: float = field(default_factory=time.monotonic)
    tries: int = 0

    @property
    def budget_s(self) -> float:
        if self.contacted:
            return self.policy.budget_s
        return min(self.policy.budget_s, self.policy.first_contact_s)

    def _delay(self, cause: str, server_s: float = 0.0) -> float:
        """The next wait: the server's ``server_s`` plus the backoff of this try (its jitter
        keeps clients refused together from coming back together)."""
        self.tries += 1
        elapsed = time.monotonic() - self.started
        delay = server_s + self.policy.backoff.wait_s(self.tries - 1)
        if elapsed + delay > self.budget_s:
            raise APIUnreachable(self.url, cause, self.tries, elapsed)
        return delay

    def after_error(self, exc: httpx.TransportError) -> float:
        if not (isinstance(exc, NOT_SENT) or self.call.idempotent):
            raise exc
        return self._delay(f"{type(exc).__name__}: {exc}".rstrip(": "))

    def after_response(self, resp: httpx.Response) -> float | None:
        self.contacted = True
        status = resp.status_code
        server_s = retry_after_s(resp.headers.get("Retry-After"), time.time())
        if status == REFUSED:
            if server_s is None:
                return None  # the server does not say it is worth another try
        elif status not in RETRY_STATUSES or not self.call.idempotent:
            return None
        try:
            return self._delay(f"HTTP {status}", server_s or 0.0)
        except APIUnreachable:
            return None  # the last answer stands: the caller reads its error


def new_idempotency_key() -> str:
    """Every submission carries an Idempotency-Key (the caller's, else a fresh one), so that a
    retry after a lost answer returns the job the first try made instead of a second job."""
    return f"sdk-{uuid.uuid4().hex}"


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


def guidance_fields(guidance: Guidance | None) -> dict[str, Any]:
    """A request's ``context``, ``custom_instructions`` and ``formality`` as body fields."""
    if guidance is None or guidance.empty:
        return {}
    return {
        "context": guidance.context,
        "custom_instructions": list(guidance.custom_instructions),
        "formality": guidance.formality if guidance.formality != "default" else None,
    }


def _with(body: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """``body`` with the ``optional`` fields that are given (not None, not empty; a 0 is a
    value: a translation_memory_threshold of 0)."""
    body.update({k: v for k, v in optional.items() if v is not None and v not in ("", [])})
    return body


class JobOptions(TypedDict, total=False):
    """What every way of asking for a translation also takes (``submit``, ``submit_document``,
    ``translate``, ``translation``): the API's fields of the same names, each left out of the
    request when not given. ``pool``: the pool to translate with (default: the fleet's route for
    the pair); ``adapter``: a LoRA adapter that pool serves; ``guidance``: context,
    instructions and formality for an LLM engine (docs/llm.md); ``model_type``: a pool marked
    for it where one serves the pair (the job's ``model_type_used`` says which);
    ``protected_patterns``: regular expressions (RE2) whose matches are never translated
    (docs/glossaries.md); ``no_trace``: nothing of the request outlives its delivery (its
    result can be read once; docs/security.md#no-trace-requests); ``use_cache``: ``yes``,
    ``no`` (the phrase cache neither read nor written) or ``overwrite`` (not read; written
    over); ``quality_estimation``: a quality score per translated segment from the pool's
    quality-estimation model (the result's ``quality``; docs/quality.md)."""

    glossary_id: str | None
    protected_patterns: Sequence[str] | None
    pool: str | None
    adapter: str | None
    guidance: Guidance | None
    style_id: str | None
    translation_memory_id: str | None
    translation_memory_threshold: int | None
    model_type: ModelType | None
    no_trace: bool | None
    use_cache: UseCache | None
    quality_estimation: bool | None


def _options(options: JobOptions) -> dict[str, Any]:
    """``options`` as body fields (the guidance as its own fields)."""
    fields: dict[str, Any] = dict(options)
    guidance = fields.pop("guidance", None)
    if fields.get("protected_patterns") is not None:
        fields["protected_patterns"] = list(fields["protected_patterns"])
    return {**fields, **guidance_fields(guidance)}


# -- jobs --------------------------------------------------------------------------------------
def _new_job(body: dict[str, Any], idempotency_key: str | None, **optional: Any) -> Call[JobPublic]:
    """``optional``: more body fields, left out when empty (``lane``, ``callback_url``...)."""
    return Call(
        "POST",
        "/v1/jobs",
        _job,
        json=_with(body, **optional),
        headers=_idempotency(idempotency_key or new_idempotency_key()),
    )


def submit(
    texts: Sequence[str],
    *,
    source: str,
    target: str,
    lane: str | None = None,
    idempotency_key: str | None = None,
    callback_url: str | None = None,
    **options: Unpack[JobOptions],
) -> Call[JobPublic]:
    """Queue a job (options: :class:`JobOptions`); ``callback_url`` gets a signed POST when it
    is final (docs/webhooks.md)."""
    body = {"texts": list(texts), "source_lang": source, "target_lang": target}
    return _new_job(
        body, idempotency_key, lane=lane, callback_url=callback_url, **_options(options)
    )


def document_body(content: bytes | str, fmt: str, filename: str | None) -> dict[str, Any]:
    """A document as the API takes it: text as text, bytes as text when they are UTF-8 (the
    API encodes them back to the same bytes) and base64 otherwise (a DOCX, XLSX or PPTX, a
    UTF-16 .strings, a Latin-1 .properties: the format reads its own encoding)."""
    if isinstance(content, str):
        doc: dict[str, Any] = {"content": content}
    else:
        try:
            doc = {"content": content.decode("utf-8"), "encoding": "text"}
        except UnicodeDecodeError:
            doc = {"content": base64.b64encode(content).decode(), "encoding": "base64"}
    return _with({**doc, "format": fmt}, filename=filename)


def submit_document(
    content: bytes | str,
    *,
    format: str,
    target: str,
    source: str = "auto",
    filename: str | None = None,
    lane: str | None = None,
    idempotency_key: str | None = None,
    callback_url: str | None = None,
    **options: Unpack[JobOptions],
) -> Call[JobPublic]:
    """Submit a file (any format of docs/documents.md: HTML, PO, XLSX...); fetch the translated
    file with ``document`` once the job is final."""
    body = {
        "document": document_body(content, format, filename),
        "source_lang": source,
        "target_lang": target,
    }
    return _new_job(
        body, idempotency_key, lane=lane, callback_url=callback_url, **_options(options)
    )


def _partial(partial: bool) -> dict[str, str] | None:
    return {"partial": "true"} if partial else None


def document(job_id: str, *, partial: bool = False) -> Call[bytes]:
    """A document job's translated file (failed sentences keep their source text)."""
    return Call(
        "GET",
        f"/v1/jobs/{job_id}/document",
        lambda r: checked(r).content,
        params=_partial(partial),
    )


def get(job_id: str, *, wait: float = 0) -> Call[JobPublic]:
    """The job; ``wait``: seconds the API may hold the answer until it is final."""
    return Call(
        "GET",
        f"/v1/jobs/{job_id}",
        _job,
        params={"wait": wait} if wait else None,
        timeout=max(wait + 10, 30),
    )


def result(job_id: str, *, partial: bool = False) -> Call[JobResultPublic]:
    """The job's translations, errors and warnings (``partial``: before it is final)."""
    return Call(
        "GET",
        f"/v1/jobs/{job_id}/result",
        lambda r: JobResultPublic.model_validate(_json(r)),
        params=_partial(partial),
    )


def cancel(job_id: str, *, purge: bool = False) -> Call[JobPublic]:
    """Cancel a job (finished results are kept). ``purge=True`` also deletes everything
    stored for it (texts, results): the job as it was is returned, and is 404 afterwards."""
    return Call("DELETE", f"/v1/jobs/{job_id}", _job, params={"purge": "true"} if purge else None)


def languages() -> Call[dict[str, Any]]:
    """The languages and pairs the fleet serves."""
    return Call("GET", "/v1/languages", _json)


def limits() -> Call[LimitsPublic]:
    """What one job or request may carry on this fleet."""
    return Call("GET", "/v1/limits", lambda r: LimitsPublic.model_validate(_json(r)))


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
        job: JobPublic = yield get(job_id, wait=step)
        if on_progress:
            on_progress(job)
        if job.final or (deadline is not None and time.monotonic() >= deadline):
            return job


def translation(
    texts: Sequence[str],
    *,
    source: str,
    target: str,
    timeout: float = 60.0,
    **options: Unpack[JobOptions],
) -> Flow[TranslatePublic]:
    """``translate`` with everything the answer says: ``translations``, ``errors`` and
    ``warnings`` per segment, ``cached`` (how many the phrase cache answered) and the job's
    ``id`` (None when the cache answered all). /v1/translate; past the server's wait, the job
    is long-polled up to ``timeout`` in all (:class:`JobTimeout` when it is not done by then)
    and its result read."""
    deadline = time.monotonic() + timeout
    server_wait = min(timeout, SERVER_WAIT_MAX_S)
    body = {"texts": list(texts), "source_lang": source, "target_lang": target}
    answer: httpx.Response = yield Call(
        "POST",
        "/v1/translate",
        checked,
        json=_with(body, timeout=server_wait, **_options(options)),
        timeout=server_wait + 10,
    )
    data = answer.json()
    if answer.status_code != 202:
        return TranslatePublic.model_validate(data)
    job = yield from wait(data["id"], max(0.0, deadline - time.monotonic()), 10.0, None)
    if not job.final:
        raise JobTimeout(job.id, timeout)
    done: JobResultPublic = yield result(job.id)
    return TranslatePublic(
        id=job.id,
        status=job.status,
        translations=done.translations,
        warnings=done.warnings,
        errors=done.errors,
        cached=job.cached,
        detected_source_lang=job.detected_source_lang,
        detected_confidence=job.detected_confidence,
        model_type_used=job.model_type_used,
    )


def translate(
    texts: Sequence[str],
    *,
    source: str,
    target: str,
    timeout: float = 60.0,
    **options: Unpack[JobOptions],
) -> Flow[list[str | None]]:
    """Translations aligned with ``texts``; None where a segment failed.

    Waits at most ``timeout`` seconds in all (the server holds the request, then the job is
    long-polled); raises :class:`JobTimeout` (with ``job_id``) if it is not done by then.
    """
    done = yield from translation(texts, source=source, target=target, timeout=timeout, **options)
    return done.translations


# -- glossaries --------------------------------------------------------------------------------
def create_glossary(
    name: str,
    *,
    source: str,
    target: str,
    entries: Mapping[str, str] | None = None,
    protected: Sequence[str] | None = None,
    entries_tsv: str | None = None,
    protected_patterns: Sequence[str] | None = None,
) -> Call[GlossaryDetail]:
    """A new glossary: ``entries`` source term -> target term, ``protected`` terms kept
    untranslated in their casing, ``protected_patterns`` regular expressions (RE2) whose
    matches are kept as they are; pass its ``id`` as ``glossary_id`` to submit/translate."""
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
        json=_with(
            body,
            entries_tsv=entries_tsv,
            protected_patterns=list(protected_patterns) if protected_patterns else None,
        ),
    )


def glossaries() -> Call[list[GlossaryPublic]]:
    """This key's glossaries (without their terms)."""
    return Call(
        "GET",
        "/v1/glossaries",
        lambda r: [GlossaryPublic.model_validate(g) for g in _json(r)["glossaries"]],
    )


def glossary(glossary_id: str) -> Call[GlossaryDetail]:
    """A glossary with its terms."""
    return Call(
        "GET",
        f"/v1/glossaries/{glossary_id}",
        lambda r: GlossaryDetail.model_validate(_json(r)),
    )


def _nothing(resp: httpx.Response) -> None:
    checked(resp)


def delete_glossary(glossary_id: str) -> Call[None]:
    """Delete a glossary (jobs accepted with it still finish with it)."""
    return Call("DELETE", f"/v1/glossaries/{glossary_id}", _nothing)
