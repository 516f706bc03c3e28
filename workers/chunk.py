"""The body of one chunk: from a broker message to results in the job store.

A chunk may be processed more than once (at-least-once delivery), so every step is idempotent:
segments that already have a result are skipped, results are written once (HSETNX), and a
chunk delivered more than ``MT_MAX_DELIVERIES`` times is dead-lettered instead of looping.

In order: count the delivery and learn which indices still need a result (one round trip);
for a chunk that waited in the queue, look its texts up in the phrase cache again (a phrase
another job translated meanwhile); translate the rest through the scheduler with the glossary
applied and every output check (:mod:`mtfleet.workers.checks`), within the chunk's time budget;
put each text's own outer whitespace back; cache what passed; score the translations when the
job asked for quality estimation (:mod:`mtfleet.workers.quality`); record (one round trip).

A chunk whose budget runs out records what it finished (checked and cached like the rest) and
goes back (:class:`Requeue`): its next delivery translates only what is left, and a delivery
that recorded something is not counted against ``MT_MAX_DELIVERIES`` (a chunk slower than its
budget finishes over several deliveries; it is not poison).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from mtfleet.core import deadletters
from mtfleet.core.cache import PhraseCache, keyed, lookup
from mtfleet.core.errors import Cancelled, DeadLettered, EngineUnavailable, Unfinished
from mtfleet.core.glossary import GlossaryNotFound, GlossaryStore
from mtfleet.core.glossary.matching import Matcher, Protected
from mtfleet.core.guidance import Guidance, cache_variant
from mtfleet.core.models import ChunkMessage, Lane, SegmentOutcome
from mtfleet.core.patterns import BadPattern, compiled
from mtfleet.core.settings import CHUNK_BUDGET_SHARE, ENGINE_DEADLINE_SHARE, Settings
from mtfleet.core.store import JobStore
from mtfleet.core.tm import TMNotFound, TranslationMemoryStore
from mtfleet.workers import checks, metrics
from mtfleet.workers.engines.base import TranslationRequest
from mtfleet.workers.memory import ChunkMemory
from mtfleet.workers.quality import QualityStep
from mtfleet.workers.scheduler import Scheduler
from mtfleet.workers.translation import error_outcome, seconds

log = logging.getLogger(__name__)

#: A chunk that waited in the queue at least this long may look its texts up in the phrase cache
#: again (:class:`Recheck`): the API looked them up when it was queued, and another job may
#: have translated some since (bulk backlogs of catalogue text). A chunk taken at once skips
#: the read: it would find nothing the API did not.
RECHECK_AFTER_S = 1.0
#: Share of the broker's visibility timeout a chunk may take from its start: past it the
#: chunk records what it has and goes back to the queue, so no chunk outlives its lease.
BUDGET_SHARE = CHUNK_BUDGET_SHARE
#: The longest engine deadline, as a share of the visibility timeout: half the chunk's budget,
#: so a segment that outlives its deadline fails alone (and a hard check's retry still fits)
#: before the chunk's budget sends the whole chunk back. A floor set above it is refused at
#: start-up (:class:`~mtfleet.core.settings.Settings`).
ENGINE_SHARE = ENGINE_DEADLINE_SHARE
#: Failed deliveries (:meth:`JobStore.failed_deliveries`) after which a chunk is a *suspect*
#: that runs alone (:class:`Gate`): it may be what killed the worker or engine it was in.
#: Once, it is more likely a bystander: a dead worker or engine takes every chunk it held
#: down with it, and running each of them alone would serialise them all.
SUSPECT_AFTER = 2
#: Share of its budget a chunk may wait at the gate (behind a suspect, or a suspect waiting
#: for the chunks in progress to finish); past it, it goes back uncharged.
GATE_SHARE = 0.5


class Requeue(Exception):
    """The chunk could not finish in its budget: what is done is recorded; the rest is
    requeued (nothing is lost, and the delivery counter bounds the retries)."""


class Recheck:
    """Whether a chunk that waited in the queue looks its texts up in the phrase cache again:
    only while that pays, as measured. A lookup costs the worker CPU and a round trip per
    segment (measured here); a hit saves the engine's time for a segment (the scheduler's
    measured busy seconds per segment). So on a GPU, where a segment costs milliseconds, a hit
    ratio of a few per mille pays and every waiting chunk looks; on an engine that costs next
    to nothing, or a backlog that never repeats itself, only every ``SAMPLE_EVERY``-th one
    does, to notice when that changes."""

    SAMPLE_EVERY = 16

    def __init__(self) -> None:
        self.hit_ratio = 0.05  # prior: look until the hits are measured
        self.cost_s = 5e-6  # per segment looked up
        self._lock = threading.Lock()
        self._passed = 0

    def wanted(self, engine_s_per_segment: float | None) -> bool:
        with self._lock:
            if engine_s_per_segment is None or self.hit_ratio * engine_s_per_segment > self.cost_s:
                return True
            self._passed += 1
            if self._passed >= self.SAMPLE_EVERY:
                self._passed = 0
                return True
            return False

    def observe(self, segments: int, hits: int, seconds: float) -> None:
        if segments <= 0:
            return
        weight = min(1.0, segments / 500)  # a few chunks' worth of memory
        with self._lock:
            self.hit_ratio += (hits / segments - self.hit_ratio) * weight
            self.cost_s += (seconds / segments - self.cost_s) * weight


class GateTimeout(Exception):
    """A chunk waited at the gate past its share of the budget."""


class Gate:
    """Shared/exclusive gate over chunk processing (exclusive holders go first). Every wait
    has a deadline: past it, :class:`GateTimeout` (the chunk goes back, uncharged)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting_exclusive = 0

    @contextlib.contextmanager
    def hold(self, *, exclusive: bool, timeout: float) -> Iterator[None]:
        with self._cond:
            if exclusive:
                self._waiting_exclusive += 1
                try:
                    free = self._cond.wait_for(
                        lambda: not self._exclusive and self._shared == 0, timeout
                    )
                finally:
                    self._waiting_exclusive -= 1
                if not free:
                    self._cond.notify_all()  # shared chunks held back by this one may go
                    raise GateTimeout(f"chunks in progress did not finish within {timeout:.0f}s")
                self._exclusive = True
            else:
                if not self._cond.wait_for(
                    lambda: not self._exclusive and not self._waiting_exclusive, timeout
                ):
                    raise GateTimeout(f"a chunk running alone did not finish within {timeout:.0f}s")
                self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                if exclusive:
                    self._exclusive = False
                else:
                    self._shared -= 1
                self._cond.notify_all()


def rewrapped(seg_wraps: dict[int, tuple[str, str]] | None, index: int, text: str) -> str:
    """``text`` (a translation of a normalised text) with index's own outer whitespace."""
    if seg_wraps is None:
        return text
    wrap = seg_wraps.get(index)
    return text if wrap is None else f"{wrap[0]}{text}{wrap[1]}"


def dead_letter(store: JobStore, msg: ChunkMessage, indices: list[int], *, reason: str) -> Any:
    """Fail a chunk's segments with ``reason`` and list it once on the dead-letter list;
    returns the job's status after the write."""
    reason = f"{reason}; it was dead-lettered"
    # The dead-letter entry first (written once per chunk), then the failed results, which may
    # finish the job: whoever sees the job final finds the entry listed. A crash between the
    # two leaves the chunk unacknowledged; delivered again, it is over its limit again and its
    # results are written then (the entry is not listed twice).
    entry = deadletters.entry(msg.job_id, msg.chunk, msg.lane.value, reason)
    if store.dead_letter(msg.job_id, msg.chunk, entry):
        log.error("dead-lettering job %s chunk %s: %s", msg.job_id, msg.chunk, reason)
        metrics.DEAD_LETTERED.inc()
    err = DeadLettered(reason).as_dict()
    return store.record(
        msg.job_id,
        [(i, SegmentOutcome(error=err)) for i in indices],
        chunk=msg.chunk,
        pool=msg.pool,
        lane=msg.lane.value,
    )


class InteractiveFirst:
    """A worker's bulk chunks give way to its interactive ones for the CPU.

    Every chunk's thread shares one interpreter, so an interactive chunk's steps (its scripts,
    its outputs' checks) queue for the GIL behind bulk chunks' checks, which cost ~0.3 ms of
    CPU per segment (the language detector) and come in bursts of hundreds when a bulk batch
    returns. While an interactive chunk is being processed, bulk chunks wait before each slice
    of that work — at most ``max_wait_s`` at a time, so bulk never stalls behind a stream of
    interactive work (measured with ``make bench``: Apertium's interactive p95 under a bulk
    backlog)."""

    def __init__(self, max_wait_s: float = 0.05) -> None:
        self.max_wait_s = max_wait_s
        self._active = 0
        self._cond = threading.Condition()

    @contextlib.contextmanager
    def interactive(self) -> Iterator[None]:
        with self._cond:
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                if not self._active:
                    self._cond.notify_all()

    def bulk_turn(self) -> None:
        """Wait (bounded) while interactive chunks are in progress."""
        if self._active:
            with self._cond:
                self._cond.wait_for(lambda: not self._active, timeout=self.max_wait_s)


class ChunkRun:
    """One delivery of a chunk in progress: the segments it still owes, what each step left
    to do (``todo``: positions in ``segments``) and the outcomes so far, by result index.

    Built by :meth:`ChunkProcessor._start`; every later step reads and advances it, so the
    chunk's path reads top to bottom in :meth:`ChunkProcessor._process`."""

    def __init__(
        self,
        msg: ChunkMessage,
        all_indices: list[int],
        pending: set[int],
        where: dict[str, Any],
    ) -> None:
        self.msg = msg
        self.all_indices = all_indices
        self.pending = pending
        self.where = where
        self.segments = (
            msg.segments  # a first delivery: nothing of it is written yet
            if len(pending) == len(all_indices)
            else [s for s in msg.segments if any(i in pending for i in s.indices)]
        )
        self.todo: list[int] = []
        self.outcomes: list[tuple[int, SegmentOutcome]] = []
        self.cache_hits = 0
        gv = msg.glossary_version if msg.glossary_id else None
        self.glossary_version = gv
        # the phrase cache's key part
        self.variant = cache_variant(gv, msg.guidance, msg.memory, msg.protected_patterns)

    def deliver(self, seg_index: int, outcome: SegmentOutcome) -> None:
        """``outcome`` for every pending index of the ``seg_index``-th segment, each with its
        own outer whitespace."""
        seg = self.segments[seg_index]
        for i in seg.indices:
            if i not in self.pending:
                continue
            if outcome.ok and outcome.translation is not None and seg.wraps:
                text = rewrapped(seg.wraps, i, outcome.translation)
                self.outcomes.append((i, outcome.model_copy(update={"translation": text})))
            else:
                self.outcomes.append((i, outcome))

    def fail_all(self, error: dict[str, Any]) -> None:
        for n in range(len(self.segments)):
            self.deliver(n, SegmentOutcome(error=error))

    def key(self, n: int) -> str:
        """The ``n``-th segment's phrase-cache key part (its text and context)."""
        seg = self.segments[n]
        return keyed(seg.text, seg.context)

    def serve(self, served: Callable[[int], SegmentOutcome | None]) -> int:
        """Deliver what ``served`` has for the segments left to do (None: nothing); the rest
        stays to do. Returns how many were served."""
        rest = []
        for n in self.todo:
            outcome = served(n)
            if outcome is None:
                rest.append(n)
            else:
                self.deliver(n, outcome)
        served_n = len(self.todo) - len(rest)
        self.todo = rest
        return served_n


class Aids:
    """What a chunk's translation is helped by: its glossary's matcher, the protected patterns
    (the glossary's and the request's, checked by the API) and its translation memory."""

    def __init__(self, store: JobStore, run: ChunkRun) -> None:
        """Raises GlossaryNotFound, TMNotFound or BadPattern (every segment then fails)."""
        msg = run.msg
        self.matcher: Matcher | None = None
        self.memory: ChunkMemory | None = None
        if msg.glossary_id:
            self.matcher = GlossaryStore(store.r).matcher(
                msg.glossary_id, run.glossary_version or ""
            )
        mine = self.matcher.glossary.protected_patterns if self.matcher else []
        self.patterns = compiled(tuple(dict.fromkeys([*mine, *(msg.protected_patterns or ())])))
        if msg.memory is not None:
            index = TranslationMemoryStore(store.r).index(msg.memory.id, msg.memory.version)
            self.memory = ChunkMemory(index, msg.memory)


class EngineCall:
    """The chunk's segments left to do, through the scheduler within the chunk's budget: the
    ``submit`` that :func:`checks.translate_checked` calls once, and again for a hard check's
    retries."""

    def __init__(
        self,
        run: ChunkRun,
        aids: Aids,
        scheduler: Callable[[], Scheduler],
        deadline: float,
        spent: Unfinished,
        terms_in_prompt: bool,
    ) -> None:
        self.run = run
        self.aids = aids
        self.scheduler = scheduler
        self.deadline = deadline
        self.spent = spent
        self.terms_in_prompt = terms_in_prompt
        self.priority = 0 if run.msg.lane is Lane.interactive else 1
        self.budget_ran_out = False

    def guided(self, n: int, prep: Protected) -> Guidance | None:
        """The job's guidance for the ``n``-th segment left to translate, with what is the
        segment's own: its neighbouring sentences (a document's), the glossary's terms it
        holds (an engine given them in its prompt) and, for an engine that follows
        instructions, the memory's near match to edit or its most similar pairs as examples
        (:class:`~mtfleet.workers.memory.ChunkMemory`)."""
        msg, seg = self.run.msg, self.run.segments[self.run.todo[n]]
        update: dict[str, Any] = {}
        if seg.context is not None:
            update["neighbours"] = seg.context
        if prep.placed and self.terms_in_prompt:
            update["terms"] = Matcher.listed(prep.placed)
        if self.aids.memory is not None:
            update.update(self.aids.memory.guidance(seg.text))
        if not update:
            return msg.guidance
        return (msg.guidance or Guidance()).model_copy(update=update)

    def __call__(self, batch: checks.Submitted) -> list[SegmentOutcome]:
        """The batch's outcomes; those the budget left unfinished are ``Unfinished``."""
        if self.budget_ran_out:  # (a hard check's retry after the budget ran out)
            return [error_outcome(self.spent)] * len(batch)
        msg = self.run.msg
        requests = [
            TranslationRequest(
                prep.text, msg.source, msg.target, self.priority, msg.adapter, self.guided(n, prep)
            )
            for n, prep in batch
        ]
        scheduler = self.scheduler()
        ticket = scheduler.submit(requests, job_id=msg.job_id)  # EngineUnavailable: requeued
        if ticket.wait(max(self.deadline - time.monotonic(), 0.0)):
            return ticket.result()
        self.budget_ran_out = True
        scheduler.cancel(ticket, self.spent)
        return [o if o is not None else error_outcome(self.spent) for o in ticket.partial()]


def _cached(hit: str | None) -> SegmentOutcome | None:
    """A phrase-cache hit as a segment's outcome (None: no hit)."""
    return None if hit is None else SegmentOutcome(translation=hit, cached=True)


class ChunkProcessor:
    def __init__(
        self,
        settings: Settings,
        store: JobStore,
        cache: PhraseCache,
        scheduler: Callable[[], Scheduler],
        fingerprint: Callable[[str | None], str | None],
        down: Callable[[], str | None] = lambda: None,
        terms_in_prompt: Callable[[], bool] = lambda: False,
        quality: QualityStep | None = None,
    ) -> None:
        """``scheduler`` and ``fingerprint`` (of the base model or a LoRA adapter; None: no such
        adapter): the current engine's (it may be restarted);
        ``down``: why the engine is down, None while it serves; ``terms_in_prompt``: whether
        the engine takes a glossary's terms in its prompt (:attr:`Engine.terms_in_prompt`);
        ``quality``: the worker's quality-estimation step (default: none, so a chunk asking
        for scores gets each translation's warning that it was not scored)."""
        self.settings = settings
        self.quality = quality or QualityStep(settings.quality, settings.worker.pool_name)
        self.down = down
        self.terms_in_prompt = terms_in_prompt
        self.store = store
        self.cache = cache
        self.scheduler = scheduler
        self.fingerprint = fingerprint
        self.gate = Gate()
        self.lanes = InteractiveFirst()
        self.recheck = Recheck()
        self.budget_s = settings.worker.visibility_timeout_s * BUDGET_SHARE
        self.chunk_segments = float(settings.backlog.chunk_size)  # running mean segments per chunk

    def process(self, msg: ChunkMessage) -> dict[str, Any]:
        """One chunk, within its budget (``MT_VISIBILITY_TIMEOUT_S`` x ``BUDGET_SHARE``, from
        now: its wait at the gate included).

        A chunk whose deliveries failed ``SUSPECT_AFTER`` times already (:meth:`suspect`) may be
        what killed the worker or engine it was in: it runs alone, with no other chunk started
        meanwhile, so if it kills this one too, only its own count rises. A chunk that failed
        once runs beside the others (the broker's redelivered flag would not tell: a dead
        worker's chunks all come back with it, and one that went back from a live worker
        without it); innocent chunks beside a poison one are charged at most
        ``SUSPECT_AFTER`` times, then run alone and finish, and the poison chunk reaches
        ``MT_MAX_DELIVERIES`` and is dead-lettered. Waiting at the gate is bounded (``GATE_SHARE``
        of the budget; then :class:`Requeue`, uncharged)."""
        deadline = time.monotonic() + self.budget_s
        alone = self.suspect(msg)
        try:
            with self.gate.hold(exclusive=alone, timeout=self.budget_s * GATE_SHARE):
                # asked here, once through the gate: a chunk that waited behind a suspect which
                # brought the engine down goes back without being charged a delivery
                reason = self.down()
                if reason is not None:
                    raise EngineUnavailable(f"the engine is down: {reason}")
                if msg.lane is Lane.interactive:
                    with self.lanes.interactive():
                        return self._process(msg, deadline)
                return self._process(msg, deadline)
        except GateTimeout as exc:
            raise Requeue(f"chunk {msg.chunk} did not get its turn: {exc}") from exc

    def suspect(self, msg: ChunkMessage) -> bool:
        """Whether the chunk runs alone: its failed deliveries reached ``SUSPECT_AFTER`` (at
        most ``MT_MAX_DELIVERIES`` - 1, so its last delivery always runs alone) and it is not
        over the limit (then it is dead-lettered without the engine)."""
        limit = self.settings.worker.max_deliveries
        failed = self.store.failed_deliveries(msg.job_id, msg.chunk)
        return max(1, min(SUSPECT_AFTER, limit - 1)) <= failed < limit

    def _engine_s_per_segment(self) -> float | None:
        rate = self.scheduler().meter.rate()
        return None if not rate else 1.0 / rate

    def _process(self, msg: ChunkMessage, deadline: float) -> dict[str, Any]:
        """The chunk's steps, in order (the module's docstring tells them)."""
        run = self._start(msg)
        if not isinstance(run, ChunkRun):
            return run  # nothing to translate: what happened instead
        try:
            aids = Aids(self.store, run)
        except (GlossaryNotFound, TMNotFound, BadPattern) as exc:
            return self._fail(run, exc.as_dict())
        fp = self.fingerprint(msg.adapter)
        if fp is None:  # a worker of the pool without the adapter the API found in the registry
            return self._fail(
                run,
                {
                    "type": "unknown_adapter",
                    "message": f"this worker of pool {msg.pool} has no LoRA adapter "
                    f"{msg.adapter!r}",
                },
            )
        self._take_given(run)
        self._recheck_cache(run, fp)
        self._serve_from_memory(run, aids)
        translated = len(run.todo)
        call, elapsed, retried = self._translate(run, aids, fp, deadline)
        self._score(run)
        if call.budget_ran_out:
            self._requeue(run)
        return self._finish(run, translated=translated, engine_s=elapsed, retried=retried)

    def _start(self, msg: ChunkMessage) -> ChunkRun | dict[str, Any]:
        """Count the delivery and learn which indices still need a result (one round trip):
        the chunk's run, or what happened instead (the job is gone or final, every result is
        written already, or the chunk is over ``MT_MAX_DELIVERIES`` and dead-lettered)."""
        all_indices = [i for seg in msg.segments for i in seg.indices]
        where: dict[str, Any] = {"pool": msg.pool, "lane": msg.lane.value}
        status, deliveries, pending = self.store.start_chunk(
            msg.job_id, msg.chunk, all_indices, **where
        )
        if status is None:
            return {"skipped": "job expired or deleted"}
        if not deliveries:  # final, or cancelling and this chunk was not in flight
            return {"skipped": f"job {status.value}"}
        if not pending:
            # redelivered after it wrote every result (its worker died before the ack): done,
            # not a poison chunk however often it was delivered
            final = self.store.record(msg.job_id, [], chunk=msg.chunk, **where)
            return {
                "skipped": "every segment has its result",
                "job_status": final.value if final else None,
            }
        limit = self.settings.worker.max_deliveries
        if deliveries > limit and self.store.failed_deliveries(msg.job_id, msg.chunk) > limit:
            reason = (
                f"chunk {msg.chunk} was delivered {deliveries} times without finishing "
                f"(limit MT_MAX_DELIVERIES={limit})"
            )
            final = dead_letter(self.store, msg, all_indices, reason=reason)
            return {"dead_lettered": True, "job_status": final.value if final else None}
        return ChunkRun(msg, all_indices, pending, where)

    def _fail(self, run: ChunkRun, error: dict[str, Any]) -> dict[str, Any]:
        """Every segment of the chunk fails with ``error`` (its glossary, memory or adapter
        is missing), recorded."""
        run.fail_all(error)
        final = self.store.record(run.msg.job_id, run.outcomes, chunk=run.msg.chunk, **run.where)
        return {"failed": len(run.outcomes), "job_status": final.value if final else None}

    def _take_given(self, run: ChunkRun) -> None:
        """Segments that came with their translation (a quality evaluation's, to be scored)
        are delivered as given, never the engine's; the rest are to do."""
        for n, seg in enumerate(run.segments):
            if seg.translation is None:
                run.todo.append(n)
            else:
                run.deliver(n, SegmentOutcome(translation=seg.translation))

    def _recheck_cache(self, run: ChunkRun, fp: str) -> None:
        """Look the chunk's texts up in the phrase cache again when it may pay: the job asked
        for quality estimation (the API did not look: the worker scores what it finds), or the
        chunk waited in the queue (:class:`Recheck`). Nothing for a request that reads no
        cache."""
        msg = run.msg
        if not msg.cache_read or not (
            msg.quality_estimation
            or (
                time.time() - msg.enqueued_at >= RECHECK_AFTER_S
                and self.recheck.wanted(self._engine_s_per_segment())
            )
        ):
            return
        looked = time.perf_counter()
        hits = self.cache.get_many(
            lookup(
                fp,
                msg.source,
                msg.target,
                (run.key(n) for n in range(len(run.segments))),
                glossary=run.variant,
                scope=msg.cache_scope,
            )
        )
        self.recheck.observe(len(run.segments), len(hits), time.perf_counter() - looked)
        if hits:
            before = len(run.outcomes)
            run.serve(lambda n: _cached(hits.get(run.key(n))))
            run.cache_hits = len(run.outcomes) - before
        metrics.CACHE_LOOKUPS.labels("hit").inc(len(run.segments) - len(run.todo))
        metrics.CACHE_LOOKUPS.labels("miss").inc(len(run.todo))

    def _serve_from_memory(self, run: ChunkRun, aids: Aids) -> None:
        """An exact match in the translation memory (once the segment's placeables are carried
        over) is the translation, whatever the engine (never the phrase cache's: the memory
        may change)."""
        memory = aids.memory
        if memory is not None:
            run.serve(lambda n: memory.served(run.segments[n].text))

    def _translate(
        self, run: ChunkRun, aids: Aids, fp: str, deadline: float
    ) -> tuple[EngineCall, float, int]:
        """The segments left to do through the engine with the glossary applied and every
        output check, within the chunk's budget; what passed is cached, and every outcome but
        those the budget left unfinished is delivered. Returns the engine call (did the budget
        run out?), its seconds and how many segments a hard check retried."""
        msg, s = run.msg, self.settings.worker
        spent = Unfinished(f"chunk {msg.chunk}'s time budget ({seconds(self.budget_s)}) ran out")
        terms_in_prompt = aids.matcher is not None and self.terms_in_prompt()
        call = EngineCall(run, aids, self.scheduler, deadline, spent, terms_in_prompt)
        t0 = time.monotonic()
        results, retried = checks.translate_checked(
            call,
            [run.segments[n].text for n in run.todo],
            checks.CheckConfig(msg.source, msg.target, s.check_length_ratio, s.check_language),
            aids.matcher,
            pause=self.lanes.bulk_turn if msg.lane is Lane.bulk else None,
            terms_in_prompt=terms_in_prompt,
            patterns=aids.patterns,
        )
        elapsed = time.monotonic() - t0
        self._keep(run, results, aids, fp)
        return call, elapsed, retried

    def _keep(self, run: ChunkRun, results: list[SegmentOutcome], aids: Aids, fp: str) -> None:
        """Deliver the engine's outcomes (an unfinished one gets none: its next delivery
        translates it) and cache what passed with no warning."""
        msg = run.msg
        to_cache = {}
        for n, outcome in zip(run.todo, results, strict=True):
            if outcome.error is not None and outcome.error.get("type") == Unfinished.code:
                continue  # no result: its next delivery translates it
            if aids.memory is not None:
                outcome = aids.memory.named(run.segments[n].text, outcome)
            # (a chunk of a request with use_cache=no, or a no-trace one, writes nothing)
            if (
                msg.cache_write
                and outcome.ok
                and outcome.translation is not None
                and not outcome.warnings
            ):
                to_cache[run.key(n)] = outcome.translation
            run.deliver(n, outcome)
        self.cache.put_many(
            fp,
            msg.source,
            msg.target,
            to_cache,
            job_id=msg.job_id,
            glossary=run.variant,
            scope=msg.cache_scope,
        )

    def _score(self, run: ChunkRun) -> None:
        """Segments aborted because their job was cancelled get no result, like the chunks
        that never started (what this chunk finished is kept, and its record settles the
        cancel); then the scores, when the job asked for quality estimation (after the cache
        took the translations as they are)."""
        run.outcomes = [
            (i, o)
            for i, o in run.outcomes
            if o.error is None or o.error.get("type") != Cancelled.code
        ]
        if run.msg.quality_estimation:
            sources = {i: seg.text for seg in run.segments for i in seg.indices}
            run.outcomes = self.quality.apply(run.outcomes, sources)

    def _requeue(self, run: ChunkRun) -> None:
        """The budget ran out: what is done is kept (the chunk stays in the ledger, and a
        delivery that recorded something is not charged); the rest goes back."""
        msg = run.msg
        self.store.record(msg.job_id, run.outcomes, **run.where)
        if run.outcomes:
            self.store.progressed(msg.job_id, msg.chunk)
        raise Requeue(
            f"chunk {msg.chunk} did not finish within its {seconds(self.budget_s)} budget: "
            f"{len(run.outcomes)} of {len(run.pending)} segments recorded, the rest goes back"
        )

    def _finish(
        self, run: ChunkRun, *, translated: int, engine_s: float, retried: int
    ) -> dict[str, Any]:
        """Record the chunk's outcomes (one round trip) and count it."""
        msg, outcomes = run.msg, run.outcomes
        final = self.store.record(msg.job_id, outcomes, chunk=msg.chunk, **run.where)
        failed = sum(1 for _, o in outcomes if not o.ok)
        self.chunk_segments += (len(run.all_indices) - self.chunk_segments) * 0.1
        metrics.observe_chunk(
            pool=msg.pool or "",
            lane=msg.lane.value,
            segments=len(outcomes),
            cached=run.cache_hits,
            failed=failed,
            latency_s=time.time() - msg.enqueued_at,
        )
        if final is not None and final.final:
            metrics.JOB_LATENCY.labels(msg.pool or "", msg.lane.value).observe(
                time.time() - msg.enqueued_at
            )
        return {
            "segments": len(outcomes),
            "translated": translated,
            "cache_hits": run.cache_hits,
            "failed": failed,
            "engine_s": round(engine_s, 4),
            "retried": retried,
            "job_status": final.value if final else None,
        }
