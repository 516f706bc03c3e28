"""One object owns a worker process's life: :class:`WorkerRuntime`.

It holds what the process keeps (settings, Redis clients, job store, phrase cache, registry,
the engine and its scheduler) and the hooks of its life (:mod:`mtfleet.workers.hooks`), and is
driven by the Celery app's signals (:mod:`mtfleet.workers.celery_app`):

* ``boot(hostname)`` — ``worker_init``: load the engine, then every hook's ``boot`` (the first
  heartbeat) — before any message is taken;
* ``ready(consumer)`` — ``worker_ready``: every hook's ``ready`` (their loops start), then the
  start-up heap is frozen (:mod:`mtfleet.core.heap`);
* ``process(msg)`` — the task: one chunk (:class:`~mtfleet.workers.chunk.ChunkProcessor`);
* ``shutdown()`` — ``worker_shutdown``: hooks in reverse order, then the scheduler and the
  engine.

The hooks: :class:`~mtfleet.workers.heartbeat.Heartbeat`,
:class:`~mtfleet.workers.window.WindowControl`, :class:`~mtfleet.workers.releaser.Releaser`,
:class:`~mtfleet.workers.reconciler.Reconciler`,
:class:`~mtfleet.workers.cancellation.Cancellations` and
:class:`~mtfleet.workers.health.EngineHealth` (which restarts the engine through
:meth:`WorkerRuntime.restart_engine`).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from mtfleet.core.backlog import Backlog
from mtfleet.core.cache import PhraseCache
from mtfleet.core.deadletters import DeadLetters
from mtfleet.core.errors import EngineUnavailable
from mtfleet.core.heap import freeze_startup_heap
from mtfleet.core.models import ChunkMessage
from mtfleet.core.redis_conn import connect
from mtfleet.core.registry import Registry, WorkerInfo
from mtfleet.core.settings import Settings
from mtfleet.core.store import JobStore
from mtfleet.workers.cancellation import Cancellations
from mtfleet.workers.chunk import ENGINE_SHARE, ChunkProcessor
from mtfleet.workers.engines import Engine, create_engine
from mtfleet.workers.engines.base import TranslationRequest
from mtfleet.workers.gpustats import GpuStats
from mtfleet.workers.health import EngineHealth
from mtfleet.workers.heartbeat import Heartbeat
from mtfleet.workers.hooks import Hook
from mtfleet.workers.preflight import unserved_pairs
from mtfleet.workers.quality import QualityStep
from mtfleet.workers.reconciler import Reconciler
from mtfleet.workers.releaser import Releaser
from mtfleet.workers.scheduler import Deadlines, Scheduler, make_scheduler
from mtfleet.workers.stats import StatsSampler
from mtfleet.workers.window import WindowControl

log = logging.getLogger(__name__)

#: How long a thread may hold the GIL while another waits for it (CPython's default: 5 ms).
#: A worker runs dozens of chunk threads; an interactive chunk's path takes the GIL many times
#: (its message, its scripts, the engine's answer, its checks), and behind busy bulk threads
#: each time costs it up to the interval: measured here, an Apertium worker's interactive p95
#: under a bulk backlog went from 198 to 83 ms at 0.5 ms, bulk throughput unchanged.
GIL_SWITCH_INTERVAL_S = 0.0005


def new_instance_id() -> str:
    """This process's identity in the registry and on the broker (host, pid, a nonce: a
    restarted worker, or a reused pid, is a new instance)."""
    return f"{socket.gethostname()}.{os.getpid()}.{secrets.token_hex(3)}"


class WorkerRuntime:
    def __init__(
        self,
        settings: Settings,
        *,
        instance: str | None = None,
        engine_factory: Callable[[Settings], Engine] = create_engine,
    ) -> None:
        self.settings = settings
        self.instance = instance or new_instance_id()
        self.name = f"{os.getpid()}@{socket.gethostname()}"  # Celery's hostname, at boot
        self.started_at = time.time()
        self.gpus = [int(g) for g in os.environ.get("MT_WORKER_GPUS", "").split(",") if g.strip()]
        self.redis = connect(settings.redis.redis_url)
        self.store = JobStore(
            self.redis,
            result_ttl_s=settings.jobs.result_ttl_s,
            dead_letters=DeadLetters(
                self.redis,
                max_entries=settings.worker.dead_letter_max,
                ttl_s=settings.worker.dead_letter_ttl_s,
            ),
        )
        self.cache = PhraseCache(
            connect(settings.redis.effective_cache_url),
            ttl_s=settings.jobs.cache_ttl_s,
            job_ttl_s=settings.jobs.result_ttl_s,
        )
        self.registry = Registry(self.redis)
        self.engine_factory = engine_factory
        self.engine = engine_factory(settings)
        self._scheduler: Scheduler | None = None
        self._pairs_of: tuple[Engine | None, list[tuple[str, str]]] = (None, [])
        self._engine_lock = threading.Lock()
        self._jobs: Counter[str] = Counter()  # jobs with a chunk in progress here
        self._jobs_lock = threading.Lock()
        self.stats = StatsSampler()  # the panel's figures, from this process's metrics
        self.gpu_stats = GpuStats(self.gpus)
        self.heartbeat = Heartbeat(self.registry, self.info, settings.worker.heartbeat_s)
        self.health = EngineHealth(self.restart_engine, self.heartbeat.beat_now, self.probe)
        # MT_QE_MODEL, loaded at boot
        self.quality = QualityStep.from_settings(settings.quality, settings.worker.pool_name)
        self.chunks = ChunkProcessor(
            settings,
            self.store,
            self.cache,
            lambda: self.scheduler,
            lambda adapter: self.engine.fingerprint_for(adapter),
            lambda: self.health.reason,
            lambda: self.engine.terms_in_prompt,
            self.quality,
        )
        self.backlog = Backlog(self.redis, ttl_s=settings.jobs.result_ttl_s)
        self.releaser = Releaser(settings.worker, settings.backlog, self.backlog, self.store)
        self.hooks: list[Hook] = [
            self.heartbeat,
            self.health,
            WindowControl(
                settings.worker,
                settings.scheduler,
                lambda: self.scheduler,
                lambda: self.chunks.chunk_segments,
            ),
            self.releaser,
            Reconciler(settings.worker, self.redis, self.store, self.backlog, self.instance),
            Cancellations(self.redis, self.store, lambda: self.scheduler, self.held_jobs),
        ]

    # -- life --------------------------------------------------------------------------------
    def boot(self, hostname: str | None = None) -> None:
        """Load the engine and the quality-estimation model (EngineUnavailable when either
        cannot), then boot every hook."""
        if hostname:
            self.name = hostname
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
        self._scheduler = self._load(self.engine)
        try:
            self.quality.load()
        except Exception as exc:
            raise EngineUnavailable(
                f"the quality-estimation model {self.quality.model} (MT_QE_MODEL) failed to "
                f"load: {exc}"
            ) from exc
        for hook in self.hooks:
            hook.boot()

    def ready(self, consumer: Any) -> None:
        for hook in self.hooks:
            hook.ready(consumer)
        freeze_startup_heap()

    def shutdown(self) -> None:
        for hook in reversed(self.hooks):
            try:
                hook.shutdown()
            except Exception as exc:  # noqa: BLE001 - the rest must still stop
                log.warning("%s did not shut down cleanly: %s", hook.name, exc)
        if self._scheduler is not None:
            self._scheduler.close()
        self.engine.close()
        self.quality.close()

    @property
    def scheduler(self) -> Scheduler:
        if self._scheduler is None:
            raise EngineUnavailable("the engine is not loaded")
        return self._scheduler

    def _load(self, engine: Engine) -> Scheduler:
        t0 = time.monotonic()
        try:
            engine.load()
        except Exception as exc:
            raise EngineUnavailable(f"engine {engine.name} failed to load: {exc}") from exc
        unserved = unserved_pairs(self.settings, engine.pairs())
        if unserved:
            raise EngineUnavailable(unserved[0])
        s = self.settings
        scheduler = make_scheduler(
            engine,
            latency_target_s=s.scheduler.interactive_latency_s
            if "interactive" in s.worker.lanes
            else None,
            slowdown=s.scheduler.interactive_slowdown,
            deadlines=Deadlines(
                factor=s.worker.engine_deadline_factor,
                floor_s=s.worker.engine_deadline_floor_s,
                ceiling_s=s.worker.visibility_timeout_s * ENGINE_SHARE,
            ),
            on_engine_down=self.health.engine_down,
        )
        log.info(
            "engine %s (%s) loaded in %.1fs for pool %s; pairs: %d",
            engine.name,
            engine.model,
            time.monotonic() - t0,
            s.worker.pool_name,
            len(self._pairs(engine)),
        )
        return scheduler

    def restart_engine(self) -> None:
        """Replace a down engine with a freshly built and loaded one (EngineHealth calls
        this); the old one is closed first, on a thread of its own so a stuck engine cannot
        hold the restart."""
        with self._engine_lock:
            old_engine, old_scheduler = self.engine, self._scheduler
            if old_scheduler is not None:
                old_scheduler.close()
            closer = threading.Thread(target=old_engine.close, name="mt-engine-close", daemon=True)
            closer.start()
            closer.join(timeout=30)
            engine = self.engine_factory(self.settings)
            self._scheduler = self._load(engine)
            self.engine = engine
        freeze_startup_heap()

    def probe(self) -> None:
        """The engine serves: one short text of one of its pairs through the scheduler, within
        the engine's longest deadline (EngineUnavailable when it does not)."""
        pairs = self._pairs(self.engine)
        if not pairs:
            return
        source, target = pairs[0]
        scheduler = self.scheduler
        ticket = scheduler.submit([TranslationRequest("Engine check.", source, target)])
        if not ticket.wait(self.settings.worker.visibility_timeout_s * ENGINE_SHARE):
            scheduler.cancel(ticket, EngineUnavailable("the engine check did not finish"))
            raise EngineUnavailable("the engine check did not finish in time")
        outcome = ticket.result()[0]
        if not outcome.ok:
            error = outcome.error or {}
            raise EngineUnavailable(f"the engine check failed: {error.get('message', error)}")

    def info(self) -> WorkerInfo:
        """The registry entry, with the figures since the last one (called once per beat)."""
        e = self.engine
        return WorkerInfo(
            name=self.name,
            instance=self.instance,
            pool=self.settings.worker.pool_name,
            adapters=e.adapters(),
            healthy=self.health.healthy,
            unhealthy_reason=self.health.reason,
            engine=e.name,
            model=e.model,
            fingerprint=e.fingerprint,
            instructions=e.follows_instructions,
            quality_model=self.quality.model,
            model_type=self.settings.engine.model_type,
            pairs=self._pairs(e),
            lanes=list(self.settings.worker.lanes),
            gpus=self.gpus,
            cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
            tensor_parallel_size=self.settings.engine.tensor_parallel_size,
            pipeline_parallel_size=self.settings.engine.pipeline_parallel_size,
            host=socket.gethostname(),
            pid=os.getpid(),
            started_at=self.started_at,
            stats=self.stats.sample(),
            gpu_readings=self.gpu_stats.read(),
        )

    def _pairs(self, engine: Engine) -> list[tuple[str, str]]:
        """The pairs this worker offers: the engine's (asked once per engine: an LLM engine
        lists ~1,400), or those of them MT_PAIRS names."""
        if self._pairs_of[0] is not engine:
            pairs = engine.pairs()
            wanted = set(self.settings.worker.offered_pairs)
            self._pairs_of = (engine, [p for p in pairs if p in wanted] if wanted else pairs)
        return self._pairs_of[1]

    # -- one chunk ---------------------------------------------------------------------------
    def process(self, msg: ChunkMessage) -> dict[str, Any]:
        """One chunk; EngineUnavailable (requeue it) while the engine is down."""
        with self._jobs_lock:
            self._jobs[msg.job_id] += 1
        try:
            return self.chunks.process(msg)
        finally:
            with self._jobs_lock:
                self._jobs[msg.job_id] -= 1
                if not self._jobs[msg.job_id]:
                    del self._jobs[msg.job_id]

    def held_jobs(self) -> set[str]:
        with self._jobs_lock:
            return set(self._jobs)
