"""The pure parts of the transformers and openai engines: which family a model is and the codes
it gets (workers/engines/hf_families.py), padded batches by length (workers/batching.py),
device and dtype, the openai engine's priority gate and backoff."""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest

from mtfleet.core import languages
from mtfleet.core.errors import EngineUnavailable
from mtfleet.workers.batching import split_by_length
from mtfleet.workers.engines.hf_families import CODES, family_of
from mtfleet.workers.engines.openai_client import PriorityGate, backoff_s
from mtfleet.workers.engines.transformers_engine import resolve_device, resolve_dtype
from mtfleet.workers.prompts import llm_pairs


def vocab(*tokens: str) -> dict[str, int]:
    return {t: i for i, t in enumerate(["▁the", "▁a", *tokens])}


# --- families and codes ----------------------------------------------------------------------
def test_every_language_has_a_row_with_a_code_for_each_family() -> None:
    assert set(CODES) == set(languages.LANGUAGES)
    for ours, codes in CODES.items():
        assert codes.nllb and codes.madlad and codes.opus, ours
        assert all("_" in c and len(c.split("_")[1]) == 4 for c in codes.nllb), ours


def test_marian_serves_the_pair_its_tokenizer_declares() -> None:
    family = family_of("marian", True, vocab(), source_lang="en", target_lang="es", name="m")
    assert family.name == "marian" and family.pairs == (("en", "es"),)
    assert family.source_text("Hello", "es") == "Hello"  # one target: nothing to name


def test_marian_without_declared_languages_reads_the_opus_name() -> None:
    family = family_of("marian", True, vocab(), name="/models/Helsinki-NLP/opus-mt-de-fr/")
    assert family.pairs == (("de", "fr"),)
    family = family_of("marian", True, vocab(), name="Helsinki-NLP/opus-mt-zh-en")
    assert family.pairs == (("zh", "en"),)


def test_a_multi_target_marian_model_names_the_target_with_its_token() -> None:
    v = vocab(">>spa<<", ">>fra<<", ">>por<<", ">>cmn_Hans<<", ">>xyz<<")
    family = family_of("marian", True, v, source_lang="en", target_lang="ROMANCE", name="m")
    assert set(family.pairs) == {("en", "es"), ("en", "fr"), ("en", "pt"), ("en", "zh")}
    assert family.source_text("Hello", "es") == ">>spa<< Hello"
    assert family.source_text("Hello", "zh") == ">>cmn_Hans<< Hello"


def test_a_marian_model_whose_languages_cannot_be_told_is_refused() -> None:
    with pytest.raises(EngineUnavailable, match="cannot tell the source language"):
        family_of("marian", True, vocab(), name="/models/my-mt")


def test_nllb_gets_flores_codes_as_source_and_forced_first_token() -> None:
    v = vocab("eng_Latn", "spa_Latn", "zho_Hans", "zho_Hant", "arb_Arab", "xho_Latn")
    family = family_of("m2m_100", True, v, name="facebook/nllb-200-distilled-600M")
    assert family.name == "nllb"
    assert family.src_lang == {
        "en": "eng_Latn",
        "es": "spa_Latn",
        "zh": "zho_Hans",
        "zh-Hant": "zho_Hant",
        "ar": "arb_Arab",
    }
    assert family.forced_bos["zh-Hant"] == "zho_Hant"
    assert len(family.pairs) == 5 * 4 and ("zh-Hant", "en") in family.pairs
    assert family.source_text("Hello", "es") == "Hello"


def test_m2m100_gets_iso_codes_and_its_underscored_tokens() -> None:
    family = family_of("m2m_100", True, vocab("__en__", "__es__", "__zh__", "__he__"), name="m")
    assert family.name == "m2m100"
    assert family.src_lang == {"en": "en", "es": "es", "zh": "zh", "he": "he"}
    assert family.forced_bos == {"en": "__en__", "es": "__es__", "zh": "__zh__", "he": "__he__"}
    assert ("zh-Hant", "en") not in family.pairs  # M2M100 has no Traditional Chinese


def test_madlad_names_the_target_with_a_2xx_token_and_any_source() -> None:
    family = family_of("t5", True, vocab("<2es>", "<2iw>", "<2fil>"), name="google/madlad400-3b-mt")
    assert family.name == "madlad"
    assert family.source_text("Hello", "es") == "<2es> Hello"
    assert family.source_text("Hello", "he") == "<2iw> Hello"  # the candidate the vocab has
    assert family.source_text("Hello", "tl") == "<2fil> Hello"
    targets = {t for _, t in family.pairs}
    assert targets == {"es", "he", "tl"}
    assert len(family.pairs) == 3 * len(languages.LANGUAGES) - 3


def test_decoder_only_models_are_prompted_for_every_llm_pair() -> None:
    family = family_of("llama", False, vocab())
    assert family.name == "causal" and list(family.pairs) == llm_pairs()


def test_an_unknown_encoder_decoder_is_refused_saying_what_runs() -> None:
    with pytest.raises(EngineUnavailable, match=r"runs Marian \(OPUS-MT\), NLLB, M2M100, MADLAD"):
        family_of("bart", True, vocab(), name="facebook/bart-large")
    with pytest.raises(EngineUnavailable, match="model_type t5"):
        family_of("t5", True, vocab(), name="t5-small")  # no <2xx> tokens: not MADLAD


# --- padded batches by length ----------------------------------------------------------------
def test_batches_are_sorted_by_length_within_the_padded_budget() -> None:
    lengths = [30, 5, 12, 5, 40, 11, 6]
    batches = split_by_length(lengths, max_tokens=40, max_sequences=8)
    assert [[lengths[i] for i in b] for b in batches] == [[5, 5, 6], [11, 12], [30], [40]]
    for b in batches:
        assert len(b) * max(lengths[i] for i in b) <= 40
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))


def test_batches_respect_the_sequence_limit_and_an_oversize_segment_runs_alone() -> None:
    assert split_by_length([1] * 5, max_tokens=100, max_sequences=2) == [[0, 1], [2, 3], [4]]
    assert split_by_length([500, 3], max_tokens=100, max_sequences=8) == [[1], [0]]
    assert split_by_length([], max_tokens=100, max_sequences=8) == []


# --- device and dtype ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("setting", "cuda", "device"),
    [("auto", True, "cuda:0"), ("auto", False, "cpu"), ("cuda", True, "cuda:0"),
     ("cuda:3", True, "cuda:3"), ("cpu", True, "cpu")],
)  # fmt: skip
def test_device(setting: str, cuda: bool, device: str) -> None:
    assert resolve_device(setting, cuda) == device


def test_dtype_auto_is_float32_on_cpu_and_half_precision_on_gpus() -> None:
    assert resolve_dtype("auto", "cpu", bf16_available=False) == "float32"
    assert resolve_dtype("auto", "cuda:0", bf16_available=True) == "bfloat16"
    assert resolve_dtype("auto", "cuda:0", bf16_available=False) == "float16"
    assert resolve_dtype("half", "cuda:0", bf16_available=True) == "float16"
    with pytest.raises(EngineUnavailable, match="MT_DTYPE=int4"):
        resolve_dtype("int4", "cpu", bf16_available=False)


# --- the openai engine's gate and backoff ----------------------------------------------------
def test_the_gate_lets_interactive_waiters_in_first_and_never_more_than_its_limit() -> None:
    async def scenario() -> list[str]:
        gate = PriorityGate(2)
        order: list[str] = []
        most = 0

        async def use(name: str, priority: int) -> None:
            nonlocal most
            await gate.acquire(priority)
            most = max(most, gate.held)
            order.append(name)
            await asyncio.sleep(0)
            gate.release()

        await gate.acquire(1)
        await gate.acquire(1)  # both slots held
        tasks = [
            asyncio.create_task(use(n, p))
            for n, p in [("bulk a", 1), ("bulk b", 1), ("interactive", 0), ("bulk c", 1)]
        ]
        cancelled = asyncio.create_task(use("cancelled", 0))
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.sleep(0)
        gate.release()
        gate.release()
        await asyncio.gather(*tasks)
        assert most <= 2 and gate.held == 0 and gate.waiting == 0
        return order

    assert asyncio.run(scenario()) == ["interactive", "bulk a", "bulk b", "bulk c"]


def test_backoff_doubles_with_jitter_and_follows_retry_after() -> None:
    for attempt, base in [(0, 0.5), (1, 1.0), (2, 2.0), (6, 8.0)]:
        delays = [backoff_s(attempt) for _ in range(50)]
        assert all(base / 2 <= d <= base for d in delays), (attempt, delays)
    assert backoff_s(0, "3") == 3.0
    assert backoff_s(0, "600") == 30.0  # the server's wish, within reason
    assert backoff_s(0, "soon") <= 0.5
    in_5s = email.utils.formatdate(time.time() + 5, usegmt=True)
    assert 3.5 <= backoff_s(0, in_5s) <= 5.0
