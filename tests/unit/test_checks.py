"""workers/checks.py: each output check on its own, and translate_checked (glossary applied,
checks run, one retry for a hard failure) over a small scripted engine through the same
translate_isolated path the scheduler uses. The language check runs the real lingua."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from mtfleet.core.glossary import Matcher, validate
from mtfleet.core.models import SegmentOutcome
from mtfleet.workers import checks
from mtfleet.workers.checks import CheckConfig, translate_checked
from mtfleet.workers.engines.base import Engine, EngineLimits, TranslationRequest
from mtfleet.workers.translation import translate_isolated

GLOSSARY = validate(
    name="shop",
    source_lang="en",
    target_lang="es",
    entries=[("case", "funda")],
    protected=["iPhone"],
    max_terms=10,
    max_term_chars=50,
)


def types(outcome: SegmentOutcome) -> list[str]:
    return [str(w["type"]) for w in outcome.warnings]


# --- single checks -----------------------------------------------------------------------------
def test_tag_mismatch_names_the_tag_and_its_glossary_term() -> None:
    p = Matcher(GLOSSARY).protect("<g1>Red</g1> iphone")
    assert checks.tag_mismatch(p.text, "<g1>Roja</g1> <x2/>", p.placed) is None
    w = checks.tag_mismatch(p.text, "<g1>Roja</g1>", p.placed)
    assert w is not None and w["type"] == checks.TAG_MISMATCH
    assert "<x2/>" in w["message"] and "iPhone" in w["message"]
    assert checks.tag_mismatch("a <x1/>", "b <x1/> <x1/>") is not None
    assert checks.tag_mismatch("plain", "llano") is None


@pytest.mark.parametrize(
    ("source", "output", "bad"),
    [
        ("It costs {price} dollars", "Cuesta {price} dólares", False),
        ("It costs {price} dollars", "Cuesta {dólares} de precio", True),
        ("Hi {{ name }}!", "¡Hola {{ name }}!", False),
        ("Hi {{name}}!", "¡Hola {{Nombre}}!", True),
        ("Hello %s, you have %d items", "Hola %s, tienes %d artículos", False),
        ("Hello %s, you have %d items", "Hola, tienes %d artículos", True),
        ("%(count)s left", "quedan %(cuenta)s", True),
        ("100% cotton, 50%discount", "100% algodón, 50% descuento", False),
        ("Page {0} of {1}", "Página {0} de {1}", False),
    ],
)
def test_placeholder_mismatch(source: str, output: str, bad: bool) -> None:
    w = checks.placeholder_mismatch(source, output)
    assert (w is not None) == bad
    if w is not None:
        assert w["type"] == checks.PLACEHOLDER_MISMATCH


def test_protected_terms_missing_or_miscased() -> None:
    placed = Matcher(GLOSSARY).protect("iphone and iphone case").placed
    assert checks.term_warnings("iPhone y iPhone funda", placed) == []
    missing = checks.term_warnings("iPhone y funda", placed)
    assert [w["type"] for w in missing] == [checks.PROTECTED_TERM]
    miscased = checks.term_warnings("iPhone y IPHONE y iPhone funda", placed)
    assert [w["type"] for w in miscased] == [checks.PROTECTED_TERM]
    assert "'IPHONE'" in miscased[0]["message"]
    no_target = checks.term_warnings("iPhone y iPhone estuche", placed)
    assert [w["type"] for w in no_target] == [checks.GLOSSARY_TERM]
    # a target term may change case (sentence start)
    assert checks.term_warnings("Funda iPhone iPhone", placed) == []


def test_length_ratio() -> None:
    src = "The red shirt is in the house and costs twenty dollars."
    assert (
        checks.length_ratio(
            src, "La camisa roja está en la casa y cuesta veinte dólares.", "en", "es", 3.0
        )
        is None
    )
    # Chinese needs about a third of the characters: not flagged
    assert checks.length_ratio(src, "红色的衬衫在房子里，价格是二十美元。", "en", "zh", 3.0) is None
    assert checks.length_ratio(src, "Camisa.", "en", "es", 3.0) is not None
    assert checks.length_ratio(src, src * 4, "en", "es", 3.0) is not None
    # short sources are never judged
    assert (
        checks.length_ratio(
            "Add to cart", "Añadir al carrito de la compra, por favor, ahora", "en", "es", 3.0
        )
        is None
    )


def test_wrong_language_uses_the_detector() -> None:
    outs = [
        "Your order has shipped and will arrive tomorrow",  # left in English
        "Tu pedido ha sido enviado y llegará mañana",
        "Hola",  # too short to judge
        "iPhone iPhone iPhone PlayStation iPhone and",  # mostly glossary terms: taken out
    ]
    found = checks.language_warnings(outs, "es", [[], [], [], ["iPhone", "PlayStation"]])
    assert found[0] is not None and found[0]["type"] == checks.WRONG_LANGUAGE
    assert "English" in found[0]["message"]
    assert found[1:] == [None, None, None]


@pytest.mark.parametrize("target", ["gl", "km", "yue"])
def test_no_language_check_for_targets_the_detector_does_not_know(target: str) -> None:
    assert checks.language_warnings(
        ["Your order has shipped and will arrive tomorrow"], target
    ) == [None]


# --- translate_checked ------------------------------------------------------------------------
class ScriptedEngine(Engine):
    """Each call's outputs come from ``script(text, attempt)``; attempt counts per text."""

    name = "scripted"

    def __init__(self, script: Callable[[str, int], str]) -> None:
        self.script = script
        self.attempts: dict[str, int] = {}

    def load(self) -> None:
        pass

    @property
    def model(self) -> str:
        return "scripted"

    @property
    def fingerprint(self) -> str:
        return "scripted"

    @property
    def limits(self) -> EngineLimits:
        return EngineLimits(max_sequences=64, max_batch_tokens=10_000, max_input_tokens=1_000)

    def pairs(self) -> list[tuple[str, str]]:
        return [("en", "es")]

    def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
        out = []
        for r in requests:
            n = self.attempts[r.text] = self.attempts.get(r.text, 0) + 1
            out.append(self.script(r.text, n))
        return out


def run(
    engine: ScriptedEngine, texts: list[str], *, glossary: bool = True, language: bool = False
) -> tuple[list[SegmentOutcome], int]:
    calls: list[list[str]] = []

    def submit(batch: list[str]) -> list[SegmentOutcome]:
        calls.append(batch)
        return translate_isolated(engine, [TranslationRequest(t, "en", "es") for t in batch])

    outs, retried = translate_checked(
        submit,
        texts,
        CheckConfig("en", "es", language=language),
        Matcher(GLOSSARY) if glossary else None,
    )
    assert len(calls) == (2 if retried else 1)
    return outs, retried


SPANISH = {"The <x1/> <x2/> costs 20 dollars": "El <x2/> <x1/> cuesta 20 dólares"}


def test_glossary_terms_are_applied_and_pass_the_checks() -> None:
    engine = ScriptedEngine(lambda t, _: SPANISH[t])
    (out,), retried = run(engine, ["The iphone case costs 20 dollars"])
    assert out.translation == "El funda iPhone cuesta 20 dólares"
    assert out.warnings == [] and retried == 0


def test_a_hard_failure_is_retried_once_and_the_retry_wins() -> None:
    # first attempt drops the protected term's tag; the second keeps it
    engine = ScriptedEngine(lambda t, n: "El <x2/> cuesta 20 dólares" if n == 1 else SPANISH[t])
    (out,), retried = run(engine, ["The iphone case costs 20 dollars"])
    assert retried == 1 and engine.attempts == {"The <x1/> <x2/> costs 20 dollars": 2}
    assert out.translation == "El funda iPhone cuesta 20 dólares" and out.warnings == []


def test_placeholders_reach_the_engine_as_tags_and_come_back() -> None:
    engine = ScriptedEngine(lambda t, _: t.replace("It costs", "Cuesta").replace("dollars", "$"))
    (out,), retried = run(engine, ["It costs {price} dollars"], glossary=False)
    assert engine.attempts == {"It costs <x1/> dollars": 1} and retried == 0
    assert out.translation == "Cuesta {price} $" and out.warnings == []


def test_still_failing_after_the_retry_is_delivered_with_the_warning() -> None:
    engine = ScriptedEngine(lambda t, _: "Cuesta de precio")  # drops the placeholder's tag
    (out,), retried = run(engine, ["It costs {price} dollars"], glossary=False)
    assert retried == 1 and engine.attempts == {"It costs <x1/> dollars": 2}
    assert out.ok and out.translation is not None and "{price}" in out.translation  # put back
    assert checks.TAG_MISMATCH in types(out)
    assert all("after one retry" in w["message"] for w in out.warnings if checks.is_hard(w))


def test_empty_output_is_retried_and_stays_an_error() -> None:
    engine = ScriptedEngine(lambda t, _: "  ")
    (out,), retried = run(engine, ["Red shoes"], glossary=False)
    assert retried == 1 and not out.ok and out.error is not None
    assert out.error["type"] == checks.EMPTY


def test_a_translation_with_a_warning_beats_an_empty_retry() -> None:
    engine = ScriptedEngine(lambda t, n: "Cuesta {dólares} <x1/>" if n == 1 else "")
    (out,), _ = run(engine, ["It costs {price}"], glossary=False)
    assert out.translation == "Cuesta {dólares} {price}"
    assert types(out) == [checks.PLACEHOLDER_MISMATCH]


def test_soft_warnings_are_not_retried() -> None:
    src = "The red shirt is in the house and costs twenty dollars."
    engine = ScriptedEngine(lambda t, _: "Camisa.")
    (out,), retried = run(engine, [src], glossary=False)
    assert retried == 0 and types(out) == [checks.LENGTH_RATIO]


def test_only_failing_segments_are_resubmitted() -> None:
    texts = ["Red shoes", "It costs {price}", "Blue hat"]
    engine = ScriptedEngine(lambda t, _: {"It costs <x1/>": "Cuesta {precio_x}"}.get(t, t.upper()))
    outs, retried = run(engine, texts, glossary=False)
    assert retried == 1
    assert engine.attempts == {"Red shoes": 1, "It costs <x1/>": 2, "Blue hat": 1}
    assert [checks.TAG_MISMATCH in types(o) for o in outs] == [False, True, False]


def test_language_check_in_the_pipeline() -> None:
    engine = ScriptedEngine(lambda t, _: t)  # leaves the text in English
    text = "Your order has shipped and will arrive tomorrow"
    (out,), retried = run(engine, [text], glossary=False, language=True)
    assert retried == 0 and types(out) == [checks.WRONG_LANGUAGE]
    (out,), _ = run(engine, [text], glossary=False, language=False)
    assert out.warnings == []
