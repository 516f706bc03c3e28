"""What a job gives back: its result (translations, errors, warnings aligned with its texts)
and, for a document job, the translated file.

A document is rendered once per state of its job: the rendering is kept beside the job
(:func:`mtfleet.core.keys.job_rendered`) with the number of segments it was made from, so
reading a final job's result or download again costs one Redis read and no parsing.

A no-trace job's final result is delivered once: the read that hands it out (the synchronous
answer, ``GET /v1/jobs/{id}/result`` or ``/document``, a drop-in's answer or download) deletes
its texts and results in the same step (:meth:`mtfleet.core.store.JobStore.delivered`), and a
second read is :class:`~mtfleet.core.errors.ResultDelivered` (410). A partial read of an
unfinished job delivers nothing.
"""

from __future__ import annotations

import time
from functools import partial

from fastapi.concurrency import run_in_threadpool

from mtfleet.api import documents
from mtfleet.api.parsing import DocumentPool
from mtfleet.core.errors import JobNotFound, ResultDelivered
from mtfleet.core.events import CompletionWaiter
from mtfleet.core.models import Finding, SegmentOutcome
from mtfleet.core.schemas import (
    DocumentOut,
    JobResultPublic,
    MemoryMatch,
    QualityScore,
    SegmentError,
    SegmentWarning,
)
from mtfleet.core.store import JobRecord, JobStore


def assemble(job: JobRecord, outcomes: list[SegmentOutcome | None]) -> JobResultPublic:
    """The public result of ``outcomes`` (one per text, None where not done yet)."""
    translations: list[str | None] = []
    errs: list[SegmentError] = []
    warns: list[SegmentWarning] = []
    memory: list[MemoryMatch] = []
    quality: list[QualityScore] = []
    for i, o in enumerate(outcomes):
        translations.append(o.translation if o is not None and o.ok else None)
        if o is None:
            continue
        if o.memory_score is not None:
            memory.append(MemoryMatch(index=i, score=o.memory_score))
        if o.quality is not None:
            low = any(w.get("type") == Finding.low_quality for w in o.warnings)
            quality.append(QualityScore(index=i, score=o.quality, low_quality=low))
        if o.error:
            errs.append(
                SegmentError(
                    index=i,
                    type=str(o.error.get("type", "error")),
                    message=str(o.error.get("message", "")),
                )
            )
        warns += [
            SegmentWarning(
                index=i, type=str(w.get("type", "warning")), message=str(w.get("message", ""))
            )
            for w in o.warnings
        ]
    return JobResultPublic(
        id=job.id,
        status=job.status,
        translations=translations,
        errors=errs,
        warnings=warns,
        memory=memory,
        quality=quality,
        detected_langs=job.segment_langs,
    )


class Results:
    def __init__(self, store: JobStore, pool: DocumentPool, waiter: CompletionWaiter) -> None:
        self.store = store
        self.pool = pool
        self.waiter = waiter

    async def settled(
        self, job: JobRecord, timeout: float, known: dict[int, SegmentOutcome] | None = None
    ) -> tuple[JobRecord, JobResultPublic | None]:
        """A job just submitted, once final, with its result (None: not final after
        ``timeout``). ``known``: the outcomes found at submission; when they are every text's,
        nothing is read. Otherwise the wait, the job and its outcomes happen on the event
        loop (asyncio Redis, one round trip for the reads): no thread-pool hop."""
        if known is not None and len(known) == job.progress.total:
            if job.document_format is not None:
                return job, self.result(job, known)
            result = assemble(job, self.outcomes(job, known))
            if job.no_trace:
                await self.adelivered(job)
            return job, result
        final = partial(self.store.afinal, job.id)
        await self.waiter.wait_async(job.id, final, 0 if job.status.final else timeout)
        job, outcomes = await self.store.aget_with_results(job.id)
        if not job.status.final:
            return job, None
        if job.document_format is not None:  # rendered in the thread pool
            return job, await run_in_threadpool(self.result, job)
        undelivered(job)
        result = assemble(job, outcomes)
        if job.no_trace:
            await self.adelivered(job)
        return job, result

    async def adelivered(self, job: JobRecord) -> None:
        """:meth:`delivered` on the event loop."""
        if not await self.store.adelivered(job):
            raise delivered_already(job.id, None)

    def delivered(self, job: JobRecord) -> None:
        """A no-trace job's final result is being handed out: its texts and results go now;
        ResultDelivered when another read (or its webhook) took it first (this read must not
        hand it out). Nothing for any other job, or a partial read."""
        if job.no_trace and job.status.final and not self.store.delivered(job):
            raise delivered_already(job.id, None)

    async def wait_final(self, job: JobRecord, timeout: float) -> JobRecord:
        """The job once it is final, or as it is after ``timeout`` (waited on the event loop)."""
        if job.status.final:
            return job
        await self.waiter.wait_async(job.id, partial(self.store.afinal, job.id), timeout)
        return await self.store.aget(job.id)

    def outcomes(
        self, job: JobRecord, known: dict[int, SegmentOutcome] | None = None
    ) -> list[SegmentOutcome | None]:
        """Every text's outcome so far; ``known`` (the outcomes of a job answered entirely at
        submission) saves the read."""
        total = job.progress.total
        if known is not None and len(known) == total:
            return [known[i] for i in range(total)]
        return self.store.results(job.id, total)

    def result(
        self, job: JobRecord, known: dict[int, SegmentOutcome] | None = None
    ) -> JobResultPublic:
        """The job's result; a document job's carries the translated file."""
        undelivered(job)
        outcomes = self.outcomes(job, known)
        result = assemble(job, outcomes)
        if job.document_format is not None:
            result.document = self._document(job, outcomes)
        self.delivered(job)
        return result

    def document(self, job: JobRecord) -> DocumentOut:
        """A document job's translated file, rendered once per state of the job (a no-trace
        job's final file: delivered once)."""
        undelivered(job)
        out = self._document(job)
        self.delivered(job)
        return out

    def _document(
        self, job: JobRecord, outcomes: list[SegmentOutcome | None] | None = None
    ) -> DocumentOut:
        settled = job.progress.done + job.progress.failed
        kept = self.store.get_rendered(job.id, settled)
        if kept is not None:
            return DocumentOut.model_validate_json(kept)
        content = self.store.get_document(job.id)
        if content is None:
            if job.no_trace:  # another read delivered it meanwhile
                raise delivered_already(job.id, None)
            raise JobNotFound(f"job {job.id}'s document is gone (it may have expired)")
        if outcomes is None:
            outcomes = self.outcomes(job)
        out = documents.render(job, content, outcomes, self.pool)
        self.store.put_rendered(job.id, settled, out.model_dump_json())
        return out


def undelivered(job: JobRecord) -> None:
    """ResultDelivered for a no-trace job whose result was delivered already."""
    if job.delivered_at is not None:
        raise delivered_already(job.id, job.delivered_at)


def delivered_already(job_id: str, at: float | None) -> ResultDelivered:
    when = f" at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(at))}" if at is not None else ""
    return ResultDelivered(
        f"job {job_id} is no-trace: its result was delivered once{when} and deleted with its "
        "texts; nothing of it is kept to read again"
    )
