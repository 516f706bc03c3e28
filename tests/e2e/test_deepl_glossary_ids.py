"""Several glossaries in one request (DeepL's ``glossary_ids``, up to five) through DeepL's own
Python client (``deepl``, unchanged) against a real ``mtfleet api`` with API keys required and
a real Apertium worker (English to Spanish): applied together in order (the first listed wins a
term), to text and to a document; a sixth refused with DeepL's 400; a multilingual glossary's
update applied by the next request (its version is in the phrase cache's key). /v1 takes the
same list."""

from __future__ import annotations

import io
from collections.abc import Iterator

import deepl
import httpx
import pytest
from deepl.api_data import MultilingualGlossaryDictionaryEntries

from mtfleet.fleet.localfleet import LocalFleet
from tests.e2e.fleet_control import apertium_fleet

SHIRT = "The red shirt is in the house."  # Apertium: "La camisa roja es en la casa."


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    env = {"MT_AUTH": "required", "MT_AUTH_CACHE_S": "0", "MT_DEEPL_WAIT_S": "10"}
    with apertium_fleet(redis_server, env) as f:
        yield f


@pytest.fixture(scope="module")
def key(fleet: LocalFleet) -> str:
    return fleet.create_api_key("deepl-glossary-ids")


@pytest.fixture(scope="module")
def client(fleet: LocalFleet, key: str) -> deepl.DeepLClient:
    return deepl.DeepLClient(key, server_url=fleet.api_url)


def shop(client: deepl.DeepLClient) -> tuple[deepl.GlossaryInfo, deepl.MultilingualGlossaryInfo]:
    """A v2 glossary (shirt: blusa) and a multilingual one that says shirt otherwise and has
    house too."""
    first = client.create_glossary("shirts", "EN", "ES", {"shirt": "blusa"})
    second = client.create_multilingual_glossary(
        "shop",
        [
            MultilingualGlossaryDictionaryEntries(
                "EN", "ES", {"shirt": "camiseta", "house": "hogar"}
            )
        ],
    )
    return first, second


def test_two_glossaries_apply_in_order_and_an_update_is_seen_next(
    client: deepl.DeepLClient,
) -> None:
    first, second = shop(client)
    both = client.translate_text(
        SHIRT, source_lang="EN", target_lang="ES", glossary_ids=[first, second]
    ).text
    # the first listed wins "shirt"; the second still gives "house"
    assert "blusa" in both and "hogar" in both and "camiseta" not in both, both
    swapped = client.translate_text(
        SHIRT, source_lang="EN", target_lang="ES", glossary_ids=[second, first]
    ).text
    assert "camiseta" in swapped and "hogar" in swapped and "blusa" not in swapped, swapped

    # the multilingual glossary's dictionary replaced: the next request (the same one, whose
    # sentence the phrase cache holds for the earlier versions) applies the new entries
    client.replace_multilingual_glossary_dictionary(
        second, MultilingualGlossaryDictionaryEntries("EN", "ES", {"house": "morada"})
    )
    after = client.translate_text(
        SHIRT, source_lang="EN", target_lang="ES", glossary_ids=[first, second]
    ).text
    assert "blusa" in after and "morada" in after and "hogar" not in after, after
    merged = client.update_multilingual_glossary_dictionary(
        second, MultilingualGlossaryDictionaryEntries("EN", "ES", {"shirt": "camiseta"})
    )
    assert {d.entry_count for d in merged.dictionaries} == {2}
    then = client.translate_text(
        SHIRT, source_lang="EN", target_lang="ES", glossary_ids=[second.glossary_id, first]
    ).text
    assert "camiseta" in then and "morada" in then, then


def test_five_glossaries_apply_and_a_sixth_is_refused(client: deepl.DeepLClient) -> None:
    first, second = shop(client)
    more = [
        client.create_glossary(f"g{n}", "EN", "ES", {word: target})
        for n, (word, target) in enumerate([("red", "carmesí"), ("is", "está"), ("the", "la")])
    ]
    five = [first, second, *more]
    out = client.translate_text(SHIRT, source_lang="EN", target_lang="ES", glossary_ids=five)
    for word in ("blusa", "hogar", "carmesí", "está"):
        assert word in out.text, out.text

    ids = [g.glossary_id for g in five] + [first.glossary_id.replace("-", "")]
    # the client refuses a sixth itself; sent anyway (extra_body_parameters), DeepL's 400
    with pytest.raises(ValueError, match="more than 5"):
        client.translate_text(SHIRT, source_lang="EN", target_lang="ES", glossary_ids=ids)
    with pytest.raises(
        deepl.DeepLException,
        match=r"Bad request.*glossary_ids must not contain more than 5 glossary IDs \(it names 6",
    ):
        client.translate_text(
            SHIRT,
            source_lang="EN",
            target_lang="ES",
            glossary_ids=[first],
            extra_body_parameters={"glossary_ids": ids},
        )
    with pytest.raises(deepl.DeepLException, match="must not contain more than 5"):
        client.translate_document_upload(
            b"<p>The red shirt.</p>",
            filename="page.html",
            source_lang="EN",
            target_lang="ES",
            glossary_ids=[first],
            extra_body_parameters={"glossary_ids": ",".join(ids)},
        )


def test_a_document_with_two_glossaries(
    fleet: LocalFleet, key: str, client: deepl.DeepLClient
) -> None:
    first, second = shop(client)
    handle = client.translate_document_upload(
        f"<p>{SHIRT}</p>\n".encode(),
        filename="page.html",
        source_lang="EN",
        target_lang="ES",
        glossary_ids=[first, second],
    )
    got = httpx.get(
        f"{fleet.api_url}/v1/jobs/{handle.document_id}",
        params={"wait": 60},
        headers={"Authorization": f"Bearer {key}"},
        timeout=70,
    )
    assert got.json()["status"] == "succeeded", got.text
    out = io.BytesIO()
    client.translate_document_download(handle, out)
    page = out.getvalue().decode()
    assert "blusa" in page and "hogar" in page and "camiseta" not in page, page


def test_v1_takes_glossary_ids(fleet: LocalFleet, key: str, client: deepl.DeepLClient) -> None:
    first = client.create_glossary("shirts", "EN", "ES", {"shirt": "blusa"})
    v1 = [from_uuid(first.glossary_id)]  # the fleet's form of the same id
    auth = {"Authorization": f"Bearer {key}"}
    house = client.create_glossary("house", "EN", "ES", {"house": "hogar", "shirt": "camiseta"})
    body = {
        "texts": [SHIRT],
        "source_lang": "en",
        "target_lang": "es",
        "glossary_ids": [*v1, from_uuid(house.glossary_id)],
    }
    got = httpx.post(f"{fleet.api_url}/v1/translate", json=body, headers=auth, timeout=60)
    assert got.status_code == 200, got.text
    text = got.json()["translations"][0]
    assert "blusa" in text and "hogar" in text and "camiseta" not in text, text
    for bad, why in (
        ({**body, "glossary_ids": v1 * 6}, "at most 5"),
        ({**body, "glossary_id": v1[0]}, "glossary_id or glossary_ids, not both"),
    ):
        refused = httpx.post(f"{fleet.api_url}/v1/translate", json=bad, headers=auth, timeout=60)
        assert refused.status_code == 422 and why in refused.text, refused.text


def from_uuid(glossary_id: str) -> str:
    return glossary_id.replace("-", "")
