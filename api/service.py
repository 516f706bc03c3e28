"""Job submission: validate, look up the phrase cache, store the job, enqueue its chunks.

Shared by ``POST /v1/jobs`` and ``POST /v1/translate``. The job is written to Redis *before*
any chunk is sent, and a job whose chunks cannot be sent is failed and answered with 503, so the
API never answers 2xx for work that is not durably recorded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import redis
from celery import Celery
from kombu.exceptions import OperationalError

from api import metrics
from api.schemas import JobCreate

if TYPE_CHECKING:
    from api.documents import PreparedDocument
from core import keys, languages
from core.broker import send_chunk
from core.cache import PhraseCache, rewrap
from core.errors import (
    IdempotencyConflict,
    InvalidInput,
    Overloaded,
    Unavailable,
    UnsupportedLanguage,
)
from core.glossary import GlossaryStore
from core.models import (
    ChunkMessage,
    ChunkSegment,
    JobRecord,
    JobStatus,
    Lane,
    Progress,
    SegmentOutcome,
)
from core.registry import PairInfo, Registry
from core.settings import Settings
from core.store import JobStore, new_job_id

log = logging.getLogger(__name__)


@dataclass
class Submitted:
    job: JobRecord
    created: bool  # False when an Idempotency-Key returned an earlier job
    # the phrase-cache answers (index -> outcome) of a job created now: a fully cached job's
    # result needs no second read from Redis
    cached: dict[int, SegmentOutcome] | None = None


def plan_chunks(texts: list[str], cached: set[int], chunk_size: int) -> list[list[ChunkSegment]]:
    """Group the uncached texts by identical text (translated once) and cut them into chunks."""
    groups: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        if i not in cached:
            groups.setdefault(text, []).append(i)
    segs = [ChunkSegment(indices=idx, text=t) for t, idx in groups.items()]
    return [segs[i : i + chunk_size] for i in range(0, len(segs), chunk_size)]


def required_texts(req: JobCreate) -> list[str]:
    """The texts of a request; a document request is turned into texts by api.documents
    before it gets here."""
    if req.texts is None:
        raise InvalidInput("give either texts or a document")
    return req.texts


class JobService:
    def __init__(
        self,
        settings: Settings,
        store: JobStore,
        cache: PhraseCache,
        registry: Registry,
        celery: Celery,
    ) -> None:
        self.settings = settings
        self.store = store
        self.cache = cache
        self.registry = registry
        self.celery = celery
        self._pairs: dict[tuple[str, str], tuple[float, PairInfo]] = {}
        self._depths: dict[Lane, tuple[float, int]] = {}

    def _validate(self, req: JobCreate) -> tuple[str, str, Lane]:
        s = self.settings
        texts = required_texts(req)
        source = languages.normalize(req.source_lang)
        target = languages.normalize(req.target_lang)
        if source == target:
            raise InvalidInput(f"source_lang and target_lang are both {source!r}")
        if len(texts) > s.max_segments_per_job:
            raise InvalidInput(
                f"{len(texts)} texts in one job; the limit is {s.max_segments_per_job}"
            )
        for i, t in enumerate(texts):
            if len(t) > s.max_segment_chars:
                raise InvalidInput(
                    f"texts[{i}] has {len(t)} characters; the limit is {s.max_segment_chars}"
                )
        lane = req.lane or (
            Lane.interactive if len(texts) <= s.interactive_max_segments else Lane.bulk
        )
        return source, target, lane

    @staticmethod
    def idempotency_redis_key(idempotency_key: str, owner: str = "") -> str:
        """Where the job made for an Idempotency-Key is remembered (scoped to ``owner``)."""
        scoped = f"{owner}\n{idempotency_key}" if owner else idempotency_key
        return keys.idempotency(hashlib.sha256(scoped.encode()).hexdigest())

    def submit(
        self,
        req: JobCreate,
        idempotency_key: str | None = None,
        owner: str = "",
        *,
        document: PreparedDocument | None = None,
        detected: str | None = None,
        segment_langs: list[str | None] | None = None,
    ) -> Submitted:
        """``owner``: the API key id making the job ('' without auth); an Idempotency-Key is
        scoped to it, so two keys using the same Idempotency-Key get different jobs.
        ``document``: the file a document job's texts come from (api.documents), kept with the
        job; ``detected``: the source language detected for ``source_lang: auto``;
        ``segment_langs``: the language detected for each text (mixed content): a text in
        the target language is kept as it is, one in another language the fleet serves is
        translated from that language."""
        source, target, lane = self._validate(req)
        texts = required_texts(req)
        try:
            pair = self._pair(source, target)
        except redis.RedisError as exc:
            raise Unavailable(f"job store unavailable: {exc}") from exc
        if pair is None:
            served = sorted(f"{a}->{b}" for a, b in self._served_pairs())
            raise UnsupportedLanguage(
                f"no engine serves {source}->{target}; served pairs: "
                + (", ".join(served) if served else "none yet (no worker has registered)"),
                served=served,
            )
        glossary = None  # a glossary's version keys the cache; the workers apply it
        if req.glossary_id:
            try:
                glossary = GlossaryStore(self.store.r).for_job(
                    req.glossary_id, owner=owner, source=source, target=target
                )
            except redis.RedisError as exc:
                raise Unavailable(f"job store unavailable: {exc}") from exc
        gv = glossary.version if glossary else None
        groups = self._source_groups(texts, source, target, segment_langs)
        cached: dict[int, SegmentOutcome] = {}
        chunk_plan: list[tuple[str, list[ChunkSegment]]] = []
        for src, indices in groups.items():
            members = set(indices)
            if src == target:  # detected as already in the target language: kept as it is
                for i in indices:
                    cached[i] = SegmentOutcome(
                        translation=texts[i],
                        warnings=[
                            {
                                "type": "already_in_target_language",
                                "message": f"detected as {target}; kept untranslated",
                            }
                        ],
                    )
                continue
            src_pair = pair if src == source else self._pair(src, target)
            assert src_pair is not None  # _source_groups keeps served pairs only
            src_gv = gv if src == source else None  # a glossary is for the job's pair
            group_texts = [texts[i] for i in indices]
            hits = self.cache.get_many(
                src_pair.fingerprint, src, target, group_texts, glossary=src_gv
            )
            for i in indices:
                if texts[i] in hits:
                    cached[i] = SegmentOutcome(
                        translation=rewrap(texts[i], hits[texts[i]]), cached=True
                    )
            skip = {i for i in range(len(texts)) if i not in members} | set(cached)
            chunk_plan += [(src, c) for c in plan_chunks(texts, skip, self.settings.chunk_size)]
        if chunk_plan:
            self._admit(lane)
        job_id = new_job_id()
        now = time.time()
        messages = [
            ChunkMessage(
                job_id=job_id,
                chunk=n,
                lane=lane,
                source=src,
                target=target,
                segments=segs,
                enqueued_at=now,
                glossary_id=glossary.id if glossary and src == source else None,
                glossary_version=gv if src == source else None,
            )
            for n, (src, segs) in enumerate(chunk_plan)
        ]
        chunks = [segs for _, segs in chunk_plan]
        idem = None
        if idempotency_key:
            body = req.model_dump(mode="json")
            if document is not None:
                body["document"] = [document.fmt.name, hashlib.sha256(document.content).hexdigest()]
            body_digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]
            idem = (
                self.idempotency_redis_key(idempotency_key, owner),
                f"{job_id} {body_digest}",
                self.settings.idempotency_ttl_s,
            )
        try:
            if document is not None:
                self.store.put_document(job_id, document.content)
            existing = self.store.create(
                job_id=job_id,
                source=source,
                target=target,
                lane=lane,
                total=len(texts),
                chunks=len(chunks),
                cached=cached,
                idempotency=idem,
                extra=self._extra(owner, document, detected, segment_langs),
                now=now,
                ledger={m.chunk: m.model_dump_json() for m in messages},
            )
            if existing is not None:
                assert idem is not None
                old_id, old_digest = existing.split(" ", 1)
                if old_digest != idem[1].split(" ", 1)[1]:
                    raise IdempotencyConflict(
                        "this Idempotency-Key was used with a different request body"
                    )
                return Submitted(self.store.get(old_id), created=False)
        except redis.RedisError as exc:
            raise Unavailable(f"job store unavailable: {exc}") from exc
        self._enqueue(job_id, messages, idem[0] if idem else "")
        metrics.JOBS.labels(lane.value).inc()
        metrics.SEGMENTS.labels(lane.value).inc(len(texts))
        metrics.CACHE_LOOKUPS.labels("hit").inc(len(cached))
        metrics.CACHE_LOOKUPS.labels("miss").inc(len(texts) - len(cached))
        # what create() stored, without reading it back
        total, done = len(texts), len(cached)
        job = JobRecord(
            id=job_id,
            status=JobStatus.succeeded if done == total else JobStatus.queued,
            source_lang=source,
            target_lang=target,
            lane=lane,
            progress=Progress(done=done, failed=0, total=total),
            created_at=now,
            finished_at=now if done == total else None,
            chunks=len(chunks),
            cached=done,
            owner=owner,
            document_format=document.fmt.name if document is not None else None,
            document_name=document.filename if document is not None else None,
            detected_source_lang=detected,
            segment_langs=segment_langs,
        )
        return Submitted(job, created=True, cached=cached)

    def _source_groups(
        self,
        texts: list[str],
        source: str,
        target: str,
        segment_langs: list[str | None] | None,
    ) -> dict[str, list[int]]:
        """Indices of ``texts`` by the language they are translated from."""
        groups: dict[str, list[int]] = {}
        for i in range(len(texts)):
            lang = segment_langs[i] if segment_langs else None
            if lang and lang != source and lang != target and self._pair(lang, target) is None:
                lang = None  # nobody serves it: translate from the job's language
            groups.setdefault(lang or source, []).append(i)
        return groups

    @staticmethod
    def _extra(
        owner: str,
        document: PreparedDocument | None,
        detected: str | None,
        segment_langs: list[str | None] | None = None,
    ) -> dict[str, str] | None:
        extra = {"owner": owner} if owner else {}
        if segment_langs is not None:
            extra["segment_langs"] = json.dumps(segment_langs)
        if document is not None:
            extra["document_format"] = document.fmt.name
            if document.filename:
                extra["document_name"] = document.filename
        if detected:
            extra["detected_source_lang"] = detected
        return extra or None

    def _admit(self, lane: Lane) -> None:
        """Backpressure: refuse new work for a lane whose queue is past its limit (429). The
        depth is read at most every 0.2 s per process, so the queue may overshoot the limit by
        what the API processes accept in that time."""
        limit = (
            self.settings.max_queue_interactive
            if lane is Lane.interactive
            else self.settings.max_queue_bulk
        )
        now = time.monotonic()
        seen = self._depths.get(lane)
        if seen is None or seen[0] < now:
            try:
                depth = int(self.store.r.llen(keys.queue(lane.value)))
            except redis.RedisError as exc:
                raise Unavailable(f"job store unavailable: {exc}") from exc
            seen = self._depths[lane] = (now + 0.2, depth)
        depth = seen[1]
        if depth >= limit:
            metrics.REJECTED.labels(lane.value).inc()
            raise Overloaded(
                f"the {lane.value} lane has {depth} chunks waiting (limit "
                f"MT_MAX_QUEUE_{lane.value.upper()}={limit}); retry later",
                retry_after=1 if lane is Lane.interactive else 10,
                lane=lane.value,
            )

    def _pair(self, source: str, target: str) -> PairInfo | None:
        """The registry's entry for a pair, remembered for a second when it exists (it is asked
        on every request; a pair nobody serves is asked again each time, so a worker that just
        registered is seen at once)."""
        now = time.monotonic()
        hit = self._pairs.get((source, target))
        if hit is not None and hit[0] > now:
            return hit[1]
        pair = self.registry.pair(source, target)
        if pair is not None:
            self._pairs[(source, target)] = (now + 1.0, pair)
        return pair

    def _enqueue(self, job_id: str, messages: list[ChunkMessage], idem_key: str) -> None:
        try:
            with self.celery.producer_or_acquire() as producer:
                for msg in messages:
                    send_chunk(self.celery, msg, producer=producer)
        except (OperationalError, redis.RedisError, OSError) as exc:
            log.error("could not enqueue job %s: %s", job_id, exc)
            err = Unavailable(f"broker unavailable, job not accepted: {exc}")
            with contextlib.suppress(redis.RedisError):
                self.store.fail(job_id, err.as_dict(), idempotency_key=idem_key)
            raise err from exc

    def _served_pairs(self) -> list[tuple[str, str]]:
        return list(self.registry.pairs())
