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
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mtfleet.core.cache import normalize
from mtfleet.core.settings import Settings
from mtfleet.workers import prompts
from mtfleet.workers.engines.apertium import ApertiumEngine, discover_modes
from mtfleet.workers.engines.base import TranslationRequest
from mtfleet.workers.engines.transformers_engine import TransformersEngine
from mtfleet.workers.engines.vllm_engine import VllmEngine
from tests.conftest import tiny_model_path
from tests.integration.test_openai_client import FakeServer, engine_for
from tests.integration.test_transformers_engine import tiny_seq2seq

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
    """The texts with ``ch`` in each place, as an engine gets them (normalised: no outer
    whitespace; a text of only whitespace is never sent)."""
    texts = [normalize(p.replace("{}", ch)) for p in PLACES]
    return [t for t in texts if t]


@pytest.fixture(scope="module")
def apertium() -> Iterator[ApertiumEngine]:
    if ("en", "es") not in discover_modes():
        pytest.skip("apertium-eng-spa is not installed")
    engine = ApertiumEngine(Settings().engine)
    engine.load()
    yield engine
    engine.close()


def lost(
    engine: ApertiumEngine, texts: list[str], pair: tuple[str, str], chars: list[str]
) -> list[tuple[str, str, str]]:
    """(text, output, character) wherever the output holds a character other times than its
    text (one call for all of them, as the scheduler makes)."""
    return missing(texts, engine.translate([TranslationRequest(t, *pair) for t in texts]), chars)


def missing(texts: list[str], outs: list[str], chars: list[str]) -> list[tuple[str, str, str]]:
    """(text, output, character) wherever ``outs`` hold a character other times than ``texts``."""
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
#: What Apertium's stream format reserves (escaped by the wrapper) and ``~`` (its post-generator's
#: mark).
STREAM_RESERVED = list("\\[]^$/@<>{}~")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(WORDS + SYMBOLS), min_size=1, max_size=8).map(" ".join),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from([("en", "es"), ("es", "en")]),
)
@example(["red - home home", "Use $ for home", "a~b", "{50} <price>"], ("en", "es"))
def test_symbols_anywhere_in_a_batch_come_back_from_apertium(
    apertium: ApertiumEngine, texts: list[str], pair: tuple[str, str]
) -> None:
    """Texts of words and symbols in one call: each is translated as it is alone (nothing of
    one text reaches another), and what the stream format reserves comes back wherever it was.
    Other punctuation is Apertium's grammar's to keep: its eng-spa rules take the spaced hyphen
    of an adjective before two nouns into the noun phrase ("red - home home" is "Casa de casa
    roja", as `apertium eng-spa` gives it), which a test of the wrapper does not assert."""
    texts = [normalize(t) for t in texts if normalize(t)] or ["~"]
    alone = [apertium.translate([TranslationRequest(t, *pair)])[0] for t in texts]
    together = apertium.translate([TranslationRequest(t, *pair) for t in texts])
    assert together == alone
    assert missing(texts, together, STREAM_RESERVED) == []


# --- the LLM engines: their control tokens -------------------------------------------------------
#: What a prompt format reserves: the control tokens of the tiny model's tokenizer (ChatML) and
#: the common ones the openai engine breaks when it cannot read the served model's tokenizer.
CONTROL = ["<|im_start|>", "<|im_end|>", "</s>", "<s>", "<|eot_id|>", "[INST]"]


def llm_texts() -> list[str]:
    return [t for ch in [*SYMBOLS, *CONTROL] for t in texts_with(ch)] + [
        normalize("".join(SYMBOLS))
    ]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()  # answers "ES " + the segment: an echo
    yield fake
    fake.stop()


def test_every_symbol_and_control_token_comes_back_from_the_openai_engine(
    server: FakeServer,
) -> None:
    engine = engine_for(server, openai_concurrency=16)
    engine.load()
    texts = llm_texts()
    try:
        out = engine.translate([TranslationRequest(t, "en", "es") for t in texts])
    finally:
        engine.close()
    sent = {c.removeprefix("ES ") for c in server.contents()}
    # the server was given no control token of the text: each is broken in the prompt
    assert not [t for t in sent if any(tok in t for tok in CONTROL)]
    assert [o.text for o in out] == [f"ES {t}" for t in texts]


def echo_of(tok: Any, ids: list[int]) -> str:
    """What a model that copies its text generates: the segment of a decoded chat prompt (the
    user turn, after the instruction's blank line)."""
    turn = tok.decode(ids).split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]
    return turn.split("\n\n", 1)[1]


def specials(tok: Any, ids: list[int]) -> list[int]:
    """The control tokens among ``ids`` (an unknown character's ``<unk>`` is none)."""
    control = set(tok.all_special_ids) - {tok.unk_token_id}
    return [i for i in ids if i in control]


def test_the_vllm_prompt_holds_the_text_as_data_and_its_echo_comes_back() -> None:
    """The token ids the vLLM engine gives vLLM (built by the engine with the tiny model's
    tokenizer, as after its load) hold every character of the text and none of its control
    tokens as control tokens; a model's echo of it is, after the engine's output parsing, the
    text itself."""
    from transformers import AutoTokenizer  # here: every xdist worker collects this file

    engine = VllmEngine(Settings(engine="vllm", model=tiny_model_path()).engine)
    engine.tokenizer = tok = AutoTokenizer.from_pretrained(tiny_model_path())
    template = specials(tok, engine._counts(TranslationRequest("plain", "en", "es"))[0])
    for text in llm_texts():
        ids, _ = engine._counts(TranslationRequest(text, "en", "es"))
        assert specials(tok, ids) == template, text
        assert engine._output(f" {echo_of(tok, ids)}\n") == text


@pytest.fixture(scope="module", params=["causal", "marian"])
def transformers(request: pytest.FixtureRequest) -> Iterator[TransformersEngine]:
    model = tiny_model_path() if request.param == "causal" else tiny_seq2seq("marian")
    engine = TransformersEngine(Settings(engine="transformers", model=model, temperature=0).engine)
    engine.load()
    yield engine
    engine.close()


def test_the_transformers_input_holds_the_text_as_data_and_its_echo_comes_back(
    transformers: TransformersEngine,
) -> None:
    """A decoder-only model's prompt as the vLLM engine's (above); an encoder-decoder model's
    input (its own tokenizer's, which knows few of these characters) holds a ``</s>`` of the
    text as text, not as the end of the input. A copy of the text, as the input has it, comes
    back from the engine's output parsing as the text."""
    engine, tok = transformers, transformers.tokenizer
    causal = engine.family.name == "causal"
    template = specials(tok, engine._counts(TranslationRequest("plain", "en", "es"))[0])
    for text in llm_texts():
        ids, _ = engine._counts(TranslationRequest(text, "en", "es"))
        assert specials(tok, ids) == template, text
        copied = echo_of(tok, ids) if causal else prompts.as_data(text, prompts.control_tokens(tok))
        assert engine._output(copied) == text
    [out] = engine.translate([TranslationRequest("a </s> b", "en", "es")])
    assert out.text  # generate ran on the input
