"""workers/translation.py: one bad segment fails alone, whitespace survives, checks run first.

The engines here are small fixtures implementing the Engine ABC; the code under test is
``translate_isolated``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from mtfleet.core.errors import EngineError, EngineUnavailable
from mtfleet.workers.engines.base import Engine, EngineLimits, Translation, TranslationRequest
from mtfleet.workers.translation import translate_isolated


class UpperEngine(Engine):
    """Translates by upper-casing; records every batch it is given."""

    name = "upper"

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def load(self) -> None:
        pass

    @property
    def model(self) -> str:
        return "upper"

    @property
    def fingerprint(self) -> str:
        return "upper-1"

    @property
    def limits(self) -> EngineLimits:
        return EngineLimits(max_sequences=1024, max_batch_tokens=1 << 20, max_input_tokens=1 << 16)

    def pairs(self) -> list[tuple[str, str]]:
        return [("en", "es")]

    def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
        self.batches.append([r.text for r in requests])
        return [self.one(r.text) for r in requests]

    def one(self, text: str) -> str:
        return text.upper()

    @property
    def calls(self) -> int:
        return len(self.batches)


class BoomEngine(UpperEngine):
    """Fails any batch that contains the text BOOM."""

    def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
        out = super().translate(requests)
        if any(r.text == "BOOM" for r in requests):
            raise RuntimeError("device-side assert")
        return out


class TypedErrorEngine(UpperEngine):
    def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
        super().translate(requests)
        raise EngineError("model crashed")


class ShortEngine(UpperEngine):
    """Always returns one output too few."""

    def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
        return super().translate(requests)[:-1]


class BatchOnlyMismatchEngine(UpperEngine):
    """Drops an output only for batches of more than one segment."""

    def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
        out = super().translate(requests)
        return out[:-1] if len(out) > 1 else out


class LengthLimitEngine(UpperEngine):
    def __init__(self, max_chars: int) -> None:
        super().__init__()
        self.max_chars = max_chars

    def check(self, request: TranslationRequest) -> str | None:
        if len(request.text) > self.max_chars:
            return f"{len(request.text)} characters; at most {self.max_chars} fit"
        return None


class EmptyForEngine(UpperEngine):
    def one(self, text: str) -> str:
        return "  \n" if text == "silent" else text.upper()


def reqs(*texts: str) -> list[TranslationRequest]:
    return [TranslationRequest(t, "en", "es") for t in texts]


def test_translates_in_order() -> None:
    engine = UpperEngine()
    out = translate_isolated(engine, reqs("a", "b", "c"))
    assert [o.translation for o in out] == ["A", "B", "C"]
    assert all(o.ok for o in out)
    assert engine.calls == 1


def test_outer_whitespace_preserved_and_not_sent() -> None:
    engine = UpperEngine()
    out = translate_isolated(engine, reqs("  hi \n", "\tthere"))
    assert [o.translation for o in out] == ["  HI \n", "\tTHERE"]
    assert engine.batches == [["hi", "there"]]


def test_whitespace_only_returned_unchanged_without_engine_call() -> None:
    engine = UpperEngine()
    out = translate_isolated(engine, reqs("   ", "\n\t"))
    assert [o.translation for o in out] == ["   ", "\n\t"]
    assert all(o.ok for o in out)
    assert engine.calls == 0


def test_whitespace_only_mixed_with_text() -> None:
    engine = UpperEngine()
    out = translate_isolated(engine, reqs("a", " ", "b"))
    assert [o.translation for o in out] == ["A", " ", "B"]
    assert engine.batches == [["a", "b"]]


def test_empty_batch() -> None:
    engine = UpperEngine()
    assert translate_isolated(engine, []) == []
    assert engine.calls == 0


@pytest.mark.parametrize("bad", [0, 13, 31])
def test_one_bad_segment_fails_alone_in_log_calls(bad: int) -> None:
    n = 32
    texts = [f"s{i}" for i in range(n)]
    texts[bad] = "BOOM"
    engine = BoomEngine()
    out = translate_isolated(engine, reqs(*texts))
    for i, o in enumerate(out):
        if i == bad:
            assert o.translation is None
            assert o.error is not None
            assert o.error["type"] == "engine_error"
            assert "RuntimeError" in o.error["message"]
            assert "device-side assert" in o.error["message"]
        else:
            assert o.translation == texts[i].upper(), i
    assert engine.calls <= 2 * math.log2(n) + 2


def test_two_bad_segments() -> None:
    texts = [f"s{i}" for i in range(16)]
    texts[2] = texts[11] = "BOOM"
    out = translate_isolated(BoomEngine(), reqs(*texts))
    failed = [i for i, o in enumerate(out) if not o.ok]
    assert failed == [2, 11]
    assert all(out[i].translation == texts[i].upper() for i in range(16) if i not in failed)


def test_engine_error_type_is_kept() -> None:
    out = translate_isolated(TypedErrorEngine(), reqs("a"))
    assert out[0].error == {"type": "engine_error", "message": "model crashed"}


def test_persistent_output_mismatch_fails_every_segment() -> None:
    n = 8
    engine = ShortEngine()
    out = translate_isolated(engine, reqs(*(f"s{i}" for i in range(n))))
    for o in out:
        assert o.translation is None
        assert o.error is not None
        assert o.error["type"] == "engine_output_mismatch"
        assert "returned 0 outputs for 1 inputs" in o.error["message"]
    # Bisected all the way down: a full binary tree of calls.
    assert engine.calls == 2 * n - 1


def test_mismatch_only_for_batches_recovers_by_bisection() -> None:
    engine = BatchOnlyMismatchEngine()
    out = translate_isolated(engine, reqs("a", "b", "c", "d"))
    assert [o.translation for o in out] == ["A", "B", "C", "D"]


def test_too_long_segment_refused_before_the_call() -> None:
    engine = LengthLimitEngine(max_chars=5)
    out = translate_isolated(engine, reqs("short", "much too long", "  ok  "))
    assert out[0].translation == "SHORT"
    assert out[1].translation is None
    assert out[1].error is not None
    assert out[1].error["type"] == "segment_too_long"
    assert "13 characters" in out[1].error["message"]
    assert out[2].translation == "  OK  "
    assert engine.batches == [["short", "ok"]]


def test_limit_checks_the_stripped_text() -> None:
    engine = LengthLimitEngine(max_chars=2)
    out = translate_isolated(engine, reqs("     hi     "))
    assert out[0].translation == "     HI     "


def test_all_too_long_never_calls_engine() -> None:
    engine = LengthLimitEngine(max_chars=1)
    out = translate_isolated(engine, reqs("ab", "cd"))
    assert [o.error["type"] for o in out if o.error] == ["segment_too_long"] * 2
    assert engine.calls == 0


def test_empty_output_is_a_failed_segment() -> None:
    out = translate_isolated(EmptyForEngine(), reqs("loud", "silent"))
    assert out[0].translation == "LOUD"
    assert out[1].translation is None
    assert out[1].error is not None
    assert out[1].error["type"] == "empty_output"


def test_request_fields_passed_through() -> None:
    seen: list[TranslationRequest] = []

    class Spy(UpperEngine):
        def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
            seen.extend(requests)
            return super().translate(requests)

    translate_isolated(Spy(), [TranslationRequest(" x ", "de", "fr", priority=1)])
    assert seen == [TranslationRequest("x", "de", "fr", 1)]


class TruncatingEngine(UpperEngine):
    """Reports that it cut off every segment longer than three words."""

    def translate(self, requests: Sequence[TranslationRequest]) -> list[str | Translation]:  # type: ignore[override]
        return [Translation(r.text.upper(), truncated=len(r.text.split()) > 3) for r in requests]


class DeadEngine(UpperEngine):
    def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
        raise EngineUnavailable("engine process died")


def test_truncated_output_is_delivered_with_a_warning() -> None:
    out = translate_isolated(TruncatingEngine(), reqs("one two", "one two three four"))
    assert [o.translation for o in out] == ["ONE TWO", "ONE TWO THREE FOUR"]
    assert out[0].warnings == []
    assert [w["type"] for w in out[1].warnings] == ["truncated"]
    assert all(o.ok for o in out)


def test_engine_unavailable_is_not_turned_into_segment_failures() -> None:
    with pytest.raises(EngineUnavailable):
        translate_isolated(DeadEngine(), reqs("a", "b", "c"))
