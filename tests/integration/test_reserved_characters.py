"""What an engine's wire format reserves is escaped by its wrapper, and comes back as the text had
it: every ASCII punctuation character and common symbols (currency, arrows, emoji with their
zero-width joiners, NBSP, the RTL/LTR marks) through each shipped engine's wrapper.

* Apertium, the real one: its stream format reserves ``\\ [ ] ^ $ / @ < > { }`` (escaped) and
  ``~`` (the post-generator's mark, which ``apertium-destxt`` puts in a superblank); each
  character is found in the translation as often as in the source, in both directions.
* The LLM engines reserve their control tokens (``<|im_end|>``, ``</s>``...): a source is data
  in the prompt, and what the model copies of it comes back as the source had it. The openai
  engine is tested against a local server that echoes the segment (its real HTTP path); the
  vLLM and transformers engines build their prompts with the tiny test model's tokenizer, and
  their output parsing is given what an echoing model would generate.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mtfleet.core.settings import Settings
from mtfleet.workers.engines.apertium import ApertiumEngine, discover_modes
from mtfleet.workers.engines.base import TranslationRequest

#: Every ASCII punctuation character and the symbols a shop or a chat writes.
SYMBOLS = [
    *string.punctuation,
    "€",
    "£",
    "¥",
    "₹",
    "→",
    "←",
    "\u00a0",  # no-break space
    "\u200f",  # right-to-left mark
    "\u200e",  # left-to-right mark
    "\u200d",  # zero-width joiner
    "😀",
    "👨\u200d👩\u200d👧",  # a family: three emoji joined by ZWJs
    "🏳️\u200d🌈",
    "👍🏽",
]

#: Where a character sits: between words, alone, inside a word, doubled, at both ends.
PLACES = ["Use {} for home", "{}", "a{}b", "{}{}", "{} price {}"]


def texts_with(ch: str) -> list[str]:
    return [p.replace("{}", ch) for p in PLACES]


@pytest.fixture(scope="module")
def apertium() -> ApertiumEngine:
    if ("en", "es") not in discover_modes():
        pytest.skip("apertium-eng-spa is not installed")
    engine = ApertiumEngine(Settings())
    engine.load()
    yield engine  # type: ignore[misc]
    engine.close()


def lost(engine: ApertiumEngine, texts: list[str], pair: tuple[str, str], chars: list[str]):  # type: ignore[no-untyped-def]
    """(text, output, character) wherever the output holds a character fewer times than its
    text (one call for all of them, as the scheduler makes)."""
    outs = engine.translate([TranslationRequest(t, *pair) for t in texts])
    return [
        (t, o, ch)
        for t, o in zip(texts, outs, strict=True)
        for ch in chars
        if ch in t and o.count(ch) != t.count(ch)
    ]


@pytest.mark.parametrize("pair", [("en", "es"), ("es", "en")])
def test_every_symbol_comes_back_from_apertium(
    apertium: ApertiumEngine, pair: tuple[str, str]
) -> None:
    texts = [t for ch in SYMBOLS for t in texts_with(ch)] + ["".join(SYMBOLS)]
    assert lost(apertium, texts, pair, SYMBOLS) == []


def test_a_text_of_one_tilde_is_translated(apertium: ApertiumEngine) -> None:
    assert apertium.translate(
        [TranslationRequest("~", "en", "es"), TranslationRequest("Use ~ for home", "en", "es")]
    ) == ["~", "Uso ~ para casa"]


WORDS = ["home", "price", "the", "red", "shoes", "for", "free", "day", "2", "50"]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.lists(st.sampled_from(WORDS + SYMBOLS), min_size=1, max_size=8).map(" ".join),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from([("en", "es"), ("es", "en")]),
)
def test_symbols_anywhere_in_a_batch_come_back_from_apertium(
    apertium: ApertiumEngine, texts: list[str], pair: tuple[str, str]
) -> None:
    texts = [t.strip() for t in texts if t.strip()] or ["~"]
    assert lost(apertium, texts, pair, SYMBOLS) == []
