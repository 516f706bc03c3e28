"""What a job gives back: its result (translations, errors, warnings aligned with its texts)
and, for a document job, the translated file.

A document is rendered once per state of its job: the rendering is kept beside the job
(:func:`mtfleet.core.keys.job_rendered`) with the number of segments it was made from, so
reading a final job's result or download again costs one Redis read and no parsing.
"""

from __future__ import annotations

from functools import partial

from fastapi.concurrency import run_in_threadpool

from mtfleet.api import documents
from mtfleet.api.parsing import DocumentPool
from mtfleet.core.errors import JobNotFound
from mtfleet.core.events import CompletionWaiter
from mtfleet.core.models import SegmentOutcome
from mtfleet.core.schemas import (
    DocumentOut,
    JobResultPublic,
    MemoryMatch,
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
    for i, o in enumerate(outcomes):
        translations.append(o.translation if o is not None and o.ok else None)
        if o is None:
            continue
        if o.memory_score is not None:
            memory.append(MemoryMatch(index=i, score=o.memory_score))
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
            return job, self.result(job, known)
        final = partial(self.store.afinal, job.id)
        await self.waiter.wait_async(job.id, final, 0 if job.status.final else timeout)
        job, outcomes = await self.store.aget_with_results(job.id)
        if not job.status.final:
            return job, None
        if job.document_format is not None:  # rendered in the thread pool
            return job, await run_in_threadpool(self.result, job)
        return job, assemble(job, outcomes)

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
        outcomes = self.outcomes(job, known)
        result = assemble(job, outcomes)
        if job.document_format is not None:
            result.document = self.document(job, outcomes)
        return result

    def document(
        self, job: JobRecord, outcomes: list[SegmentOutcome | None] | None = None
    ) -> DocumentOut:
        """A document job's translated file, rendered once per state of the job."""
        settled = job.progress.done + job.progress.failed
        kept = self.store.get_rendered(job.id, settled)
        if kept is not None:
            return DocumentOut.model_validate_json(kept)
        content = self.store.get_document(job.id)
        if content is None:
            raise JobNotFound(f"job {job.id}'s document is gone (it may have expired)")
        if outcomes is None:
            outcomes = self.outcomes(job)
        out = documents.render(job, content, outcomes, self.pool)
        self.store.put_rendered(job.id, settled, out.model_dump_json())
        return out
