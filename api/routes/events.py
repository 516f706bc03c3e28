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
* ``retry: 3000`` with the first event.

Every ``data:`` is the job as ``GET /v1/jobs/{id}`` shows it, with its links. Progress is read
from the job store (the counters ``GET /v1/jobs/{id}`` reads), and the wait between reads is
the API's one job-done listener (:class:`~mtfleet.core.events.CompletionWaiter`); a stream
lives at most ``MT_SSE_MAX_S``, then ends (the client reconnects with ``Last-Event-ID``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from functools import partial
from typing import Annotated

import redis
from fastapi import APIRouter, Header, Response
from fastapi.concurrency import run_in_threadpool
from sse_starlette import EventSourceResponse, ServerSentEvent

from mtfleet.api.auth import CallerDep
from mtfleet.api.deps import Services, ServicesDep
from mtfleet.api.errors import documented
from mtfleet.api.routes.jobs import visible_job
from mtfleet.core.errors import JobNotFound
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
    """Events of ``job`` after the client's ``seen`` point, until its final event."""
    s = services.settings
    deadline = time.monotonic() + s.sse_max_s
    last: tuple[int, str] | None = None  # what the last event said (settled, status)
    job_id = job.id
    is_final = partial(services.store.afinal, job_id)
    while True:
        state = (settled(job), job.status.value)
        # on a resume, nothing the client has seen again; then every change
        if job.status.final or (state != last and (state[0] > seen or last is not None)):
            yield as_event(job, first=last is None)
            last = state
        if job.status.final:
            return
        pause = min(s.sse_progress_s, deadline - time.monotonic())
        if pause <= 0:
            return  # the stream's life is over: the client resumes with Last-Event-ID
        # returns at once when the job-done event comes, else after the pause (the pace)
        await services.waiter.wait_async(job_id, is_final, pause)
        try:
            job = await services.store.aget(job_id)  # on the event loop: no thread per stream
        except (JobNotFound, redis.RedisError) as exc:
            log.info("event stream of job %s ends: %s", job_id, exc)
            return  # purged, expired or Redis away: a reconnect says which


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
    return EventSourceResponse(
        job_stream(services, job, resume_point(last_event_id)),
        ping=services.settings.sse_ping_s,
        send_timeout=30,
    )
