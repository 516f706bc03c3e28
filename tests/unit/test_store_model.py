"""core/store.py's one job model: JobRecord <-> the job hash (job_to_hash / job_from_hash), and
a job created through JobStore.create reads back equal (fakeredis, the real Lua scripts)."""

from __future__ import annotations

import json

import fakeredis
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mtfleet.core import keys
from mtfleet.core.models import JobStatus, Lane, Progress, SegmentOutcome
from mtfleet.core.store import (
    COMPUTED_FIELDS,
    JobRecord,
    JobStore,
    encode_outcome,
    job_from_hash,
    job_to_hash,
    new_job_id,
)


def full_job(**overrides: object) -> JobRecord:
    """A JobRecord with every field set to something other than its default."""
    fields: dict[str, object] = {
        "id": new_job_id(),
        "status": JobStatus.partial,
        "lane": Lane.interactive,
        "source_lang": "auto",
        "target_lang": "zh-Hant",
        "progress": Progress(done=7, failed=2, total=10),
        "cached": 3,
        "created_at": 1_700_000_000.123456,
        "started_at": 1_700_000_001.5,
        "finished_at": 1_700_000_002.25,
        "error": {"type": "engine_error", "message": "boom", "details": [1, "two", None]},
        "document_format": "html",
        "detected_source_lang": "en",
        "detected_confidence": 0.42,
        "chunks": 4,
        "owner": "key-123",
        "document_name": 'a "quoted" name {not json}.html',
        "segment_langs": ["en", None, "fr"],
        "chars": 42,
        "callback_url": "https://hooks.example.com/mt?shop=1&x=%20y",
        "pool": "hunyuan-fp8",
        "adapter": "legal.v2",
        "model_type_used": "quality_optimized",
        "no_trace": True,
        "delivered_at": 1_700_000_003.5,
        "idempotency_key": "mt:idem:abc",
    }
    fields.update(overrides)
    return JobRecord(**fields)  # type: ignore[arg-type]


def test_every_field_is_set_in_the_full_job() -> None:
    job = full_job()
    defaults = JobRecord(
        id="x", status=JobStatus.queued, lane=Lane.bulk, source_lang="en", target_lang="es",
        progress=Progress(done=0, failed=0, total=0), cached=0, created_at=0.0,
    )  # fmt: skip
    stored = [n for n in JobRecord.model_fields if n not in COMPUTED_FIELDS]
    unchanged = [n for n in stored if getattr(job, n) == getattr(defaults, n)]
    assert unchanged == []  # a new field must be added to full_job (and to this round trip)


def test_a_computed_field_is_never_stored() -> None:
    job = full_job(work={"queued": 1, "in_flight": 2, "oldest_in_flight_s": 3.0})
    raw = job_to_hash(job)
    assert COMPUTED_FIELDS and not COMPUTED_FIELDS & raw.keys()
    assert job_from_hash({**raw, "work": json.dumps({"queued": 9, "in_flight": 9})}).work is None


def test_round_trip_of_every_field() -> None:
    job = full_job()
    raw = job_to_hash(job)
    assert job_from_hash(raw) == job
    # what the hash holds: text as text, numbers/lists/dicts as JSON, progress flat
    assert raw["id"] == job.id
    assert raw["status"] == "partial" and raw["lane"] == "interactive"
    assert raw["source_lang"] == "auto" and raw["target_lang"] == "zh-Hant"
    assert raw["owner"] == "key-123" and raw["document_format"] == "html"
    assert raw["document_name"] == 'a "quoted" name {not json}.html'  # text, not JSON
    assert (raw["done"], raw["failed"], raw["total"]) == ("7", "2", "10")
    assert "progress" not in raw
    assert json.loads(raw["error"]) == job.error
    assert json.loads(raw["segment_langs"]) == ["en", None, "fr"]
    assert json.loads(raw["created_at"]) == job.created_at  # exact float
    assert json.loads(raw["cached"]) == 3 and json.loads(raw["chunks"]) == 4
    assert all(isinstance(v, str) for v in raw.values())


def test_none_fields_are_left_out_and_come_back_none() -> None:
    job = full_job(
        started_at=None,
        finished_at=None,
        error=None,
        document_format=None,
        detected_source_lang=None,
        document_name=None,
        segment_langs=None,
    )
    raw = job_to_hash(job)
    for name in (
        "started_at",
        "finished_at",
        "error",
        "document_format",
        "detected_source_lang",
        "document_name",
        "segment_langs",
    ):
        assert name not in raw, name
    assert job_from_hash(raw) == job


def test_numbers_the_scripts_wrote_read_back() -> None:
    # record_results.lua HINCRBYs done/failed and HSETs started_at/finished_at as plain numbers
    raw = job_to_hash(full_job(status=JobStatus.running, finished_at=None))
    raw.update({"done": "9", "failed": "1", "started_at": "1700000005.75"})
    raw["finished_at"] = "1700000006"
    job = job_from_hash(raw)
    assert job.progress == Progress(done=9, failed=1, total=10)
    assert job.started_at == 1700000005.75 and job.finished_at == 1700000006.0


def test_unknown_hash_fields_are_ignored() -> None:
    raw = job_to_hash(full_job())
    assert job_from_hash({**raw, "from_a_newer_version": "x"}) == full_job(id=raw["id"])


@pytest.mark.parametrize("text", ["", "null", "123", "true", "[1]", '{"a": 1}', "  spaced  "])
def test_text_fields_that_look_like_json_stay_text(text: str) -> None:
    job = full_job(owner=text, document_name=text)
    assert job_from_hash(job_to_hash(job)) == job


@pytest.fixture
def store() -> JobStore:
    return JobStore(fakeredis.FakeRedis(decode_responses=True), result_ttl_s=3600)


def test_a_created_job_reads_back_equal(store: JobStore) -> None:
    job = full_job(status=JobStatus.queued, finished_at=None, started_at=None)
    cached = {0: SegmentOutcome(translation="hola", cached=True)}
    assert store.create(job, cached=cached, ledger={0: "{}"}) is None
    assert store.get(job.id) == job
    assert store.status(job.id) is JobStatus.queued
    assert store.results(job.id, 2)[0] == cached[0]
    assert store.r.ttl(keys.job(job.id)) > 0


def test_a_minimal_job_reads_back_equal(store: JobStore) -> None:
    job = JobRecord(
        id=new_job_id(),
        status=JobStatus.queued,
        lane=Lane.bulk,
        source_lang="en",
        target_lang="es",
        progress=Progress(done=0, failed=0, total=3),
        cached=0,
        created_at=1.0,
    )
    store.create(job, cached={})
    assert store.get(job.id) == job


def test_the_store_moves_progress_and_status_on_the_same_record(store: JobStore) -> None:
    job = full_job(
        status=JobStatus.queued,
        progress=Progress(done=0, failed=0, total=2),
        started_at=None,
        finished_at=None,
        error=None,
    )
    store.create(job, cached={}, ledger={0: "{}"})
    store.record(job.id, [(0, SegmentOutcome(translation="a"))])
    running = store.get(job.id)
    assert running.status is JobStatus.running and running.started_at is not None
    assert running.progress == Progress(done=1, failed=0, total=2)
    store.record(job.id, [(1, SegmentOutcome(error={"type": "x", "message": "y"}))], chunk=0)
    final = store.get(job.id)
    assert final.status is JobStatus.partial and final.finished_at is not None
    assert final.progress == Progress(done=1, failed=1, total=2)
    # everything else is as created
    same = {"status", "progress", "started_at", "finished_at"}
    assert final.model_dump(exclude=same) == job.model_dump(exclude=same)


def test_an_idempotency_key_returns_the_earlier_value(store: JobStore) -> None:
    first, second = full_job(status=JobStatus.queued), full_job(status=JobStatus.queued)
    idem = ("mt:idem:test", f"{first.id} digest", 60)
    assert store.create(first, cached={}, idempotency=idem) is None
    assert store.create(second, cached={}, idempotency=("mt:idem:test", "other", 60)) == (
        f"{first.id} digest"
    )
    assert store.get(first.id) == first
    assert not store.r.exists(keys.job(second.id))


@given(
    st.builds(
        SegmentOutcome,
        translation=st.none() | st.text(),
        error=st.none() | st.just({"type": "engine_error", "message": "boom"}),
        warnings=st.lists(st.just({"type": "length_ratio", "message": "long"}), max_size=1),
        cached=st.booleans(),
        memory_score=st.none() | st.floats(0, 100),
        quality=st.none() | st.floats(0, 25),
    )
)
def test_an_outcome_is_stored_as_pydantic_writes_it_and_reads_back_equal(
    outcome: SegmentOutcome,
) -> None:
    """A bare translation's written directly (the common case, without pydantic): the same
    bytes as pydantic's, any text, and read back equal, as any other outcome."""
    stored = encode_outcome(outcome)
    assert stored == outcome.model_dump_json(exclude_none=True, exclude_defaults=True)
    assert SegmentOutcome.model_validate_json(stored) == outcome
