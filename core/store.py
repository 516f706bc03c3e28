"""Job state in Redis: creation, idempotent result writes, progress, cancellation.

A job is a hash (metadata + ``done``/``failed``/``total`` counters) and a results hash (segment
index -> JSON outcome). Workers execute at least once; every write here is safe to repeat:

* a segment result is written with HSETNX, and progress moves only when that write was new, so a
  redelivered chunk never double-counts or overwrites a finished result;
* the final status is set once, by the write that completes the job, and announced once on
  :data:`core.keys.JOB_DONE_CHANNEL`.

Each multi-step change is one Lua script (``core/lua/``), so it is atomic and one round trip.

A job is one model, :class:`JobRecord` (the public :class:`~mtfleet.core.schemas.JobPublic`
plus what only the fleet needs); the hash is that model serialised field by field, its
progress kept flat (``done``, ``failed``, ``total``) because the scripts count it.
"""

from __future__ import annotations

import base64
import hmac
import json
import secrets
import time
import uuid
from collections.abc import Iterable, Sequence
from enum import Enum
from typing import Any, get_args

import redis
import redis.asyncio
from pydantic import Field, TypeAdapter

from mtfleet.core import keys, scripts
from mtfleet.core.apikeys import Charge, Storage
from mtfleet.core.backlog import job_keys as backlog_keys
from mtfleet.core.deadletters import DeadLetters
from mtfleet.core.errors import JobNotFound, NotReplicated
from mtfleet.core.interactive import Share
from mtfleet.core.models import JobStatus, Progress, SegmentOutcome
from mtfleet.core.schemas import ChunksPublic, JobPublic
from mtfleet.core.settings import WorkerSettings


class JobRecord(JobPublic):
    """A job as the store keeps it: the public fields, plus what only the fleet reads."""

    chunks: int = Field(0, description="Broker messages the job was cut into.")
    owner: str = Field("", description="The API key id that made it ('' with MT_AUTH=off).")
    document_name: str | None = Field(None, description="A document job's file name.")
    segment_langs: list[str | None] | None = Field(
        None, description="With source_lang 'auto': the language detected per text."
    )
    chars: int = Field(0, description="Characters its key was charged for it.")
    idempotency_key: str = Field(
        "",
        description="A no-trace job's Idempotency-Key record (its Redis key), forgotten with "
        "its result (:meth:`JobStore.delivered`).",
    )


def _plain_text(annotation: Any) -> bool:
    """A field stored as its own text (str or a str enum, possibly optional), not as JSON."""
    kinds = get_args(annotation) or (annotation,)
    return all(
        k is type(None) or k is str or (isinstance(k, type) and issubclass(k, Enum)) for k in kinds
    )


_TEXT_FIELDS = frozenset(n for n, f in JobRecord.model_fields.items() if _plain_text(f.annotation))
_PROGRESS = tuple(Progress.model_fields)
#: Public fields worked out when a job is read (from its ledger, its webhook event), never
#: stored in its hash.
COMPUTED_FIELDS = frozenset({"work", "webhook"})


def job_to_hash(job: JobRecord) -> dict[str, str]:
    """The job's hash fields: text as text, everything else as JSON, progress flat; fields that
    are None or at their default are left out (they read back as the default)."""
    out: dict[str, str] = {}
    dumped = job.model_dump(
        mode="json", exclude_none=True, exclude_defaults=True, exclude=set(COMPUTED_FIELDS)
    )
    for name, value in dumped.items():
        if name == "progress":
            out.update({k: str(v) for k, v in value.items()})
        elif name in _TEXT_FIELDS:
            out[name] = value
        else:
            out[name] = json.dumps(value)
    return out


def job_from_hash(raw: dict[str, str]) -> JobRecord:
    """The inverse of :func:`job_to_hash` (fields the scripts wrote are plain numbers, which
    are JSON too)."""
    data: dict[str, Any] = {"progress": {k: raw.get(k, 0) for k in _PROGRESS}}
    for name, value in raw.items():
        if name in _PROGRESS or name in COMPUTED_FIELDS or name not in JobRecord.model_fields:
            continue
        data[name] = value if name in _TEXT_FIELDS else json.loads(value)
    return JobRecord.model_validate(data)


def job_bytes(meta: list[str], results: list[str], ledger: list[str], document: str) -> int:
    """What a job counts against its owner's storage quota: what it stores now, and as much
    again for what its results (and a document's rendered file) will take."""
    return 2 * (sum(map(len, meta)) + sum(map(len, results)) + sum(map(len, ledger))) + 2 * len(
        document
    )


def active_key(pool: str | None, lane: str | None) -> str:
    """The active set of a job of ``pool`` and ``lane`` ('' when either is unknown: such a job
    is on no active set)."""
    return keys.active(pool, lane) if pool and lane else ""


def new_job_id() -> str:
    return uuid.uuid4().hex


def encode_outcome(outcome: SegmentOutcome) -> str:
    """The outcome as stored (fields at their default left out). Most outcomes are a bare
    translation: that one is written directly (0.3 µs against pydantic's 1.3 per outcome)."""
    if (
        outcome.error is None
        and not outcome.warnings
        and not outcome.cached
        and outcome.memory_score is None
        and outcome.quality is None
        and outcome.translation is not None
    ):
        return f'{{"translation":{json.dumps(outcome.translation, ensure_ascii=False)}}}'
    return outcome.model_dump_json(exclude_none=True, exclude_defaults=True)


# A whole job's outcomes are parsed in one call (a JSON array): per-outcome calls cost more
# than the parsing itself on a job of thousands of segments.
_OUTCOMES = TypeAdapter(list[SegmentOutcome | None])


class JobStore:
    """Job state on the durable Redis (``MT_REDIS_URL``)."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        result_ttl_s: int,
        aclient: redis.asyncio.Redis | None = None,
        min_replicas: int = 0,
        replica_timeout_ms: int = 1000,
        dead_letters: DeadLetters | None = None,
    ) -> None:
        """``aclient``: the same Redis for an event loop (the ``a*`` reads; the API's).
        ``min_replicas``: replicas that must hold a new job before :meth:`create` returns
        (Redis ``WAIT``, at most ``replica_timeout_ms``; 0: no wait). ``dead_letters``: the
        dead-letter list with its bounds (default: the settings' defaults)."""
        self.r = client
        self.ar = aclient
        self.ttl = result_ttl_s
        self.min_replicas = min_replicas
        self.replica_timeout_ms = replica_timeout_ms
        self._create = scripts.register(client, "create_job")
        self._record = scripts.register(client, "record_results")
        self._start = scripts.register(client, "start_chunk")
        self._cancel = scripts.register(client, "cancel_job")
        self._fail = scripts.register(client, "fail_job")
        self._delivered = scripts.register(client, "job_delivered")
        self._adelivered = scripts.register(aclient, "job_delivered") if aclient else None
        self.dead_letters = dead_letters or DeadLetters(
            client,
            max_entries=WorkerSettings.model_fields["dead_letter_max"].default,
            ttl_s=WorkerSettings.model_fields["dead_letter_ttl_s"].default,
        )

    # -- API side ------------------------------------------------------------------------------
    def create(
        self,
        job: JobRecord,
        *,
        cached: dict[int, SegmentOutcome],
        idempotency: tuple[str, str, int] | None = None,
        ledger: dict[int, str] | None = None,
        document: bytes | None = None,
        storage: Storage | None = None,
        charge: Charge | None = None,
        share: Share | None = None,
    ) -> str | None:
        """Store a new job atomically, paid for. Returns None, or the idempotency key's earlier
        value (then nothing is written, nothing charged).

        ``cached`` holds the outcomes known at submission (phrase-cache hits).
        ``idempotency`` is (redis key, value to store, ttl); when the key already exists nothing
        is written and its value comes back (``"<job id> <request digest>"``). ``ledger`` maps
        each chunk number to its message (JSON): kept until the chunk is finished, so a chunk
        the broker lost can be sent again (:mod:`mtfleet.workers.reconciler`). ``document``:
        a document job's original file, written with the job. ``storage``: the owner's storage
        quota; the job is refused (StorageQuotaExceeded, nothing written) when what it stores
        does not fit. ``charge``: the owner's characters for it, ``share``: its share of the
        owner's interactive lane, taken in the same step (QuotaExceeded,
        InteractiveShareExceeded and nothing written when they do not fit): a request has its
        job and paid for it, or has neither.

        With ``min_replicas``, the job is written and then ``WAIT``-ed for on the same
        connection (a pipeline): a job that fewer replicas acknowledged in time is failed (its
        idempotency key released, its characters given back) and
        :class:`~mtfleet.core.errors.NotReplicated` raised, so the caller never accepts a job
        that a failover to a replica could lose (docs/reliability.md, "Redis high
        availability").
        """
        flat_meta = [x for kv in job_to_hash(job).items() for x in kv]
        flat_results = [str(x) for i, o in cached.items() for x in (i, encode_outcome(o))]
        flat_ledger = [str(x) for kv in (ledger or {}).items() for x in kv]
        idem_key, idem_value, idem_ttl = idempotency or ("", "", 0)
        doc = base64.b64encode(document).decode() if document is not None else ""
        stored = job_bytes(flat_meta, flat_results, flat_ledger, doc)
        pipe = self.r.pipeline(transaction=False) if self.min_replicas else None
        reply = self._create(
            client=pipe,
            keys=self._create_keys(job, idem_key, ledger, document, storage, charge, share),
            args=[
                self.ttl,
                idem_ttl,
                idem_value,
                len(flat_meta),
                len(flat_results),
                job.created_at,
                stored,
                storage.limit if storage is not None else -1,
                doc,
                job.id,
                job.owner,
                *((charge.chars, charge.limit, charge.ttl_s) if charge is not None else (0, -1, 0)),
                keys.job(""),
                *(
                    (share.segments, share.most_segments, share.most_jobs, share.ttl_s)
                    if share is not None
                    else (0, 0, 0, 0)
                ),
                charge.tag if charge is not None else "",
                *flat_meta,
                *flat_results,
                *flat_ledger,
            ],
        )
        existing = reply if pipe is None else self._replicated(pipe, job.id, idem_key, charge)
        if isinstance(existing, list):
            raise _refusal(existing, stored, storage, charge, share)
        return str(existing) if existing else None

    @staticmethod
    def _create_keys(
        job: JobRecord,
        idem_key: str,
        ledger: dict[int, str] | None,
        document: bytes | None,
        storage: Storage | None,
        charge: Charge | None,
        share: Share | None,
    ) -> list[str]:
        """The keys :meth:`create`'s script reads and writes, in its order ("" for a part the
        job has not: no idempotency key, document, storage quota, webhook, backlog, charge or
        share)."""
        return [
            keys.job(job.id),
            keys.job_results(job.id),
            idem_key,
            keys.job_chunks(job.id),
            active_key(job.pool, job.lane.value),
            keys.job_document(job.id) if document is not None else "",
            *(storage.redis_keys() if storage is not None else ("", "")),
            keys.webhook(job.id) if job.status.final and job.callback_url else "",
            keys.WEBHOOKS_DUE,
            *(
                backlog_keys(job.id, job.pool, job.lane.value, job.owner)
                if ledger and job.pool
                else [""] * 5
            ),
            charge.counter if charge is not None else "",
            share.redis_key if share is not None else "",
            charge.tags if charge is not None else "",
        ]

    def _replicated(self, pipe: Any, job_id: str, idem_key: str, charge: Charge | None) -> Any:
        """Run the create script queued on ``pipe`` and ``WAIT`` for the replicas; the
        script's reply."""
        pipe.execute_command("WAIT", self.min_replicas, self.replica_timeout_ms)
        reply, acked = pipe.execute()
        if reply or int(acked) >= self.min_replicas:
            return reply  # (a reply: nothing new was written)
        error = NotReplicated(
            f"the job store could not confirm the job on {self.min_replicas} Redis "
            f"replica(s) within {self.replica_timeout_ms} ms ({acked} did); it was not "
            "accepted, retry shortly"
        )
        self.fail(job_id, error.as_dict(), idempotency_key=idem_key, notify=False, refund=charge)
        raise error

    def placement(self, job_id: str) -> tuple[str, str, str] | None:
        """A stored job's pool, lane and owner (they never change); None for a job without a
        pool or an unknown one."""
        if not keys.is_id(job_id):
            return None
        pool, lane, owner = self.r.hmget(keys.job(job_id), ["pool", "lane", "owner"])
        if not pool or not lane:
            return None
        return str(pool), str(lane), str(owner or "")

    def cancel(self, job_id: str) -> JobStatus:
        where = self.placement(job_id)
        status = self._cancel(
            keys=[
                keys.job(job_id),
                keys.job_chunks(job_id),
                keys.chunk_starts(job_id),
                active_key(where[0], where[1]) if where else "",
                keys.webhook(job_id),
                keys.WEBHOOKS_DUE,
                *(backlog_keys(job_id, *where) if where else [""] * 5),
            ],
            args=[job_id, time.time(), keys.JOB_DONE_CHANNEL, where[2] if where else ""],
        )
        if not status:
            raise JobNotFound(f"job {job_id} not found (it may have expired)")
        return JobStatus(status)

    def fail(
        self,
        job_id: str,
        error: dict[str, Any],
        idempotency_key: str = "",
        *,
        notify: bool = True,
        refund: Charge | None = None,
    ) -> None:
        """Fail a whole job that cannot run (e.g. its chunks could not be enqueued).

        ``idempotency_key`` (the Redis key) is released if it still points at this job, so a
        client retrying after the 503 gets a new job rather than this failed one. ``notify``:
        whether its webhook (a ``callback_url``) gets the event; not for a job the client was
        told was not accepted, whose characters ``refund`` gives back in the same step.
        """
        where = self.placement(job_id)
        self._fail(
            keys=[
                keys.job(job_id),
                idempotency_key,
                keys.job_chunks(job_id),
                active_key(where[0], where[1]) if where else "",
                keys.webhook(job_id) if notify else "",
                keys.WEBHOOKS_DUE,
                *(backlog_keys(job_id, *where) if where else [""] * 5),
                refund.counter if refund is not None else "",
                refund.tags if refund is not None else "",
            ],
            args=[
                job_id,
                time.time(),
                keys.JOB_DONE_CHANNEL,
                json.dumps(error),
                where[2] if where else "",
                refund.chars if refund is not None else 0,
                refund.tag if refund is not None else "",
            ],
        )

    def get_document(self, job_id: str) -> bytes | None:
        raw = self.r.get(keys.job_document(job_id))
        return base64.b64decode(str(raw)) if raw is not None else None

    def get_rendered(self, job_id: str, settled: int) -> str | None:
        """The document rendered when ``settled`` segments had an outcome (JSON), if kept."""
        at, document = self.r.hmget(keys.job_rendered(job_id), ["settled", "document"])
        return str(document) if document is not None and at == str(settled) else None

    def put_rendered(self, job_id: str, settled: int, document_json: str) -> None:
        pipe = self.r.pipeline(transaction=True)
        pipe.hset(
            keys.job_rendered(job_id), mapping={"settled": settled, "document": document_json}
        )
        pipe.expire(keys.job_rendered(job_id), self.ttl)
        pipe.execute()

    def grant_access(self, job_id: str, chars: int) -> str:
        """The secret that reads a document job without its API key (DeepL's
        ``document_key``; LibreTranslate's download link): made by the first call, returned
        as it is by every later one (a client resending an upload joins the job and gets the
        same secret). Kept as long as the job; ``chars`` is what the job billed."""
        key = keys.document_access(job_id)
        pipe = self.r.pipeline(transaction=True)
        pipe.hsetnx(key, "token", secrets.token_urlsafe(24))
        pipe.hsetnx(key, "chars", chars)
        pipe.expire(key, self.ttl)
        pipe.hget(key, "token")
        return str(pipe.execute()[-1])

    def access(self, job_id: str, token: str) -> int | None:
        """The characters billed for a document job when ``token`` is its secret, else None
        (no such job, another secret: nothing tells which)."""
        if not keys.is_id(job_id):
            return None
        stored, chars = self.r.hmget(keys.document_access(job_id), ["token", "chars"])
        if stored is None or not hmac.compare_digest(str(stored).encode(), token.encode()):
            return None
        return int(chars or 0)

    def purge(self, job_id: str, storage: Storage | None = None) -> None:
        """Delete a job and everything stored for it (texts, results, delivery counts), and
        give its bytes back to the owner's ``storage`` quota. A running job is cancelled first;
        a chunk still in a worker then writes nothing (every worker write checks that the job
        exists). Its webhook event goes too, delivered or not: the client that purged the job
        needs no word of its end. Raises JobNotFound when it does not exist."""
        self.cancel(job_id)
        owner = str(self.r.hget(keys.job(job_id), "owner") or "")
        pipe = self.r.pipeline(transaction=False)  # a DEL must work with Redis over maxmemory
        pipe.delete(*keys.job_all(job_id))
        pipe.zrem(keys.webhooks_due(owner), job_id)
        pipe.execute()
        if storage is not None:
            storage.release(job_id)

    def delivered(self, job: JobRecord) -> bool:
        """A no-trace job's final result was delivered: delete its texts and results now
        (``job_delivered.lua``). True when this call did; False when another read (or its
        webhook) delivered it first, or the job is gone: the caller must not hand it out."""
        return bool(self._delivered(**_delivered_args(job)))

    async def adelivered(self, job: JobRecord) -> bool:
        """:meth:`delivered` on the event loop."""
        assert self._adelivered is not None, "this JobStore was made without an asyncio client"
        return bool(await self._adelivered(**_delivered_args(job)))

    # -- worker side ---------------------------------------------------------------------------
    def start_chunk(
        self,
        job_id: str,
        chunk: int,
        indices: Sequence[int] = (),
        *,
        pool: str | None = None,
        lane: str | None = None,
    ) -> tuple[JobStatus | None, int, set[int]]:
        """Count a delivery of ``chunk``, mark the job running and the chunk in flight (off its
        pool lane's released hash): (status, deliveries so far, those of ``indices`` that still
        need a result); a job that is final, or being cancelled when the chunk was not in
        flight, gives (status, 0, nothing): the chunk does not start. One round trip; a
        redelivery (only this chunk writes its indices, so a first delivery cannot find
        results) takes one more, an HMGET."""
        status, n = self._start(
            keys=[
                keys.job(job_id),
                keys.chunk_deliveries(job_id),
                keys.chunk_starts(job_id),
                keys.job_chunks(job_id),
                keys.backlog_released(pool, lane) if pool and lane else "",
            ],
            args=[chunk, time.time(), self.ttl, job_id],
        )
        if int(n) == 0:  # not started: the job is final, gone or being cancelled
            return (JobStatus(status) if status else None), 0, set()
        pending = set(indices)
        if int(n) > 1 and indices:
            present = self.r.hmget(keys.job_results(job_id), list(indices))
            pending -= {i for i, v in zip(indices, present, strict=True) if v is not None}
        return (JobStatus(status) if status else None), int(n), pending

    def record(
        self,
        job_id: str,
        outcomes: Iterable[tuple[int, SegmentOutcome]],
        *,
        chunk: int | None = None,
        pool: str | None = None,
        lane: str | None = None,
    ) -> JobStatus | None:
        """Write outcomes idempotently; returns the job status after the write (None: gone).
        With ``chunk``, these are all of that chunk's outstanding outcomes: it leaves the
        ledger in the same step. ``pool`` and ``lane``: the job's (a job finished here leaves
        their active set)."""
        pairs: list[Any] = []
        oks: list[str] = []
        for index, outcome in outcomes:
            pairs += (index, encode_outcome(outcome))
            oks.append("1" if outcome.ok else "0")
        args: list[Any] = [
            job_id,
            time.time(),
            self.ttl,
            keys.JOB_DONE_CHANNEL,
            "" if chunk is None else chunk,
            "".join(oks),
            *pairs,
        ]
        _done, _failed, status = self._record(
            keys=[
                keys.job(job_id),
                keys.job_results(job_id),
                keys.job_chunks(job_id),
                keys.chunk_starts(job_id),
                active_key(pool, lane),
                keys.webhook(job_id),
                keys.WEBHOOKS_DUE,
            ],
            args=args,
        )
        return JobStatus(status) if status else None

    def deliveries(self, job_id: str, chunk: int) -> int:
        """How many times a worker has started the chunk."""
        return int(self.r.hget(keys.chunk_deliveries(job_id), str(chunk)) or 0)

    def progressed(self, job_id: str, chunk: int) -> None:
        """A delivery of ``chunk`` recorded results before it went back (its time budget ran
        out): it is no failed delivery (:meth:`failed_deliveries`). Each such delivery records
        at least one segment, so a chunk has at most as many as it has segments."""
        self.r.hincrby(keys.chunk_deliveries(job_id), f"progressed:{chunk}", 1)

    def failed_deliveries(self, job_id: str, chunk: int) -> int:
        """Deliveries of ``chunk`` that made no progress (started, and neither finished nor
        recorded anything before going back): what ``MT_MAX_DELIVERIES`` bounds, and what
        makes a chunk a suspect that runs alone (:mod:`mtfleet.workers.chunk`)."""
        started, progressed = self.r.hmget(
            keys.chunk_deliveries(job_id), [str(chunk), f"progressed:{chunk}"]
        )
        return int(started or 0) - int(progressed or 0)

    def dead_letter(self, job_id: str, chunk: int, entry: str) -> bool:
        """List ``entry`` (JSON) on the dead-letter list once per chunk; True if this call
        did (:meth:`DeadLetters.add`)."""
        return self.dead_letters.add(job_id, chunk, entry)

    # -- reads ---------------------------------------------------------------------------------
    def get(self, job_id: str) -> JobRecord:
        """The job (JobNotFound for an unknown id, and for anything that is not an id)."""
        raw = self.r.hgetall(keys.job(job_id)) if keys.is_id(job_id) else None
        if not raw:
            raise JobNotFound(f"job {job_id} not found (it may have expired)")
        return job_from_hash({str(k): str(v) for k, v in raw.items()})

    def many(self, job_ids: Sequence[str]) -> list[JobRecord]:
        """The jobs among ``job_ids`` that exist, in that order (one round trip)."""
        pipe = self.r.pipeline(transaction=False)
        for job_id in job_ids:
            pipe.hgetall(keys.job(job_id))
        raws = pipe.execute() if job_ids else []
        return [job_from_hash({str(k): str(v) for k, v in raw.items()}) for raw in raws if raw]

    def get_with_chunks(self, job_id: str) -> tuple[JobRecord, ChunksPublic | None]:
        """The job and, unfinished, its chunks waiting for a worker and in flight, in one
        round trip that cannot make them disagree (a ``cancelling`` job with nothing in
        flight): the chunks are read before the job. A chunk leaves the ledger in the same
        script that may finish the job, and a job's status only moves towards final, so a
        job still unfinished when read had at least those chunks when they were read.

        Not MULTI/EXEC: Redis refuses every command queued in a transaction while it is
        over ``maxmemory``, and reads must keep working when Redis is full."""
        if not keys.is_id(job_id):
            raise JobNotFound(f"job {job_id} not found (it may have expired)")
        pipe = self.r.pipeline(transaction=False)
        pipe.hkeys(keys.job_chunks(job_id))
        pipe.hgetall(keys.chunk_starts(job_id))
        pipe.hgetall(keys.job(job_id))
        unfinished, starts, raw = pipe.execute()
        if not raw:
            raise JobNotFound(f"job {job_id} not found (it may have expired)")
        job = job_from_hash({str(k): str(v) for k, v in raw.items()})
        if job.status.final:
            return job, None
        began = [float(starts[c]) for c in unfinished if c in starts]
        return job, ChunksPublic(
            queued=len(unfinished) - len(began),
            in_flight=len(began),
            oldest_in_flight_s=round(time.time() - min(began), 3) if began else None,
        )

    def status(self, job_id: str) -> JobStatus | None:
        raw = self.r.hget(keys.job(job_id), "status") if keys.is_id(job_id) else None
        return JobStatus(str(raw)) if raw else None

    def results(self, job_id: str, total: int) -> list[SegmentOutcome | None]:
        return _outcomes(self.r.hgetall(keys.job_results(job_id)), total)

    # -- reads on an event loop (the API's waits: no thread-pool hop) --------------------------
    def _async(self) -> redis.asyncio.Redis:
        if self.ar is None:
            raise RuntimeError("this JobStore was made without an asyncio client")
        return self.ar

    async def afinal(self, job_id: str) -> bool:
        """Whether the job is final, or gone (nothing more will happen to it)."""
        raw = await self._async().hget(keys.job(job_id), "status")
        return not raw or JobStatus(str(raw)).final

    async def aget(self, job_id: str) -> JobRecord:
        """:meth:`get` on the event loop."""
        raw = await self._async().hgetall(keys.job(job_id)) if keys.is_id(job_id) else None
        if not raw:
            raise JobNotFound(f"job {job_id} not found (it may have expired)")
        return job_from_hash({str(k): str(v) for k, v in raw.items()})

    async def aget_with_results(self, job_id: str) -> tuple[JobRecord, list[SegmentOutcome | None]]:
        """The job and every text's outcome so far, in one round trip."""
        pipe = self._async().pipeline(transaction=False)
        pipe.hgetall(keys.job(job_id))
        pipe.hgetall(keys.job_results(job_id))
        raw, results = await pipe.execute()
        if not raw:
            raise JobNotFound(f"job {job_id} not found (it may have expired)")
        job = job_from_hash({str(k): str(v) for k, v in raw.items()})
        return job, _outcomes(results, job.progress.total)


def _delivered_args(job: JobRecord) -> dict[str, list[Any]]:
    """``job_delivered.lua``'s keys and arguments: the hash stays (a tombstone saying the
    result was delivered), and its document secret (a second download finds the 410)."""
    kept = {keys.job(job.id), keys.webhook(job.id), keys.document_access(job.id)}
    gone = [k for k in keys.job_all(job.id) if k not in kept]
    return {
        "keys": [keys.job(job.id), keys.webhook(job.id), job.idempotency_key, *gone],
        "args": [time.time(), job.id],
    }


def _outcomes(raw: dict[Any, Any], total: int) -> list[SegmentOutcome | None]:
    """A job's results hash as one outcome per text (None where not done yet)."""
    slots = ["null"] * total
    for k, v in raw.items():
        i = int(k)
        if 0 <= i < total:
            slots[i] = str(v)
    return _OUTCOMES.validate_json(f"[{','.join(slots)}]")


def _refusal(
    reply: list[Any],
    stored: int,
    storage: Storage | None,
    charge: Charge | None,
    share: Share | None,
) -> Exception:
    """What the create script refused the job for (``["quota", used]``, ``["share", segments,
    jobs]`` or ``["storage", used]``), as the error its caller raises."""
    what, *found = reply
    if what == "quota" and charge is not None:
        return charge.exceeded(int(found[0]))
    if what == "share" and share is not None:
        return share.exceeded(int(found[0]), int(found[1]))
    assert what == "storage" and storage is not None, reply
    return storage.exceeded(stored, int(found[0]))
