"""A document's neighbouring sentences and a glossary's terms in the prompt, as a user sends
them: a fleet with two ``openai`` pools in front of a local OpenAI-compatible server that records
every prompt it gets, one prompted with the generic chat template (``llm``, en->es) and one with
Hunyuan-MT's templates (``hy``, en->de), and what each was sent asserted as a whole."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import redis

from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.producer.client import MTClient
from tests.e2e.test_guidance import prompts_with, translated
from tests.integration.test_openai_client import FakeServer

DOC = """# Shoes

Anna bought new running shoes. She wore them to work on Monday. They were too tight.

Free delivery.
"""


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    fake = FakeServer(reply=translated)
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def fleet(redis_server: str, server: FakeServer) -> Iterator[LocalFleet]:
    redis.Redis.from_url(redis_server).flushall()
    env = {
        "MT_REDIS_URL": redis_server,
        "MT_HEARTBEAT_S": "1",
        "MT_AUTH": "required",
        "MT_ROUTES": "en-es=llm,en-de=hy",
        "MT_OPENAI_BASE_URL": server.url,
        "MT_CHECK_LANGUAGE": "false",  # the server answers in no language at all
        "MT_PROCESS_PER_LANE": "false",
    }
    with LocalFleet(redis_url=redis_server, env=env) as f:
        f.start_redis()
        f.start_worker("--engine", "openai", "--model", "m", "--pool", "llm", name="worker-llm")
        f.start_worker(
            "--engine",
            "openai",
            "--model",
            "m",
            "--pool",
            "hy",
            name="worker-hy",
            env={"MT_PROMPT_STYLE": "hunyuan"},
        )
        f.start_api()
        f.wait_ready(90, pool="llm")
        f.wait_ready(90, pool="hy")
        yield f


@pytest.fixture(scope="module")
def key(fleet: LocalFleet) -> str:
    return fleet.create_api_key("context")


def asked(server: FakeServer, text: str) -> list[str]:
    """The prompts that asked for ``text`` (it is their last line)."""
    return [p for p in prompts_with(server, text) if p.endswith(f"\n{text}")]


def translate_doc(fleet: LocalFleet, key: str, target: str, content: str = DOC) -> str:
    with MTClient(fleet.api_url, api_key=key) as mt:
        job = mt.submit_document(content, format="markdown", source="en", target=target)
        assert mt.wait(job.id, timeout=60).status == "succeeded"
        return mt.document(job.id).decode()


def test_a_document_sentence_gets_its_neighbours(
    fleet: LocalFleet, key: str, server: FakeServer
) -> None:
    out = translate_doc(fleet, key, "es")
    assert "ES: She wore them to work on Monday." in out
    (prompt,) = asked(server, "She wore them to work on Monday.")
    assert prompt == (
        "Translate the following English text into Spanish. Reply with the translation only.\n"
        "\nThe sentences around the text in its document (do not translate them):\n"
        "<surrounding>\nAnna bought new running shoes. They were too tight.\n</surrounding>\n"
        "\nText to translate:\nShe wore them to work on Monday."
    )
    # a sentence alone in its paragraph (and the heading) has no neighbours to read
    (alone,) = asked(server, "Free delivery.")
    assert "<surrounding>" not in alone and "<context>" not in alone
    (heading,) = asked(server, "Shoes")
    assert "<surrounding>" not in heading


def test_the_same_sentence_with_other_neighbours_is_translated_again(
    fleet: LocalFleet, key: str, server: FakeServer
) -> None:
    other = "Tom tried the boots. She wore them to work on Monday. Nobody noticed."
    translate_doc(fleet, key, "es", other + "\n")
    sent = asked(server, "She wore them to work on Monday.")
    surroundings = [re.findall(r"<surrounding>\n(.*)\n</surrounding>", p) for p in sent]
    assert ["Tom tried the boots. Nobody noticed."] in surroundings
    # and the first document again: its sentences come from the phrase cache, not the model
    before = len(server.bodies)
    translate_doc(fleet, key, "es")
    assert len(server.bodies) == before


def test_a_hunyuan_prompt_gets_them_in_its_context_template(
    fleet: LocalFleet, key: str, server: FakeServer
) -> None:
    translate_doc(fleet, key, "de")
    (prompt,) = [p for p in asked(server, "She wore them to work on Monday.") if "德语" in p]
    assert prompt == (
        "Anna bought new running shoes. They were too tight.\n"
        "参考上面的信息，把下面的文本翻译成德语，注意不需要翻译上文，也不要额外解释：\n\n"
        "She wore them to work on Monday."
    )


def test_a_glossary_goes_into_a_hunyuan_prompt_and_is_checked_in_the_output(
    fleet: LocalFleet, key: str, server: FakeServer
) -> None:
    with MTClient(fleet.api_url, api_key=key) as mt:
        glossary = mt.create_glossary(
            "shoes-de", source="en", target="de", entries={"running shoe": "Laufschuh"}
        )
        out = mt.translation(
            ["The running shoe is light."], source="en", target="de", glossary_id=glossary.id
        )
    # the fake model ignores the term: a hard check, so it is asked once more, and the
    # translation is delivered flagged
    assert prompts_with(server, "The running shoe is light.") == 2 * [
        "参考下面的翻译：\nrunning shoe 翻译成 Laufschuh\n\n"
        "把下面的文本翻译成德语，不要额外解释。\n\nThe running shoe is light."
    ]
    assert out.translations == ["ES: The running shoe is light."]
    assert [w.type for w in out.warnings] == ["glossary_term"]
    assert "laufschuh" in out.warnings[0].message and "retry" in out.warnings[0].message


def test_a_chat_model_gets_a_glossary_term_as_a_tag(
    fleet: LocalFleet, key: str, server: FakeServer
) -> None:
    with MTClient(fleet.api_url, api_key=key) as mt:
        glossary = mt.create_glossary(
            "shoes-es", source="en", target="es", entries={"running shoe": "zapatilla"}
        )
        out = mt.translation(
            ["The running shoe is soft."], source="en", target="es", glossary_id=glossary.id
        )
    (prompt,) = prompts_with(server, "is soft.")
    assert prompt.endswith("\n\nThe <x1/> is soft.")
    assert "running shoe" not in prompt
    assert out.translations == ["ES: The zapatilla is soft."]
    assert out.warnings == []


def test_a_term_the_model_keeps_passes_the_check_at_once(
    fleet: LocalFleet, key: str, server: FakeServer
) -> None:
    with MTClient(fleet.api_url, api_key=key) as mt:
        glossary = mt.create_glossary("brand-de", source="en", target="de", protected=["RunFast"])
        out = mt.translation(
            ["RunFast soles last long."], source="en", target="de", glossary_id=glossary.id
        )
    assert prompts_with(server, "RunFast soles last long.") == [
        "参考下面的翻译：\nRunFast 翻译成 RunFast\n\n"
        "把下面的文本翻译成德语，不要额外解释。\n\nRunFast soles last long."
    ]
    assert out.translations == ["ES: RunFast soles last long."]
    assert out.warnings == []
