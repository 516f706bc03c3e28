"""Job submission, the one path behind ``POST /v1/jobs``, ``POST /v1/documents`` and
``POST /v1/translate``.

In order, each step once: a request whose Idempotency-Key names a job already is answered
with it; the request becomes texts (a document is cut into sentences,
:mod:`mtfleet.api.documents`; ``source_lang: auto`` is detected, :mod:`mtfleet.api.detection`);
the texts are validated, normalised (NFC, outer whitespace
off: :func:`mtfleet.core.cache.normalize`) and looked up in the phrase cache; the rest are
grouped by normalised text (each translated once) and cut into chunks; the job is written to
Redis with its chunks in its API key's backlog, in one step (:mod:`mtfleet.core.backlog`), so
the API never answers 2xx for work that is not durably recorded, nor stores a job without its
characters charged and its share of the interactive lane taken (one script: a request has its
job and paid for it, or has neither, however it ends); then what the pool lane's broker queue
has room for is released to it (the rest goes as the workers take work, the keys taking turns).
A key whose quota is spent is refused before any of that work: its characters are checked as
soon as they are known (a document's once it is read, an ``auto`` request's before detection).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import anyio.from_thread
import anyio.to_thread
import redis
from celery import Celery
from kombu.exceptions import KombuError

from mtfleet.api import detection, documents, metrics
from mtfleet.api.chunking import plan_chunks
from mtfleet.api.documents import PreparedDocument
from mtfleet.api.parsing import DocumentPool
from mtfleet.api.routing import Route, Routing
from mtfleet.api.webhooks import targets
from mtfleet.core import keys, languages
from mtfleet.core.apikeys import ApiKey, KeyStore, Storage
from mtfleet.core.backlog import Backlog
from mtfleet.core.broker import release
from mtfleet.core.cache import PhraseCache, keyed, lookup, normalize, rewrap
from mtfleet.core.errors import (
    IdempotencyConflict,
    InvalidInput,
    JobNotFound,
    JobPurged,
    Unavailable,
    UnknownPool,
    UnsupportedLanguage,
)
from mtfleet.core.glossary import GlossaryInfo, GlossaryStore
from mtfleet.core.guidance import Guidance, MemoryRef, cache_variant
from mtfleet.core.interactive import InteractiveShares
from mtfleet.core.models import (
    ChunkMessage,
    ChunkSegment,
    Finding,
    JobStatus,
    Lane,
    PoolModelType,
    Progress,
    SegmentOutcome,
)
from mtfleet.core.registry import Registry
from mtfleet.core.schemas import JobCreate
from mtfleet.core.settings import Settings
from mtfleet.core.store import JobRecord, JobStore, new_job_id
from mtfleet.core.style_rules import StyleRuleStore
from mtfleet.core.tm import TranslationMemoryStore
from mtfleet.formats.pipeline import surrounding

log = logging.getLogger(__name__)


@dataclass
class Submitted:
    job: JobRecord
    created: bool  # False when an Idempotency-Key returned an earlier job
    # the outcomes known at submission (phrase-cache hits) of a job created now: a fully cached
    # job's result needs no read from Redis
    cached: dict[int, SegmentOutcome] | None = None

    @property
    def chars(self) -> int:
        """The characters the job was charged (an earlier job's too)."""
        return self.job.chars


@dataclass
class Submission:
    """One request on its way to a job: what :meth:`JobService._submit`'s steps decided for it
    (its pair, lane, route and named stores, its phrase-cache scope, whether it is no-trace),
    and the job's id and time, given once it is admitted."""

    req: JobCreate
    inputs: Texts
    owner: str
    source: str
    target: str
    lane: Lane
    route: Route
    guidance: Guidance | None
    memory: MemoryRef | None
    glossary: GlossaryInfo | None
    scope: str | None
    no_trace: bool
    job_id: str = ""
    now: float = 0.0


@dataclass(frozen=True)
class IdempotencyRecord:
    """Where the job an Idempotency-Key made is remembered (``redis_key``, scoped to its
    owner), for which request body (``digest``), and for how long from its job's creation."""

    redis_key: str
    digest: str
    ttl_s: int

    def value(self, job_id: str) -> str:
        return f"{job_id} {self.digest}"


@dataclass
class FromCache:
    """What :meth:`JobService.answer_from_cache` found: every translation (``translations``
    set: the answer), or the hits it found and the route it looked them up for (the rest of
    submission uses both: the cache is read and the request routed once; None: it did not
    look)."""

    translations: list[str] | None
    hits: dict[str, str] | None
    route: Route | None = None

    @property
    def model_type_used(self) -> PoolModelType | None:
        """The route's (the answer's)."""
        return self.route.model_type_used if self.route is not None else None


@dataclass
class Texts:
    """A request as texts: what the rest of submission works on."""

    texts: list[str]
    source: str
    document: PreparedDocument | None = None
    detected: str | None = None
    segment_langs: list[str | None] | None = None
    confidence: float | None = None  # the detector's, in the detected language


class JobService:
    def __init__(
        self,
        settings: Settings,
        store: JobStore,
        cache: PhraseCache,
        registry: Registry,
        celery: Celery,
        apikeys: KeyStore,
        documents: DocumentPool,
    ) -> None:
        self.settings = settings
        self.documents = documents
        self.store = store
        self.cache = cache
        self.registry = registry
        self.celery = celery
        self.apikeys = apikeys
        self.backlog = Backlog(store.r, ttl_s=settings.jobs.result_ttl_s)
        self.routing = Routing(settings.backlog, registry, self.backlog)
        self.detector = detection.Detector(settings.keys.key_detections)

    # -- the whole path ----------------------------------------------------------------------
    async def submit(
        self,
        req: JobCreate,
        *,
        owner: str = "",
        key: ApiKey | None = None,
        idempotency_key: str | None = None,
        found: FromCache | None = None,
        idempotency_ttl_s: int | None = None,
    ) -> Submitted:
        """Submit as ``owner`` (the API key id, '' without auth). The job is stored with
        ``key``'s characters charged and its share of the interactive lane taken in one step
        (:meth:`JobStore.create`, one script; 429 past the quota or the share): a request
        refused, failed or cancelled (its client went away) before that step holds nothing,
        one after it has its job, paid for. A key whose quota is spent is refused before the
        work (:meth:`texts_of`). An Idempotency-Key is scoped to the owner (two keys using the
        same one get two jobs) and remembered ``idempotency_ttl_s`` (default
        ``MT_IDEMPOTENCY_TTL_S``) from its job's creation: a request naming a job made already
        gets that job at once and is charged nothing, even with its key's quota or share spent
        (409 with another body; 410 when the job was purged); one whose record expired is a new
        request, charged as any. ``found``: what :meth:`answer_from_cache` found for this
        request (its hits and route are used, not looked up again). On the event loop: Redis
        through the asyncio client, the rest (documents, detection, the store's script, the
        broker) off it."""
        idem = self._idempotency(req, owner, idempotency_key, idempotency_ttl_s)
        if idem is not None and (earlier := await self._earlier(idem)) is not None:
            return earlier
        self._check_trace(req, key)
        if req.callback_url is not None:
            await self.check_callback(req.callback_url, key)
        inputs = await self.texts_of(req, owner, key)
        return await self._submit(req, inputs, owner, key, idem, found)

    async def answer_from_cache(
        self, req: JobCreate, *, owner: str = "", key: ApiKey | None = None
    ) -> FromCache:
        """The hot path of ``POST /v1/translate``: texts the phrase cache holds every one of
        answer on the event loop with one Redis round trip (``MGET``; a second one charges
        the caller's key; the pair's pool is read once a second) and no job is stored:
        nothing was queued, so there is nothing to follow, and a storefront asking the same
        strings all day does not leave a job behind per request. Anything this path does not
        cover (a glossary, ``auto``, a callback_url, a pair nobody serves, a text past a limit,
        one miss) goes the whole way (:meth:`submit`), with the hits found here."""
        none = FromCache(None, None)
        texts = req.texts
        if req.use_cache != "yes":
            return none  # use_cache=no or overwrite: the cache is not read
        if not texts or req.document is not None or req.glossaries() or req.callback_url:
            return none  # (a callback_url is checked, and gets a job to report on)
        if req.guidance() is not None or req.style_id or req.translation_memory_id:
            return none  # whether the pool may take it, and its cache variant: submit()
        if req.quality_estimation:
            return none  # scored by its pool's workers, and refused by a pool that cannot
        if req.protected_patterns:
            return none  # their cache variant: submit()
        if detection.is_auto(req.source_lang):
            return none
        try:
            source = languages.normalize(req.source_lang)
            target = languages.normalize(req.target_lang)
            self._check_limits(texts)
        except (InvalidInput, UnsupportedLanguage):
            return none  # submit() gives the error
        if source == target or self.cache.ar is None:
            return none
        try:
            route = await self.routing.route(source, target, req.pool, req.adapter, req.model_type)
        except (Unavailable, UnknownPool, UnsupportedLanguage):
            return none  # submit() says why, after the checks that come first
        norms = [normalize(t) for t in texts]
        hits = await self.cache.aget_many(
            lookup(route.fingerprint, source, target, norms, scope=self.cache_scope(owner))
        )
        if len(hits) < len(set(norms)):
            return FromCache(None, hits, route)
        if key is not None:
            try:
                await self.apikeys.charge(key, sum(len(t) for t in texts))
            except redis.RedisError as exc:
                raise Unavailable.because("the job store", exc) from exc
        metrics.SEGMENTS.labels(route.name, Lane.interactive.value).inc(len(texts))
        metrics.CACHE_LOOKUPS.labels("hit").inc(len(texts))
        return FromCache(
            [rewrap(t, hits[n]) for t, n in zip(texts, norms, strict=True)], hits, route
        )

    async def texts_of(self, req: JobCreate, owner: str = "", key: ApiKey | None = None) -> Texts:
        """The request as texts: a document cut into sentences (in the document processes),
        ``auto`` detected among the languages the fleet translates into the target (in a
        worker thread, within ``owner``'s share of detection: :class:`detection.Detector`).
        ``key``'s quota is checked as soon as the characters are known, before detection: a
        key whose day is spent is refused (429) before the work, which is free to it."""
        auto = detection.is_auto(req.source_lang)
        if req.document is None and not auto:
            inputs = Texts(req.texts or [], req.source_lang)
        else:
            target = languages.normalize(req.target_lang) if auto else req.target_lang
            served = await self.routing.sources_into(target) if auto else frozenset()
            detect = functools.partial(self._detect, key, owner, served, target)
            inputs = await anyio.to_thread.run_sync(self._texts_of, req, owner, detect)
        if not auto:
            await self._check_quota(key, inputs.texts)
        return inputs

    def _texts_of(
        self, req: JobCreate, owner: str, detect: Callable[[list[str]], detection.Detected]
    ) -> Texts:
        if req.document is not None:
            doc = documents.prepare(req.document, req.source_lang, self.documents, detect, owner)
            return Texts(
                doc.texts, doc.source, doc, doc.detected, doc.segment_langs, doc.confidence
            )
        texts = req.texts or []
        found = detection.differing(detect(texts))
        return Texts(texts, found.source, None, found.source, found.segment_langs, found.confidence)

    def _detect(
        self,
        key: ApiKey | None,
        owner: str,
        served: frozenset[str],
        target: str,
        texts: list[str],
    ) -> detection.Detected:
        """Each of ``texts``' language (in a worker thread), once the key's quota has room
        for them."""
        anyio.from_thread.run(self._check_quota, key, texts)
        return self.detector.each(texts, served, target, owner)

    async def _check_quota(self, key: ApiKey | None, texts: list[str]) -> None:
        """429 when ``texts`` do not fit what is left of ``key``'s day (nothing is taken: the
        job's creation takes them)."""
        if key is not None:
            try:
                await self.apikeys.check_quota(key, sum(len(t) for t in texts))
            except redis.RedisError as exc:
                raise Unavailable.because("the job store", exc) from exc

    @staticmethod
    def no_trace(req: JobCreate, key: ApiKey | None) -> bool:
        """Whether nothing of the request may outlive its delivery: it asks so, or its API key
        was made no-trace (the key's default wins: a request cannot opt out of it)."""
        return req.no_trace or (key is not None and key.no_trace)

    def _check_trace(self, req: JobCreate, key: ApiKey | None) -> None:
        """What a no-trace request cannot be (422, before any work): one that asks to
        overwrite phrase-cache entries (it writes none), or a document job with a callback_url
        (the webhook delivers a no-trace job's result, and it carries no files)."""
        if not self.no_trace(req, key):
            return
        why = " (its API key is no-trace)" if not req.no_trace else ""
        if req.use_cache == "overwrite":
            raise InvalidInput(
                f"use_cache=overwrite writes to the phrase cache, which a no-trace request{why} "
                "never does: use use_cache=no to read nothing and write nothing"
            )
        if req.document is not None and req.callback_url is not None:
            raise InvalidInput(
                f"a no-trace document job{why} cannot have a callback_url: its result is "
                "delivered once, and a webhook carries no file; leave callback_url out and "
                "download the file once (GET /v1/jobs/{id}/document)"
            )

    def lane_for(self, req: JobCreate, n_texts: int) -> Lane:
        """The lane a job of ``n_texts`` runs on: the one it asks for, else interactive up to
        ``MT_INTERACTIVE_MAX_SEGMENTS``; and never interactive past that, whatever it asks for
        (every surface that asks for the interactive lane alike): one request cannot take the
        lane meant for small ones. A larger job is served on the bulk lane, not refused, so a
        drop-in client's long request still gets its translation."""
        if n_texts > self.settings.backlog.interactive_max_segments:
            return Lane.bulk
        return req.lane or Lane.interactive

    @functools.cached_property
    def interactive_shares(self) -> InteractiveShares:
        s = self.settings
        return InteractiveShares(
            self.store.r,
            segments=s.keys.key_interactive_segments,
            jobs=s.keys.key_interactive_jobs,
            ttl_s=s.jobs.result_ttl_s,
        )

    async def _submit(
        self,
        req: JobCreate,
        inputs: Texts,
        owner: str,
        key: ApiKey | None,
        idem: IdempotencyRecord | None,
        found: FromCache | None = None,
    ) -> Submitted:
        """A request's job, in order: its pair and limits, its route, its named stores, what
        the phrase cache knows and the chunks to send, the job stored paid for, its chunks
        released to the broker."""
        source, target = self._pair(req, inputs)
        self._check_limits(inputs.texts, document=req.document is not None)
        lane = self.lane_for(req, len(inputs.texts))
        route = await self._route(req, source, target, found)
        if req.quality_estimation:
            self._check_quality(route)
        guidance, memory, glossary = await anyio.to_thread.run_sync(
            self._named_stores, req, route, owner, source, target, bool(inputs.texts)
        )
        sub = Submission(
            req,
            inputs,
            owner,
            source,
            target,
            lane,
            route,
            guidance,
            memory,
            glossary,
            scope=self.cache_scope(owner),
            no_trace=self.no_trace(req, key),
        )
        cached, plan = await self._split(sub, found)
        if plan:
            await self.routing.admit(route.name, lane)
        sub.job_id, sub.now = new_job_id(), time.time()
        messages = self._messages(sub, plan)
        job = self._job_record(sub, cached, len(messages), idem)
        ledger = {m.chunk: m.model_dump_json() for m in messages}  # also what is sent
        content = inputs.document.content if inputs.document is not None else None
        existing = await self._store(job, cached, ledger, content, key, idem)
        if existing is not None:
            assert idem is not None
            return await self._joined(existing, idem)
        if messages:
            await anyio.to_thread.run_sync(self.release, route.name, lane)
        metrics.JOBS.labels(route.name, lane.value).inc()
        metrics.SEGMENTS.labels(route.name, lane.value).inc(len(inputs.texts))
        metrics.CACHE_LOOKUPS.labels("hit").inc(job.cached)
        metrics.CACHE_LOOKUPS.labels("miss").inc(len(inputs.texts) - job.cached)
        return Submitted(job, created=True, cached=cached)

    @staticmethod
    def _pair(req: JobCreate, inputs: Texts) -> tuple[str, str]:
        """The job's source and target, normalised: two languages, or one for a text improved
        in its own language (DeepL Write); else 422."""
        source = languages.normalize(inputs.source)
        target = languages.normalize(req.target_lang)
        if req.writing is not None and source != target:
            raise InvalidInput(
                f"a text is improved in its own language: source_lang {source!r} is not the "
                f"target_lang {target!r}"
            )
        if source == target and req.writing is None:
            raise InvalidInput(f"source_lang and target_lang are both {source!r}")
        return source, target

    async def _route(
        self, req: JobCreate, source: str, target: str, found: FromCache | None
    ) -> Route:
        """The pool the job runs on: an LLM pool for a text improved in its language, the one
        :meth:`answer_from_cache` routed to already, else the pair's."""
        if req.writing is not None:  # improved in its language by an LLM pool (DeepL Write)
            return await self.routing.route_writing(target, req.pool, req.model_type)
        if found is not None and found.route is not None:
            return found.route  # routed by answer_from_cache: the same pair, pool and adapter
        return await self.routing.route(source, target, req.pool, req.adapter, req.model_type)

    async def _split(
        self, sub: Submission, found: FromCache | None
    ) -> tuple[dict[int, SegmentOutcome], list[tuple[str, list[ChunkSegment]]]]:
        """The outcomes known now and the chunks to send (:meth:`_plan`); a quality
        evaluation's given translations are all to send, to be scored."""
        req, texts = sub.req, sub.inputs.texts
        norms = [normalize(t) for t in texts]
        if req.translations is not None:
            return {}, self._evaluation(texts, norms, req.translations, sub.source)
        return await self._plan(
            texts,
            norms,
            sub.source,
            sub.target,
            sub.route,
            sub.glossary,
            sub.inputs,
            sub.scope,
            sub.guidance,
            sub.memory,
            found.hits if found is not None else None,
            self._neighbours(sub.inputs, sub.route),
            req.protected_patterns,
            read=req.use_cache == "yes" and not req.quality_estimation,
        )

    @staticmethod
    def _messages(
        sub: Submission, plan: list[tuple[str, list[ChunkSegment]]]
    ) -> list[ChunkMessage]:
        """The job's chunk messages, one per planned chunk (the job's glossary and memory
        apply to the chunks in its source language; a quality evaluation's are never
        cached)."""
        req, glossary = sub.req, sub.glossary
        evaluated = req.translations is not None  # scored, never cached
        return [
            ChunkMessage(
                job_id=sub.job_id,
                chunk=n,
                lane=sub.lane,
                source=src,
                target=sub.target,
                segments=segs,
                enqueued_at=sub.now,
                glossary_id=glossary.id if glossary and src == sub.source else None,
                glossary_version=glossary.version if glossary and src == sub.source else None,
                cache_scope=sub.scope,
                pool=sub.route.name,
                adapter=sub.route.adapter,
                owner=sub.owner,
                guidance=sub.guidance,
                memory=sub.memory if src == sub.source else None,
                protected_patterns=req.protected_patterns or None,
                cache_read=req.use_cache == "yes" and not evaluated,
                cache_write=req.use_cache != "no" and not sub.no_trace and not evaluated,
                quality_estimation=req.quality_estimation,
            )
            for n, (src, segs) in enumerate(plan)
        ]

    @staticmethod
    def _job_record(
        sub: Submission,
        cached: dict[int, SegmentOutcome],
        chunks: int,
        idem: IdempotencyRecord | None,
    ) -> JobRecord:
        """The job as stored: final at once when the phrase cache knew every text."""
        texts, doc, route, now = sub.inputs.texts, sub.inputs.document, sub.route, sub.now
        final = len(cached) == len(texts)
        return JobRecord(
            id=sub.job_id,
            status=JobStatus.succeeded if final else JobStatus.queued,
            source_lang=sub.source,
            target_lang=sub.target,
            lane=sub.lane,
            pool=route.name,
            adapter=route.adapter,
            progress=Progress(done=len(cached), failed=0, total=len(texts)),
            cached=sum(1 for o in cached.values() if o.cached),
            created_at=now,
            finished_at=now if final else None,
            chunks=chunks,
            owner=sub.owner,
            document_format=doc.fmt.name if doc is not None else None,
            document_name=doc.filename if doc is not None else None,
            detected_source_lang=sub.inputs.detected,
            detected_confidence=sub.inputs.confidence,
            segment_langs=sub.inputs.segment_langs,
            model_type_used=route.model_type_used,
            callback_url=sub.req.callback_url,
            chars=sum(len(t) for t in texts),
            no_trace=sub.no_trace,
            idempotency_key=idem.redis_key if idem is not None and sub.no_trace else "",
        )

    async def _store(
        self,
        job: JobRecord,
        cached: dict[int, SegmentOutcome],
        ledger: dict[int, str],
        document: bytes | None,
        key: ApiKey | None,
        idem: IdempotencyRecord | None,
    ) -> str | None:
        """Store ``job`` paid for, in one step (:meth:`JobStore.create`'s script): ``key``'s
        characters, its storage, and its share of the interactive lane while it has work
        there; None, or the Idempotency-Key's record when it names a job already (nothing is
        stored, nothing charged)."""
        holds = job.lane is Lane.interactive and not job.status.final
        create = functools.partial(
            self.store.create,
            job,
            cached=cached,
            idempotency=(idem.redis_key, idem.value(job.id), idem.ttl_s) if idem else None,
            ledger=ledger,
            document=document,
            storage=self.apikeys.storage(key, self.settings.keys.key_storage_mb) if key else None,
            charge=self.apikeys.charge_of(key, job.chars) if key is not None else None,
            share=self.interactive_shares.share(job.owner, job.progress.total) if holds else None,
        )
        try:
            return await anyio.to_thread.run_sync(create)
        except redis.RedisError as exc:
            raise Unavailable.because("the job store", exc) from exc

    def cache_scope(self, owner: str) -> str | None:
        """Whose phrase-cache entries a job of ``owner`` reads and writes (None: shared)."""
        return owner if owner and self.settings.jobs.cache_scope == "key" else None

    def purge(self, job: JobRecord) -> None:
        """Delete a job, everything stored for it and the phrase-cache entries its chunks
        wrote, and give its bytes back to its owner's storage quota (the cache's entries
        first: when the cache cannot be reached the job is kept, 503, and the purge can be
        retried)."""
        try:
            self.cache.forget(job.id)
        except redis.RedisError as exc:
            log.error("could not remove job %s's phrase-cache entries: %s", job.id, exc)
            raise Unavailable("the phrase cache is unavailable; the job was not purged") from exc
        storage = Storage(self.store.r, job.owner, 0) if job.owner else None
        self.store.purge(job.id, storage)

    # -- the steps ---------------------------------------------------------------------------
    async def check_callback(self, url: str, key: ApiKey | None) -> None:
        """A job may carry ``url`` as its callback_url: it points at a public address (unless
        MT_WEBHOOK_ALLOW_PRIVATE), checked again at every attempt, and there is a secret to
        sign its webhook with (422 otherwise)."""
        if key is not None and not await self._webhook_secrets(key.id):
            raise InvalidInput(
                "this API key has no webhook signing secret (it was made before webhooks "
                f"existed); the operator gives it one with: mtfleet keys rotate-webhook-secret "
                f"{key.id}"
            )
        if key is None and self.settings.webhooks.webhook_secret is None:
            raise InvalidInput(
                "callback_url needs a signing secret: with MT_AUTH=off the operator sets "
                "MT_WEBHOOK_SECRET (a whsec_ secret)"
            )
        await targets.check_callback(
            url, allow_private=self.settings.webhooks.webhook_allow_private
        )

    async def _webhook_secrets(self, key_id: str) -> list[str]:
        """Read now, not from the key as authentication cached it: a rotation counts at once."""
        try:
            return await self.apikeys.webhook_secrets(key_id)
        except redis.RedisError as exc:
            raise Unavailable.because("the job store", exc) from exc

    def _check_limits(self, texts: list[str], *, document: bool = False) -> None:
        s = self.settings
        if len(texts) > s.jobs.max_segments_per_job:
            if document:
                raise InvalidInput(
                    f"the document has {len(texts)} sentences; one job may carry "
                    f"{s.jobs.max_segments_per_job} (MT_MAX_SEGMENTS_PER_JOB): split the file, or "
                    "ask the operator to raise the limit"
                )
            raise InvalidInput(
                f"{len(texts)} texts in one job; the limit is {s.jobs.max_segments_per_job} "
                "(GET /v1/limits; mtfleet submit splits a larger line file into several jobs)"
            )
        if texts and max(map(len, texts)) > s.jobs.max_segment_chars:
            i = next(i for i, t in enumerate(texts) if len(t) > s.jobs.max_segment_chars)
            raise InvalidInput(
                f"texts[{i}] has {len(texts[i])} characters; "
                f"the limit is {s.jobs.max_segment_chars}"
            )

    def _named_stores(
        self, req: JobCreate, route: Route, owner: str, source: str, target: str, texts: bool
    ) -> tuple[Guidance | None, MemoryRef | None, GlossaryInfo | None]:
        """The style rule, translation memory and glossary the request names, checked (in a
        worker thread: their stores are the workers' too)."""
        guidance = self._guidance(req, route, owner, source, target)
        memory = self._memory(req, route, owner, source, target)
        glossary = self._glossary(req.glossaries(), owner, source, target) if texts else None
        return guidance, memory, glossary

    def _glossary(
        self, glossary_ids: list[str], owner: str, source: str, target: str
    ) -> GlossaryInfo | None:
        """The glossaries a job names, checked, as one (several: a stack, applied in order;
        its version keys the cache; workers apply it)."""
        if not glossary_ids:
            return None
        try:
            return GlossaryStore(self.store.r).for_jobs(
                glossary_ids, owner=owner, source=source, target=target
            )
        except redis.RedisError as exc:
            raise Unavailable.because("the job store", exc) from exc

    def _guidance(
        self, req: JobCreate, route: Route, owner: str, source: str, target: str
    ) -> Guidance | None:
        """What the job's engine gets of the request's context, instructions, formality and
        style rule (:mod:`mtfleet.core.guidance`: the rule's sentences and custom instructions
        join the request's instructions); 400 for instructions a pool whose engine does not
        follow them would drop."""
        wanted = req.guidance()
        if req.style_id:
            rule = StyleRuleStore(self.store.r).for_job(req.style_id, owner=owner, target=target)
            style = tuple(rule.instructions(source=source))
            wanted = (wanted or Guidance()).model_copy(update={"style_instructions": style})
        if wanted is None or wanted.empty:
            return None
        if wanted.needs_instructions and not route.pool.instructions:
            asked = [
                name
                for name, given in (
                    ("custom_instructions", wanted.custom_instructions),
                    ("style_id", wanted.style_instructions),
                    (f"formality={wanted.formality!r}", wanted.formality in ("more", "less")),
                )
                if given
            ]
            raise InvalidInput(
                f"{' and '.join(asked)}: pool {route.name!r} runs the {route.pool.engine} engine, "
                "which does not follow instructions (an LLM engine does: vllm, openai, a causal "
                "transformers model); formality prefer_more/prefer_less and context are taken "
                "by any engine"
            )
        return wanted.for_engine(route.pool.instructions)

    @staticmethod
    def _check_quality(route: Route) -> None:
        """422 for quality estimation asked of a pool whose workers load no quality-estimation
        model: the job would come back unscored."""
        if route.pool.quality_model is None:
            raise InvalidInput(
                f"quality_estimation: pool {route.name!r} has no quality-estimation model "
                "(MT_QE_MODEL on its workers, e.g. google/metricx-24-hybrid-large-v2p6; "
                "docs/quality.md), so its translations cannot be scored"
            )

    def _neighbours(self, inputs: Texts, route: Route) -> list[str | None] | None:
        """Each sentence's neighbours in its unit, as context for the prompt of a document job
        on a pool whose engine reads one (an LLM), up to ``MT_DOCUMENT_CONTEXT_TOKENS``; None
        otherwise (then sentences share the cache entries of the same text anywhere)."""
        doc = inputs.document
        tokens = self.settings.engine.document_context_tokens
        if doc is None or not tokens or not route.pool.instructions:
            return None
        found = surrounding(doc.texts, doc.unit_of, tokens)
        return found if any(c is not None for c in found) else None

    def _memory(
        self, req: JobCreate, route: Route, owner: str, source: str, target: str
    ) -> MemoryRef | None:
        """The translation memory the request names, checked (422 when it is not this key's or
        is for another pair), as its chunks carry it: examples for the prompt only where the
        pool's engine follows instructions."""
        if not req.translation_memory_id:
            return None
        info = TranslationMemoryStore(self.store.r).for_job(
            req.translation_memory_id, owner=owner, source=source, target=target
        )
        return MemoryRef(
            id=info.id,
            version=info.version,
            threshold=req.translation_memory_threshold,
            examples=route.pool.instructions,
        )

    async def _plan(
        self,
        texts: list[str],
        norms: list[str],
        source: str,
        target: str,
        route: Route,
        glossary: GlossaryInfo | None,
        inputs: Texts,
        scope: str | None,
        guidance: Guidance | None = None,
        memory: MemoryRef | None = None,
        known: dict[str, str] | None = None,
        contexts: list[str | None] | None = None,
        patterns: list[str] | None = None,
        *,
        read: bool = True,
    ) -> tuple[dict[int, SegmentOutcome], list[tuple[str, list[ChunkSegment]]]]:
        """The outcomes known now (phrase-cache hits; texts detected as already in the target
        language, kept as they are) and the chunks to send, per source language. ``known``:
        the phrase-cache hits of the job's own source language, looked up already;
        ``contexts``: each text's neighbouring sentences (:meth:`_neighbours`), part of its
        cache key and its chunk segment; ``patterns``: the request's protected patterns (their
        digest is part of the cache key); ``read``: whether the phrase cache is looked at
        (``use_cache=yes``)."""
        cache_keys = norms if contexts is None else list(map(keyed, norms, contexts))
        cached: dict[int, SegmentOutcome] = {}
        plan: list[tuple[str, list[ChunkSegment]]] = []
        groups = await self._source_groups(len(texts), source, target, route.name, inputs)
        for src, indices in groups.items():
            if src == target and (guidance is None or guidance.writing is None):
                for i in indices:
                    cached[i] = SegmentOutcome(
                        translation=texts[i],
                        warnings=[
                            {
                                "type": Finding.already_in_target_language.value,
                                "message": f"detected as {target}; kept untranslated",
                            }
                        ],
                    )
                continue
            gv = glossary.version if glossary and src == source else None
            variant = cache_variant(gv, guidance, memory if src == source else None, patterns)
            if not read:
                hits = {}
            elif known is not None and src == source and variant is None and contexts is None:
                hits = known
            else:
                hits = await self.cache.aget_many(
                    lookup(
                        route.fingerprint,
                        src,
                        target,
                        [cache_keys[i] for i in indices],
                        glossary=variant,
                        scope=scope,
                    )
                )
            for i in indices:
                hit = hits.get(cache_keys[i])
                if hit is not None:
                    cached[i] = SegmentOutcome(translation=rewrap(texts[i], hit), cached=True)
            members = set(indices)
            skip = {i for i in range(len(texts)) if i not in members} | set(cached)
            chunks = plan_chunks(texts, norms, skip, self.settings.backlog.chunk_size, contexts)
            plan += [(src, c) for c in chunks]
        return cached, plan

    def _evaluation(
        self, texts: list[str], norms: list[str], given: list[str], source: str
    ) -> list[tuple[str, list[ChunkSegment]]]:
        """The chunks of a quality evaluation: each text with the translation given for it, to
        be scored (none translated, none looked up in the cache; the same text twice with two
        translations is two segments)."""
        size = self.settings.backlog.chunk_size
        segments = [
            ChunkSegment(indices=[i], text=norms[i], translation=normalize(given[i]))
            for i in range(len(texts))
        ]
        return [(source, segments[n : n + size]) for n in range(0, len(segments), size)]

    async def _source_groups(
        self, n: int, source: str, target: str, pool: str, inputs: Texts
    ) -> dict[str, list[int]]:
        """Text indices by the language they are translated from (mixed content: a text
        detected in another language that the job's pool serves is translated from it)."""
        langs = inputs.segment_langs
        if not langs:
            return {source: list(range(n))}
        groups: dict[str, list[int]] = {}
        for i in range(n):
            lang = langs[i]
            if lang and lang != target and pool not in await self.routing.serving(lang, target):
                lang = None  # the pool does not serve it: translate from the job's language
            groups.setdefault(lang or source, []).append(i)
        return groups

    def _idempotency(
        self,
        req: JobCreate,
        owner: str,
        idempotency_key: str | None,
        ttl_s: int | None = None,
    ) -> IdempotencyRecord | None:
        """Where the job made for ``idempotency_key`` is remembered, with the request's body
        digest (None without a key)."""
        if not idempotency_key:
            return None
        body = json.dumps(req.model_dump(mode="json"), sort_keys=True).encode()
        return IdempotencyRecord(
            self.idempotency_redis_key(idempotency_key, owner),
            hashlib.sha256(body).hexdigest()[:32],
            ttl_s or self.settings.jobs.idempotency_ttl_s,
        )

    @staticmethod
    def idempotency_redis_key(idempotency_key: str, owner: str = "") -> str:
        """Where the job made for an Idempotency-Key is remembered (scoped to ``owner``)."""
        scoped = f"{owner}\n{idempotency_key}" if owner else idempotency_key
        return keys.idempotency(hashlib.sha256(scoped.encode()).hexdigest())

    async def _earlier(self, idem: IdempotencyRecord) -> Submitted | None:
        """The job the Idempotency-Key made already (None: none, or its record expired)."""
        try:
            existing = await self.store._async().get(idem.redis_key)
        except redis.RedisError as exc:
            raise Unavailable.because("the job store", exc) from exc
        return await self._joined(str(existing), idem) if existing is not None else None

    async def _joined(self, existing: str, idem: IdempotencyRecord) -> Submitted:
        """The earlier job ``existing`` (the key's record: "<job id> <body digest>") names:
        409 when it was made for another body, 410 when it is gone."""
        old_id, old_digest = existing.split(" ", 1)
        if old_digest != idem.digest:
            raise IdempotencyConflict("this Idempotency-Key was used with a different request body")
        try:
            return Submitted(await self.store.aget(old_id), created=False)
        except JobNotFound:
            raise JobPurged(
                f"this Idempotency-Key made job {old_id}, which was purged (or has expired); "
                "send the request with a new key to make another"
            ) from None

    async def resent(self, idempotency_key: str, owner: str) -> bool:
        """Whether ``idempotency_key`` names a job already: the request is a resend, which
        joins that job (and is charged nothing) rather than being answered anew."""
        key = self.idempotency_redis_key(idempotency_key, owner)
        try:
            return bool(await self.store._async().exists(key))
        except redis.RedisError as exc:
            raise Unavailable.because("the job store", exc) from exc

    def release(self, pool: str, lane: Lane) -> None:
        """Hand what waits in the pool lane's backlog to the broker, up to its target (the
        job's chunks are in the backlog already, stored with it: a broker that cannot be
        reached now delays them, the workers release them once it can)."""
        try:
            release(
                self.celery,
                self.backlog,
                self.store,
                pool,
                lane.value,
                self.settings.backlog.release_ahead,
            )
        except (KombuError, redis.RedisError, OSError) as exc:  # (a batch publish: KombuError)
            log.warning(
                "could not release %s %s chunks now (the workers will): %s", pool, lane.value, exc
            )
