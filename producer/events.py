"""Following a job's event stream (``GET /v1/jobs/{id}/events``), the state both clients share.

:meth:`MTClient.events <mtfleet.producer.client.MTClient.events>` and its async twin read the
stream with ``httpx-sse`` and ask a :class:`JobFollow` what each answer and each event means:
a broken stream is opened again with ``Last-Event-ID`` (the server resumes after it), one the
API does not open now (429 or 503 with ``Retry-After``) after the wait it says; a server
that has no stream (an older one), one that keeps breaking, or any answer but the stream or a
job error falls back to the long poll (``GET /v1/jobs/{id}?wait=``), so following a job never
needs more from the API than waiting for it did.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

import httpx
from httpx_sse import ServerSentEvent

from mtfleet.core.schemas import JobPublic
from mtfleet.producer.calls import Attempts, Call, RetryPolicy, checked

#: Longest silence on an open stream before it counts as broken (the server pings every
#: MT_SSE_PING_S, 15 s by default).
READ_TIMEOUT_S = 60.0
#: Streams in a row that opened and broke before any event, after which the client polls
#: instead (something between it and the API cuts streams).
MAX_EMPTY_STREAMS = 5
#: Errors that are about the job or the caller, not the stream: polling would say the same.
JOB_ERRORS = frozenset({"job_not_found", "unauthorized", "invalid_input"})

Opened = Literal["stream", "final", "poll"]


class Refused(httpx.TransportError):
    """The stream was not opened now (the key's rate, an API restarting): opened again after
    ``delay_s``, as the client's RetryPolicy says for any answer, instead of polling."""

    def __init__(self, status: int, delay_s: float) -> None:
        super().__init__(f"HTTP {status}")
        self.delay_s = delay_s


class StreamEnded(httpx.ReadError):
    """The server ended the stream with an ``error`` event (it could not read the job on):
    handled as a broken stream, opened again, and the new answer says what is wrong (404
    for a purged job)."""


@dataclass
class JobFollow:
    """One job followed until it is final, or until ``timeout`` seconds have passed."""

    job_id: str
    timeout: float | None
    policy: RetryPolicy
    url: str
    last_event_id: str | None = None
    started: float = field(default_factory=time.monotonic)
    empty_streams: int = 0
    _open: bool = False  # the current connection answered with the stream
    _attempts: Attempts | None = None  # the retries since the last event

    @property
    def path(self) -> str:
        return f"/v1/jobs/{self.job_id}/events"

    def remaining(self) -> float | None:
        if self.timeout is None:
            return None
        return max(0.0, self.timeout - (time.monotonic() - self.started))

    def expired(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self.last_event_id:
            headers["Last-Event-ID"] = self.last_event_id
        return headers

    def http_timeout(self) -> httpx.Timeout:
        left = self.remaining()
        read = READ_TIMEOUT_S if left is None else max(0.1, min(READ_TIMEOUT_S, left))
        return httpx.Timeout(10.0, read=read)

    @staticmethod
    def is_stream(resp: httpx.Response) -> bool:
        """Whether an answer is the stream (any other's body is read before :meth:`opened`:
        the async client reads it first, on its own)."""
        content_type = resp.headers.get("content-type", "")
        return resp.status_code == 200 and content_type.startswith("text/event-stream")

    def opened(self, resp: httpx.Response) -> Opened:
        """What an answer to the stream request means (its body read when it is an error):
        the stream; ``final`` (204: the client has the final event already); ``poll``;
        :class:`Refused` for an answer the RetryPolicy sends again (a 429 with Retry-After);
        or MTClientError for an error about the job itself."""
        self._open = False
        if self.is_stream(resp):
            self._open = True
            return "stream"
        if resp.status_code == 204:
            return "final"
        resp.read()
        delay = self._retries().after_response(resp)
        if delay is not None:
            raise Refused(resp.status_code, delay)
        try:
            error_type = resp.json().get("error", {}).get("type")
        except ValueError:
            error_type = None
        if error_type in JOB_ERRORS:
            checked(resp)  # raises
        return "poll"

    def event(self, sse: ServerSentEvent) -> JobPublic | None:
        """The job an event carries (None for a block without data: httpx-sse turns each
        keep-alive comment after the first id into one); its id becomes the resume point. An
        ``error`` event raises :class:`StreamEnded`."""
        if sse.event == "error":
            raise StreamEnded(sse.data or "the server ended the stream")
        self._attempts = None
        self.empty_streams = 0
        self._open = False  # this stream has given an event: a break of it is not "empty"
        if not sse.data:
            return None
        if sse.id:
            self.last_event_id = sse.id
        return JobPublic.model_validate_json(sse.data)

    def broken(self, exc: httpx.TransportError, *, contacted: bool) -> float | None:
        """Seconds to wait before opening the stream again (an API restart is ridden out as the
        client's RetryPolicy says: APIUnreachable past its budget), or None: poll from now on."""
        if self._open:
            self.empty_streams += 1
            self._open = False
        if self.empty_streams >= MAX_EMPTY_STREAMS or self.expired():
            return None
        if isinstance(exc, Refused):
            delay = exc.delay_s
        else:
            delay = self._retries(contacted=contacted).after_error(exc)
        left = self.remaining()
        return delay if left is None else min(delay, left)

    def _retries(self, *, contacted: bool = True) -> Attempts:
        """The retries since the last event (one budget for them all)."""
        if self._attempts is None:
            call: Call[None] = Call("GET", self.path, lambda _: None)
            self._attempts = self.policy.attempts(call, self.url, contacted=contacted)
        return self._attempts
