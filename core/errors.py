"""One error tree for every mtfleet process.

The API maps each class to an HTTP status in one place (``api/errors.py``); workers store failures
as ``{"type", "message"}`` (never a pickle) so any client can read them.
"""

from __future__ import annotations

import logging
from typing import Any

_log = logging.getLogger("mtfleet.unavailable")


class MTError(Exception):
    """Base of every error mtfleet raises on purpose."""

    code = "error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.code, "message": self.message, **self.details}


class InvalidInput(MTError):
    """The caller sent something we will not process (HTTP 422)."""

    code = "invalid_input"


class UnsupportedLanguage(InvalidInput):
    """A language code we do not know, or a pair no engine serves (HTTP 422)."""

    code = "unsupported_language"


class TooLarge(InvalidInput):
    """A request carries more than one request may (more texts than a drop-in surface takes:
    HTTP 413 there, 422 on /v1)."""

    code = "too_large"


class UnknownPool(InvalidInput):
    """A job names a pool the fleet does not have, or one that does not serve its pair or
    its LoRA adapter (HTTP 422, listing what there is)."""

    code = "unknown_pool"


class IdempotencyConflict(MTError):
    """An Idempotency-Key was reused with a different request body (HTTP 409)."""

    code = "idempotency_conflict"


class JobNotFound(MTError):
    """No such job, or it has expired (HTTP 404)."""

    code = "job_not_found"


class JobPurged(MTError):
    """The job an Idempotency-Key made was purged (HTTP 410)."""

    code = "job_purged"


class ResultDelivered(JobPurged):
    """A no-trace job's result was delivered once (its first read, the sync answer or its
    webhook) and deleted with its texts: a second read finds nothing (HTTP 410)."""

    code = "result_delivered"


class JobNotFinished(MTError):
    """The result of a job that is still running was asked for (HTTP 409)."""

    code = "job_not_finished"


class StillTranslating(JobNotFinished):
    """A synchronous drop-in request (DeepL's /v2/translate, LibreTranslate's /translate) waited
    its deadline and its job is still running (``retry_after`` s); the same request sent again
    joins the job (DeepL: HTTP 429, which its clients retry; LibreTranslate: 503)."""

    code = "still_translating"


class Unavailable(MTError):
    """A backing service (Redis, the broker) cannot take the request now (HTTP 503)."""

    code = "unavailable"

    @classmethod
    def because(cls, what: str, exc: BaseException) -> Unavailable:
        """``what`` is unavailable: the cause (addresses, ports, script digests) goes to the
        log, the client gets a plain sentence."""
        _log.warning("%s unavailable: %s", what, exc)
        return cls(f"{what} is unavailable; retry shortly")


class NotReplicated(Unavailable):
    """A new job was not confirmed on the replicas ``MT_REDIS_MIN_REPLICAS`` asks for in time
    (HTTP 503): it was not accepted, so a failover cannot lose a job the client was told
    exists."""

    code = "not_replicated"


class EngineError(MTError):
    """The engine failed on a batch or a segment."""

    code = "engine_error"


class EngineUnavailable(EngineError):
    """The engine cannot serve anything (failed to load, its process died). Fatal for the
    worker: the chunk goes back to the queue and the worker restarts."""

    code = "engine_unavailable"


class SegmentTooLong(EngineError):
    """A segment does not fit the model's context; it fails alone."""

    code = "segment_too_long"


class EngineTimeout(EngineError):
    """The engine did not finish a segment (or a call) by its deadline; the segment fails
    alone while the engine goes on serving the others."""

    code = "engine_timeout"


class Cancelled(MTError):
    """The segment's job was cancelled before it was translated."""

    code = "cancelled"


class Unfinished(MTError):
    """The segment's chunk ran out of its time budget before the engine finished it: it gets
    no result now, and the chunk's next delivery translates it (never stored)."""

    code = "unfinished"


class EngineOutputMismatch(EngineError):
    """An engine returned a different number of outputs than it was given."""

    code = "engine_output_mismatch"


class DeadLettered(MTError):
    """A chunk exceeded its delivery budget (it killed or outlived workers repeatedly)."""

    code = "dead_lettered"


class ConfigError(MTError):
    """Settings or command-line options that cannot work together."""

    code = "config_error"


class Unauthorized(MTError):
    """No API key, or one that is unknown, malformed or revoked (HTTP 401)."""

    code = "unauthorized"


class Forbidden(MTError):
    """A valid API key without the role a route needs (HTTP 403): ``/v1/ops`` is for operator
    keys."""

    code = "forbidden"


class RateLimited(MTError):
    """An API key sent requests faster than its rate allows (HTTP 429, ``retry_after`` s)."""

    code = "rate_limited"


class QuotaExceeded(RateLimited):
    """An API key's characters for the UTC day are used up (HTTP 429 until the day rolls
    over; ``retry_after`` says how many seconds that is)."""

    code = "quota_exceeded"


class StorageQuotaExceeded(RateLimited):
    """What an API key keeps in Redis (jobs, documents, glossaries) would pass its storage
    quota (HTTP 429; ``retry_after``: seconds until its oldest job expires)."""

    code = "storage_quota_exceeded"


class InteractiveShareExceeded(RateLimited):
    """An API key's interactive work queued or being translated is at its share of the
    interactive lane (HTTP 429 with ``retry_after``): its next interactive request waits until
    some of that work is done, or goes as a bulk job."""

    code = "interactive_share_exceeded"


class Overloaded(RateLimited):
    """A lane's queue is deeper than its configured limit (HTTP 429 with ``retry_after``): the
    fleet pushes back instead of accepting work it will not reach for a long time."""

    code = "overloaded"
