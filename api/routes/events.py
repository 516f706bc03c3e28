"""GET /v1/jobs/{id}/events: a job's progress as Server-Sent Events (sse-starlette).

What a client gets on the stream:

* ``event: job.progress`` whenever the job's counters or status changed, at most once per
  ``MT_SSE_PROGRESS_S``; its ``id:`` is the number of segments settled (done + failed), a point
  that can be read again from Redis, so ``Last-Event-ID`` resumes exactly after it;
* one final event, ``event: job.succeeded`` (``job.partial``, ``job.failed``,
  ``job.cancelled``) with ``id: final``, sent as soon as the job-done pub/sub says so; then
  the stream ends. A client that reconnects with ``Last-Event-ID: final`` gets 204 (an
  EventSource stops reconnecting);
* a comment (``: ping``) every ``MT_SSE_PING_S``: no id, never a resume point;
* ``retry: 3000`` with the first event;
* ``event: error`` (no id) when the stream cannot go on (its job purged or expired, Redis
  away), with ``{"error": {"type", "message"}}``; then the stream ends.

One API key holds at most ``MT_MAX_WAITS_PER_KEY`` streams (and ``?wait=`` requests) at once
per API process: past it, 429 with ``Retry-After``. The streams of one job share their reads.

Every ``data:`` is the job as ``GET /v1/jobs/{id}`` shows it, with its links. Progress is read
from the job store (the counters ``GET /v1/jobs/{id}`` reads), and the wait between reads is
the API's one job-done listener (:class:`~mtfleet.core.events.CompletionWaiter`); a stream
lives at most ``MT_SSE_MAX_S``, then ends (the client reconnects with ``Last-Event-ID``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from functools import partial
from typing import Annotated, Any

import redis
from fastapi import APIRouter, Header, Response
from fastapi.concurrency import run_in_threadpool
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.types import Receive, Scope, Send

from mtfleet.api.auth import CallerDep
from mtfleet.api.deps import Services, ServicesDep
from mtfleet.api.errors import documented
from mtfleet.api.routes.jobs import visible_job
from mtfleet.api.shares import Release
from mtfleet.core.errors import MTError, Unavailable
from mtfleet.core.outbox import public_fields
from mtfleet.core.schemas import JobEventData, JobLinks
from mtfleet.core.store import JobRecord

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

FINAL_ID = "final"
#: How long a client waits before reconnecting (sent once, as ``retry:``).
RETRY_MS = 3000


def settled(job: JobRecord) -> int:
    return job.progress.done + job.progress.failed


def resume_point(last_event_id: str | None) -> int:
    """The settled count a client has seen (-1: none, or an id we did not send)."""
    if last_event_id and last_event_id.strip().isdigit():
        return int(last_event_id.strip())
    return -1


def as_event(job: JobRecord, *, first: bool) -> ServerSentEvent:
    data = JobEventData(
        **public_fields(job), links=JobLinks.of(job.id, job.document_format is not None)
    )
    final = job.status.final
    return ServerSentEvent(
        data=data.model_dump_json(exclude_none=True, exclude={"work", "webhook"}),
        event=f"job.{job.status.value}" if final else "job.progress",
        id=FINAL_ID if final else str(settled(job)),
        retry=RETRY_MS if first else None,
    )


async def job_stream(
    services: Services, job: JobRecord, seen: int
) -> AsyncIterator[ServerSentEvent]:
    """Events of ``job`` after the client's ``seen`` point, until its final event. A read
    that fails (the job purged or expired, Redis away) ends the stream with an ``error``
    event saying why, never with a cut: the client reconnects with Last-Event-ID."""
    s = services.settings
    deadline = time.monotonic() + s.webhooks.sse_max_s
    last: tuple[int, str] | None = None  # what the last event said (settled, status)
    job_id = job.id
    is_final = partial(services.store.afinal, job_id)
    read = partial(services.store.aget, job_id)  # on the event loop: no thread per stream
    while True:
        state = (settled(job), job.status.value)
        # on a resume, nothing the client has seen again; then every change
        if job.status.final or (state != last and (state[0] > seen or last is not None)):
            yield as_event(job, first=last is None)
            last = state
        if job.status.final:
            return
        pause = min(s.webhooks.sse_progress_s, deadline - time.monotonic())
        if pause <= 0:
            return  # the stream's life is over: the client resumes with Last-Event-ID
        try:
            # returns at once when the job-done event comes, else after the pause (the pace)
            await services.waiter.wait_async(job_id, is_final, pause)
            job = await services.waiter.shared(("job", job_id), read)  # one read per job
        except (MTError, redis.RedisError) as exc:
            log.info("event stream of job %s ends: %s", job_id, exc)
            err = exc if isinstance(exc, MTError) else Unavailable.because("the job store", exc)
            yield error_event(err)
            return


def error_event(err: MTError) -> ServerSentEvent:
    """The last event of a stream that cannot go on (no ``id``: a reconnect resumes after the
    last progress event)."""
    return ServerSentEvent(data=json.dumps({"error": err.as_dict()}), event="error")


class HeldEventSource(EventSourceResponse):
    """An event stream that gives its caller's hold back (:class:`KeyShares`) when it ends,
    however it ends."""

    def __init__(self, *args: Any, release: Release, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.release()


@router.get(
    "/{job_id}/events",
    response_class=EventSourceResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "The job's events."},
        204: {"description": "Last-Event-ID: final for a final job: nothing more will come."},
        **documented(401, 404, 429, 503),
    },
)
async def job_events(
    job_id: str,
    services: ServicesDep,
    caller: CallerDep,
    last_event_id: Annotated[str | None, Header(max_length=64)] = None,
) -> Response:
    """The job's progress as Server-Sent Events, then its final event (see the module and
    docs/api.md#event-stream). ``Last-Event-ID`` resumes after the last event received."""
    job = await run_in_threadpool(visible_job, services, caller, job_id)
    if job.status.final and last_event_id == FINAL_ID:
        return Response(status_code=204)
    release = services.waits.acquire(caller.owner)  # 429 past the key's share of streams
    try:
        return HeldEventSource(
            job_stream(services, job, resume_point(last_event_id)),
            ping=services.settings.webhooks.sse_ping_s,
            send_timeout=30,
            release=release,
        )
    except BaseException:
        release()
        raise
