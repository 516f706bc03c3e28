"""The LibreTranslate surface as ``libretranslatepy`` (unchanged) and LibreTranslate's JSON batch
form use it, against a real ``mtfleet api`` with API keys required and a real Apertium worker
(English to Spanish), each a process of its own; raw HTTP for LibreTranslate's error shapes,
file translation and what its web front end reads."""

from __future__ import annotations

import io
import urllib.error
import zipfile
from collections.abc import Iterator

import httpx
import pytest
from libretranslatepy import LibreTranslateAPI

from mtfleet.fleet.localfleet import LocalFleet
from tests.conftest import ROOT
from tests.e2e.fleet_control import apertium_fleet, jobs_made, worker_paused

FIXTURES = ROOT / "tests" / "fixtures" / "documents"


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    env = {"MT_AUTH": "required", "MT_LIBRETRANSLATE_WAIT_S": "5"}
    with apertium_fleet(redis_server, env) as f:
        yield f


@pytest.fixture(scope="module")
def key(fleet: LocalFleet) -> str:
    return fleet.create_api_key("libretranslate")


@pytest.fixture(scope="module")
def base(fleet: LocalFleet) -> str:
    return f"{fleet.api_url}/libretranslate"


def test_libretranslatepy_translates_detects_and_lists(base: str, key: str) -> None:
    lt = LibreTranslateAPI(base, api_key=key)  # it adds the trailing "/" itself
    # (it sends api_key as a form field: the body, where the key is taken by default)
    assert lt.translate("The red shirt is in the house.", "en", "es") == (
        "La camisa roja es en la casa."
    )
    detected = lt.detect("My sister bought a new table in the shop.")
    assert detected[0]["language"] == "en" and 0 < detected[0]["confidence"] <= 100
    langs = {lang["code"]: lang for lang in lt.languages()}
    assert "es" in langs["en"]["targets"] and langs["en"]["name"] == "English"
    with pytest.raises(urllib.error.HTTPError) as refused:
        LibreTranslateAPI(base, api_key="mt_0000000000000000_nope").translate("x", "en", "es")
    assert refused.value.code == 403


def test_json_batch_with_auto_detection_html_and_alternatives(base: str, key: str) -> None:
    got = httpx.post(
        f"{base}/translate",
        json={
            "q": ["The red shirt is in the house.", "<p>The <b>blue</b> table.</p>"],
            "source": "auto",
            "target": "es",
            "format": "html",
            "alternatives": 3,
            "api_key": key,
        },
        timeout=60,
    )
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["translatedText"] == [
        "La camisa roja es en la casa.",
        "<p>La <b>mesa</b> azul.</p>",
    ]
    assert [d["language"] for d in body["detectedLanguage"]] == ["en", "en"]
    assert all(isinstance(d["confidence"], float) for d in body["detectedLanguage"])
    assert body["alternatives"] == [[], []]  # accepted; no engine here gives alternatives
    plain = httpx.post(
        f"{base}/translate",
        json={"q": "Add to cart", "source": "en", "target": "es", "api_key": key},
    ).json()
    assert plain == {"translatedText": "Añade a carro"}  # no detectedLanguage without auto


def test_form_fields(base: str, key: str) -> None:
    form = httpx.post(
        f"{base}/translate",
        data={"q": "The house\r\nThe shirt", "source": "en", "target": "es", "api_key": key},
        timeout=60,
    )
    assert form.status_code == 200, form.text
    assert form.json() == {"translatedText": "La casa\nLa camisa"}  # line endings as LT's


def test_a_key_in_the_query_string_is_refused_saying_where_it_goes(
    fleet: LocalFleet, base: str, key: str
) -> None:
    """A key in the URL ends up in proxy logs and Referer headers: by default it is a 400 that
    says to send it in the body (nothing translated, nothing charged)."""
    made = jobs_made(fleet)
    form = {"q": "The house", "source": "en", "target": "es"}
    for route, body in (("translate", form), ("detect", {"q": "The house"})):
        for sent in ({"data": body}, {"data": {**body, "api_key": key}}, {"json": body}):
            got = httpx.post(f"{base}/{route}", params={"api_key": key}, timeout=60, **sent)
            assert got.status_code == 400, got.text
            error = got.json()["error"]
            assert "send api_key in the request body" in error and "not in the URL" in error
    assert jobs_made(fleet) == made


def test_the_key_in_the_query_string_where_the_operator_allows_it(
    fleet: LocalFleet, key: str
) -> None:
    env = {"MT_AUTH": "required", "MT_LIBRETRANSLATE_KEY_IN_QUERY": "true"}
    with LocalFleet(redis_url=str(fleet.redis_url), env=env) as allowing:
        allowing.start_redis()  # the fleet's own: its worker translates for this API too
        allowing.start_api()
        got = httpx.post(
            f"{allowing.api_url}/libretranslate/translate",
            params={"api_key": key},
            data={"q": "The house", "source": "en", "target": "es"},
            timeout=60,
        )
        assert got.status_code == 200, got.text
        assert got.json() == {"translatedText": "La casa"}


def test_a_translation_still_running_is_503_and_the_same_request_joins_it(
    fleet: LocalFleet, base: str, key: str
) -> None:
    body = {"q": "My brother bought a blue table.", "source": "en", "target": "es", "api_key": key}
    before = jobs_made(fleet)
    with worker_paused(fleet):
        waited = httpx.post(f"{base}/translate", json=body, timeout=30)
        assert waited.status_code == 503 and waited.headers["Retry-After"]
        assert "send the same request again" in waited.json()["error"]
    again = httpx.post(f"{base}/translate", json=body, timeout=60)
    assert again.json() == {"translatedText": "Mi hermano compró una mesa azul."}
    assert jobs_made(fleet) == before + 1


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"source": "en", "target": "es"}, 400, "Invalid request: missing q parameter"),
        ({"q": "x", "target": "es"}, 400, "Invalid request: missing source parameter"),
        ({"q": "x", "source": "en", "target": "zz"}, 400, "zz is not supported"),
        (
            {"q": "x", "source": "en", "target": "es", "format": "pdf"},
            400,
            "pdf format is not supported",
        ),
        (
            {"q": "x", "source": "en", "target": "es", "alternatives": "many"},
            400,
            "Invalid request: alternatives parameter is not a number",
        ),
    ],
)
def test_libretranslates_error_shapes(
    base: str, key: str, body: dict[str, str], status: int, error: str
) -> None:
    got = httpx.post(f"{base}/translate", json={**body, "api_key": key})
    assert (got.status_code, got.json()) == (status, {"error": error})
    assert got.headers["Access-Control-Allow-Origin"] == "*"


def test_keys_rates_and_routes(fleet: LocalFleet, base: str) -> None:
    missing = httpx.post(f"{base}/translate", data={"q": "x", "source": "en", "target": "es"})
    assert (missing.status_code, missing.json()) == (
        400,
        {"error": "Please contact the server operator to get an API key"},
    )
    rated = fleet.create_api_key("lt-rate", rate=0.2)
    form = {"q": "The house", "source": "en", "target": "es", "api_key": rated}
    assert httpx.post(f"{base}/translate", data=form).status_code == 200
    slow = httpx.post(f"{base}/translate", data=form)
    assert slow.status_code == 429 and slow.json()["error"].startswith("Slowdown: ")
    quota = fleet.create_api_key("lt-quota", chars_per_day=5)
    spent = httpx.post(f"{base}/translate", data={**form, "api_key": quota})
    assert spent.status_code == 429
    assert httpx.post(f"{base}/unknown").status_code == 404
    assert httpx.get(f"{base}/detect").status_code == 405
    preflight = httpx.options(
        f"{base}/translate",
        headers={
            "Origin": "https://example.com",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "Content-Type",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["Access-Control-Allow-Origin"] == "*"
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
    assert httpx.post(f"{base}/suggest", data={"q": "x"}).json() == {
        "error": "Suggestions are disabled on this server."
    }


def test_frontend_settings(base: str) -> None:
    settings = httpx.get(f"{base}/frontend/settings").json()
    assert settings["keyRequired"] is True and settings["filesTranslation"] is True
    assert {
        ".txt",
        ".html",
        ".docx",
        ".srt",
        ".vtt",
        ".properties",
        ".arb",
        ".strings",
        ".po",
        ".xlf",
        ".json",
        ".md",
    } <= set(settings["supportedFilesFormat"])
    assert settings["language"]["source"] == {"code": "auto", "name": "Auto Detect"}


@pytest.mark.parametrize(
    "name", ["text/product-description.txt", "html/product-page.html", "docx/product_sheet.docx"]
)
def test_translate_file_answers_a_url_that_downloads_the_file(
    base: str, key: str, name: str
) -> None:
    path = FIXTURES / name
    got = httpx.post(
        f"{base}/translate_file",
        files={"file": (path.name, path.read_bytes())},
        data={"source": "en", "target": "es", "api_key": key},
        timeout=120,
    )
    assert got.status_code == 200, got.text
    url = got.json()["translatedFileUrl"]
    assert url.startswith(f"{base}/download_file/") and url.endswith(path.name)
    file = httpx.get(url, timeout=120)  # no key: the link carries the document's secret
    assert file.status_code == 200
    assert path.name in file.headers["Content-Disposition"]
    assert file.content != path.read_bytes()
    if name.endswith(".docx"):
        assert "word/document.xml" in zipfile.ZipFile(io.BytesIO(file.content)).namelist()
    wrong = url.replace("/download_file/", "/download_file/").rsplit("/", 2)
    assert httpx.get(f"{wrong[0]}/not-the-secret/{wrong[2]}").status_code == 404
    missing = httpx.post(
        f"{base}/translate_file", data={"source": "en", "target": "es", "api_key": key}
    )
    assert missing.json() == {"error": "Invalid request: missing file parameter"}


@pytest.mark.parametrize("name", ["a/b/report.html", "C:\\Users\\me\\report.html", ".."])
def test_translate_file_answers_a_working_link_whatever_path_the_name_carries(
    base: str, key: str, name: str
) -> None:
    """A client may send the file's path as its name: the link names its last part (or, when
    none is usable, the job), and following it downloads the translation."""
    got = httpx.post(
        f"{base}/translate_file",
        files={"file": (name, b"<p>The red shirt is in the house.</p>", "text/html")},
        data={"source": "en", "target": "es", "api_key": key},
        timeout=120,
    )
    assert got.status_code == 200, got.text
    url = got.json()["translatedFileUrl"]
    file = httpx.get(url, timeout=120)
    assert file.status_code == 200, (url, file.text)
    assert "camisa roja" in file.text
    assert url.endswith("/report.html") or name == ".."


UNREAD = sorted((FIXTURES / "unread").iterdir())


@pytest.mark.parametrize("path", UNREAD, ids=[p.name for p in UNREAD])
def test_translate_file_refuses_a_format_the_fleet_does_not_read(
    fleet: LocalFleet, base: str, key: str, path
) -> None:
    """A .po or .yml sent to /translate_file once came back translated as plain text (YAML keys
    and msgids included): now a 400 in LibreTranslate's shape, naming the formats read."""
    made = jobs_made(fleet)
    got = httpx.post(
        f"{base}/translate_file",
        files={"file": (path.name, path.read_bytes())},
        data={"source": "en", "target": "es", "api_key": key},
        timeout=60,
    )
    assert got.status_code == 400, got.text
    assert path.name in got.json()["error"] and ".html" in got.json()["error"]
    assert jobs_made(fleet) == made


@pytest.mark.parametrize("text", ["Hello", "Sale"])
def test_auto_detects_a_short_string_among_the_languages_served(
    base: str, key: str, text: str
) -> None:
    """A lone "Hello" looks Italian to a detector; on an en<->es fleet it is English (the only
    source served into es), with the detector's (low) confidence, never a refusal."""
    got = httpx.post(
        f"{base}/translate",
        json={"q": text, "source": "auto", "target": "es", "api_key": key},
        timeout=60,
    )
    assert got.status_code == 200, got.text
    detected = got.json()["detectedLanguage"]
    assert detected["language"] == "en" and 0 <= detected["confidence"] < 50
