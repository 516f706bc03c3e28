"""Every Redis key and Celery queue name mtfleet uses, in one place.

No key string is built anywhere else. Everything lives under the ``mt:`` prefix so a shared Redis
can be inspected (``redis-cli --scan --pattern 'mt:*'``) and cleaned safely.
"""

from __future__ import annotations

PREFIX = "mt:"

#: Celery task the API sends by name; the workers register it under this name.
TRANSLATE_TASK = "workers.tasks.translate_chunk"

LANES = ("interactive", "bulk")


def queue(lane: str) -> str:
    """Celery queue (a Redis list on the broker) that carries a lane's chunks."""
    return f"mt.{lane}"


def job(job_id: str) -> str:
    """Hash: job metadata, status and progress counters (``done``, ``failed``, ``total``)."""
    return f"{PREFIX}job:{job_id}"


def job_results(job_id: str) -> str:
    """Hash: segment index -> JSON outcome, written once per index (HSETNX)."""
    return f"{PREFIX}job:{job_id}:out"


def chunk_deliveries(job_id: str) -> str:
    """Hash: chunk number -> how many times a worker started it (poison detection)."""
    return f"{PREFIX}job:{job_id}:deliveries"


def idempotency(key_digest: str) -> str:
    """String: job id created for an Idempotency-Key (the key is stored hashed)."""
    return f"{PREFIX}idem:{key_digest}"


def phrase(fingerprint: str, source: str, target: str, text_digest: str) -> str:
    """String: cached translation of one normalized segment by one model for one pair."""
    return f"{PREFIX}cache:{fingerprint}:{source}:{target}:{text_digest}"


#: Hash: "src:tgt" -> JSON {engine, model, fingerprint, updated}. Survives worker shutdown so a
#: fleet that scaled to zero still accepts jobs (they wait in the queue).
PAIRS = f"{PREFIX}pairs"

#: Set of worker names that have registered; liveness is the per-worker key below.
WORKERS = f"{PREFIX}workers"


def worker(name: str) -> str:
    """String (JSON, expires after missed heartbeats): a live worker's registration."""
    return f"{PREFIX}worker:{name}"


#: Pub/sub channel: a job id is published here once, when the job reaches a final state.
JOB_DONE_CHANNEL = f"{PREFIX}events:job-done"

#: List: chunks that exhausted their deliveries, as JSON {job_id, chunk, reason, at}.
DEAD_LETTER = f"{PREFIX}dead-letter"
