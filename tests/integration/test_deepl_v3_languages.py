"""DeepL's ``GET /v3/languages`` (``resource``, ``include``) and ``/v3/languages/resources`` on
the real app (in process, real Redis) with an en->es pair registered as a worker's heartbeat
leaves it; and ``tag_handling_version=v2``'s strict XML on ``/v2/translate``, refused before
any job. The official client (1.32) calls neither v3 route, so raw HTTP, as DeepL documents
the shapes; tests/e2e/test_deepl_client.py has both through a real fleet."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.api.app import create_app
from mtfleet.core.apikeys import KeyStore
from mtfleet.core.registry import Registry, WorkerInfo
from mtfleet.core.settings import Settings
from tests.integration.registered import register_pair
from tests.support import in_process

KEYS = {"lang", "name", "usable_as_source", "usable_as_target", "status", "features"}


@pytest.fixture
def api(redis_url: str, r: redis.Redis) -> Iterator[tuple[TestClient, dict[str, str]]]:
    register_pair(r)
    settings = Settings(redis_url=redis_url, auth="required", auth_cache_s=0, deepl_wait_s=0.5)
    _, key = KeyStore(r, cache_s=0).create("v3")
    with TestClient(create_app(in_process(settings)), raise_server_exceptions=False) as c:
        yield c, {"Authorization": f"DeepL-Auth-Key {key}"}


def by_lang(c: TestClient, auth: dict[str, str], **params: object) -> dict[str, dict]:
    got = c.get("/v3/languages", params=params, headers=auth)  # type: ignore[arg-type]
    assert got.status_code == 200, got.text
    assert all(set(x) == KEYS and x["status"] == "stable" for x in got.json())
    return {x["lang"]: x for x in got.json()}


def test_languages_for_text_translation(api: tuple[TestClient, dict[str, str]]) -> None:
    c, auth = api
    langs = by_lang(c, auth, resource="translate_text")
    assert set(langs) == {"en", "es", "es-419"}  # BCP 47, a target under DeepL's variants
    en, es = langs["en"], langs["es"]
    assert (en["usable_as_source"], en["usable_as_target"]) == (True, False)
    assert (es["usable_as_source"], es["usable_as_target"]) == (False, True)
    assert en["name"] == "English" and langs["es-419"]["name"] == "Spanish (Latin American)"
    stable = {"status": "stable"}
    assert en["features"] == {"tag_handling": stable, "glossary": stable, "auto_detection": stable}
    assert es["features"] == {"tag_handling": stable, "glossary": stable}  # no formality here
    assert by_lang(c, auth, resource="translate_document")["es"]["features"] == {"glossary": stable}


def test_each_resource_and_include(api: tuple[TestClient, dict[str, str]]) -> None:
    c, auth = api
    glossary = by_lang(c, auth, resource="glossary")
    assert set(glossary) == {"en", "es"}  # no variant
    assert glossary["en"]["usable_as_source"] and glossary["es"]["usable_as_target"]
    assert all(x["features"] == {} for x in glossary.values())
    assert set(by_lang(c, auth, resource="translation_memory")) == {"en", "es"}
    rules = by_lang(c, auth, resource="style_rules")
    assert list(rules) == ["es"] and not rules["es"]["usable_as_source"]
    # no pool follows instructions (Apertium's en->es): nothing to improve a text with
    assert by_lang(c, auth, resource="write") == {} == by_lang(c, auth, resource="voice")
    # the fleet has nothing in beta nor from a third party: include adds nothing
    plain = c.get("/v3/languages?resource=translate_text", headers=auth).json()
    both = c.get(
        "/v3/languages?resource=translate_text&include=beta&include=external", headers=auth
    )
    assert both.status_code == 200 and both.json() == plain


def test_resources(api: tuple[TestClient, dict[str, str]]) -> None:
    c, auth = api
    got = c.get("/v3/languages/resources", headers=auth)
    assert got.status_code == 200, got.text
    text = {x["name"]: x["features"] for x in got.json()}
    assert {"translate_text", "translate_document", "glossary", "write", "voice"} <= set(text)
    assert {"name": "tag_handling", "needs_source_support": True, "needs_target_support": True} in (
        text["translate_text"]
    )
    assert {"name": "auto_detection", "needs_source_support": True} in text["translate_text"]


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("", "parameter 'resource' is required"),
        ("?resource=translate", "parameter 'resource' must be one of translate_text"),
        ("?resource=glossary&include=alpha", "parameter 'include' must be beta or external"),
    ],
)
def test_bad_parameters_are_deepls_400(
    api: tuple[TestClient, dict[str, str]], query: str, says: str
) -> None:
    c, auth = api
    got = c.get("/v3/languages" + query, headers=auth)
    assert got.status_code == 400 and list(got.json()) == ["message"], got.text
    assert says in got.json()["message"]


def test_a_key_is_required(api: tuple[TestClient, dict[str, str]]) -> None:
    c, _ = api
    assert c.get("/v3/languages?resource=translate_text").status_code == 403
    assert c.get("/v3/languages/resources").status_code == 403


@pytest.mark.parametrize(
    ("texts", "says"),
    [
        (["The <b>red</i> shirt"], "text[0] is not well-formed XML"),
        (["<p>fine</p>", "The <b>red shirt"], "text[1] is not well-formed XML"),
        (["Tom &amp; Jerry &nbsp;"], "undefined entity at line 1, column 17"),
        (["<p>The red\nshirt</b></p>"], "mismatched tag at line 2, column 8"),
        (["<!DOCTYPE p><p>x</p>"], "DOCTYPE"),
    ],
)
def test_tag_handling_v2_refuses_malformed_xml_naming_the_problem(
    api: tuple[TestClient, dict[str, str]], texts: list[str], says: str
) -> None:
    c, auth = api
    body = {
        "text": texts,
        "target_lang": "ES",
        "source_lang": "EN",
        "tag_handling": "xml",
        "tag_handling_version": "v2",
    }
    got = c.post("/v2/translate", json=body, headers=auth)
    assert got.status_code == 400 and list(got.json()) == ["message"], got.text
    assert says in got.json()["message"], got.json()
    # v1 (DeepL's default) takes the same text as the scan finds it: no 400 (the job waits
    # for a worker that never comes here: 429)
    lenient = c.post("/v2/translate", json={**body, "tag_handling_version": "v1"}, headers=auth)
    assert lenient.status_code == 429, lenient.text
    bad = c.post("/v2/translate", json={**body, "tag_handling_version": "v3"}, headers=auth)
    assert bad.status_code == 400 and "tag_handling_version" in bad.json()["message"]


def test_write_lists_what_a_pool_that_follows_instructions_writes(
    api: tuple[TestClient, dict[str, str]], r: redis.Redis
) -> None:
    c, auth = api
    Registry(r).beat(
        WorkerInfo(
            name="llm@test",
            pool="llm",
            engine="openai",
            model="m",
            fingerprint="fp-llm",
            instructions=True,
            pairs=[("en", "de"), ("de", "en")],
            lanes=["interactive", "bulk"],
        ),
        ttl_s=300,
    )
    write = by_lang(c, auth, resource="write")
    assert set(write) == {"de", "en"}  # not es: only Apertium writes it
    stable = {"status": "stable"}
    assert write["de"]["usable_as_source"] and write["de"]["usable_as_target"]
    assert write["de"]["features"] == {"writing_style": stable, "tone": stable}
