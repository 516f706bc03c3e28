"""The transformers engine on locally generated tiny models (``make test`` builds them:
``scripts/make_tiny_seq2seq.py``, ``scripts/make_tiny_model.py``).

* a real worker (``mtfleet worker --engine transformers``) with an OPUS-MT-style Marian model
  and with a decoder-only model: jobs translated end to end, each output at its input's index,
  the pairs each model serves registered (and others refused by the API);
* the engine in this process on an NLLB-style model: every language of ours has its FLORES-200
  code in a real NLLB tokenizer, and the target's code, forced as the first generated token,
  steers the output;
* a ``generate`` that outlives its deadline is interrupted: the segment fails alone with
  ``engine_timeout`` and the engine serves the next call; an interrupt ends the call it names,
  never a later one.

The weights are random: what is checked is the plumbing, not the translations.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import redis

from mtfleet.core import languages
from mtfleet.core.errors import EngineError
from mtfleet.core.settings import Settings
from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.producer.client import MTClient
from mtfleet.workers.engines.base import TranslationRequest
from mtfleet.workers.engines.transformers_engine import TransformersEngine
from mtfleet.workers.scheduler import Deadlines
from tests.conftest import tiny_model_path, tiny_seq2seq
from tests.support import ChunkRun

pytestmark = [pytest.mark.slow]

# greedy and short: the random models never end on their own, every output runs to its limit
SHORT = {"MT_TEMPERATURE": "0", "MT_MAX_TOKENS_RATIO": "0.5", "MT_MAX_TOKENS_SLACK": "4"}


@pytest.fixture(scope="module", params=["marian", "causal"])
def fleet(request: pytest.FixtureRequest, redis_server: str) -> Iterator[tuple[str, LocalFleet]]:
    family = request.param
    model = tiny_seq2seq("marian") if family == "marian" else tiny_model_path()
    redis.Redis.from_url(redis_server).flushall()
    f = LocalFleet(redis_url=redis_server, env={"MT_HEARTBEAT_S": "1", **SHORT})
    try:
        f.start_redis()
        f.start_api()
        f.start_worker("--engine", "transformers", "--model", model, "--concurrency", "4")
        f.wait_ready(180)
        yield family, f
    finally:
        f.stop()


def test_a_job_through_a_transformers_worker(fleet: tuple[str, LocalFleet]) -> None:
    family, f = fleet
    target = "es" if family == "marian" else "fr"
    texts = [f"Product {i}: cotton shirt in size {i % 5}" for i in range(12)] + [
        "Hello, how are you?",
        "Where is the train station?",
        "Add to cart",
        "Add to cart",
    ]
    with MTClient(f.api_url) as mt:
        job = mt.submit(texts, source="en", target=target, lane="bulk")
        assert mt.wait(job.id, timeout=300).status.value == "succeeded"
        result = mt.result(job.id)
        batch = result.translations
        assert len(batch) == 16 and all(batch)
        assert batch[14] == batch[15]
        assert len(set(batch)) > 3  # different inputs, different (random-model) outputs
        truncated = sorted(w.index for w in result.warnings if w.type == "truncated")
        assert truncated == list(range(16))  # every output ran to its limit
        # greedy: a segment alone gives what it got in the length-sorted, padded batches,
        # so every output sits at its own input's index
        for i in (0, 11, 12, 13):
            assert mt.translate([texts[i]], source="en", target=target, timeout=120) == [batch[i]]


def test_the_worker_registers_the_pairs_its_model_serves(fleet: tuple[str, LocalFleet]) -> None:
    family, f = fleet
    pairs = {
        (p["source"], p["target"]): p
        for p in httpx.get(f"{f.api_url}/v1/languages").json()["pairs"]
        if p["live"]
    }
    if family == "marian":  # one pair, from the tokenizer's source_lang / target_lang
        assert list(pairs) == [("en", "es")]
        refused = httpx.post(
            f"{f.api_url}/v1/jobs", json={"texts": ["x"], "source_lang": "en", "target_lang": "de"}
        )
        assert refused.status_code == 422
        assert refused.json()["error"]["type"] == "unsupported_language"
    else:  # a decoder-only model is prompted for every pair an LLM is
        assert len(pairs) == 38 * 37
    assert all(p["engine"] == "transformers" for p in pairs.values())


@pytest.fixture(scope="module")
def nllb() -> Iterator[TransformersEngine]:
    engine = TransformersEngine(Settings(engine="transformers", model=tiny_seq2seq("nllb")).engine)
    engine.load()
    yield engine
    engine.close()


def test_every_language_has_its_nllb_code(nllb: TransformersEngine) -> None:
    # the table's FLORES-200 codes are all in a real NLLB tokenizer's 202 codes
    assert nllb.family.name == "nllb"
    assert len(nllb.pairs()) == len(languages.LANGUAGES) * (len(languages.LANGUAGES) - 1)
    assert nllb.family.src_lang["zh-Hant"] == "zho_Hant"
    assert nllb.family.forced_bos["es"] == "spa_Latn"


def test_the_target_code_steers_an_nllb_model(nllb: TransformersEngine) -> None:
    texts = ["Hello, how are you?", "The book is on the table.", "Good morning."]
    to_es = nllb.translate([TranslationRequest(t, "en", "es") for t in texts])
    to_fr = nllb.translate([TranslationRequest(t, "en", "fr") for t in texts])
    assert all(t.text and t.truncated for t in to_es + to_fr)
    # the same encoder input; the forced first token (spa_Latn, fra_Latn) makes the difference
    assert [t.text for t in to_es] != [t.text for t in to_fr]
    again = nllb.translate([TranslationRequest(texts[0], "en", "es")])
    assert again[0].text == to_es[0].text


def test_the_beam_count_is_a_setting(nllb: TransformersEngine) -> None:
    texts = ["Hello, how are you?", "The book is on the table.", "Good morning."]
    saved = nllb.settings
    outputs = {}
    try:
        for beams in (1, 4):  # MT_NUM_BEAMS: greedy, then a beam search of four
            nllb.settings = saved.model_copy(update={"num_beams": beams})
            assert nllb._beams() == beams
            outputs[beams] = [
                t.text for t in nllb.translate([TranslationRequest(t, "en", "es") for t in texts])
            ]
    finally:
        nllb.settings = saved
    assert all(outputs[1]) and all(outputs[4])
    assert outputs[1] != outputs[4]  # the search reached generate


def test_a_generate_past_its_deadline_is_interrupted_and_fails_alone() -> None:
    # ~2000 new tokens (the slack) take seconds on any CPU; the deadline is a tenth of that
    long = {"temperature": 0, "max_tokens_slack": 2000}
    engine = TransformersEngine(
        Settings(engine="transformers", model=tiny_model_path(), **long).engine
    )
    run = ChunkRun(engine, deadlines=Deadlines(factor=1.0, floor_s=0.1, ceiling_s=600))
    try:
        [outcome] = run.run(["Red running shoes"])
        assert outcome.error is not None and outcome.error["type"] == "engine_timeout"
        # the engine is not stuck: its next call (short outputs now) runs to its end
        engine.settings = Settings(model=tiny_model_path(), **SHORT_KW).engine
        [after] = engine.translate([TranslationRequest("Blue running shoes", "en", "es")])
        assert after.text and after.truncated
    finally:
        run.close()
        engine.close()


SHORT_KW = {"temperature": 0, "max_tokens_ratio": 0.5, "max_tokens_slack": 4}


def test_an_interrupt_ends_the_call_it_names_and_no_later_one() -> None:
    """The watchdog's interrupt may arrive after its call returned and the next one started:
    it names its call, and the next one runs to its end; an interrupt naming the call in
    progress ends that call."""
    settings = Settings(
        engine="transformers", model=tiny_model_path(), temperature=0, max_tokens_slack=300
    )
    engine = TransformersEngine(settings.engine)
    engine.load()
    outcomes: dict[str, object] = {}

    def run(name: str, call: list[TranslationRequest]) -> threading.Thread:
        def target() -> None:
            try:
                outcomes[name] = engine.translate(call)
            except Exception as exc:  # noqa: BLE001 - what the test looks at
                outcomes[name] = exc

        thread = threading.Thread(target=target)
        thread.start()
        deadline = time.monotonic() + 30
        while engine._call is not call:  # in progress: its generate runs (300 new tokens)
            assert time.monotonic() < deadline
            time.sleep(0.001)
        return thread

    try:
        earlier = [TranslationRequest("Red running shoes", "en", "es")]
        engine.translate(earlier)
        later = [TranslationRequest("Blue running shoes", "en", "es")]
        thread = run("later", later)
        engine.interrupt(earlier)  # returned already
        thread.join(60)
        [out] = outcomes["later"]  # type: ignore[misc]
        assert out.truncated and out.tokens_out >= 300  # ran to its limit
        third = [TranslationRequest("Green running shoes", "en", "es")]
        thread = run("third", third)
        engine.interrupt(third)
        thread.join(60)
        assert isinstance(outcomes["third"], EngineError)
    finally:
        engine.close()
