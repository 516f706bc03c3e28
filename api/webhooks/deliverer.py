"""The webhook deliverer: claims due events from the outbox and POSTs them, signed.

It runs in every API process (``mtfleet api`` starts it in the background; several processes
share the outbox safely, :mod:`mtfleet.core.outbox`). It makes up to ``MT_WEBHOOK_CONCURRENCY``
attempts at once, at most ``MT_WEBHOOK_KEY_CONCURRENCY`` of them for one API key: the outbox
passes over a key that holds its share, and the keys with events due take turns for the rest.
One attempt:

1. the event's body is read (built and stored by the first attempt: identical bytes every time);
2. the target is resolved, checked and pinned again (:mod:`mtfleet.api.webhooks.targets`);
3. it is signed as Standard Webhooks says, with the ``standardwebhooks`` library: ``webhook-id``
   (the same on every attempt), ``webhook-timestamp`` (this attempt's, in whole seconds) and
   ``webhook-signature`` (``v1,<base64>`` per secret: the key's, plus the previous one for a
   while after a rotation);
4. it is POSTed with ``MT_WEBHOOK_TIMEOUT_S`` for the whole attempt, no redirects followed;
5. a 2xx ends it (delivered), a 410 ends it (gone: the receiver says stop); anything else, a
   timeout or a connection error is retried after a backoff with full jitter, or after the
   receiver's ``Retry-After`` when that is longer, until ``MT_WEBHOOK_RETRY_FOR_S`` after the
   job became final (then failed).

Delivery is at least once: an attempt whose answer was lost (the API killed mid-request) is
made again once its lease runs out; receivers dedupe on ``webhook-id``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
from standardwebhooks import Webhook

from mtfleet.api import metrics
from mtfleet.api.results import assemble
from mtfleet.api.webhooks.targets import TargetRefused, pin
from mtfleet.core.apikeys import KeyStore
from mtfleet.core.backoff import Backoff, retry_after_s
from mtfleet.core.errors import JobNotFound
from mtfleet.core.outbox import Outcome, StoredEvent, WebhookOutbox
from mtfleet.core.schemas import JobResultPublic
from mtfleet.core.settings import WebhookSettings
from mtfleet.core.store import JobStore

log = logging.getLogger(__name__)

USER_AGENT = "mtfleet-webhooks/1"


@dataclass(frozen=True)
class Answer:
    """How one attempt went: ``kind`` (delivered, gone, http_error, network_error, timeout,
    refused), the HTTP status, what went wrong, the receiver's Retry-After in seconds."""

    kind: str
    status: int | None
    error: str = ""
    retry_after: float | None = None


def signature(secrets: list[str], msg_id: str, timestamp: int, body: str) -> str:
    """The ``webhook-signature`` header: one ``v1,<base64>`` per secret, space-separated."""
    at = datetime.fromtimestamp(timestamp, tz=UTC)
    return " ".join(Webhook(s).sign(msg_id, at, body) for s in secrets)


class WebhookDeliverer:
    """The background loop of an API process (:meth:`start` in the app's lifespan)."""

    def __init__(
        self, settings: WebhookSettings, outbox: WebhookOutbox, apikeys: KeyStore, store: JobStore
    ) -> None:
        """``store``: where a no-trace job's result is read (its event carries it) and
        deleted once delivered."""
        self.settings = settings
        self.outbox = outbox
        self.apikeys = apikeys
        self.store = store
        # a claimed event is this process's until the lease ends: longer than any attempt
        self.lease_s = 2 * settings.webhook_timeout_s + 10
        self._tasks: set[asyncio.Task[None]] = set()
        self._busy: Counter[str] = Counter()  # API key -> its attempts in flight here
        self._loop: asyncio.Task[None] | None = None
        self._stopping = False

    def start(self) -> None:
        self._loop = asyncio.create_task(self._run(), name="webhook-deliverer")

    async def stop(self) -> None:
        # (a cancellation that lands inside a Redis command may come out of the client as
        # an error, not CancelledError: the loop also stops on this)
        self._stopping = True
        tasks = [t for t in (self._loop, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _run(self) -> None:
        async with httpx.AsyncClient(
            follow_redirects=False,
            headers={"User-Agent": USER_AGENT},
            limits=httpx.Limits(max_connections=self.settings.webhook_concurrency),
        ) as http:
            unavailable = False
            while not self._stopping:
                try:
                    claimed = await self._claim()
                    unavailable = False
                except Exception as exc:  # noqa: BLE001 - Redis away: look again later
                    if self._stopping:
                        return
                    if not unavailable:  # said once per outage, not at every look
                        log.warning("webhook outbox unavailable: %s", exc)
                    unavailable, claimed = True, []
                for job_id, owner in claimed:
                    self._busy[owner] += 1
                    task = asyncio.create_task(self._attempt_guarded(http, job_id, owner))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                if not claimed:
                    await asyncio.sleep(self.settings.webhook_poll_s)

    async def _claim(self) -> list[tuple[str, str]]:
        s = self.settings
        free = s.webhook_concurrency - len(self._tasks)
        if free <= 0:
            return []
        share = min(s.webhook_key_concurrency, s.webhook_concurrency)
        busy = dict(self._busy)
        return await self.outbox.claim(time.time(), self.lease_s, free, share=share, busy=busy)

    async def _attempt_guarded(self, http: httpx.AsyncClient, job_id: str, owner: str) -> None:
        try:
            await self.attempt(http, job_id, owner)
        except Exception:  # one event's trouble must not stop the others (its lease runs
            # out and it is tried again)
            log.exception("webhook attempt for job %s failed", job_id)
        finally:
            self._busy[owner] -= 1
            if self._busy[owner] <= 0:
                del self._busy[owner]

    async def attempt(self, http: httpx.AsyncClient, job_id: str, owner: str) -> None:
        """One attempt of a claimed event (of API key ``owner``), recorded in the outbox (and
        in ``mt_webhook_attempts_total`` by how it went)."""
        event = await self.outbox.event(job_id)
        if event is None:  # its data is gone (flushed by hand): forget its due time
            await self.outbox.record(job_id, owner, "failed", now=time.time())
            return
        if event.state != "pending":
            return
        result = await self._result(event) if event.no_trace and event.body is None else None
        body = await self.outbox.body(event, result)
        secrets = await self._secrets(event.owner)
        if not secrets:
            error = "no signing secret (the API key that made the job was deleted)"
            await self._record(event, "failed", "no_secret", error=error)
            return
        timeout = self.settings.webhook_timeout_s
        try:
            got = await asyncio.wait_for(self._post(http, event, body, secrets), timeout)
        except TimeoutError:
            got = Answer("timeout", None, f"no answer within {timeout:g}s")
        except TargetRefused as exc:
            got = Answer("refused", None, exc.message)
        if got.kind == "delivered":
            await self._record(event, "delivered", got.kind, status=got.status)
            if event.no_trace:
                await self._delivered(event)
        elif got.kind == "gone":
            await self._record(event, "gone", got.kind, status=got.status, error="410 Gone")
        else:
            await self._retry(event, got)

    async def _result(self, event: StoredEvent) -> JobResultPublic | None:
        """A no-trace job's result, which its event delivers (None: a read delivered it
        already, or the job is gone)."""
        try:
            job, outcomes = await self.store.aget_with_results(event.job_id)
        except JobNotFound:
            return None
        return assemble(job, outcomes) if job.delivered_at is None else None

    async def _delivered(self, event: StoredEvent) -> None:
        """A no-trace job's webhook was delivered: its texts and results go (with the event's
        body, which carried them)."""
        with contextlib.suppress(JobNotFound):  # expired or purged meanwhile: nothing left
            await self.store.adelivered(await self.store.aget(event.job_id))

    async def _secrets(self, owner: str) -> list[str]:
        if owner:
            return await self.apikeys.webhook_secrets(owner)
        secret = self.settings.webhook_secret
        return [secret.get_secret_value()] if secret is not None else []

    async def _post(
        self, http: httpx.AsyncClient, event: StoredEvent, body: str, secrets: list[str]
    ) -> Answer:
        target = await pin(event.url, allow_private=self.settings.webhook_allow_private)
        timestamp = int(time.time())
        headers = {
            **target.headers,
            "Content-Type": "application/json",
            "webhook-id": event.webhook_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signature(secrets, event.webhook_id, timestamp, body),
        }
        try:
            resp = await http.post(
                target.url,
                content=body.encode(),
                headers=headers,
                extensions=target.extensions,
                timeout=self.settings.webhook_timeout_s,
            )
        except httpx.HTTPError as exc:
            return Answer("network_error", None, f"{type(exc).__name__}: {exc}".rstrip(": "))
        code = resp.status_code
        if 200 <= code < 300:
            return Answer("delivered", code)
        if code == 410:
            return Answer("gone", code)
        wait = retry_after_s(resp.headers.get("Retry-After"), time.time())
        return Answer("http_error", code, f"HTTP {code}", wait)

    async def _retry(self, event: StoredEvent, got: Answer) -> None:
        """Schedule the next attempt: backoff with full jitter, or the receiver's Retry-After
        when longer; past the retry window, give up."""
        s = self.settings
        now = time.time()
        backoff = Backoff(s.webhook_backoff_first_s, s.webhook_backoff_max_s, jitter="full")
        delay = backoff.wait_s(event.attempts)
        if got.retry_after is not None:
            delay = max(delay, got.retry_after)
        next_at = now + delay
        if next_at > event.created_at + s.webhook_retry_for_s:
            error = f"{got.error}; gave up: MT_WEBHOOK_RETRY_FOR_S has passed"
            await self._record(event, "failed", got.kind, status=got.status, error=error)
            return
        await self._record(
            event, "retry", got.kind, status=got.status, error=got.error, next_at=next_at
        )

    async def _record(
        self,
        event: StoredEvent,
        outcome: Outcome,
        kind: str,
        *,
        status: int | None = None,
        error: str = "",
        next_at: float = 0.0,
    ) -> None:
        metrics.WEBHOOK_ATTEMPTS.labels(kind).inc()
        if outcome != "retry":
            metrics.WEBHOOK_EVENTS.labels(outcome).inc()
            log.info("webhook %s for job %s: %s %s", event.webhook_id, event.job_id, outcome, error)
        await self.outbox.record(
            event.job_id,
            event.owner,
            outcome,
            now=time.time(),
            status=status,
            error=error,
            next_at=next_at,
        )
