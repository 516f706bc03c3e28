"""Every Redis key and Celery queue name mtfleet uses, in one place.

No key string is built anywhere else. Everything lives under the ``mt:`` prefix so a shared Redis
can be inspected (``redis-cli --scan --pattern 'mt:*'``) and cleaned safely.
"""

from __future__ import annotations

import re
from typing import NamedTuple

PREFIX = "mt:"

#: What a job id and a glossary id look like (32 lowercase hex digits). An id from a client is
#: checked against it before it becomes part of a key, so ``<id>:out`` can never name another
#: key (:meth:`mtfleet.core.store.JobStore.get`, :meth:`mtfleet.core.glossary.GlossaryStore.get`).
_ID = re.compile(r"[0-9a-f]{32}")


def is_id(value: str) -> bool:
    """Whether ``value`` has the syntax of a job or glossary id."""
    return _ID.fullmatch(value) is not None


#: Celery task the API sends by name; the workers register it under this name.
TRANSLATE_TASK = "mtfleet.translate_chunk"

LANES = ("interactive", "bulk")

#: What a pool's name looks like: it becomes part of queue names, Redis keys and metric labels.
_POOL = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")


def is_pool(name: str) -> bool:
    """Whether ``name`` can name a pool (lowercase letters, digits, ``-`` and ``_``; 1-32)."""
    return _POOL.fullmatch(name) is not None


def queue(pool: str, lane: str) -> str:
    """Celery queue (a Redis list on the broker) that carries one pool's chunks of one lane."""
    return f"mt.{pool}.{lane}"


def job(job_id: str) -> str:
    """Hash: job metadata, status and progress counters (``done``, ``failed``, ``total``)."""
    return f"{PREFIX}job:{job_id}"


def job_results(job_id: str) -> str:
    """Hash: segment index -> JSON outcome, written once per index (HSETNX)."""
    return f"{PREFIX}job:{job_id}:out"


def chunk_deliveries(job_id: str) -> str:
    """Hash: chunk number -> how many times a worker started it (poison detection);
    ``progressed:<chunk>`` -> how many of those recorded results before the chunk went back
    (not failures); ``dead-lettered:<chunk>`` -> when it was dead-lettered."""
    return f"{PREFIX}job:{job_id}:deliveries"


def chunk_starts(job_id: str) -> str:
    """Hash: chunk number -> when a worker last started it, while it is unfinished: the chunks
    in flight (their age shows work that is stuck; a cancel lets them finish)."""
    return f"{PREFIX}job:{job_id}:starts"


def job_all(job_id: str) -> list[str]:
    """Every key that holds a job's data (what a purge deletes)."""
    return [
        job(job_id),
        job_results(job_id),
        chunk_deliveries(job_id),
        chunk_starts(job_id),
        job_chunks(job_id),
        job_pending(job_id),
        dead_chunks(job_id),
        job_document(job_id),
        job_rendered(job_id),
        document_access(job_id),
        webhook(job_id),  # its event, delivered or not: a purged job's end is nobody's news
    ]


def job_document(job_id: str) -> str:
    """String: a document job's original file (base64), kept to render the translation."""
    return f"{PREFIX}job:{job_id}:document"


def job_rendered(job_id: str) -> str:
    """Hash: a document job's translated file as last rendered (``document``: DocumentOut JSON;
    ``settled``: how many segments had an outcome then), so a result read again is not rendered
    again."""
    return f"{PREFIX}job:{job_id}:rendered"


def job_chunks(job_id: str) -> str:
    """Hash: the ledger of a job's unfinished chunks: chunk number -> the chunk message (JSON).
    An entry leaves when its chunk is finished; the reconciler re-sends one that was lost."""
    return f"{PREFIX}job:{job_id}:chunks"


def dead_chunks(job_id: str) -> str:
    """Hash: chunk number -> the message (JSON) of a chunk of the job that was dead-lettered,
    taken from the ledger when it was listed, so that ``mtfleet dead-letters retry`` can send it
    again; expires with the job, leaves when retried or purged (core/deadletters.py)."""
    return f"{PREFIX}job:{job_id}:dead"


def idempotency(key_digest: str) -> str:
    """String: job id created for an Idempotency-Key (the key is stored hashed)."""
    return f"{PREFIX}idem:{key_digest}"


def phrase(fingerprint: str, source: str, target: str, text_digest: str) -> str:
    """String: cached translation of one normalized segment by one model for one pair."""
    return f"{PREFIX}cache:{fingerprint}:{source}:{target}:{text_digest}"


def job_phrases(job_id: str) -> str:
    """Set, on the cache's Redis: the phrase keys a job's chunks wrote (what a purge deletes).
    Under ``mt:cache:`` like the entries, so a cache-only ACL user may write it."""
    return f"{PREFIX}cache:job:{job_id}"


def job_purged(job_id: str) -> str:
    """String, on the cache's Redis: the job was purged, so a chunk of it still in flight
    writes no phrase (``cache_put.lua``); under ``mt:cache:`` for the cache-only ACL user."""
    return f"{PREFIX}cache:purged:{job_id}"


#: Hash: pool name -> JSON :class:`~mtfleet.core.registry.PoolInfo` (engine, model, phrase-cache
#: fingerprints, lanes, when a worker of the pool last beat). Rewritten at every heartbeat; never
#: expires, so a pool scaled to zero still takes jobs (they wait in its queues) until an operator
#: forgets it (``mtfleet pools forget``).
POOLS = f"{PREFIX}pools"


def pool_pairs(pool: str) -> str:
    """Set: the pairs a pool's workers have served, as ``"src:tgt"`` (kept like :data:`POOLS`)."""
    return f"{PREFIX}pool:{pool}:pairs"


#: Set of worker instances (one per process) that may hold broker messages; liveness is the
#: per-instance key below.
WORKERS = f"{PREFIX}workers"


def worker(instance: str) -> str:
    """String (JSON, expires after missed heartbeats): a live worker's registration."""
    return f"{PREFIX}worker:{instance}"


def unacked(instance: str) -> str:
    """Hash (kombu's, per worker instance): delivery tag -> message the instance fetched and
    has not acknowledged. Per instance, so that what a dead worker held is known exactly."""
    return f"{PREFIX}unacked:{instance}"


def unacked_index(instance: str) -> str:
    """Sorted set (kombu's): the instance's delivery tags by fetch time."""
    return f"{PREFIX}unacked:{instance}:index"


def unacked_mutex(instance: str) -> str:
    """String (kombu's): the lock of the instance's visibility-timeout restore."""
    return f"{PREFIX}unacked:{instance}:mutex"


#: Pub/sub channel: a job id is published here once, when the job reaches a final state.
JOB_DONE_CHANNEL = f"{PREFIX}events:job-done"


def job_events(job_id: str) -> str:
    """Pub/sub channel: the same events as :data:`JOB_DONE_CHANNEL` (and a cancel's) for one
    job, its id published on each; what a worker follows while it holds a chunk of the job
    (workers/cancellation.py). lib.lua's ``announce`` names it from the channel it is given:
    that channel, ``:`` and the job id."""
    return f"{JOB_DONE_CHANNEL}:{job_id}"


def webhook(job_id: str) -> str:
    """Hash: the webhook event of a job that carries a ``callback_url``, written by the script
    that makes the job final (lib.lua ``outbox_add``): its webhook-id, type, a snapshot of the
    job (``job.<field>``), the body once built (sent byte for byte on every attempt), the
    delivery state and attempts. No expiry while it is pending; kept ``MT_RESULT_TTL_S`` after
    it is delivered or given up, so it outlives the job's own keys when those expire first. A
    purge deletes it with the job (``job_all``), delivered or not."""
    return f"{PREFIX}webhook:{job_id}"


#: Sorted set: API key ('' : MT_AUTH=off) -> when its turn at the webhook outbox comes: no later
#: than its earliest due event (:func:`webhooks_due`), and the time it was last served while it
#: has more due, so keys with events due take turns (core/lua/webhook_claim.lua). A key leaves
#: when it has no event left.
WEBHOOKS_DUE = f"{PREFIX}webhooks:due"


def webhooks_due(owner: str) -> str:
    """Sorted set: job id -> when its webhook event's next attempt is due, for one API key
    ('' : MT_AUTH=off; the scripts name it ``WEBHOOKS_DUE .. ':' .. key``, lib.lua). A deliverer
    that claims an event moves it to the end of its lease, so one that dies mid-attempt leaves
    it due again; it leaves when delivered or given up."""
    return f"{WEBHOOKS_DUE}:{owner or '-'}"


#: List (newest first): chunks that exhausted their deliveries, as JSON {job_id, chunk, reason,
#: at, lane}. At most ``MT_DEAD_LETTER_MAX`` entries, none older than ``MT_DEAD_LETTER_TTL_S``
#: (core/deadletters.py); ``mtfleet dead-letters`` lists, retries and purges them.
DEAD_LETTER = f"{PREFIX}dead-letter"


def active(pool: str, lane: str) -> str:
    """Sorted set: the unfinished jobs of one pool and lane, scored by creation time (what the
    reconciler scans for lost chunks)."""
    return f"{PREFIX}active:{pool}:{lane}"


#: Hash: "job_id:chunk" -> when the reconciler first found the chunk in neither the queue nor a
#: worker; re-sent when still missing a grace period later.
RECONCILE_SUSPECTS = f"{PREFIX}reconcile:suspects"


# -- the backlog: where work waits until it is released to the broker (core/backlog.py) ---------


def job_pending(job_id: str) -> str:
    """List: the job's chunk numbers not yet released to the broker, first to go first (a
    requeued chunk is put back at the front). Expires with the job."""
    return f"{PREFIX}job:{job_id}:pending"


def backlog_owner(pool: str, lane: str, owner: str) -> str:
    """List: the jobs of one API key ('' : MT_AUTH=off) with chunks waiting in a pool's lane, in
    the order they came (the first is released from first)."""
    return f"{PREFIX}backlog:{pool}:{lane}:owner:{owner or '-'}"


def backlog_owner_prefix(pool: str, lane: str) -> str:
    """What :func:`backlog_owner` puts before the owner (the release script builds the key of
    the owner whose turn it is; ``-`` for '')."""
    return f"{PREFIX}backlog:{pool}:{lane}:owner:"


def backlog_ring(pool: str, lane: str) -> str:
    """List: the API keys with chunks waiting in a pool's lane, in turn order (the head's turn
    now; a key goes to the tail after its turn, leaves when it has nothing waiting)."""
    return f"{PREFIX}backlog:{pool}:{lane}:ring"


def backlog_sizes(pool: str, lane: str) -> str:
    """Hash: API key -> chunks it has waiting in a pool's lane (exact: every step that adds or
    takes a chunk counts it)."""
    return f"{PREFIX}backlog:{pool}:{lane}:sizes"


def backlog_credit(pool: str, lane: str) -> str:
    """Hash: API key -> chunks it may still release in its current turn (its weight at the start
    of a turn: deficit round robin with chunks as the unit)."""
    return f"{PREFIX}backlog:{pool}:{lane}:credit"


def backlog_released(pool: str, lane: str) -> str:
    """Hash: "job_id:chunk" -> "<owner>|<released at>": chunks handed to the broker that no
    worker has started yet (in the broker queue, or fetched this instant). The reconciler puts
    one that is in neither the queue nor a worker back in its backlog."""
    return f"{PREFIX}backlog:{pool}:{lane}:released"


def backlog_delayed(pool: str, lane: str) -> str:
    """Sorted set: "<owner>|job_id:chunk" -> when a chunk that failed may go again (a failure's
    backoff, without holding a worker thread); released before the backlog once due."""
    return f"{PREFIX}backlog:{pool}:{lane}:delayed"


#: String with a short expiry: the worker whose reconciler runs the current sweep.
RECONCILE_LOCK = f"{PREFIX}reconcile:lock"


#: The first word of a task argument that names a chunk in its job's ledger (:func:`ledger_ref`).
LEDGER_REF = "ledger"


class LedgerPlace(NamedTuple):
    """Where a chunk sent as a ledger reference is, and when it was queued."""

    job_id: str
    chunk: int
    pool: str
    lane: str
    enqueued_at: float


def ledger_ref(place: LedgerPlace) -> str:
    """The task argument of a chunk sent from its job's ledger (``ledger <job> <chunk> <pool>
    <lane> <when queued>``): the worker reads the message from :func:`job_chunks` (and takes
    the chunk off its lane's released hash when the ledger no longer holds it), the operator's
    panel reads how long it waited from the reference itself."""
    return " ".join((LEDGER_REF, *(str(v) for v in place[:4]), repr(place.enqueued_at)))


def parse_ledger_ref(text: str) -> LedgerPlace | None:
    """The place a :func:`ledger_ref` names; None for anything else."""
    parts = text.split(" ")
    if len(parts) != 6 or parts[0] != LEDGER_REF or not is_id(parts[1]) or not parts[2].isdigit():
        return None
    try:
        return LedgerPlace(parts[1], int(parts[2]), parts[3], parts[4], float(parts[5]))
    except ValueError:
        return None


def task_id(job_id: str, chunk: int, nonce: str) -> str:
    """Celery task id of one send of a chunk; the prefix names the chunk in broker messages."""
    return f"{task_id_prefix(job_id, chunk)}{nonce}"


def task_id_prefix(job_id: str, chunk: int) -> str:
    return f"{job_id}.{chunk}."


#: Set of every API key id (``mtfleet keys list``).
API_KEYS = f"{PREFIX}apikeys"


def api_key(key_id: str) -> str:
    """Hash: one API key: name, sha256 of its secret (never the secret), created_at,
    chars_per_day, rate, storage_mb, role (user or operator), revoked; its webhook signing
    secret (``whsec_...``, kept as it is: it signs) and, for a while after a rotation, the
    previous one and until when it still signs."""
    return f"{PREFIX}apikey:{key_id}"


def api_key_rate(key_id: str) -> str:
    """String (expires when idle): the key's rate-limit state, the GCRA's theoretical arrival
    time in microseconds."""
    return f"{PREFIX}apikey:{key_id}:rate"


def api_key_storage(key_id: str) -> tuple[str, str]:
    """Sorted set (member -> when its data expires; +inf for a live glossary) and hash (member
    -> bytes, plus ``total``): what the key keeps in Redis, for its storage quota. Members are
    job ids and ``g:<glossary id>``."""
    return f"{PREFIX}apikey:{key_id}:stored:expiry", f"{PREFIX}apikey:{key_id}:stored"


def api_key_chars(key_id: str, day: str) -> str:
    """String (expires two days later): characters the key submitted on a UTC day
    (``YYYY-MM-DD``)."""
    return f"{PREFIX}apikey:{key_id}:chars:{day}"


def api_key_tags(key_id: str, day: str) -> str:
    """Hash (expires two days later): characters the key submitted on a UTC day per reporting
    tag (``X-DeepL-Reporting-Tag``); field: the tag ('' : tags past the day's most,
    core/lua/lib.lua ``charge_tag``), value: characters."""
    return f"{PREFIX}apikey:{key_id}:tags:{day}"


def api_key_interactive(key_id: str) -> str:
    """Hash (expires with the key's newest interactive job): the key's interactive work not
    done yet, for its share of the interactive lane (:mod:`mtfleet.core.interactive`). Field: a
    job id (added by the script that stores the job); value ``"<segments> <added at>"``. An
    entry leaves once its job is final, cancelling or gone (read from the job's hash)."""
    return f"{PREFIX}apikey:{key_id}:interactive"


def glossary(glossary_id: str) -> str:
    """Hash: one glossary's metadata (name, pair, owner, created_at, version, counts; ``deleted``
    once deleted, when it expires after the result TTL)."""
    return f"{PREFIX}glossary:{glossary_id}"


def glossary_terms(glossary_id: str) -> str:
    """String (JSON): a glossary's terms, ``{"entries": {source: target}, "protected": [...]}``
    and, where it has any, its protected patterns (``"patterns": [...]``)."""
    return f"{PREFIX}glossary:{glossary_id}:terms"


def glossaries(owner: str) -> str:
    """Sorted set: the live glossary ids of an API key ('' : made with MT_AUTH=off), scored by
    creation time."""
    return f"{PREFIX}glossaries:{owner or '-'}"


def document_access(job_id: str) -> str:
    """Hash (expires with the job): what reads a document job without the API key that made
    it: ``token``, the secret of DeepL's ``document_key`` and of LibreTranslate's download
    link, and ``chars``, the characters billed for it."""
    return f"{PREFIX}docaccess:{job_id}"


def glossary_set(set_id: str) -> str:
    """Hash: a multilingual glossary (DeepL's v3 glossaries): ``name``, ``owner``,
    ``created_at``, and per language pair ``dict:<source>:<target>`` -> the id of the glossary
    (:func:`glossary`) that holds that dictionary's entries."""
    return f"{PREFIX}glossaryset:{set_id}"


def glossary_sets(owner: str) -> str:
    """Sorted set: the multilingual glossary ids of an API key ('' : MT_AUTH=off), scored by
    creation time."""
    return f"{PREFIX}glossarysets:{owner or '-'}"
