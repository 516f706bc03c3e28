"""The webhook outbox: a job's final-state event, durable in Redis until it is delivered.

The event is written by the Lua script that makes the job final (lib.lua ``outbox_add``), in
the same step: no crash of an API process, a worker or Redis (AOF) between "final" and "event
queued" can lose it. It holds the webhook-id (``msg_<job id>_<status>``: one per job, the same
on every attempt), the event type and a snapshot of the job; the body is built from that
snapshot by the first attempt and stored, so every attempt sends the same bytes even if the job
is purged or the code changes meanwhile.

Delivery state is a sorted set of due times per API key (:func:`mtfleet.core.keys.webhooks_due`)
rather than a Redis stream: retries need a schedule (backoff over days, ``Retry-After``), which a
stream does not keep, while a claim that moves an event's due time to the end of a lease
(``webhook_claim.lua``) gives what XAUTOCLAIM would, in the same structure: an event whose
deliverer died mid-attempt is due again after the lease. The keys with events due take turns
(:data:`mtfleet.core.keys.WEBHOOKS_DUE`), and a key is passed over while it holds its share of
the claiming process's delivery slots, so one key's thousands of events to a receiver that
stalls delay another key's by one turn, not by all of them. Any number of deliverers (one per
API process) can share it. :mod:`mtfleet.api.webhooks.deliverer` makes the attempts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import redis
import redis.asyncio

from mtfleet.core import keys, scripts
from mtfleet.core.schemas import (
    JobEventData,
    JobLinks,
    JobResultPublic,
    WebhookEvent,
    WebhookPublic,
)
from mtfleet.core.store import JobRecord, job_from_hash

#: How an attempt ends the event, or not: ``retry`` schedules another attempt.
Outcome = Literal["retry", "delivered", "gone", "failed"]

_SNAPSHOT = "job."


@dataclass(frozen=True)
class StoredEvent:
    """A job's webhook event as the outbox keeps it."""

    job_id: str
    webhook_id: str
    type: str
    url: str
    owner: str
    created_at: float
    state: str
    attempts: int
    snapshot: dict[str, str]
    body: str | None

    @property
    def no_trace(self) -> bool:
        """The job is no-trace: the event carries its result, which goes once delivered."""
        return self.snapshot.get("no_trace") == "true"

    def build_body(self, result: JobResultPublic | None = None) -> str:
        """The event's body (JSON), from the job's snapshot: what the first attempt stores;
        ``result``: a no-trace job's, which the event delivers."""
        job = job_from_hash(self.snapshot)
        data = JobEventData(
            **public_fields(job),
            links=JobLinks.of(job.id, job.document_format is not None),
        )
        finished = job.finished_at if job.finished_at is not None else self.created_at
        event = WebhookEvent(
            type=self.type,
            timestamp=datetime.fromtimestamp(finished, tz=UTC).isoformat().replace("+00:00", "Z"),
            data=data,
            result=result,
        )
        return event.model_dump_json(
            exclude_none=True, exclude={"data": {"work", "webhook", "callback_url"}}
        )


def public_fields(job: JobRecord) -> dict[str, object]:
    """The job's public fields (what GET /v1/jobs/{id} shows), as a model's keywords."""
    return {name: getattr(job, name) for name in JobEventData.model_fields if name != "links"}


class WebhookOutbox:
    """Webhook events on the durable Redis (``MT_REDIS_URL``); both clients decode responses.
    The deliverer's steps (claim, event, body, record) run on the event loop (``aclient``);
    a job's view of its webhook (:meth:`public`) is read with the job (``r``)."""

    def __init__(self, r: redis.Redis, aclient: redis.asyncio.Redis, *, kept_s: int) -> None:
        self.r = r
        self.ar = aclient
        self.kept_s = kept_s  # how long an ended event stays readable (MT_RESULT_TTL_S)
        self._claim = scripts.register(aclient, "webhook_claim")
        self._attempt = scripts.register(aclient, "webhook_attempt")

    async def claim(
        self, now: float, lease_s: float, most: int, *, share: int, busy: dict[str, int]
    ) -> list[tuple[str, str]]:
        """(job id, API key) of up to ``most`` events due by ``now``, the keys taking turns,
        leased to the caller for ``lease_s`` seconds; a key with ``share`` events in flight at
        the caller (``busy``: key -> its events in flight there) gets no more."""
        args: list[str | float | int] = [now, lease_s, most, share]
        for owner, n in busy.items():
            args += [owner, n]
        got = await self._claim(keys=[keys.WEBHOOKS_DUE], args=args)
        return [(str(got[i]), str(got[i + 1])) for i in range(0, len(got), 2)]

    async def event(self, job_id: str) -> StoredEvent | None:
        raw = {str(k): str(v) for k, v in (await self.ar.hgetall(keys.webhook(job_id))).items()}
        if not raw:
            return None
        snapshot = {k[len(_SNAPSHOT) :]: v for k, v in raw.items() if k.startswith(_SNAPSHOT)}
        return StoredEvent(
            job_id=job_id,
            webhook_id=raw["webhook_id"],
            type=raw["type"],
            url=snapshot.get("callback_url", ""),
            owner=snapshot.get("owner", ""),
            created_at=float(raw["created_at"]),
            state=raw.get("state", "pending"),
            attempts=int(raw.get("attempts", 0)),
            snapshot=snapshot,
            body=raw.get("body"),
        )

    async def body(self, event: StoredEvent, result: JobResultPublic | None = None) -> str:
        """The bytes every attempt sends: stored by the first attempt that builds them (two
        deliverers racing both read back the one that was stored). ``result``: a no-trace
        job's, carried by the event (the body goes with it once delivered; an attempt after
        a read delivered it builds one without it)."""
        if event.body is not None:
            return event.body
        await self.ar.hsetnx(keys.webhook(event.job_id), "body", event.build_body(result))
        return str(await self.ar.hget(keys.webhook(event.job_id), "body"))

    async def record(
        self,
        job_id: str,
        owner: str,
        outcome: Outcome,
        *,
        now: float,
        status: int | None = None,
        error: str = "",
        next_at: float = 0.0,
    ) -> str:
        """Record an attempt; returns the event's state after it ('' : no such event)."""
        return str(
            await self._attempt(
                keys=[keys.webhook(job_id), keys.WEBHOOKS_DUE],
                args=[
                    job_id,
                    now,
                    outcome,
                    "" if status is None else status,
                    error[:500],
                    next_at,
                    self.kept_s,
                    owner,
                ],
            )
        )

    def public(self, job: JobRecord) -> WebhookPublic | None:
        """The job's webhook as GET /v1/jobs/{id} shows it (None: the job has no callback)."""
        if not job.callback_url:
            return None
        raw = {str(k): str(v) for k, v in self.r.hgetall(keys.webhook(job.id)).items()}
        if not raw:
            return WebhookPublic(url=job.callback_url, state="waiting")

        def number(name: str) -> float | None:
            value = raw.get(name)
            return float(value) if value else None

        status = raw.get("last_status")
        return WebhookPublic(
            url=job.callback_url,
            state=raw.get("state", "pending"),
            id=raw.get("webhook_id"),
            type=raw.get("type"),
            attempts=int(raw.get("attempts", 0)),
            last_attempt_at=number("last_attempt_at"),
            last_status=int(status) if status else None,
            last_error=raw.get("last_error") or None,
            next_attempt_at=number("next_attempt_at"),
            delivered_at=number("delivered_at"),
        )


def pending(r: redis.Redis) -> int:
    """Webhook events not yet delivered nor given up, of every API key (two round trips)."""
    owners = [str(o) for o in r.zrange(keys.WEBHOOKS_DUE, 0, -1)]
    pipe = r.pipeline(transaction=False)
    for owner in owners:
        pipe.zcard(keys.webhooks_due(owner))
    return sum(int(n) for n in pipe.execute()) if owners else 0
