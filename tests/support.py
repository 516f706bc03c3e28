"""The shared test doubles: one scripted engine (batch or streaming) and a chunk driven through
the worker's real path in-process.

:func:`run_chunk` is what a worker does with a chunk, minus Celery: the texts are planned into
chunk messages by the API's own :func:`~mtfleet.api.service.plan_chunks`, each is processed by
the production :class:`~mtfleet.workers.chunk.ChunkProcessor` (phrase cache, glossary, the
scheduler of the engine's kind, every output check, idempotent record) over a fakeredis job
store, and the outcomes are read back from the store. Tests of checks, whitespace, isolation
and markup drive this, not helpers of their own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import fakeredis

from mtfleet.api import documents, parsing
from mtfleet.api.chunking import plan_chunks
from mtfleet.core import scripts
from mtfleet.core.cache import PhraseCache, lookup, normalize
from mtfleet.core.glossary import Glossary, GlossaryStore
from mtfleet.core.models import ChunkMessage, JobStatus, Lane, Progress, SegmentOutcome
from mtfleet.core.schemas import DocumentIn, DocumentOut
from mtfleet.core.settings import Settings
from mtfleet.core.store import JobRecord, JobStore, new_job_id
from mtfleet.fleet.localfleet import free_port, port_free
from mtfleet.formats.base import Rendered
from mtfleet.formats.pipeline import Cut
from mtfleet.workers.chunk import ChunkProcessor
from mtfleet.workers.engines.base import (
    Done,
    Engine,
    EngineLimits,
    Translation,
    TranslationRequest,
)
from mtfleet.workers.scheduler import Deadlines, Scheduler, make_scheduler

Reply = str | Translation | BaseException
Script = Callable[[TranslationRequest], Reply]


#: The engine fingerprint a :class:`ChunkRun`'s worker keys the phrase cache with.
def script_names() -> list[str]:
    """Every script in core/lua/ (``lib.lua`` is the helpers put in front of each, not one)."""
    return sorted(p.stem for p in scripts.LUA_DIR.glob("*.lua") if p.stem != "lib")


def free_port_run(count: int, avoid: Collection[int] = ()) -> int:
    """A port ``p`` with ``p`` … ``p + count - 1`` all free now and none in ``avoid``: a worker
    of ``count`` lane processes serves its metrics on ``MT_WORKER_METRICS_PORT`` + its index,
    and a port taken by something else there (another free_port() of the test) stops it."""
    for _ in range(200):
        base = free_port()
        ports = range(base, base + count)
        if not set(ports) & set(avoid) and all(port_free(p) for p in ports[1:]):
            return base
    raise RuntimeError(f"no {count} consecutive free ports")


def in_process(settings: Settings) -> Settings:
    """``settings`` for an API app built in the test process, one per test or module: without
    the start-up warm-up (lingua's models, the document processes: seconds of CPU per app),
    which these tests do not measure. A real API process warms up as in production
    (tests/integration/test_api_edges.py checks it)."""
    documents = settings.documents.model_copy(update={"preload": False})
    return settings.model_copy(update={"documents": documents})


FINGERPRINT = "fp"
#: The pool a :class:`ChunkRun`'s jobs are routed to.
POOL = "scripted"


def echo(req: TranslationRequest) -> str:
    return f"[{req.target}] {req.text}"


class Gate:
    """A :class:`ScriptedEngine` script whose replies (echoes) wait until :meth:`open`: a chunk
    that is still running, for as long as a test needs. ``started`` is set by the first
    request."""

    def __init__(self, timeout_s: float = 30.0) -> None:
        self.started = threading.Event()
        self._open = threading.Event()
        self.timeout_s = timeout_s

    def __call__(self, req: TranslationRequest) -> str:
        self.started.set()
        if not self._open.wait(self.timeout_s):
            raise TimeoutError("the gate was never opened")
        return echo(req)

    def open(self) -> None:
        self._open.set()


class ScriptedEngine(Engine):
    """An engine whose answer to each request is ``script(request)`` (a text, a Translation,
    or an exception to raise). Batch engine by default; ``streaming=True`` makes it a
    streaming one whose futures resolve on a thread. Records what it was given."""

    name = "scripted"

    def __init__(
        self,
        script: Script = echo,
        *,
        streaming: bool = False,
        limits: EngineLimits | None = None,
        max_input_tokens: int = 1 << 16,
        delay_s: float = 0.0,
        adapters: dict[str, str] | None = None,
    ) -> None:
        self.script = script
        self._adapters = adapters or {}
        self.streaming = streaming
        self._limits = limits or EngineLimits(
            max_sequences=1024, max_batch_tokens=1 << 20, max_input_tokens=max_input_tokens
        )
        self.delay_s = delay_s
        self.batches: list[list[str]] = []
        self.aborted: list[threading.Event] = []
        self.interrupts = 0
        self.loaded = False
        self.closed = False
        self._lock = threading.Lock()

    def load(self) -> None:
        self.loaded = True

    @property
    def model(self) -> str:
        return "scripted"

    @property
    def fingerprint(self) -> str:
        return "scripted-1"

    @property
    def limits(self) -> EngineLimits:
        return self._limits

    def adapters(self) -> dict[str, str]:
        return dict(self._adapters)

    def pairs(self) -> list[tuple[str, str]]:
        return [("en", "es"), ("es", "en"), ("en", "fr")]

    def check(self, request: TranslationRequest) -> str | None:
        n = self.count_tokens(request)
        if n > self._limits.max_input_tokens:
            return (
                f"segment has {n} tokens; this engine takes at most {self._limits.max_input_tokens}"
            )
        return None

    def translate(self, requests: Sequence[TranslationRequest]) -> list[str | Translation]:
        with self._lock:
            self.batches.append([r.text for r in requests])
        if self.delay_s:
            time.sleep(self.delay_s)
        out: list[str | Translation] = []
        for r in requests:
            reply = self.script(r)
            if isinstance(reply, BaseException):
                raise reply
            out.append(reply)
        return out

    def submit(self, request: TranslationRequest, done: Done) -> threading.Event:
        """Streaming: the reply comes from a thread of its own; the handle is an Event that
        abort() sets (an aborted request's reply is never delivered)."""
        if not self.streaming:
            return super().submit(request, done)  # type: ignore[no-any-return]
        with self._lock:
            self.batches.append([request.text])
        aborted = threading.Event()

        def run() -> None:
            if self.delay_s:
                time.sleep(self.delay_s)
            reply = self.script(request)
            if not aborted.is_set():
                done(reply)

        threading.Thread(target=run, daemon=True).start()
        return aborted

    def abort(self, handle: threading.Event) -> None:
        self.aborted.append(handle)
        handle.set()

    def interrupt(self, call: Sequence[TranslationRequest]) -> None:
        self.interrupts += 1

    def close(self) -> None:
        self.closed = True

    @property
    def texts(self) -> list[str]:
        """Every text the engine was given, in order."""
        return [t for batch in self.batches for t in batch]


@dataclass
class ChunkRun:
    """A fakeredis job store with one worker's chunk processor over ``engine``."""

    engine: Engine
    settings: Settings = field(default_factory=lambda: Settings(check_language=False))
    redis: fakeredis.FakeRedis = field(
        default_factory=lambda: fakeredis.FakeRedis(decode_responses=True)
    )
    deadlines: Deadlines | None = None

    def __post_init__(self) -> None:
        self.store = JobStore(self.redis, result_ttl_s=3600)
        self.cache = PhraseCache(self.redis, ttl_s=3600)
        self.engine.load()
        self.scheduler: Scheduler = make_scheduler(
            self.engine, latency_target_s=0.5, deadlines=self.deadlines
        )
        self.processor = ChunkProcessor(
            self.settings,
            self.store,
            self.cache,
            lambda: self.scheduler,
            lambda adapter: FINGERPRINT if adapter is None else self.engine.adapters().get(adapter),
        )

    def cached(
        self,
        texts: Sequence[str],
        *,
        source: str = "en",
        target: str = "es",
        glossary: Glossary | None = None,
    ) -> dict[str, str]:
        """What the phrase cache holds for ``texts`` (normalised text -> translation)."""
        return self.cache.get_many(
            lookup(
                FINGERPRINT,
                source,
                target,
                [normalize(t) for t in texts],
                glossary=glossary.version if glossary else None,
            )
        )

    def glossary(self, g: Glossary) -> Glossary:
        return GlossaryStore(self.redis).create(g, owner="", max_per_owner=100)

    def submit(
        self,
        texts: list[str],
        *,
        source: str = "en",
        target: str = "es",
        glossary: Glossary | None = None,
        lane: Lane = Lane.bulk,
        enqueued_at: float | None = None,
        adapter: str | None = None,
    ) -> tuple[JobRecord, list[ChunkMessage]]:
        """A job of ``texts`` stored as the API stores it, and its chunk messages."""
        job_id = new_job_id()
        norms = [normalize(t) for t in texts]
        chunks = plan_chunks(texts, norms, set(), self.settings.backlog.chunk_size)
        now = time.time()
        messages = [
            ChunkMessage(
                job_id=job_id,
                chunk=n,
                lane=lane,
                source=source,
                target=target,
                segments=segs,
                enqueued_at=now if enqueued_at is None else enqueued_at,
                glossary_id=glossary.id if glossary else None,
                glossary_version=glossary.version if glossary else None,
                pool=POOL,
                adapter=adapter,
            )
            for n, segs in enumerate(chunks)
        ]
        job = JobRecord(
            id=job_id,
            status=JobStatus.queued,
            source_lang=source,
            target_lang=target,
            lane=lane,
            pool=POOL,
            progress=Progress(done=0, failed=0, total=len(texts)),
            cached=0,
            created_at=now,
            chunks=len(messages),
        )
        self.store.create(job, cached={}, ledger={m.chunk: m.model_dump_json() for m in messages})
        return job, messages

    def run(self, texts: list[str], **kwargs: object) -> list[SegmentOutcome]:
        """Every text's outcome after its chunks were processed once each."""
        job, messages = self.submit(texts, **kwargs)  # type: ignore[arg-type]
        for msg in messages:
            self.processor.process(msg)
        outcomes = self.store.results(job.id, job.progress.total)
        assert all(o is not None for o in outcomes), outcomes
        return outcomes  # type: ignore[return-value]

    def close(self) -> None:
        self.scheduler.close()


def run_chunk(
    texts: list[str], engine: Engine | None = None, **kwargs: object
) -> list[SegmentOutcome]:
    """Outcomes of ``texts`` translated through the worker's chunk path (see the module)."""
    bench = ChunkRun(engine or ScriptedEngine())
    try:
        return bench.run(texts, **kwargs)
    finally:
        bench.close()


class InProcessDocuments:
    """The document processes' functions (api/parsing.py), run in this process (the pool's
    process boundary is all that is left out)."""

    def cut(self, fmt_name: str, content: bytes, lang: str, owner: str = "") -> Cut:
        return parsing._cut(fmt_name, content, lang, False, 100_000)[1]

    def render(
        self,
        fmt_name: str,
        content: bytes,
        source_lang: str,
        translations: Sequence[str | None],
        target_lang: str,
        owner: str = "",
        review: Sequence[int] = (),
    ) -> Rendered:
        return parsing._render(fmt_name, content, source_lang, translations, target_lang, review)


def document_result(
    fmt: str, filename: str, content: bytes, engine: Callable[[str], str], target: str
) -> DocumentOut:
    """``content`` as a document job's result, the way the service makes it: cut as the API
    cuts it, each text translated through the worker's chunk path (``engine`` answering the
    text it is given; every output check applies), rendered as the document processes do."""
    pool = InProcessDocuments()
    doc = DocumentIn(format=fmt, content=content.decode(), filename=filename)
    prepared = documents.prepare(doc, "en", pool)  # type: ignore[arg-type]
    bench = ChunkRun(ScriptedEngine(lambda r: engine(r.text)))
    try:
        job, _ = bench.submit(prepared.texts, target=target)
        outcomes = bench.run(prepared.texts, target=target)
    finally:
        bench.close()
    job = job.model_copy(update={"document_format": fmt, "document_name": filename})
    return documents.render(job, content, list(outcomes), pool)  # type: ignore[arg-type]
