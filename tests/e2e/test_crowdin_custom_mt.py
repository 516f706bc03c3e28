"""Crowdin's Custom MT contract against a real ``mtfleet api`` with API keys required and a
real Apertium worker (English to Spanish), each a process of its own: the requests are sent as
Crowdin sends them (api/crowdin/__init__.py says where its documentation states each shape),
to the app the fleet's own manifest describes, and to ``/crowdin/translate`` with the key in
the query or a Bearer header. Then Weblate's DeepL and LibreTranslate services' requests, as
docs/localization-platforms.md sets them up (those routes are the drop-ins' own: the tests
check the page's claims)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
import redis

from mtfleet.fleet.localfleet import LocalFleet
from tests.e2e.fleet_control import APERTIUM_WORKER, jobs_made, worker_paused

#: What Crowdin's installed app sends as its own Authorization (its JWT, not a fleet key).
CROWDIN_JWT = {"Authorization": "Bearer eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl"}

SENTENCES = [
    "The red shirt is in the house.",
    "My sister bought a new table.",
    "Add to cart",
    "The dog sleeps in the garden.",
]


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    """fleet_control.apertium_fleet's fleet, given longer to be ready: its bulk-lane process
    runs at the lowest CPU priority, and on a loaded machine it is up last, after 60 s."""
    redis.Redis.from_url(redis_server).flushdb()
    env = {"MT_HEARTBEAT_S": "1", "MT_AUTH": "required", "MT_CROWDIN_WAIT_S": "3"}
    with LocalFleet(redis_url=redis_server, env=env) as f:
        f.start_redis()
        f.start_worker(*APERTIUM_WORKER)
        f.start_api()
        f.wait_ready(240)
        yield f


@pytest.fixture(scope="module")
def key(fleet: LocalFleet) -> str:
    return fleet.create_api_key("crowdin")


def one_by_one(fleet: LocalFleet, key: str, texts: list[str]) -> list[str]:
    """Each text translated alone through /v1 (what the batch must give back, in order)."""
    out = []
    for text in texts:
        got = httpx.post(
            f"{fleet.api_url}/v1/translate",
            json={"texts": [text], "source_lang": "en", "target_lang": "es"},
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
        )
        assert got.status_code == 200, got.text
        out.append(got.json()["translations"][0])
    return out


def test_the_installed_app_translates_crowdins_request_in_order(
    fleet: LocalFleet, key: str
) -> None:
    """Install by manifest URL, then Crowdin's call: baseUrl + the module's url, the languages
    (Crowdin's ids) and the project in the query, its JWT as Bearer, the strings in the body."""
    got = httpx.get(f"{fleet.api_url}/crowdin/{key}/manifest.json", timeout=30)
    assert got.status_code == 200, got.text
    app = got.json()
    assert app["authentication"] == {"type": "none"}
    assert (
        app["identifier"].startswith("mtfleet-") and app["identifier"] == app["identifier"].lower()
    )
    module = app["modules"]["custom-mt"][0]
    assert module["url"] == "/translate" and module["batchSize"] >= len(SENTENCES)
    logo = httpx.get(app["baseUrl"] + module["logo"], timeout=30)
    assert logo.status_code == 200 and logo.headers["content-type"].startswith("image/svg")

    reversed_order = list(reversed(SENTENCES))
    made = jobs_made(fleet)
    # This fleet waits 3 s (MT_CROWDIN_WAIT_S, for the slow-batch test below); a loaded machine
    # can take longer (0 of 4 done in one fresh clone's run), and the 503 says what Crowdin
    # does then: the same request again, which joins the job (one job, asserted below).
    deadline = time.monotonic() + 60
    while True:
        got = httpx.post(
            f"{app['baseUrl']}{module['url']}",
            params={"source": "en-US", "target": "es-ES", "project_id": "727186"},
            json={"strings": reversed_order},
            headers=CROWDIN_JWT,
            timeout=60,
        )
        if got.status_code != 503 or time.monotonic() > deadline:
            break
    assert got.status_code == 200, got.text
    translations = got.json()["data"]["translations"]
    assert translations == one_by_one(fleet, key, reversed_order)
    assert translations[reversed_order.index("The red shirt is in the house.")] == (
        "La camisa roja es en la casa."
    )
    assert jobs_made(fleet) == made + 1  # one job for the batch (the /v1 ones hit the cache)


def test_the_job_is_the_keys_own(fleet: LocalFleet, key: str) -> None:
    """The strings went through the one job path under the key in the URL (its jobs list,
    its quota and share), not Crowdin's Bearer."""
    got = httpx.post(
        f"{fleet.api_url}/crowdin/{key}/translate",
        params={"source": "en", "target": "es"},
        json={"strings": ["The cat is black and white."]},
        headers=CROWDIN_JWT,
        timeout=60,
    )
    assert got.status_code == 200, got.text
    jobs = httpx.get(
        f"{fleet.api_url}/v1/jobs", headers={"Authorization": f"Bearer {key}"}, timeout=30
    ).json()
    assert jobs["jobs"], jobs


def test_the_key_in_the_query_or_a_bearer_header(fleet: LocalFleet, key: str) -> None:
    body = {"strings": ["The red shirt is in the house.", "Add to cart"]}
    want = ["La camisa roja es en la casa.", one_by_one(fleet, key, ["Add to cart"])[0]]
    for sent in (
        {"params": {"source": "en", "target": "es", "key": key}, "headers": CROWDIN_JWT},
        {"params": {"source": "en", "target": "es"}, "headers": {"Authorization": f"Bearer {key}"}},
    ):
        got = httpx.post(f"{fleet.api_url}/crowdin/translate", json=body, timeout=60, **sent)
        assert got.status_code == 200, got.text
        assert got.json() == {"data": {"translations": want}}


def test_strings_with_context_and_notranslate_spans(fleet: LocalFleet, key: str) -> None:
    """``withContext`` objects (a plural string's forms too), and Crowdin's masked
    placeholders, kept as they came."""
    strings = [
        {"id": 1, "text": "The red shirt is in the house.", "context": "shop", "isPlural": False},
        {
            "id": 2,
            "text": {"one": "one table", "other": "The table is in the house."},
            "isPlural": True,
            "pluralForm": "other",
        },
        '<span class="notranslate">0</span>The red shirt is in the house.'
        '<span class="notranslate">1</span>',
    ]
    got = httpx.post(
        f"{fleet.api_url}/crowdin/{key}/translate",
        params={"source": "en", "target": "es"},
        json={"strings": strings},
        timeout=60,
    )
    assert got.status_code == 200, got.text
    first, table, masked = got.json()["data"]["translations"]
    assert first == "La camisa roja es en la casa."
    assert table == one_by_one(fleet, key, ["The table is in the house."])[0]
    assert masked == (
        '<span class="notranslate">0</span>La camisa roja es en la casa.'
        '<span class="notranslate">1</span>'
    )


@pytest.mark.parametrize(
    ("where", "key_of"),
    [
        ("none", lambda k: None),
        ("path", lambda k: "mt_0000000000000000_wrong"),
        ("query", lambda k: "mt_0000000000000000_wrong"),
        ("bearer", lambda k: "mt_0000000000000000_wrong"),
        ("crowdin-jwt-only", lambda k: None),
    ],
)
def test_auth_refused_without_a_key_or_with_a_wrong_one(
    fleet: LocalFleet, where: str, key_of: object
) -> None:
    bad = key_of(None)  # type: ignore[operator]
    url = f"{fleet.api_url}/crowdin/translate"
    params = {"source": "en", "target": "es"}
    headers = dict(CROWDIN_JWT) if where == "crowdin-jwt-only" else {}
    if where == "path":
        url = f"{fleet.api_url}/crowdin/{bad}/translate"
    elif where == "query":
        params["key"] = bad
    elif where == "bearer":
        headers["Authorization"] = f"Bearer {bad}"
    made = jobs_made(fleet)
    got = httpx.post(url, params=params, json={"strings": ["Add to cart"]}, headers=headers)
    assert got.status_code == 401, got.text
    assert set(got.json()) == {"error"} and got.json()["error"]["message"]
    assert jobs_made(fleet) == made
    if where == "path":
        manifest = httpx.get(f"{fleet.api_url}/crowdin/{bad}/manifest.json")
        assert manifest.status_code == 401 and manifest.json()["error"]["message"]


@pytest.mark.parametrize(
    ("query", "body", "says"),
    [
        ({"source": "en", "target": "es"}, b"not json", "must be a JSON object"),
        ({"source": "en", "target": "es"}, b'["Add to cart"]', "must be a JSON object"),
        ({"source": "en", "target": "es"}, b"{}", "strings is required"),
        ({"source": "en", "target": "es"}, b'{"strings": "Add to cart"}', "strings is required"),
        ({"source": "en", "target": "es"}, b'{"strings": ["a", 7]}', "strings[1]"),
        ({"source": "en", "target": "es"}, b'{"strings": [{"id": 1}]}', "strings[0]"),
        (
            {"source": "en", "target": "es"},
            b'{"stringsUrl": "http://169.254.169.254/latest"}',
            "stringsUrl is not fetched",
        ),
        ({"source": "en"}, b'{"strings": ["Add to cart"]}', "target is required"),
        ({}, b'{"strings": ["Add to cart"]}', "source and target are required"),
        ({"source": "en", "target": "xx"}, b'{"strings": ["Add to cart"]}', "'xx'"),
        ({"source": "en", "target": "en-PT"}, b'{"strings": ["Add to cart"]}', "Pirate"),
    ],
)
def test_bad_input_is_422_in_crowdins_shape(
    fleet: LocalFleet, key: str, query: dict[str, str], body: bytes, says: str
) -> None:
    made = jobs_made(fleet)
    got = httpx.post(
        f"{fleet.api_url}/crowdin/{key}/translate",
        params=query,
        content=body,
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    assert got.status_code == 422, got.text
    assert set(got.json()) == {"error"} and says in got.json()["error"]["message"]
    assert jobs_made(fleet) == made


def test_an_empty_batch_and_a_slow_one(fleet: LocalFleet, key: str) -> None:
    """No strings: no translations, no job. A job still running past MT_CROWDIN_WAIT_S: 503
    with Retry-After; the same request sent again joins it."""
    url = f"{fleet.api_url}/crowdin/{key}/translate?source=en&target=es"
    made = jobs_made(fleet)
    assert httpx.post(url, json={"strings": []}).json() == {"data": {"translations": []}}
    assert jobs_made(fleet) == made
    body = {"strings": ["My brother bought a blue table."]}
    with worker_paused(fleet):
        waited = httpx.post(url, json=body, timeout=30)
        assert waited.status_code == 503 and waited.headers["Retry-After"], waited.text
        assert "send the same request again" in waited.json()["error"]["message"]
    again = httpx.post(url, json=body, timeout=60)
    assert again.json() == {"data": {"translations": ["Mi hermano compró una mesa azul."]}}
    assert jobs_made(fleet) == made + 1


def test_weblates_deepl_service_as_docs_set_it_up(fleet: LocalFleet, key: str) -> None:
    """docs/localization-platforms.md: Weblate's DeepL service (weblate/machinery/deepl.py)
    with ``url`` at /v2/ and ``key`` an mtfleet key: its language lists, its glossary check
    and its batch, placeholders as ``<x id>`` with xml tag handling, kept."""
    auth = {"Authorization": f"DeepL-Auth-Key {key}"}
    base = f"{fleet.api_url}/v2/"
    sources = httpx.get(base + "languages", params={"type": "source"}, headers=auth, timeout=30)
    targets = httpx.get(base + "languages", params={"type": "target"}, headers=auth, timeout=30)
    assert "EN" in {x["language"] for x in sources.json()}
    assert "ES" in {x["language"].upper() for x in targets.json()}
    pairs = httpx.get(base + "glossary-language-pairs", headers=auth, timeout=30)
    assert pairs.status_code == 200 and "supported_languages" in pairs.json()
    got = httpx.post(
        base + "translate",
        headers=auth,
        json={
            "text": ['The red shirt is in the <x id="7"></x> house.', "Add to cart"],
            "source_lang": "EN",
            "target_lang": "ES",
            "formality": "default",
            "tag_handling": "xml",
            "ignore_tags": ["x"],
        },
        timeout=60,
    )
    assert got.status_code == 200, got.text
    first, second = (t["text"] for t in got.json()["translations"])
    assert '<x id="7"></x>' in first and first.startswith("La camisa roja")
    assert second == one_by_one(fleet, key, ["Add to cart"])[0]


def test_weblates_libretranslate_service_as_docs_set_it_up(fleet: LocalFleet, key: str) -> None:
    """docs/localization-platforms.md: Weblate's LibreTranslate service
    (weblate/machinery/libretranslate.py) with ``url`` at /libretranslate/: its language list
    and its JSON batch, the key as ``api_key`` in the body, translations in order."""
    base = f"{fleet.api_url}/libretranslate/"
    codes = {x["code"] for x in httpx.get(base + "languages", timeout=30).json()}
    assert {"en", "es"} <= codes
    texts = ["Add to cart", "The red shirt is in the house."]
    got = httpx.post(
        base + "translate",
        json={"api_key": key, "q": texts, "source": "en", "target": "es"},
        timeout=60,
    )
    assert got.status_code == 200, got.text
    assert got.json()["translatedText"] == one_by_one(fleet, key, texts)
