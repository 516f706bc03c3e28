"""DeepL Write as the official client (``deepl`` 1.32, unchanged but for ``server_url``) calls
it: ``DeepLClient.rephrase_text`` and ``correct_text`` (``/v2/write/rephrase``,
``/v2/write/correct``). On a fleet with an ``openai`` pool in front of a local
OpenAI-compatible server that records every prompt, the request reaches the model with its
writing style, tone and variant as instructions and the improvement comes back in the client's
shape; on an Apertium fleet both methods raise the client's exception with a sentence saying
what the fleet lacks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import deepl
import pytest
import redis

from mtfleet.fleet.localfleet import LocalFleet
from tests.integration.test_openai_client import FakeServer, Reply, completion

LLM = "llm"
HEADERS = ("Text to improve:\n", "Text to correct:\n")


def improved(body: dict[str, Any]) -> Reply:
    """ "FIXED:" and the text: the prompt's last part, after its header."""
    prompt = body["messages"][0]["content"]
    last = prompt.rsplit("\n\n", 1)[1]
    for header in HEADERS:
        last = last.removeprefix(header)
    return completion(f"FIXED: {last}")


def test_an_apertium_fleet_says_what_it_lacks(redis_server: str) -> None:
    """A fleet of its own, before the LLM fleet starts: no pool follows instructions."""
    redis.Redis.from_url(redis_server).flushdb()
    env = {"MT_HEARTBEAT_S": "1", "MT_AUTH": "required", "MT_PROCESS_PER_LANE": "false"}
    with LocalFleet(redis_url=redis_server, env=env) as f:
        f.start_redis()
        f.start_worker("--engine", "apertium", "--pool", "apertium")
        f.start_api()
        f.wait_ready(90)
        client = deepl.DeepLClient(f.create_api_key("no-llm"), server_url=f.api_url)
        for call in (
            lambda: client.rephrase_text("Thiss is wrong.", target_lang="EN-US", tone="friendly"),
            lambda: client.correct_text(["Thiss is wrong."]),
        ):
            with pytest.raises(deepl.DeepLException) as refused:
                call()
            assert refused.value.http_status_code == 400
            assert (
                "Improving a text (rephrase, correct) needs a pool whose engine follows "
                "instructions, an LLM (the vllm or openai engine, or a causal transformers "
                "model), and this fleet has none: its pools run apertium (apertium)."
            ) in str(refused.value)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    fake = FakeServer(reply=improved)
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def fleet(redis_server: str, server: FakeServer) -> Iterator[LocalFleet]:
    redis.Redis.from_url(redis_server).flushdb()
    env = {
        "MT_REDIS_URL": redis_server,
        "MT_HEARTBEAT_S": "1",
        "MT_AUTH": "required",
        "MT_OPENAI_BASE_URL": server.url,
        "MT_CHECK_LANGUAGE": "false",  # the server answers in no language at all
        "MT_PROCESS_PER_LANE": "false",
    }
    with LocalFleet(redis_url=redis_server, env=env) as f:
        f.start_redis()
        f.start_worker("--engine", "openai", "--model", "m", "--pool", LLM, name="worker-llm")
        f.start_worker("--engine", "apertium", "--pool", "apertium", name="worker-apertium")
        f.start_api()
        f.wait_ready(90, pool=LLM)  # /readyz alone is ready with either pool's workers
        f.wait_ready(90, pool="apertium")
        yield f


@pytest.fixture(scope="module")
def client(fleet: LocalFleet) -> deepl.DeepLClient:
    return deepl.DeepLClient(fleet.create_api_key("writer"), server_url=fleet.api_url)


def prompts_with(server: FakeServer, text: str) -> list[str]:
    return [
        b["messages"][0]["content"] for b in server.bodies if text in b["messages"][0]["content"]
    ]


def test_rephrase_reaches_the_model_with_its_style(
    client: deepl.DeepLClient, server: FakeServer
) -> None:
    text = "I could relly use sum help with edits on thiss text !"
    out = client.rephrase_text([text], target_lang="en-GB", style="business")
    assert isinstance(out, list) and len(out) == 1
    assert out[0].text == f"FIXED: {text}"
    assert (out[0].target_language, out[0].detected_source_language) == ("en-GB", "en")
    (prompt,) = prompts_with(server, text)
    assert prompt == (
        "Improve the following English text: correct its spelling, grammar and punctuation, "
        "and rephrase it where that makes it clearer and reads better, keeping its meaning. "
        "Write it in English. Reply with the improved text only.\n"
        "\nFollow these instructions:\n"
        "- Write in a business style: clear, precise and professional.\n"
        "- Write in British English (its spelling and vocabulary).\n"
        f"\nText to improve:\n{text}"
    )


def test_a_tone_without_target_lang_is_improved_in_the_detected_language(
    client: deepl.DeepLClient, server: FakeServer
) -> None:
    text = "We regret to inform you that your order will arrive late next week."
    out = client.rephrase_text(text, tone="prefer_friendly")
    assert not isinstance(out, list)
    assert out.text == f"FIXED: {text}"
    assert (out.target_language, out.detected_source_language) == ("en", "en")
    (prompt,) = prompts_with(server, text)
    assert "- Use a friendly tone: warm and approachable.\n" in prompt
    assert prompt.startswith("Improve the following English text")


def test_correct_is_a_correction_only_and_cached_apart_from_rephrase(
    client: deepl.DeepLClient, server: FakeServer
) -> None:
    text = "Ich habe heute keine zeit für dich."
    fixed = client.correct_text(text, target_lang="DE")
    assert not isinstance(fixed, list)
    assert (fixed.text, fixed.target_language, fixed.detected_source_language) == (
        f"FIXED: {text}",
        "DE",
        "de",
    )
    again = client.correct_text(text, target_lang="DE")
    assert not isinstance(again, list) and again.text == fixed.text
    client.rephrase_text(text, target_lang="DE")
    sent = prompts_with(server, text)
    # the second correction was the phrase cache's; the rephrase is another prompt
    assert len(sent) == 2
    assert sent[0] == (
        "Correct the spelling, grammar and punctuation of the following German text, changing "
        "nothing else (keep its wording, style and tone). Reply with the corrected text only.\n"
        f"\nText to correct:\n{text}"
    )
    assert sent[1].startswith("Improve the following German text")


def test_a_style_and_a_tone_together_are_refused_as_deepl_refuses_them(
    client: deepl.DeepLClient,
) -> None:
    with pytest.raises(deepl.DeepLException) as refused:
        client.rephrase_text("Hi there.", target_lang="EN-US", style="casual", tone="friendly")
    assert refused.value.http_status_code == 400
    assert "writing_style or tone, not both" in str(refused.value)
