"""core/lua/*.lua through core/scripts.py on fakeredis (Lua 5.1, as in Redis): every script
loads and documents its KEYS and ARGV; the scripts that take one argument per segment work for
jobs of 10,000 segments (a plain ``unpack`` of that many values fails with "too many results to
unpack"; lib.lua's helpers batch it). The same on a real server: tests/integration."""

from __future__ import annotations

import re

import fakeredis
import pytest

from mtfleet.core import keys, scripts
from mtfleet.core.models import JobStatus, Lane, Progress, SegmentOutcome
from mtfleet.core.store import JobRecord, JobStore, new_job_id
from tests.support import script_names

N = 10_000


@pytest.fixture
def r() -> fakeredis.FakeRedis:
    return fakeredis.FakeRedis(decode_responses=True)


@pytest.fixture
def store(r: fakeredis.FakeRedis) -> JobStore:
    return JobStore(r, result_ttl_s=3600)


def header(name: str) -> str:
    """The comment lines a script file opens with."""
    text = (scripts.LUA_DIR / f"{name}.lua").read_text()
    lines = []
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        lines.append(line)
    return "\n".join(lines)


def test_there_are_scripts_and_lib_is_not_one_of_them() -> None:
    names = script_names()
    assert "lib" not in names
    for used in ("create_job", "record_results", "start_chunk", "cancel_job", "fail_job"):
        assert used in names
    assert names == sorted(names)


@pytest.mark.parametrize("name", script_names())
def test_every_script_loads(r: fakeredis.FakeRedis, name: str) -> None:
    source = scripts.source(name)
    assert source.startswith((scripts.LUA_DIR / "lib.lua").read_text())  # lib in front
    sha = r.script_load(source)
    assert re.fullmatch(r"[0-9a-f]{40}", sha)
    assert r.script_exists(sha) == [True]
    assert scripts.register(r, name).sha == sha


@pytest.mark.parametrize("name", script_names())
def test_every_script_opens_with_a_comment_naming_its_keys_and_argv(name: str) -> None:
    text = (scripts.LUA_DIR / f"{name}.lua").read_text()
    assert text.startswith("-- "), name
    head = header(name)
    assert re.search(r"\bKEYS\b", head), f"{name}.lua: no KEYS in its opening comment"
    assert re.search(r"\bARGV\b", head), f"{name}.lua: no ARGV in its opening comment"


def test_the_sandbox_has_the_unpack_limit(r: fakeredis.FakeRedis) -> None:
    """What makes the tests below mean something: the Lua here fails on a plain unpack of N
    values, as Redis's does."""
    try:
        r.eval("return #{unpack(ARGV)}", 0, *range(N))
    except Exception as exc:  # noqa: BLE001 - the error type is fakeredis's
        assert "unpack" in str(exc)
    else:
        pytest.skip("this fakeredis's Lua has no unpack limit; tests/integration covers it")


def job(total: int) -> JobRecord:
    return JobRecord(
        id=new_job_id(),
        status=JobStatus.queued,
        lane=Lane.bulk,
        source_lang="en",
        target_lang="es",
        progress=Progress(done=0, failed=0, total=total),
        cached=0,
        created_at=1.0,
    )


def test_start_chunk_with_10000_indices_on_a_redelivery(store: JobStore) -> None:
    j = job(N)
    store.create(j, cached={}, ledger={0: "{}"})
    indices = list(range(N))
    status, deliveries, pending = store.start_chunk(j.id, 0, indices, lane="bulk")
    assert (status, deliveries, pending) == (JobStatus.running, 1, set(indices))
    # the first delivery dies after writing every third result
    written = [(i, SegmentOutcome(translation=f"t{i}")) for i in indices if i % 3 == 0]
    store.record(j.id, written)
    status, deliveries, pending = store.start_chunk(j.id, 0, indices, lane="bulk")
    assert status is JobStatus.running and deliveries == 2
    assert pending == {i for i in indices if i % 3}
    # every result written, the job final: a third delivery does not start (nor count)
    store.record(j.id, [(i, SegmentOutcome(translation="x")) for i in sorted(pending)], chunk=0)
    status, deliveries, pending = store.start_chunk(j.id, 0, indices, lane="bulk")
    assert (status, deliveries, pending) == (JobStatus.succeeded, 0, set())


def test_start_chunk_on_a_gone_job(store: JobStore) -> None:
    assert store.start_chunk("nope", 0, list(range(N))) == (None, 0, set())


def test_create_job_with_10000_cached_results_and_chunks(store: JobStore) -> None:
    j = job(2 * N)
    cached = {i: SegmentOutcome(translation=f"c{i}", cached=True) for i in range(N)}
    ledger = {c: f'{{"chunk": {c}}}' for c in range(N)}
    assert store.create(j, cached=cached, ledger=ledger) is None
    assert store.get(j.id) == j
    results = store.results(j.id, 2 * N)
    assert results[:N] == [cached[i] for i in range(N)]
    assert results[N:] == [None] * N
    assert store.r.hlen(keys.job_chunks(j.id)) == N
    assert store.r.hget(keys.job_chunks(j.id), str(N - 1)) == f'{{"chunk": {N - 1}}}'


def test_record_results_with_10000_outcomes(store: JobStore) -> None:
    j = job(N)
    store.create(j, cached={}, ledger={0: "{}"})
    outcomes = [(i, SegmentOutcome(translation=str(i))) for i in range(N)]
    assert store.record(j.id, outcomes, chunk=0) is JobStatus.succeeded
    assert store.get(j.id).progress == Progress(done=N, failed=0, total=N)
    # a repeat changes nothing (HSETNX)
    assert store.record(j.id, outcomes, chunk=0) is JobStatus.succeeded
    assert store.get(j.id).progress == Progress(done=N, failed=0, total=N)


def test_a_job_is_finalised_in_one_place() -> None:
    """Setting a final status, dropping the ledger, leaving the active sets and announcing the
    job: lib.lua's finalize, which every script that ends a job calls."""
    lib = (scripts.LUA_DIR / "lib.lua").read_text()
    assert "local function finalize(" in lib and "'PUBLISH'" in lib
    callers = []
    for name in script_names():
        body = (scripts.LUA_DIR / f"{name}.lua").read_text()
        assert "'PUBLISH'" not in body and "finished_at" not in body, name
        if "finalize(" in body:
            callers.append(name)
    assert sorted(callers) == ["cancel_job", "fail_job", "record_results"]
