"""A chunk through the worker's real path (tests/support.py: the API's plan_chunks, the
production ChunkProcessor, the scheduler of the engine's kind, fakeredis): one bad segment fails
alone, a too-long segment fails alone, empty output is an error, each text keeps its own outer
whitespace (the engine never sees it), truncated output is delivered with a warning and never
cached, a dead engine sends the chunk back instead of failing its segments.

The engines are :class:`tests.support.ScriptedEngine`s (batch by default; ``streaming=True``
for the streaming path).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence

import pytest

from mtfleet.core import keys
from mtfleet.core.cache import lookup
from mtfleet.core.errors import EngineError, EngineUnavailable
from mtfleet.core.models import JobStatus, Lane, SegmentOutcome
from mtfleet.core.settings import Settings
from mtfleet.workers.chunk import Requeue
from mtfleet.workers.engines.base import EngineLimits, Translation, TranslationRequest
from tests.support import ChunkRun, ScriptedEngine, echo, run_chunk

KINDS = pytest.mark.parametrize("streaming", [False, True], ids=["batch", "streaming"])


def upper(req: TranslationRequest) -> str:
    return req.text.upper()


def boom(req: TranslationRequest) -> str | BaseException:
    return RuntimeError("device-side assert") if req.text == "BOOM" else req.text.upper()


def error_type(o: SegmentOutcome) -> str | None:
    return None if o.error is None else str(o.error["type"])


class ShortEngine(ScriptedEngine):
    """Always returns one output too few."""

    def translate(self, requests: Sequence[TranslationRequest]) -> list[str | Translation]:
        return super().translate(requests)[:-1]


class BatchOnlyMismatchEngine(ScriptedEngine):
    """Drops an output only for batches of more than one segment."""

    def translate(self, requests: Sequence[TranslationRequest]) -> list[str | Translation]:
        out = super().translate(requests)
        return out[:-1] if len(out) > 1 else out


class CharLimitEngine(ScriptedEngine):
    def __init__(self, max_chars: int) -> None:
        super().__init__(upper)
        self.max_chars = max_chars

    def check(self, request: TranslationRequest) -> str | None:
        if len(request.text) > self.max_chars:
            return f"{len(request.text)} characters; at most {self.max_chars} fit"
        return None


@KINDS
def test_translates_in_order(streaming: bool) -> None:
    engine = ScriptedEngine(streaming=streaming)
    out = run_chunk(["a", "b", "c"], engine)
    assert [o.translation for o in out] == ["[es] a", "[es] b", "[es] c"]
    assert all(o.ok and not o.warnings and not o.cached for o in out)
    assert sorted(engine.texts) == ["a", "b", "c"]


def test_a_batch_engine_gets_the_chunk_in_one_call() -> None:
    engine = ScriptedEngine()
    run_chunk([f"s{i}" for i in range(20)], engine)
    assert engine.batches == [[f"s{i}" for i in range(20)]]


@KINDS
def test_outer_whitespace_is_kept_and_never_sent(streaming: bool) -> None:
    engine = ScriptedEngine(upper, streaming=streaming)
    out = run_chunk(["  hi \n", "\tthere", "x  "], engine)
    assert [o.translation for o in out] == ["  HI \n", "\tTHERE", "X  "]
    assert sorted(engine.texts) == ["hi", "there", "x"]


@KINDS
def test_texts_differing_only_in_outer_whitespace_translate_once(streaming: bool) -> None:
    engine = ScriptedEngine(upper, streaming=streaming)
    texts = ["Red shoes", " Red shoes", "Red shoes\n", "\t Red shoes  "]
    out = run_chunk(texts, engine)
    assert [o.translation for o in out] == [
        "RED SHOES",
        " RED SHOES",
        "RED SHOES\n",
        "\t RED SHOES  ",
    ]
    assert engine.texts == ["Red shoes"]


def test_engine_output_whitespace_is_replaced_by_the_texts_own() -> None:
    out = run_chunk([" a ", "b"], ScriptedEngine(lambda r: f"\n  {r.text.upper()}  \n"))
    assert [o.translation for o in out] == [" A ", "B"]


@pytest.mark.parametrize("bad", [0, 13, 31])
def test_one_bad_segment_fails_alone_in_log_calls(bad: int) -> None:
    n = 32
    texts = [f"s{i}" for i in range(n)]
    texts[bad] = "BOOM"
    engine = ScriptedEngine(boom)
    out = run_chunk(texts, engine)
    for i, o in enumerate(out):
        if i == bad:
            assert o.translation is None and error_type(o) == "engine_error"
            assert o.error is not None
            assert "RuntimeError" in o.error["message"]
            assert "device-side assert" in o.error["message"]
        else:
            assert o.translation == texts[i].upper(), i
    assert len(engine.batches) <= 2 * math.log2(n) + 2
    assert engine.texts.count("BOOM") == math.log2(n) + 1  # halved down to itself, once


def test_two_bad_segments() -> None:
    texts = [f"s{i}" for i in range(16)]
    texts[2] = texts[11] = "BOOM"
    out = run_chunk(texts, ScriptedEngine(boom))
    failed = [i for i, o in enumerate(out) if not o.ok]
    assert failed == [2, 11]  # one text, two indices: the same outcome for both
    assert all(out[i].translation == texts[i].upper() for i in range(16) if i not in failed)


def test_a_streaming_request_failure_is_its_own() -> None:
    out = run_chunk(["a", "BOOM", "b"], ScriptedEngine(boom, streaming=True))
    assert [o.translation for o in out] == ["A", None, "B"]
    assert "device-side assert" in out[1].error["message"]  # type: ignore[index]


def test_engine_error_type_is_kept() -> None:
    (out,) = run_chunk(["a"], ScriptedEngine(lambda r: EngineError("model crashed")))
    assert out.error == {"type": "engine_error", "message": "model crashed"}


def test_persistent_output_mismatch_fails_every_segment() -> None:
    n = 8
    engine = ShortEngine()
    out = run_chunk([f"s{i}" for i in range(n)], engine)
    for o in out:
        assert o.translation is None and error_type(o) == "engine_output_mismatch"
        assert "returned 0 outputs for 1 inputs" in o.error["message"]  # type: ignore[index]
    # bisected all the way down: a full binary tree of calls
    assert len(engine.batches) == 2 * n - 1


def test_mismatch_only_for_batches_recovers_by_bisection() -> None:
    out = run_chunk(["a", "b", "c", "d"], BatchOnlyMismatchEngine(upper))
    assert [o.translation for o in out] == ["A", "B", "C", "D"]


@KINDS
def test_a_too_long_segment_fails_alone_and_is_never_sent(streaming: bool) -> None:
    engine = ScriptedEngine(upper, streaming=streaming, max_input_tokens=3)
    out = run_chunk(["short", "much too long for this engine", "  ok  "], engine)
    assert out[0].translation == "SHORT"
    assert out[1].translation is None and error_type(out[1]) == "segment_too_long"
    assert "this engine takes at most 3" in out[1].error["message"]  # type: ignore[index]
    assert out[2].translation == "  OK  "
    assert sorted(engine.texts) == ["ok", "short"]


def test_the_limit_checks_the_normalised_text() -> None:
    (out,) = run_chunk(["     hi     "], CharLimitEngine(max_chars=2))
    assert out.translation == "     HI     "


def test_all_too_long_never_calls_the_engine() -> None:
    engine = CharLimitEngine(max_chars=1)
    out = run_chunk(["ab", "cd"], engine)
    assert [error_type(o) for o in out] == ["segment_too_long"] * 2
    assert engine.batches == []


@KINDS
def test_empty_output_is_a_failed_segment_after_one_retry(streaming: bool) -> None:
    engine = ScriptedEngine(
        lambda r: "  \n" if r.text == "silent" else r.text.upper(), streaming=streaming
    )
    bench = ChunkRun(engine)
    try:
        out = bench.run(["loud", "silent"])
        assert out[0].translation == "LOUD"
        assert out[1].translation is None and error_type(out[1]) == "empty_output"
        assert engine.texts.count("silent") == 2 and engine.texts.count("loud") == 1
        assert bench.cached(["loud", "silent"]) == {"loud": "LOUD"}
    finally:
        bench.close()


@pytest.mark.parametrize("lane", [Lane.interactive, Lane.bulk])
def test_request_fields_are_passed_through(lane: Lane) -> None:
    seen: list[TranslationRequest] = []

    def spy(r: TranslationRequest) -> str:
        seen.append(r)
        return echo(r)

    run_chunk([" x "], ScriptedEngine(spy), source="de", target="fr", lane=lane)
    assert seen == [TranslationRequest("x", "de", "fr", 0 if lane is Lane.interactive else 1)]


@KINDS
def test_a_chunk_naming_a_lora_adapter_is_translated_and_cached_with_it(streaming: bool) -> None:
    def by_adapter(r: TranslationRequest) -> str:
        return f"[{r.adapter}] {r.text}"

    engine = ScriptedEngine(by_adapter, streaming=streaming, adapters={"shoes": "fp-shoes"})
    bench = ChunkRun(engine)
    try:
        out = bench.run(["Red shoes", "Blue shoes"], adapter="shoes")
        assert [o.translation for o in out] == ["[shoes] Red shoes", "[shoes] Blue shoes"]
        # cached under the adapter's fingerprint, never the base model's
        assert bench.cached(["Red shoes"]) == {}
        hits = bench.cache.get_many(lookup("fp-shoes", "en", "es", ["Red shoes", "Blue shoes"]))
        assert hits == {"Red shoes": "[shoes] Red shoes", "Blue shoes": "[shoes] Blue shoes"}
        base = bench.run(["Red shoes"])
        assert [o.translation for o in base] == ["[None] Red shoes"]
    finally:
        bench.close()


def test_a_chunk_naming_an_adapter_the_worker_lacks_fails_without_the_engine() -> None:
    engine = ScriptedEngine(adapters={"shoes": "fp-shoes"})
    out = run_chunk(["Red shoes", "Blue shoes"], engine, adapter="legal")
    assert [o.error and o.error["type"] for o in out] == ["unknown_adapter"] * 2
    assert "has no LoRA adapter 'legal'" in str(out[0].error)
    assert engine.texts == []


def truncating(r: TranslationRequest) -> Translation:
    """Reports that it cut off every segment longer than three words."""
    return Translation(r.text.upper(), truncated=len(r.text.split()) > 3, tokens_out=4)


@KINDS
def test_truncated_output_is_delivered_with_a_warning_and_not_cached(streaming: bool) -> None:
    bench = ChunkRun(ScriptedEngine(truncating, streaming=streaming))
    try:
        texts = ["one two", " one two three four "]
        out = bench.run(texts)
        assert [o.translation for o in out] == ["ONE TWO", " ONE TWO THREE FOUR "]
        assert out[0].warnings == []
        assert [w["type"] for w in out[1].warnings] == ["truncated"]
        assert all(o.ok for o in out)
        assert bench.cached(texts) == {"one two": "ONE TWO"}
    finally:
        bench.close()


def test_a_clean_translation_is_cached_and_served_to_a_later_chunk_that_waited() -> None:
    engine = ScriptedEngine(upper)
    bench = ChunkRun(engine)
    try:
        bench.run(["Red shoes"])
        assert bench.cached(["Red shoes"]) == {"Red shoes": "RED SHOES"}
        # a chunk that waited in the queue looks the cache up again (the API did at submit)
        out = bench.run([" Red shoes", "Blue hat"], enqueued_at=time.time() - 5)
        assert [o.translation for o in out] == [" RED SHOES", "BLUE HAT"]
        assert [o.cached for o in out] == [True, False]
        assert engine.texts == ["Red shoes", "Blue hat"]
    finally:
        bench.close()


def test_engine_unavailable_sends_the_chunk_back_without_failing_segments() -> None:
    bench = ChunkRun(ScriptedEngine(lambda r: EngineUnavailable("engine process died")))
    bench.processor.budget_s = 1.0
    try:
        job, messages = bench.submit(["a", "b", "c"])
        with pytest.raises(EngineUnavailable):
            bench.processor.process(messages[0])
        assert bench.store.results(job.id, 3) == [None, None, None]
    finally:
        bench.close()


def test_a_chunk_past_its_budget_is_requeued_and_records_nothing_it_did_not_finish() -> None:
    release = threading.Event()

    def slow(r: TranslationRequest) -> str:
        release.wait(5)
        return r.text.upper()

    engine = ScriptedEngine(slow, streaming=True)
    bench = ChunkRun(engine)
    bench.processor.budget_s = 0.3
    try:
        job, messages = bench.submit(["a", "b"])
        with pytest.raises(Requeue):
            bench.processor.process(messages[0])
        assert bench.store.results(job.id, 2) == [None, None]
        assert len(engine.aborted) == 2  # the requests were given up in the engine
    finally:
        release.set()
        bench.close()


@KINDS
def test_a_chunk_past_its_budget_records_what_it_finished_and_goes_back_for_the_rest(
    streaming: bool,
) -> None:
    """Four segments, one of which the engine holds past the chunk's budget (a batch engine
    takes one segment per call here, so the call holding it is the third). What finished is
    recorded and cached before the chunk goes back; the delivery that made progress is not
    counted against MT_MAX_DELIVERIES; its next delivery translates only the rest."""
    release = threading.Event()

    def held(r: TranslationRequest) -> str:
        if r.text == "held":
            release.wait(10)
        return r.text.upper()

    one_per_call = EngineLimits(max_sequences=1, max_batch_tokens=1 << 20, max_input_tokens=999)
    engine = ScriptedEngine(held, streaming=streaming, limits=one_per_call)
    bench = ChunkRun(engine, settings=Settings(check_language=False, max_deliveries=1))
    bench.processor.budget_s = 0.5
    try:
        job, [msg] = bench.submit(["first", "second", "held", "last"])
        with pytest.raises(Requeue, match="of 4 segments recorded"):
            bench.processor.process(msg)
        out = bench.store.results(job.id, 4)
        done = ["FIRST", "SECOND"] if not streaming else ["FIRST", "SECOND", None, "LAST"]
        assert [o.translation if o else None for o in out][: len(done)] == done
        assert out[2] is None
        assert bench.cached(["first", "second"]) == {"first": "FIRST", "second": "SECOND"}
        release.set()
        sent = len(engine.texts)
        again = bench.processor.process(msg)  # its second delivery: over MT_MAX_DELIVERIES=1
        assert "dead_lettered" not in again
        assert engine.texts[sent:] == (["held", "last"] if not streaming else ["held"])
        final = bench.store.results(job.id, 4)
        assert [o.translation for o in final] == ["FIRST", "SECOND", "HELD", "LAST"]  # type: ignore[union-attr]
        assert bench.store.get(job.id).status is JobStatus.succeeded
    finally:
        release.set()
        bench.close()


def test_a_redelivered_chunk_whose_results_are_written_is_done_not_dead_lettered() -> None:
    """Its worker wrote every result and died before the ack: however often it comes back
    (past MT_MAX_DELIVERIES here), it is acknowledged as done, never listed as poison."""
    run = ChunkRun(ScriptedEngine(), settings=Settings(check_language=False, max_deliveries=1,
                                                       chunk_size=2))  # fmt: skip
    try:
        job, messages = run.submit(["The red shirt.", "A blue lamp.", "An old book."])
        assert len(messages) == 2
        first = run.processor.process(messages[0])
        assert first["segments"] == 2
        for _ in range(3):  # redelivered: deliveries 2, 3, 4 > max_deliveries
            again = run.processor.process(messages[0])
            assert again["skipped"] == "every segment has its result"
        assert run.redis.llen(keys.DEAD_LETTER) == 0
        assert run.store.get(job.id).status is JobStatus.running
        run.processor.process(messages[1])
        assert run.store.get(job.id).status is JobStatus.succeeded
    finally:
        run.close()
