"""workers/checks.py: each output check on its own, and translate_checked (spans and glossary
protected, checks run, one retry for a hard failure) as the worker runs it: a chunk through the
production ChunkProcessor and scheduler (tests/support.py). The language check runs the real
lingua."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mtfleet.core.glossary import Matcher, validate
from mtfleet.core.models import SegmentOutcome
from mtfleet.core.settings import Settings
from mtfleet.workers import checks
from mtfleet.workers.engines.base import TranslationRequest
from tests.support import ChunkRun, ScriptedEngine

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


def test_a_long_output_is_judged_by_its_opening() -> None:
    spanish = "Tu pedido ha sido enviado y llegará mañana por la tarde a tu casa. " * 6
    english = "Your order has shipped and will arrive tomorrow afternoon at your home. " * 6
    assert len(spanish) > 2 * checks.LANGUAGE_CHARS
    found = checks.language_warnings([spanish, english, spanish + english], "es")
    assert found[0] is None and found[2] is None  # the opening is Spanish
    assert found[1] is not None and "English" in found[1]["message"]


@pytest.mark.parametrize("target", ["gl", "km", "yue"])
def test_no_language_check_for_targets_the_detector_does_not_know(target: str) -> None:
    assert checks.language_warnings(
        ["Your order has shipped and will arrive tomorrow"], target
    ) == [None]


# --- translate_checked, through the chunk path -------------------------------------------------
class Attempts:
    """A script answering ``script(text, attempt)``; counts the attempts per text the engine
    got (the text as the engine sees it: spans and glossary terms as tags)."""

    def __init__(self, script: Callable[[str, int], str]) -> None:
        self.script = script
        self.attempts: dict[str, int] = {}

    def __call__(self, req: TranslationRequest) -> str:
        n = self.attempts[req.text] = self.attempts.get(req.text, 0) + 1
        return self.script(req.text, n)


def run(
    script: Callable[[str, int], str],
    texts: list[str],
    *,
    glossary: bool = True,
    language: bool = False,
) -> tuple[list[SegmentOutcome], dict[str, int], ChunkRun]:
    """Outcomes of ``texts`` as one en->es job, the engine's attempts per text, the bench
    (its cache holds what was cached)."""
    attempts = Attempts(script)
    bench = ChunkRun(ScriptedEngine(attempts), settings=Settings(check_language=language))
    try:
        g = bench.glossary(GLOSSARY) if glossary else None
        out = bench.run(texts, glossary=g)
    finally:
        bench.close()
    return out, attempts.attempts, bench


SPANISH = {"The <x1/> <x2/> costs 20 dollars": "El <x2/> <x1/> cuesta 20 dólares"}


def test_glossary_terms_are_applied_and_pass_the_checks() -> None:
    text = "The iphone case costs 20 dollars"
    bench = ChunkRun(ScriptedEngine(lambda r: SPANISH[r.text]))
    try:
        g = bench.glossary(GLOSSARY)
        (out,) = bench.run([text], glossary=g)
    finally:
        bench.close()
    assert out.translation == "El funda iPhone cuesta 20 dólares" and out.warnings == []
    assert bench.engine.texts == ["The <x1/> <x2/> costs 20 dollars"]  # type: ignore[attr-defined]
    # cached under the glossary's version only
    assert bench.cached([text], glossary=g) == {text: "El funda iPhone cuesta 20 dólares"}
    assert bench.cached([text]) == {}


def test_a_hard_failure_is_retried_once_and_the_retry_wins() -> None:
    # the first attempt drops the protected term's tag; the second keeps it
    def script(t: str, n: int) -> str:
        return "El <x2/> cuesta 20 dólares" if n == 1 else SPANISH[t]

    (out,), attempts, _ = run(script, ["The iphone case costs 20 dollars"])
    assert attempts == {"The <x1/> <x2/> costs 20 dollars": 2}
    assert out.translation == "El funda iPhone cuesta 20 dólares" and out.warnings == []


def test_placeholders_and_urls_reach_the_engine_as_tags_and_come_back() -> None:
    (out,), attempts, _ = run(
        lambda t, _: t.replace("It costs", "Cuesta").replace("see", "ver"),
        ["It costs {price}, see https://shop.example/p?id=1 or SKU-1234-X"],
        glossary=False,
    )
    assert attempts == {"It costs <x1/>, see <x2/> or <x3/>": 1}
    assert out.translation == "Cuesta {price}, ver https://shop.example/p?id=1 or SKU-1234-X"
    assert out.warnings == []


def test_still_failing_after_the_retry_is_delivered_with_the_warning_and_not_cached() -> None:
    (out,), attempts, bench = run(
        lambda t, _: "Cuesta de precio", ["It costs {price} dollars"], glossary=False
    )  # drops the placeholder's tag, twice
    assert attempts == {"It costs <x1/> dollars": 2}
    assert out.ok and out.translation is not None and "{price}" in out.translation  # put back
    assert checks.TAG_MISMATCH in types(out)
    assert all("after one retry" in w["message"] for w in out.warnings if checks.is_hard(w))
    assert bench.cached(["It costs {price} dollars"]) == {}


def test_empty_output_is_retried_and_stays_an_error() -> None:
    (out,), attempts, _ = run(lambda t, _: "  ", ["Red shoes"], glossary=False)
    assert attempts == {"Red shoes": 2}
    assert not out.ok and out.error is not None and out.error["type"] == checks.EMPTY


def test_a_translation_with_a_warning_beats_an_empty_retry() -> None:
    (out,), _, _ = run(
        lambda t, n: "Cuesta {dólares} <x1/>" if n == 1 else "",
        ["It costs {price}"],
        glossary=False,
    )
    assert out.translation == "Cuesta {dólares} {price}"
    assert types(out) == [checks.PLACEHOLDER_MISMATCH]


def test_soft_warnings_are_not_retried() -> None:
    src = "The red shirt is in the house and costs twenty dollars."
    (out,), attempts, bench = run(lambda t, _: "Camisa.", [src], glossary=False)
    assert attempts == {src: 1} and types(out) == [checks.LENGTH_RATIO]
    assert bench.cached([src]) == {}


def test_only_failing_segments_are_resubmitted() -> None:
    texts = ["Red shoes", "It costs {price}", "Blue hat"]
    outs, attempts, bench = run(
        lambda t, _: {"It costs <x1/>": "Cuesta {precio_x}"}.get(t, t.upper()),
        texts,
        glossary=False,
    )
    assert attempts == {"Red shoes": 1, "It costs <x1/>": 2, "Blue hat": 1}
    assert [checks.TAG_MISMATCH in types(o) for o in outs] == [False, True, False]
    assert bench.cached(texts) == {"Red shoes": "RED SHOES", "Blue hat": "BLUE HAT"}


def test_each_text_keeps_its_whitespace_through_protection_and_retry() -> None:
    outs, attempts, _ = run(
        lambda t, n: "" if n == 1 else t.replace("Pay", "Paga"),
        ["  Pay {amount} now\n", "Pay {amount} now"],
        glossary=False,
    )
    assert attempts == {"Pay <x1/> now": 2}  # one text, translated once (and retried once)
    assert [o.translation for o in outs] == ["  Paga {amount} now\n", "Paga {amount} now"]


def test_language_check_in_the_pipeline() -> None:
    text = "Your order has shipped and will arrive tomorrow"
    (out,), attempts, bench = run(lambda t, _: t, [text], glossary=False, language=True)
    assert attempts == {text: 1} and types(out) == [checks.WRONG_LANGUAGE]  # not retried
    assert bench.cached([text]) == {}
    (out,), _, _ = run(lambda t, _: t, [text], glossary=False, language=False)
    assert out.warnings == []


def test_a_glossary_gone_before_the_chunk_ran_fails_its_segments() -> None:
    engine = ScriptedEngine()
    bench = ChunkRun(engine)
    try:
        g = bench.glossary(GLOSSARY).model_copy(update={"id": "0" * 32})  # no such glossary
        outs = bench.run(["Red case", " Red case", "Blue hat"], glossary=g)
    finally:
        bench.close()
    assert [o.ok for o in outs] == [False] * 3
    assert {o.error["type"] for o in outs if o.error} == {"glossary_not_found"}
    assert engine.batches == []
