"""A no-trace job's delivery (core/lua/job_delivered.lua through JobStore.delivered, on
fakeredis with the real scripts): the first call deletes its texts and results and leaves a
record saying when; a second (a racing reader) is told it came too late; the job's
Idempotency-Key record goes only when it still names the job; a job's other keys stay."""

from __future__ import annotations

import fakeredis
import pytest

from mtfleet.core import keys
from mtfleet.core.models import JobStatus, Lane, Progress, SegmentOutcome
from mtfleet.core.store import JobRecord, JobStore, new_job_id


@pytest.fixture
def store() -> JobStore:
    return JobStore(fakeredis.FakeRedis(decode_responses=True), result_ttl_s=3600)


def no_trace_job(idempotency_key: str = "") -> JobRecord:
    return JobRecord(
        id=new_job_id(),
        status=JobStatus.succeeded,
        lane=Lane.interactive,
        source_lang="en",
        target_lang="es",
        progress=Progress(done=1, failed=0, total=1),
        cached=0,
        created_at=1.0,
        finished_at=2.0,
        document_format="html",
        document_name="board minutes.html",
        no_trace=True,
        idempotency_key=idempotency_key,
    )


def test_the_first_delivery_deletes_texts_and_results_and_leaves_a_record(
    store: JobStore,
) -> None:
    idem = "mt:idem:abc"
    job = no_trace_job(idem)
    outcome = {0: SegmentOutcome(translation="Las actas de la junta")}
    store.create(job, cached=outcome, document=b"<p>The board minutes</p>")
    store.r.set(idem, f"{job.id} digest")
    store.put_rendered(job.id, 1, '{"content": "<p>Las actas</p>"}')
    store.r.hset(keys.document_access(job.id), "token", "secret")
    assert store.delivered(job) is True
    for gone in (keys.job_results(job.id), keys.job_document(job.id), keys.job_rendered(job.id)):
        assert not store.r.exists(gone), gone
    assert not store.r.exists(idem)  # a resend is a new request
    kept = store.get(job.id)
    assert kept.delivered_at is not None and kept.no_trace and kept.document_name is None
    assert kept.status is JobStatus.succeeded and kept.progress.done == 1
    assert store.r.exists(keys.document_access(job.id))  # a second download reaches the 410
    assert store.delivered(job) is False  # the reader that came second hands nothing out


def test_an_idempotency_record_of_another_job_stays(store: JobStore) -> None:
    idem = "mt:idem:reused"
    job = no_trace_job(idem)
    store.create(job, cached={0: SegmentOutcome(translation="hola")})
    store.r.set(idem, f"{new_job_id()} digest")  # expired and reused by a later job
    assert store.delivered(job) is True
    assert store.r.exists(idem)


def test_a_gone_job_is_not_delivered(store: JobStore) -> None:
    assert store.delivered(no_trace_job()) is False
