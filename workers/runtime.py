"""Everything a worker process holds: engine, scheduler, job store, phrase cache, heartbeat.

:meth:`WorkerRuntime.process` is the body of one chunk. It may run more than once for the same
chunk (at-least-once delivery) and is written to be idempotent: segments that already have a
result are skipped, results are written with HSETNX, and a chunk delivered more than
``MT_MAX_DELIVERIES`` times is dead-lettered instead of looping forever.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from core import keys
from core.cache import PhraseCache, normalize, rewrap
from core.errors import DeadLettered, EngineUnavailable
from core.glossary import GlossaryNotFound, GlossaryStore
from core.models import ChunkMessage, JobStatus, Lane, SegmentOutcome
from core.redis_conn import connect
from core.registry import Registry, WorkerInfo
from core.settings import Settings
from core.store import JobStore
from workers import checks, metrics
from workers.batching import pull_window
from workers.engines import Engine, TranslationRequest, create_engine
from workers.scheduler import Scheduler

log = logging.getLogger(__name__)


class Gate:
    """Shared/exclusive gate over chunk processing (exclusive holders go first)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting_exclusive = 0

    @contextlib.contextmanager
    def hold(self, *, exclusive: bool) -> Iterator[None]:
        with self._cond:
            if exclusive:
                self._waiting_exclusive += 1
                self._cond.wait_for(lambda: not self._exclusive and self._shared == 0)
                self._waiting_exclusive -= 1
                self._exclusive = True
            else:
                self._cond.wait_for(lambda: not self._exclusive and not self._waiting_exclusive)
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


class WorkerRuntime:
    def __init__(self, settings: Settings, engine: Engine | None = None) -> None:
        self.settings = settings
        self.engine = engine or create_engine(settings)
        self.redis = connect(settings.redis_url)
        self.store = JobStore(self.redis, result_ttl_s=settings.result_ttl_s)
        self.cache = PhraseCache(connect(settings.effective_cache_url), ttl_s=settings.cache_ttl_s)
        self.registry = Registry(self.redis)
        self._engine_lock = threading.Lock()
        self._loaded = False
        self._scheduler: Scheduler | None = None
        self._stop = threading.Event()
        self._beat_thread: threading.Thread | None = None
        self._control_thread: threading.Thread | None = None
        self._reconciler: Any = None
        self._chunk_segments = float(settings.chunk_size)  # running mean segments per chunk
        self._gate = Gate()
        self.name = f"{os.getpid()}@{socket.gethostname()}"
        self.gpus: list[int] = [
            int(g) for g in os.environ.get("MT_WORKER_GPUS", "").split(",") if g.strip()
        ]

    # -- lifecycle -----------------------------------------------------------------------------
    def load(self) -> None:
        with self._engine_lock:
            if not self._loaded:
                t0 = time.monotonic()
                try:
                    self.engine.load()
                except Exception as exc:
                    raise EngineUnavailable(
                        f"engine {self.engine.name} failed to load: {exc}"
                    ) from exc
                self._scheduler = Scheduler(
                    self.engine,
                    latency_target_s=(
                        self.settings.interactive_latency_s
                        if "interactive" in self.settings.lanes
                        else None
                    ),
                    slowdown=self.settings.interactive_slowdown,
                )
                self._loaded = True
                log.info(
                    "engine %s (%s) loaded in %.1fs; pairs: %d",
                    self.engine.name,
                    self.engine.model,
                    time.monotonic() - t0,
                    len(self.engine.pairs()),
                )

    @property
    def scheduler(self) -> Scheduler:
        self.load()
        assert self._scheduler is not None
        return self._scheduler

    def info(self) -> WorkerInfo:
        return WorkerInfo(
            name=self.name,
            engine=self.engine.name,
            model=self.engine.model,
            fingerprint=self.engine.fingerprint,
            pairs=self.engine.pairs(),
            lanes=list(self.settings.lanes),
            gpus=self.gpus,
            cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
            tensor_parallel_size=self.settings.tensor_parallel_size,
            host=socket.gethostname(),
            pid=os.getpid(),
            started_at=time.time(),
        )

    def start_heartbeat(self, name: str | None = None) -> None:
        if name:
            self.name = name
        info = self.info()
        ttl = self.settings.heartbeat_s * 3

        def beat() -> None:
            while not self._stop.is_set():
                try:
                    self.registry.beat(info, ttl_s=ttl)
                except Exception as exc:  # noqa: BLE001 - keep beating through outages
                    log.warning("heartbeat failed: %s", exc)
                self._stop.wait(self.settings.heartbeat_s)

        self._beat_thread = threading.Thread(target=beat, name="registry-heartbeat", daemon=True)
        self._beat_thread.start()

    def start_control(self, consumer: Any = None) -> None:
        """Once a second: fold scheduler figures into metrics and resize the pull window.

        ``consumer`` is the Celery consumer; its ``qos`` (kombu ``QoS``, the prefetch count) is
        read at every step because Celery builds a new one when it reconnects; the consumer's loop
        applies a changed value before its next fetch.
        """

        # the first window now, before the consumer's loop makes its first fetch (Celery's
        # initial prefetch counts every thread, the interactive ones included)
        try:
            self.adjust_window(getattr(consumer, "qos", None))
        except Exception as exc:  # noqa: BLE001 - the loop below retries
            log.warning("window control failed: %s", exc)

        def control() -> None:
            while not self._stop.wait(1.0):
                try:
                    self.adjust_window(getattr(consumer, "qos", None))
                except Exception as exc:  # noqa: BLE001 - metrics must not kill the worker
                    log.warning("window control failed: %s", exc)

        self._control_thread = threading.Thread(target=control, name="mt-window", daemon=True)
        self._control_thread.start()

    def start_reconciler(self, app: Any) -> None:
        """Sweep for chunks the broker lost (:mod:`workers.reconciler`)."""
        from workers import reconciler

        self._reconciler = reconciler.start(self, app)

    def adjust_window(self, qos: Any = None) -> int:
        sched = self.scheduler
        rate = sched.tick()
        window = pull_window(
            chunk_size=max(1, round(self._chunk_segments)),
            max_chunks=self.settings.worker_concurrency,
            keep_full_segments=sched.keep_full_segments(),
            rate=rate,
            pull_ahead_s=self.settings.pull_ahead_s,
            visibility_timeout_s=self.settings.visibility_timeout_s,
        )
        metrics.WINDOW.set(window)
        metrics.THROUGHPUT.set(rate or 0.0)
        metrics.COST_FIXED.set(sched.cost.fixed_s)
        metrics.COST_PER_TOKEN.set(sched.cost.per_token_s)
        if qos is not None and qos.value != window:
            if window > qos.value:
                qos.increment_eventually(window - qos.value)
            else:
                qos.decrement_eventually(qos.value - window)
        return window

    def stop(self) -> None:
        self._stop.set()
        if self._beat_thread is not None:
            self._beat_thread.join(timeout=5)  # no beat may land after we leave
        if self._control_thread is not None:
            self._control_thread.join(timeout=5)
        if self._reconciler is not None:
            self._reconciler.stop()
        try:
            self.registry.leave(self.name)
        except Exception as exc:  # noqa: BLE001 - Redis may be gone at shutdown
            log.warning("could not leave the registry: %s", exc)
        if self._scheduler is not None:
            self._scheduler.close()
        self.engine.close()

    # -- one chunk -----------------------------------------------------------------------------
    def process(self, msg: ChunkMessage) -> dict[str, Any]:
        """One chunk. A chunk started before and never finished (its worker probably died
        under it) is a *suspect*: it runs alone, with no other chunk started meanwhile, so if it
        kills this worker too, only its own delivery count rises. Innocent chunks that were in
        a worker beside a poison one are charged once and then finish; the poison chunk reaches
        ``MT_MAX_DELIVERIES`` alone and is dead-lettered."""
        self.load()
        try:
            suspect = bool(self.redis.hget(keys.chunk_deliveries(msg.job_id), str(msg.chunk)))
        except Exception:  # noqa: BLE001 - start_chunk below reports Redis trouble
            suspect = False
        with self._gate.hold(exclusive=suspect):
            return self._process(msg)

    def _process(self, msg: ChunkMessage) -> dict[str, Any]:
        all_indices = [i for seg in msg.segments for i in seg.indices]
        status, deliveries, pending = self.store.start_chunk(
            msg.job_id,
            msg.chunk,
            all_indices,
            lane=msg.lane.value,
            enqueued_at=msg.enqueued_at,
        )
        if status is None:
            return {"skipped": "job expired or deleted"}
        if status.final:
            return {"skipped": f"job {status.value}"}
        if deliveries > self.settings.max_deliveries:
            reason = (
                f"chunk {msg.chunk} was delivered {deliveries} times without finishing "
                f"(limit MT_MAX_DELIVERIES={self.settings.max_deliveries})"
            )
            return self.dead_letter(msg, all_indices, reason=reason)

        segments = [s for s in msg.segments if any(i in pending for i in s.indices)]
        fp = self.engine.fingerprint
        gv = msg.glossary_version if msg.glossary_id else None  # part of the cache key
        matcher = None
        if msg.glossary_id:
            try:
                matcher = GlossaryStore(self.redis).matcher(msg.glossary_id, gv or "")
            except GlossaryNotFound as exc:
                gone = [
                    (i, SegmentOutcome(error=exc.as_dict())) for i in all_indices if i in pending
                ]
                final = self.store.record(msg.job_id, gone, chunk=msg.chunk)
                return {"failed": len(gone), "job_status": final.value if final else None}
        cached = self.cache.get_many(
            fp, msg.source, msg.target, (s.text for s in segments), glossary=gv
        )
        cache_hits = 0
        outcomes: list[tuple[int, SegmentOutcome]] = []
        todo: dict[str, list[int]] = {}  # normalized text -> indices (dedupe within the batch)
        original_of = {i: seg.text for seg in segments for i in seg.indices}
        for seg in segments:
            idxs = [i for i in seg.indices if i in pending]
            hit = cached.get(seg.text)
            if hit is not None:
                outcomes += [
                    (i, SegmentOutcome(translation=rewrap(seg.text, hit), cached=True))
                    for i in idxs
                ]
                cache_hits += len(idxs)
                continue
            norm = normalize(seg.text)
            todo.setdefault(norm, []).extend(idxs)

        priority = 0 if msg.lane is Lane.interactive else 1
        texts = list(todo)
        t0 = time.monotonic()

        def translate(batch: list[str]) -> list[SegmentOutcome]:
            requests = [TranslationRequest(t, msg.source, msg.target, priority) for t in batch]
            return self.scheduler.submit(requests).result()  # EngineUnavailable: requeued

        # glossary terms protected and restored, output checks, one retry on a hard failure
        check = checks.CheckConfig(
            msg.source, msg.target, self.settings.check_length_ratio, self.settings.check_language
        )
        results, retried = checks.translate_checked(translate, texts, check, matcher)
        elapsed = time.monotonic() - t0
        to_cache = {}
        for norm, outcome in zip(texts, results, strict=True):
            if outcome.ok and outcome.translation is not None and not outcome.warnings:
                to_cache[norm] = outcome.translation
            for i in todo[norm]:
                if outcome.ok and outcome.translation is not None:
                    text = rewrap(original_of[i], outcome.translation)
                    delivered = SegmentOutcome(translation=text, warnings=outcome.warnings)
                    outcomes.append((i, delivered))
                else:
                    outcomes.append((i, outcome))
        self.cache.put_many(fp, msg.source, msg.target, to_cache, glossary=gv)
        final = self.store.record(msg.job_id, outcomes, chunk=msg.chunk)
        failed = sum(1 for _, o in outcomes if not o.ok)
        self._chunk_segments += (len(all_indices) - self._chunk_segments) * 0.1
        metrics.CACHE_LOOKUPS.labels("hit").inc(len(cached))
        metrics.CACHE_LOOKUPS.labels("miss").inc(len({s.text for s in segments}) - len(cached))
        metrics.observe_chunk(
            lane=msg.lane.value,
            segments=len(outcomes),
            cached=cache_hits,
            failed=failed,
            latency_s=time.time() - msg.enqueued_at,
        )
        if final is not None:
            metrics.JOB_LATENCY.labels(msg.lane.value).observe(time.time() - msg.enqueued_at)
        return {
            "segments": len(outcomes),
            "translated": len(texts),
            "cache_hits": cache_hits,
            "failed": failed,
            "engine_s": round(elapsed, 4),
            "retried": retried,
            "job_status": final.value if final else None,
        }

    def dead_letter(self, msg: ChunkMessage, indices: list[int], *, reason: str) -> dict[str, Any]:
        """Fail a chunk's segments with ``reason`` and list it once on the dead-letter list."""
        reason = f"{reason}; it was dead-lettered"
        # The failed results first (idempotent: a chunk may be delivered again after this, or
        # this may crash half-way), then the dead-letter entry, written once per chunk.
        err = DeadLettered(reason).as_dict()
        final = self.store.record(
            msg.job_id, [(i, SegmentOutcome(error=err)) for i in indices], chunk=msg.chunk
        )
        entry = {
            "job_id": msg.job_id,
            "chunk": msg.chunk,
            "reason": reason,
            "at": time.time(),
            "lane": msg.lane.value,
        }
        if self.store.dead_letter(msg.job_id, msg.chunk, json.dumps(entry)):
            log.error("dead-lettering job %s chunk %s: %s", msg.job_id, msg.chunk, reason)
            metrics.DEAD_LETTERED.inc()
        return {"dead_lettered": True, "job_status": final.value if final else None}


__all__ = ["JobStatus", "WorkerRuntime"]
