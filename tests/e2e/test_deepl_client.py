"""The DeepL API v2 surface as DeepL's own Python client (``deepl``, unchanged) uses it, against a
real ``mtfleet api`` with API keys required and a real Apertium worker (English to Spanish),
each a process of its own; raw HTTP for what the client cannot send (form bodies, a request
without a key, too many texts, the same request twice at once)."""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import deepl
import httpx
import pytest
from deepl.api_data import MultilingualGlossaryDictionaryEntries

from mtfleet import formats as documents
from mtfleet.fleet.localfleet import LocalFleet
from tests.conftest import ROOT
from tests.e2e.fleet_control import apertium_fleet, jobs_made, worker_paused

FIXTURES = ROOT / "tests" / "fixtures" / "documents"
SHIRT = "The red shirt is in the house."


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    env = {"MT_AUTH": "required", "MT_AUTH_CACHE_S": "0", "MT_DEEPL_WAIT_S": "2"}
    with apertium_fleet(redis_server, env) as f:
        yield f


@pytest.fixture(scope="module")
def key(fleet: LocalFleet) -> str:
    return fleet.create_api_key("deepl-client")


@pytest.fixture(scope="module")
def client(fleet: LocalFleet, key: str) -> deepl.DeepLClient:
    return deepl.DeepLClient(key, server_url=fleet.api_url)


def wait_done(fleet: LocalFleet, key: str, job_id: str) -> None:
    """Until the job is final (a blocking wait on mtfleet's own API, no polling)."""
    got = httpx.get(
        f"{fleet.api_url}/v1/jobs/{job_id}",
        params={"wait": 60},
        headers={"Authorization": f"Bearer {key}"},
        timeout=70,
    )
    assert got.json()["status"] == "succeeded", got.text


# --- translate ---------------------------------------------------------------------------------


@pytest.mark.parametrize("slash", ["", "/"])
def test_translate_text_with_the_official_client(fleet: LocalFleet, key: str, slash: str) -> None:
    c = deepl.DeepLClient(key, server_url=fleet.api_url + slash)
    one = c.translate_text(SHIRT, source_lang="EN", target_lang="ES")
    assert isinstance(one, deepl.TextResult)
    assert one.text == "La camisa roja es en la casa."  # Apertium's
    assert one.detected_source_lang == "EN" and one.billed_characters == len(SHIRT)
    many = c.translate_text(["My sister bought a new table.", "", "Add to cart"], target_lang="ES")
    assert [r.text for r in many] == ["Mi hermana compró una mesa nueva.", "", "Añade a carro"]
    assert [r.detected_source_lang for r in many] == ["EN", "EN", "EN"]  # detected
    assert [r.billed_characters for r in many] == [29, 0, 11]


def test_a_short_string_without_source_lang_is_detected_among_the_languages_served(
    client: deepl.DeepLClient,
) -> None:
    """A lone "Hello" looks Italian to a detector: on an en<->es fleet it is English, the only
    language served into Spanish (it was a 400 "no pool serves it->es")."""
    for text in ("Hello", "Sale"):
        out = client.translate_text(text, target_lang="ES")
        assert out.detected_source_lang == "EN" and out.text, text


def test_every_parameter_the_client_sends_is_accepted(client: deepl.DeepLClient) -> None:
    out = client.translate_text(
        "The red shirt. The blue table",
        source_lang="EN",
        target_lang="ES",
        formality="prefer_more",
        context="An online shop",
        split_sentences="nonewlines",
        preserve_formatting=True,
        model_type="latency_optimized",
        tag_handling_version="v2",
    )
    assert out.text == "La camisa roja. La mesa azul"
    assert out.model_type_used == "latency_optimized"
    # formality "more" is an instruction: Apertium cannot follow one, and says so (docs/llm.md)
    with pytest.raises(deepl.DeepLException, match="apertium engine, which does not follow"):
        client.translate_text("The red shirt", target_lang="ES", formality="more")


def test_tag_handling_html_and_xml(client: deepl.DeepLClient) -> None:
    html = client.translate_text(
        '<p>The <b class="x">red</b> shirt. <span translate="no">The house</span></p>',
        source_lang="EN",
        target_lang="ES",
        tag_handling="html",
        ignore_tags=["code"],
    )
    assert (
        html.text == '<p>La <b class="x">camisa</b> roja. <span translate="no">The house</span></p>'
    )
    xml = client.translate_text(
        "<doc><par>The red shirt.</par><par>The <keep>red</keep> house.</par></doc>",
        source_lang="EN",
        target_lang="ES",
        tag_handling="xml",
        ignore_tags="keep",
    )
    assert xml.text == "<doc><par>La camisa roja.</par><par>La <keep>red</keep> casa.</par></doc>"
    flat = client.translate_text(
        "<doc><par>The red shirt.</par><par>The house.</par></doc>",
        source_lang="EN",
        target_lang="ES",
        tag_handling="xml",
        outline_detection=False,
        splitting_tags=["par"],
    )
    assert flat.text == "<doc><par>La camisa roja.</par><par>La casa.</par></doc>"


def test_tag_handling_version_v2_is_strict_xml_and_echoed(
    fleet: LocalFleet, key: str, client: deepl.DeepLClient
) -> None:
    text = "<doc><par>The red shirt.</par><par>The house.</par></doc>"
    ok = client.translate_text(
        text, source_lang="EN", target_lang="ES", tag_handling="xml", tag_handling_version="v2"
    )
    assert ok.text == "<doc><par>La camisa roja.</par><par>La casa.</par></doc>"
    with pytest.raises(deepl.DeepLException, match=r"Bad request.*text\[0\] is not well-formed"):
        client.translate_text(
            "<doc><par>The red shirt.</doc>",
            source_lang="EN",
            target_lang="ES",
            tag_handling="xml",
            tag_handling_version="v2",
        )
    # the client does not read the echo: DeepL's field, on the wire
    auth = {"Authorization": f"DeepL-Auth-Key {key}"}
    url = f"{fleet.api_url}/v2/translate"
    body = {"text": [text], "target_lang": "ES", "source_lang": "EN", "tag_handling": "xml"}
    for sent, echoed in (("v2", "v2"), ("v1", "v1"), (None, "v1")):
        got = httpx.post(url, json={**body, "tag_handling_version": sent}, headers=auth)
        assert got.status_code == 200, got.text
        assert got.json()["translations"][0]["tag_handling_version"] == echoed
    plain = httpx.post(url, json={"text": ["The house"], "target_lang": "ES"}, headers=auth)
    assert "tag_handling_version" not in plain.json()["translations"][0]


def test_v3_languages_of_the_fleet(fleet: LocalFleet, key: str) -> None:
    auth = {"Authorization": f"DeepL-Auth-Key {key}"}
    got = httpx.get(f"{fleet.api_url}/v3/languages?resource=translate_text", headers=auth)
    assert got.status_code == 200, got.text
    langs = {x["lang"]: x for x in got.json()}
    assert {"en", "es", "en-US", "en-GB", "es-419"} <= set(langs)  # en<->es served
    assert langs["en"]["usable_as_source"] and langs["es"]["usable_as_target"]
    assert not langs["en-US"]["usable_as_source"] and langs["en-US"]["usable_as_target"]
    assert "tag_handling" in langs["es"]["features"]


def test_form_bodies_and_what_the_client_cannot_send(fleet: LocalFleet, key: str) -> None:
    auth = {"Authorization": f"DeepL-Auth-Key {key}"}
    url = f"{fleet.api_url}/v2/translate"
    form = httpx.post(
        url,
        data={"text": ["The red shirt", "The house"], "target_lang": "ES", "source_lang": "EN"},
        headers=auth,
    )
    assert form.status_code == 200, form.text
    assert [t["text"] for t in form.json()["translations"]] == ["La camisa roja", "La casa"]
    assert httpx.post(url, data={"text": "x", "target_lang": "ES"}).status_code == 403  # no key
    bad = httpx.post(
        url,
        data={"text": "x", "target_lang": "ES"},
        headers={"Authorization": "DeepL-Auth-Key mt_0000000000000000_no"},
    )
    assert bad.status_code == 403 and "message" in bad.json()  # never 401 on this surface
    assert httpx.get(f"{fleet.api_url}/v2/usage").status_code == 403
    many = httpx.post(url, json={"text": ["x"] * 51, "target_lang": "ES"}, headers=auth)
    assert many.status_code == 413, many.text
    lang = httpx.post(url, json={"text": ["x"], "target_lang": "XX"}, headers=auth)
    assert lang.status_code == 400 and "XX" in lang.json()["message"]
    missing = httpx.post(url, json={"target_lang": "ES"}, headers=auth)
    assert missing.status_code == 400 and "text" in missing.json()["message"]


def test_errors_as_the_client_maps_them(fleet: LocalFleet, client: deepl.DeepLClient) -> None:
    with pytest.raises(deepl.AuthorizationException):
        deepl.Translator("mt_0000000000000000_nope", server_url=fleet.api_url).get_usage()
    with pytest.raises(deepl.DeepLException, match="413"):
        client.translate_text(["a"] * 51, target_lang="ES")
    with pytest.raises(deepl.DeepLException, match="Not found"):
        client.translate_text("x", source_lang="EN", target_lang="ES", glossary="0" * 32)
    with pytest.raises(deepl.GlossaryNotFoundException):
        client.get_glossary("0" * 32)
    with pytest.raises(deepl.DeepLException, match="Bad request"):
        client.translate_text("x", source_lang="EN", target_lang="NB")

    quota = deepl.Translator(fleet.create_api_key("q", chars_per_day=30), server_url=fleet.api_url)
    assert quota.translate_text(SHIRT, source_lang="EN", target_lang="ES").billed_characters == 30
    usage = quota.get_usage()
    assert (usage.character.count, usage.character.limit) == (30, 30)
    assert usage.character.limit_reached
    with pytest.raises(deepl.QuotaExceededException):  # 456: not retried
        quota.translate_text("More", source_lang="EN", target_lang="ES")

    rated = fleet.create_api_key("r", rate=0.5)  # one request every 2 s
    headers = {"Authorization": f"DeepL-Auth-Key {rated}"}
    assert httpx.get(f"{fleet.api_url}/v2/usage", headers=headers).status_code == 200
    slow = httpx.get(f"{fleet.api_url}/v2/usage", headers=headers)
    assert slow.status_code == 429 and int(slow.headers["Retry-After"]) >= 1
    # the client retries a 429 (with backoff) until the key's rate lets it through
    assert deepl.Translator(rated, server_url=fleet.api_url).get_usage().character.count == 0


def test_languages_usage_and_glossary_pairs(client: deepl.DeepLClient) -> None:
    sources = {lang.code for lang in client.get_source_languages()}
    targets = {
        lang.code: lang for lang in client.get_target_languages()
    }  # type=target in a GET body
    assert {"EN", "ES"} <= sources and "EN-US" not in sources
    assert {"EN-US", "EN-GB", "ES", "ES-419"} <= set(targets)
    assert targets["EN-US"].name == "English (American)"
    assert targets["ES"].supports_formality is False
    pairs = {(p.source_lang, p.target_lang) for p in client.get_glossary_languages()}
    assert {("en", "es"), ("es", "en")} <= pairs
    usage = client.get_usage()
    assert usage.character.valid and not usage.any_limit_reached


# --- a resend joins the work already running ----------------------------------------------------


def test_a_resent_request_joins_the_job_already_running(fleet: LocalFleet, key: str) -> None:
    """The client resends after a timeout or a 429 without any idempotency key. With the
    worker stopped, two identical requests at once get 429 (the wait is MT_DEEPL_WAIT_S) and
    make ONE job; the official client sending the same request joins it and gets the
    translation once the worker runs again; the key is charged once."""
    text = "My sister bought a new red shirt in the house."
    body = {
        "text": [text],
        "target_lang": "ES",
        "source_lang": "EN",
        "show_billed_characters": True,
    }
    headers = {"Authorization": f"DeepL-Auth-Key {key}"}
    c = deepl.Translator(key, server_url=fleet.api_url)
    used = c.get_usage().character.count
    before = jobs_made(fleet)
    with worker_paused(fleet):
        with ThreadPoolExecutor(2) as pool:
            answers = list(
                pool.map(
                    lambda _: httpx.post(
                        f"{fleet.api_url}/v2/translate", json=body, headers=headers, timeout=30
                    ),
                    range(2),
                )
            )
        assert [a.status_code for a in answers] == [429, 429], [a.text for a in answers]
        assert all(a.headers["Retry-After"] == "1" for a in answers)
        assert jobs_made(fleet) == before + 1
        result: list[deepl.TextResult] = []
        thread = threading.Thread(
            target=lambda: result.append(c.translate_text(text, source_lang="EN", target_lang="ES"))
        )
        thread.start()
    thread.join(60)
    assert result and result[0].text == "Mi hermana compró una camisa roja nueva en la casa."
    assert jobs_made(fleet) == before + 1
    assert c.get_usage().character.count == used + len(text)


# --- documents ---------------------------------------------------------------------------------

DOCUMENTS = [
    "text/product-description.txt",
    "markdown/shipping-faq.md",
    "html/product-page.html",
    "json/i18next-en.json",
    "srt/product-video.srt",
    "webvtt/ableplayer_wwa_captions_en.vtt",
    "properties/jenkins_hudson_Messages.properties",
    "arb/finamp_app_en.arb",
    "strings/facebook-ios-sdk_FacebookSDK.strings",
    "po/hamster_en_GB.po",
    "xliff/v12_product_sheet.xlf",
    "docx/product_sheet.docx",
]


def test_documents_in_every_format(
    fleet: LocalFleet, key: str, client: deepl.DeepLClient, tmp_path: Path
) -> None:
    handles = {}
    for name in DOCUMENTS:
        with (FIXTURES / name).open("rb") as f:
            handles[name] = client.translate_document_upload(f, source_lang="EN", target_lang="ES")
    nameless = client.translate_document_upload(
        io.BytesIO((FIXTURES / "html/product-page.html").read_bytes()), target_lang="ES"
    )
    handles["nameless.html"] = nameless
    for name, handle in handles.items():
        wait_done(fleet, key, handle.document_id)
        status = client.translate_document_get_status(handle)
        assert status.done and status.ok, name
        assert status.billed_characters and status.billed_characters > 0
        out = io.BytesIO()
        client.translate_document_download(handle, out)
        fmt = documents.for_upload(out.getvalue(), Path(name).name)
        source = (
            FIXTURES / (name if name != "nameless.html" else "html/product-page.html")
        ).read_bytes()
        assert out.getvalue() != source, name
        assert fmt.extract(out.getvalue()), name  # still a valid file of its format
    with pytest.raises(deepl.DeepLException, match="Not found"):
        client.translate_document_get_status(deepl.DocumentHandle(nameless.document_id, "wrong"))

    # the high-level call: an upload identical to one already done joins its job
    path = FIXTURES / "html/help-article-fragment.html"
    with path.open("rb") as f:
        first = client.translate_document_upload(
            f, source_lang="EN", target_lang="ES", formality="default"
        )
    wait_done(fleet, key, first.document_id)
    out_path = tmp_path / "translated.html"
    made = jobs_made(fleet)
    done = client.translate_document_from_filepath(
        path, out_path, source_lang="EN", target_lang="ES"
    )
    assert done.done and jobs_made(fleet) == made  # joined the upload above
    assert out_path.read_text(encoding="utf-8") != path.read_text(encoding="utf-8")


UNREAD = sorted((FIXTURES / "unread").iterdir())


@pytest.mark.parametrize("path", UNREAD, ids=[p.name for p in UNREAD])
def test_a_file_of_a_format_the_fleet_does_not_read_is_refused_never_translated_as_text(
    fleet: LocalFleet, client: deepl.DeepLClient, path: Path, tmp_path: Path
) -> None:
    """``translate_document_from_filepath("messages.po")`` once came back done, its msgids and
    header translated: now every such file is a 400 naming the formats the fleet reads, by its
    name, and by its bytes when it has no name (the client names a nameless file ``file``)."""
    made = jobs_made(fleet)
    with pytest.raises(deepl.DeepLException, match="this server reads") as named:
        client.translate_document_from_filepath(path, tmp_path / path.name, target_lang="ES")
    assert path.name in str(named.value)
    with pytest.raises(deepl.DeepLException, match="this server reads"):
        client.translate_document_upload(io.BytesIO(path.read_bytes()), target_lang="ES")
    assert jobs_made(fleet) == made and not (tmp_path / path.name).exists()


@pytest.mark.parametrize("name", ["text/product-description.txt", "html/product-page.html"])
def test_a_small_document_is_done_by_the_clients_first_status_check(
    client: deepl.DeepLClient, name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The official client sleeps 5 s between status checks: a small document done in
    milliseconds must be done at its first check, so it never sleeps."""
    caplog.set_level(logging.INFO, logger="deepl")
    out = tmp_path / Path(name).name
    done = client.translate_document_from_filepath(FIXTURES / name, out, target_lang="ES")
    assert done.done and out.read_bytes() != (FIXTURES / name).read_bytes()
    slept = [r.getMessage() for r in caplog.records if "sleeping" in r.getMessage()]
    assert not slept, slept


def test_a_document_not_done_yet_is_503_on_download(fleet: LocalFleet, key: str) -> None:
    headers = {"Authorization": f"DeepL-Auth-Key {key}"}
    with worker_paused(fleet):
        up = httpx.post(
            f"{fleet.api_url}/v2/document",
            files={"file": ("waiting.txt", b"The blue house is very small.\n")},
            data={"target_lang": "ES", "source_lang": "EN"},
            headers=headers,
        )
        assert up.status_code == 200, up.text
        doc = up.json()
        status = httpx.post(
            f"{fleet.api_url}/v2/document/{doc['document_id']}",
            json={"document_key": doc["document_key"]},
            headers=headers,
        )
        assert status.json()["status"] in ("queued", "translating")
        result = httpx.post(
            f"{fleet.api_url}/v2/document/{doc['document_id']}/result",
            json={"document_key": doc["document_key"]},
            headers=headers,
        )
        assert result.status_code == 503 and result.headers["Retry-After"]
    wait_done(fleet, key, doc["document_id"])


# --- glossaries --------------------------------------------------------------------------------


def test_glossaries_v2(client: deepl.DeepLClient) -> None:
    g = client.create_glossary("shop", "EN", "ES", {"shirt": "blusa", "house": "hogar"})
    assert (g.source_lang, g.target_lang, g.entry_count, g.ready) == ("EN", "ES", 2, True)
    assert g.creation_time.tzinfo is not None
    from_csv = client.create_glossary_from_csv("csv", "EN", "ES", "table,mesita\n")
    assert from_csv.entry_count == 1
    assert {x.glossary_id for x in client.list_glossaries()} >= {
        g.glossary_id,
        from_csv.glossary_id,
    }
    assert client.get_glossary(g.glossary_id).name == "shop"
    assert client.get_glossary_entries(g) == {"shirt": "blusa", "house": "hogar"}
    out = client.translate_text(
        "The red shirt is in the house.", source_lang="EN", target_lang="ES", glossary=g
    )
    assert "blusa" in out.text and "hogar" in out.text
    client.delete_glossary(g)
    client.delete_glossary(from_csv)
    with pytest.raises(deepl.GlossaryNotFoundException):
        client.get_glossary(g.glossary_id)


def test_multilingual_glossaries_v3(client: deepl.DeepLClient) -> None:
    m = client.create_multilingual_glossary(
        "multi",
        [
            MultilingualGlossaryDictionaryEntries("EN", "ES", {"house": "hogar"}),
            MultilingualGlossaryDictionaryEntries("ES", "EN", {"casa": "home"}),
        ],
    )
    assert {(d.source_lang, d.target_lang, d.entry_count) for d in m.dictionaries} == {
        ("EN", "ES", 1),
        ("ES", "EN", 1),
    }
    assert (
        "hogar"
        in client.translate_text("The house", source_lang="EN", target_lang="ES", glossary=m).text
    )
    assert (
        "home"
        in client.translate_text("La casa", source_lang="ES", target_lang="EN-US", glossary=m).text
    )
    assert m.glossary_id in {x.glossary_id for x in client.list_multilingual_glossaries()}
    assert m.glossary_id not in {x.glossary_id for x in client.list_glossaries()}

    renamed = client.update_multilingual_glossary_name(m, "renamed")
    assert client.get_multilingual_glossary(m.glossary_id).name == renamed.name == "renamed"
    merged = client.update_multilingual_glossary_dictionary(
        m, MultilingualGlossaryDictionaryEntries("EN", "ES", {"shirt": "blusa"})
    )
    assert {d.entry_count for d in merged.dictionaries if d.source_lang == "EN"} == {2}
    entries = client.get_multilingual_glossary_entries(m, "EN", "ES").dictionaries[0].entries
    assert entries == "house\thogar\nshirt\tblusa"  # the client keeps DeepL's TSV
    replaced = client.replace_multilingual_glossary_dictionary(
        m, MultilingualGlossaryDictionaryEntries("EN", "ES", {"table": "mesita"})
    )
    assert replaced.entry_count == 1
    client.delete_multilingual_glossary_dictionary(m, source_lang="ES", target_lang="EN")
    assert [
        (d.source_lang, d.target_lang)
        for d in client.get_multilingual_glossary(m.glossary_id).dictionaries
    ] == [("EN", "ES")]
    client.delete_multilingual_glossary(m)
    with pytest.raises(deepl.GlossaryNotFoundException):
        client.get_multilingual_glossary(m.glossary_id)
