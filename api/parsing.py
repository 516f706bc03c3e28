"""Documents are read and rendered in child processes, each under a deadline and a memory limit.

A document is untrusted input whose cost is not its size: a 400 KB Markdown file of nested
emphasis, a 16 KB DOCX that inflates to millions of elements. Each format bounds what it can
see (:data:`mtfleet.formats.base.MAX_NESTING`, the DOCX archive's limits...), and this
module bounds the rest, whatever the format and whatever the parser: a document is cut
(:func:`cut`) and rendered (:func:`render_file`) in a pool of worker processes, so

* a call that runs past ``MT_DOCUMENT_DEADLINE_S`` is stopped by killing its process (a
  pure-Python parser cannot be interrupted from another thread, and a C one not at all), and
  answered 422 ``document_too_complex``;
* a call that needs more than ``MT_DOCUMENT_MEMORY_MB`` of memory (``RLIMIT_DATA`` in the
  child) fails there, and is answered 422 the same way; the API's own memory never holds a
  parse tree;
* parsing holds no lock of the API process: ``/healthz`` and cached translations answer at
  their usual speed while a large document is read.

The pool is pebble's (a process pool made for this: it kills and replaces a worker whose task
runs past its timeout, which :class:`concurrent.futures.ProcessPoolExecutor` cannot). Workers
start on first use and are replaced after a number of tasks (memory a parser keeps is given
back). They are forked from multiprocessing's fork server (``forkserver``), never from the API:
a fork of a threaded server with open Redis connections is not safe, and the fork server is a
fresh interpreter, started once, that imports every format (:data:`PRELOAD`) and then forks
each worker; a worker, first or replacement, then starts without importing them again
(measured 2026-12-07, a pool of two: 0.63-0.77 CPU-seconds in all against 0.96-1.37 with
``spawn``, which imports them in each).
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import resource
import threading
import time
from collections.abc import Sequence
from typing import Any

from pebble import ProcessExpired, ProcessPool

from mtfleet import formats as documents
from mtfleet.api import metrics
from mtfleet.api.shares import KeyShares
from mtfleet.core.errors import RateLimited, Unavailable
from mtfleet.core.settings.documents import DocumentSettings
from mtfleet.formats import fragments
from mtfleet.formats.base import DocumentError, Rendered, Unit, reading, unit_budget
from mtfleet.formats.pipeline import Cut, assemble, plan, units_of, untranslated

#: Tasks a worker process runs before it is replaced.
TASKS_PER_WORKER = 200
#: What the fork server imports once for every worker it forks: this module and every format.
PRELOAD = [__name__, *(f"{documents.__name__}.{name}" for name in documents.MODULES)]
#: Calls of one API key that may wait for its share of the processes, per process of it.
QUEUED_PER_SHARE = 4


class DocumentTooComplex(DocumentError):
    """A document that needs more time or memory to read than the limits give (HTTP 422)."""

    code = "document_too_complex"


# --- what the child processes run ----------------------------------------------------------------


def _limit_memory(megabytes: int) -> None:
    limit = megabytes * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def _extract(fmt_name: str, content: bytes, max_segments: int | None = None) -> list[Unit]:
    """The document's units; with ``max_segments``, the reading stops (DocumentTooLarge) once
    it has made more units than a job of that many sentences can come from."""
    fmt = documents.for_name(fmt_name)
    with reading(fmt.name):
        if max_segments is None:
            return fmt.extract(content)
        with unit_budget(max_segments):
            return fmt.extract(content)


def _cut(
    fmt_name: str, content: bytes, lang: str, keep_units: bool, max_segments: int
) -> tuple[list[Unit] | None, Cut]:
    units = _extract(fmt_name, content, max_segments)
    return (units if keep_units else None), _replan(units, lang, max_segments)


def _replan(units: list[Unit], lang: str, max_segments: int) -> Cut:
    p = plan(units, lang, limit=max_segments)
    return Cut(p.segments, p.unit_of)


def _render(
    fmt_name: str,
    content: bytes,
    source_lang: str,
    translations: Sequence[str | None],
    target_lang: str,
    review: Sequence[int] = (),
) -> Rendered:
    fmt = documents.for_name(fmt_name)
    with reading(fmt.name):
        doc = fmt.open(content)  # read once: its units, and the render of their translations
    p = plan(doc.units, source_lang)
    if len(translations) != len(p.segments):  # cannot happen unless the format changed
        raise DocumentError(
            f"the document now has {len(p.segments)} segments, the job {len(translations)}"
        )
    texts, missing = assemble(p, translations), untranslated(p, translations)
    with reading(fmt.name):
        return doc.render(texts, missing, target_lang, units_of(p, set(review)))


def _cut_fragments(texts: list[str], lang: str, how: fragments.Cutting) -> list[list[str]]:
    with reading(how.markup, "text"):
        return fragments.cut(texts, lang, how)


def _warm() -> None:
    """Import what reading documents needs (every format, the sentence rules)."""
    documents.formats()
    plan([Unit("Warm up. The sentence rules are loaded now.")], "en")


def _render_fragments(
    texts: list[str],
    lang: str,
    how: fragments.Cutting,
    translations: list[list[str | None]],
) -> list[str]:
    with reading(how.markup, "text"):
        return fragments.render(texts, lang, how, translations)


# --- the pool, in the API process ----------------------------------------------------------------


def _forkserver() -> multiprocessing.context.ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)  # read when the fork server starts
    return context


class DocumentPool:
    """The API's document workers (started on first use)."""

    def __init__(self, settings: DocumentSettings, max_segments: int) -> None:
        """``max_segments``: the most a job may have (``MT_MAX_SEGMENTS_PER_JOB``): a document
        of more is refused while it is read."""
        self.deadline_s = settings.document_deadline_s
        self.memory_mb = settings.document_memory_mb
        self.workers = settings.document_workers
        self.max_segments = max_segments
        # one key's share: its calls running or waiting for a process; a few more of its
        # calls (files uploaded together) wait for its share, the next are refused
        share = settings.document_workers_per_key or max(1, self.workers // 2)
        self.shares = KeyShares(
            share,
            f"of the {self.workers} document processes",
            "MT_DOCUMENT_WORKERS_PER_KEY",
            queue=QUEUED_PER_SHARE * share,
            wait_s=2 * self.deadline_s + 10,
        )
        self._pool: ProcessPool | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the worker processes now and have each load the formats and the sentence
        rules (the API does before it serves: a first document otherwise waits seconds for
        a process to spawn and import them)."""
        pool = self._get()
        warm = [pool.schedule(_warm) for _ in range(self.workers)]
        concurrent.futures.wait(warm, timeout=60)

    def _get(self) -> ProcessPool:
        with self._lock:
            if self._pool is None or not self._pool.active:
                self._pool = ProcessPool(
                    max_workers=self.workers,
                    max_tasks=TASKS_PER_WORKER,
                    initializer=_limit_memory,
                    initargs=(self.memory_mb,),
                    context=_forkserver(),
                )
            return self._pool

    def _run(self, op: str, what: str, owner: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        outcome = "ok"
        try:
            with self.shares.hold(owner):
                return self._call(what, fn, *args, **kwargs)
        except RateLimited:
            outcome = "refused"
            raise
        except DocumentTooComplex:
            outcome = "too_complex"
            raise
        except DocumentError:
            outcome = "refused"
            raise
        finally:
            metrics.DOCUMENT_WORK.labels(op, outcome).observe(time.perf_counter() - t0)

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        future = self._get().schedule(fn, args=args, kwargs=kwargs, timeout=self.deadline_s)
        # The deadline runs from when a worker starts the task; a caller waits for a free
        # worker at most as long again.
        done, _ = concurrent.futures.wait([future], timeout=2 * self.deadline_s + 10)
        if not done:
            future.cancel()
            raise Unavailable("every document worker is busy; retry in a moment")
        try:
            return future.result()
        except TimeoutError:
            raise DocumentTooComplex(
                f"{what} took longer than {self.deadline_s:g} s (MT_DOCUMENT_DEADLINE_S); "
                "split it into smaller files"
            ) from None
        except MemoryError:
            raise DocumentTooComplex(
                f"{what} needs more than {self.memory_mb} MiB of memory "
                "(MT_DOCUMENT_MEMORY_MB); split it into smaller files"
            ) from None
        except ProcessExpired as exc:
            raise DocumentTooComplex(
                f"{what} stopped the process reading it ({exc}); it may need more than "
                f"{self.memory_mb} MiB of memory (MT_DOCUMENT_MEMORY_MB)"
            ) from None

    # Every call names the API key it is made for (``owner``: its share of the processes).
    # A document is read with a budget: past what one job may carry, the reading stops.

    def cut(self, fmt_name: str, content: bytes, lang: str, owner: str = "") -> Cut:
        """The segments the document cuts into for ``lang`` (and the unit of each)."""
        what = f"reading this {fmt_name} document"
        args = (fmt_name, content, lang, False, self.max_segments)
        return self._run("read", what, owner, _cut, *args)[1]

    def cut_keeping_units(
        self, fmt_name: str, content: bytes, lang: str, owner: str = ""
    ) -> tuple[list[Unit], Cut]:
        """The document's units too (sent back only when they are cut again: ``replan``)."""
        what = f"reading this {fmt_name} document"
        args = (fmt_name, content, lang, True, self.max_segments)
        return self._run("read", what, owner, _cut, *args)

    def replan(self, units: list[Unit], lang: str, owner: str = "") -> Cut:
        """The segments of ``units`` cut for another language."""
        what = "cutting this document into sentences"
        return self._run("read", what, owner, _replan, units, lang, self.max_segments)

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
        """The translated file (``None``: the sentence has no translation, see
        :meth:`~mtfleet.formats.base.DocumentFormat.render_result`; ``review``: the
        sentences whose translations a translator should review, marked where the format
        can) and the format's warnings."""
        return self._run(
            "render",
            f"rendering this {fmt_name} document",
            owner,
            _render,
            fmt_name,
            content,
            source_lang,
            list(translations),
            target_lang,
            list(review),
        )

    def cut_fragments(
        self, texts: Sequence[str], lang: str, how: fragments.Cutting, owner: str = ""
    ) -> list[list[str]]:
        """Each short text's segments (:func:`mtfleet.formats.fragments.cut`). Markup is
        read here, in a document worker; plain text in the calling thread (sentence splitting
        only: it needs neither the deadline nor a worker a large document may hold)."""
        if not how.in_markup:
            return _cut_fragments(list(texts), lang, how)
        what = f"reading these texts as {how.markup}"
        result: list[list[str]] = self._run(
            "read", what, owner, _cut_fragments, list(texts), lang, how
        )
        return result

    def render_fragments(
        self,
        texts: Sequence[str],
        lang: str,
        how: fragments.Cutting,
        translations: Sequence[Sequence[str | None]],
        owner: str = "",
    ) -> list[str]:
        """The texts put back from their segments' translations (the same split as
        :meth:`cut_fragments`)."""
        done = [list(t) for t in translations]
        if not how.in_markup:
            return _render_fragments(list(texts), lang, how, done)
        what = f"putting these {how.markup} texts back together"
        result: list[str] = self._run(
            "render", what, owner, _render_fragments, list(texts), lang, how, done
        )
        return result

    def run(self, op: str, owner: str, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` in a document process for ``owner`` (another module's
        heavy work on a client's file: ``fn`` a module-level function, its arguments and
        answer picklable; ``op`` its metrics label, ``what`` names it in an error)."""
        return self._run(op, what, owner, fn, *args, **kwargs)

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.stop()
                self._pool.join(timeout=5)
                self._pool = None
