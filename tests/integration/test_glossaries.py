"""/v1/glossaries on the real API and a real Redis: create/list/get/delete, bad input, owner
scoping with API keys (MT_AUTH=required), and jobs naming a glossary (validation, the version
in the chunk messages and in the phrase-cache key, deleted glossaries still usable by jobs
accepted before)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from mtfleet.api.app import create_app
from mtfleet.core import keys
from mtfleet.core.apikeys import KeyStore
from mtfleet.core.cache import PhraseCache
from mtfleet.core.glossary import GlossaryNotFound, GlossaryStore
from mtfleet.core.models import ChunkMessage
from mtfleet.core.registry import Registry, WorkerInfo
from mtfleet.core.settings import Settings
from tests.support import in_process

SHOP = {
    "name": "shop terms",
    "source_lang": "en",
    "target_lang": "es",
    "entries": {"case": "funda"},
    "entries_tsv": "free shipping\tenvío gratis\n\nscreen protector\tprotector de pantalla\n",
    "protected": ["iPhone", "PlayStation"],
}
JOB = {"texts": ["The iphone case costs 20 dollars"], "source_lang": "en", "target_lang": "es"}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def register_pair(r: redis.Redis) -> None:
    Registry(r).beat(
        WorkerInfo(
            name="w@test",
            engine="apertium",
            model="apertium",
            fingerprint="fp",
            pairs=[("en", "es"), ("en", "fr")],
            lanes=["interactive", "bulk"],
        ),
        ttl_s=60,
    )


def client(redis_url: str, **settings: object) -> TestClient:
    return TestClient(
        create_app(in_process(Settings(redis_url=redis_url, **settings))),  # type: ignore[arg-type]
        raise_server_exceptions=False,
    )


@pytest.fixture
def api(redis_url: str, r: redis.Redis) -> Iterator[TestClient]:
    register_pair(r)
    with client(redis_url, auth="off", glossary_max_terms=10, glossary_max_per_key=3) as c:
        yield c


@pytest.fixture
def keyed(redis_url: str, r: redis.Redis) -> Iterator[TestClient]:
    register_pair(r)
    with client(redis_url, auth="required", auth_cache_s=0) as c:
        yield c


def test_create_list_get_delete(api: TestClient, r: redis.Redis) -> None:
    made = api.post("/v1/glossaries", json=SHOP)
    assert made.status_code == 201, made.text
    g = made.json()
    assert made.headers["location"] == f"/v1/glossaries/{g['id']}"
    assert g["entries"] == {
        "case": "funda",
        "free shipping": "envío gratis",
        "screen protector": "protector de pantalla",
    }
    assert g["protected"] == ["iPhone", "PlayStation"]
    assert (g["entry_count"], g["protected_count"]) == (3, 2)
    assert (g["source_lang"], g["target_lang"]) == ("en", "es") and g["version"]

    listed = api.get("/v1/glossaries").json()["glossaries"]
    assert [x["id"] for x in listed] == [g["id"]]
    assert "entries" not in listed[0]
    assert api.get(f"/v1/glossaries/{g['id']}").json() == g

    gone = api.delete(f"/v1/glossaries/{g['id']}")
    assert gone.status_code == 204 and gone.content == b""
    for resp in (api.get(f"/v1/glossaries/{g['id']}"), api.delete(f"/v1/glossaries/{g['id']}")):
        assert resp.status_code == 404
        assert resp.json()["error"]["type"] == "glossary_not_found"
    assert api.get("/v1/glossaries").json()["glossaries"] == []
    # kept (with an expiry) for jobs accepted before the delete
    assert 0 < r.ttl(keys.glossary(g["id"])) <= Settings().jobs.result_ttl_s
    assert 0 < r.ttl(keys.glossary_terms(g["id"])) <= Settings().jobs.result_ttl_s


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"entries": {}, "entries_tsv": None, "protected": []}, "at least one"),
        ({"entries": {"Case": "funda", "case": "estuche"}}, "matches the same text"),
        ({"protected": ["iphone", "case"]}, "matches the same text"),
        ({"entries_tsv": "only one column\n"}, "line 1"),
        ({"target_lang": "xx"}, "unknown language"),
        ({"target_lang": "en"}, "both"),
        ({"entries": {f"t{i}": "x" for i in range(10)}}, "at most 10"),
        ({"name": ""}, "name"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_glossaries_are_422(api: TestClient, change: dict[str, object], says: str) -> None:
    resp = api.post("/v1/glossaries", json={**SHOP, **change})
    assert resp.status_code == 422, resp.text
    assert says in resp.text


def test_glossaries_per_key_are_limited(api: TestClient) -> None:
    for _ in range(3):
        assert api.post("/v1/glossaries", json=SHOP).status_code == 201
    over = api.post("/v1/glossaries", json=SHOP)
    assert over.status_code == 422 and "MT_GLOSSARY_MAX_PER_KEY" in over.text
    first = api.get("/v1/glossaries").json()["glossaries"][0]["id"]
    assert api.delete(f"/v1/glossaries/{first}").status_code == 204
    assert api.post("/v1/glossaries", json=SHOP).status_code == 201


def test_a_glossary_is_visible_only_to_the_key_that_made_it(
    keyed: TestClient, r: redis.Redis
) -> None:
    store = KeyStore(r, cache_s=0)
    _, a = store.create("shop-a")
    _, b = store.create("shop-b")
    assert keyed.post("/v1/glossaries", json=SHOP).status_code == 401
    g = keyed.post("/v1/glossaries", json=SHOP, headers=auth(a)).json()

    assert keyed.get("/v1/glossaries", headers=auth(b)).json()["glossaries"] == []
    assert [x["id"] for x in keyed.get("/v1/glossaries", headers=auth(a)).json()["glossaries"]] == [
        g["id"]
    ]
    missing = "0" * 32
    for method in ("GET", "DELETE"):
        theirs = keyed.request(method, f"/v1/glossaries/{g['id']}", headers=auth(b))
        nothing = keyed.request(method, f"/v1/glossaries/{missing}", headers=auth(b))
        assert theirs.status_code == nothing.status_code == 404
        assert theirs.json()["error"]["type"] == nothing.json()["error"]["type"]
    # another key's glossary cannot be used for a job either
    job = keyed.post("/v1/jobs", json={**JOB, "glossary_id": g["id"]}, headers=auth(b))
    assert job.status_code == 422 and job.json()["error"]["type"] == "unknown_glossary"
    mine = keyed.post("/v1/jobs", json={**JOB, "glossary_id": g["id"]}, headers=auth(a))
    assert mine.status_code == 202, mine.text
    # still there for its owner
    assert keyed.get(f"/v1/glossaries/{g['id']}", headers=auth(a)).status_code == 200
    assert keyed.delete(f"/v1/glossaries/{g['id']}", headers=auth(a)).status_code == 204


def ledger(r: redis.Redis, job_id: str) -> list[ChunkMessage]:
    raw = r.hgetall(keys.job_chunks(job_id))
    return [ChunkMessage.model_validate_json(v) for v in raw.values()]


def test_a_job_carries_its_glossary_to_the_workers(api: TestClient, r: redis.Redis) -> None:
    g = api.post("/v1/glossaries", json=SHOP).json()
    unknown = api.post("/v1/jobs", json={**JOB, "glossary_id": "nope"})
    assert unknown.status_code == 422 and unknown.json()["error"]["type"] == "unknown_glossary"
    wrong_pair = api.post("/v1/jobs", json={**JOB, "target_lang": "fr", "glossary_id": g["id"]})
    assert wrong_pair.status_code == 422 and "en->es" in wrong_pair.text

    job = api.post("/v1/jobs", json={**JOB, "glossary_id": g["id"]})
    assert job.status_code == 202, job.text
    (msg,) = ledger(r, job.json()["id"])
    assert (msg.glossary_id, msg.glossary_version) == (g["id"], g["version"])
    plain = api.post("/v1/jobs", json=JOB).json()
    (msg,) = ledger(r, plain["id"])
    assert (msg.glossary_id, msg.glossary_version) == (None, None)


def test_the_glossary_version_is_part_of_the_cache_key(
    api: TestClient, r: redis.Redis, redis_url: str
) -> None:
    g = api.post("/v1/glossaries", json=SHOP).json()
    other = api.post("/v1/glossaries", json={**SHOP, "entries": {"case": "estuche"}}).json()
    assert other["version"] != g["version"]
    # a worker's answer for this text with glossary g (as the worker stores it)
    PhraseCache(r, ttl_s=60).put_many(
        "fp",
        "en",
        "es",
        {JOB["texts"][0]: "El iPhone funda cuesta 20 dólares"},
        job_id="0" * 32,
        glossary=g["version"],
    )
    hit = api.post("/v1/jobs", json={**JOB, "glossary_id": g["id"]})
    assert hit.status_code == 200 and hit.json()["cached"] == 1
    for body in (JOB, {**JOB, "glossary_id": other["id"]}):
        miss = api.post("/v1/jobs", json=body)
        assert miss.status_code == 202 and miss.json()["cached"] == 0


def test_a_deleted_glossary_still_serves_jobs_accepted_before(
    api: TestClient, r: redis.Redis
) -> None:
    g = api.post("/v1/glossaries", json=SHOP).json()
    assert api.delete(f"/v1/glossaries/{g['id']}").status_code == 204
    assert api.post("/v1/jobs", json={**JOB, "glossary_id": g["id"]}).status_code == 422
    # what a worker does for a chunk queued before the delete
    m = GlossaryStore(r).matcher(g["id"], g["version"])
    assert m.protect("iphone").restore("<x1/>") == "iPhone"
    with pytest.raises(GlossaryNotFound):
        GlossaryStore(r).matcher(g["id"], "another-version")
    # once its data has expired, a chunk naming it fails its segments (GlossaryNotFound)
    h = api.post("/v1/glossaries", json={**SHOP, "protected": ["Xbox"]}).json()
    assert api.delete(f"/v1/glossaries/{h['id']}").status_code == 204
    r.delete(keys.glossary(h["id"]), keys.glossary_terms(h["id"]))
    with pytest.raises(GlossaryNotFound):
        GlossaryStore(r).matcher(h["id"], h["version"])


# --- protected patterns (issue 40 item 5) --------------------------------------------------------
COLOURS = ["§[0-9a-fk-or]", r"\[[A-Z_]+\]"]


def test_a_requests_protected_patterns_go_to_the_workers_and_key_the_cache(
    api: TestClient, r: redis.Redis
) -> None:
    body = {**JOB, "protected_patterns": COLOURS}
    job = api.post("/v1/jobs", json=body)
    assert job.status_code == 202, job.text
    (msg,) = ledger(r, job.json()["id"])
    assert msg.protected_patterns == COLOURS
    # a translation made with them is never served without them, nor the other way round
    PhraseCache(r, ttl_s=60).put_many("fp", "en", "es", {JOB["texts"][0]: "plain"}, job_id="0" * 32)
    assert api.post("/v1/jobs", json=JOB).json()["cached"] == 1
    assert api.post("/v1/jobs", json=body).json()["cached"] == 0
    translated = api.post("/v1/translate", json={**body, "timeout": 0.1})
    assert translated.status_code == 202 and translated.json()["cached"] == 0
    # and a document upload carries them as repeated form fields
    upload = api.post(
        "/v1/documents",
        files={"file": ("page.html", b"<p>\xc2\xa7aHello [NAME]</p>", "text/html")},
        data={"target_lang": "es", "source_lang": "en", "protected_patterns": COLOURS},
    )
    assert upload.status_code == 202, upload.text
    (msg,) = ledger(r, upload.json()["id"])
    assert msg.protected_patterns == COLOURS


@pytest.mark.parametrize(
    ("where", "pattern", "says"),
    [
        ("/v1/jobs", "(a", "pattern[1] '(a' is not a regular expression RE2 reads"),
        ("/v1/translate", r"(a)\1", "is not a regular expression RE2 reads"),
        ("/v1/jobs", "x*", "pattern[1] 'x*' matches the empty text"),
        ("/v1/glossaries", "[z-a]", "pattern[0] '[z-a]' is not a regular expression"),
        ("/v1/documents", "(?=x)", "is not a regular expression RE2 reads"),
    ],
)
def test_a_bad_pattern_is_422_naming_it(
    api: TestClient, where: str, pattern: str, says: str
) -> None:
    if where == "/v1/documents":
        answer = api.post(
            where,
            files={"file": ("page.html", b"<p>Hello</p>", "text/html")},
            data={"target_lang": "es", "protected_patterns": [pattern]},
        )
    elif where == "/v1/glossaries":
        answer = api.post(where, json={**SHOP, "protected_patterns": [pattern]})
    else:
        answer = api.post(where, json={**JOB, "protected_patterns": ["ok", pattern]})
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["type"] == "invalid_input" and says in error["message"], error


def test_a_glossary_carries_protected_patterns_to_its_jobs(api: TestClient, r: redis.Redis) -> None:
    made = api.post("/v1/glossaries", json={**SHOP, "protected_patterns": COLOURS})
    assert made.status_code == 201, made.text
    g = made.json()
    assert g["protected_patterns"] == COLOURS and g["pattern_count"] == 2
    plain = api.post("/v1/glossaries", json=SHOP).json()
    assert g["version"] != plain["version"]
    assert api.get(f"/v1/glossaries/{g['id']}").json()["protected_patterns"] == COLOURS
    listed = {x["id"]: x for x in api.get("/v1/glossaries").json()["glossaries"]}
    assert listed[g["id"]]["pattern_count"] == 2 and listed[plain["id"]]["pattern_count"] == 0
    # patterns alone make a glossary
    only = api.post(
        "/v1/glossaries",
        json={
            **SHOP,
            "entries": {},
            "entries_tsv": None,
            "protected": [],
            "protected_patterns": COLOURS,
        },
    )
    assert only.status_code == 201, only.text
    # what a worker does for a chunk naming the glossary
    m = GlossaryStore(r).matcher(g["id"], g["version"])
    assert m.glossary.protected_patterns == COLOURS
