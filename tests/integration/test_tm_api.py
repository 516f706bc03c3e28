"""/v1/translation_memories on the real app (in process) and a real Redis: multipart and JSON
imports, list, read, export, corrections, delete, bad input, owner scoping with API keys; and
DeepL's /v3/translation_memories as the official ``deepl`` client (unchanged but for
``server_url``) reads them, against the app served by uvicorn in a thread."""

from __future__ import annotations

import base64
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deepl
import httpx
import pytest
import redis
import uvicorn
from deepl.api_data import TranslationMemoryInfo
from fastapi import FastAPI
from fastapi.testclient import TestClient
from typer.testing import CliRunner, Result

from mtfleet.api.app import create_app
from mtfleet.api.deepl import translation_memories as deepl_tms
from mtfleet.api.routes import translation_memories as routes
from mtfleet.core.apikeys import KeyStore, Storage
from mtfleet.core.settings import Settings
from mtfleet.core.tm import forget_indexes
from mtfleet.fleet.localfleet import free_port
from mtfleet.producer.calls import MTClientError
from mtfleet.producer.cli_tm import tm_app
from mtfleet.producer.client import MTClient
from tests.conftest import ROOT
from tests.support import in_process

TMX = (ROOT / "tests" / "fixtures" / "tm" / "shop.tmx").read_bytes()
ENTRIES = {
    "name": "ui",
    "source_lang": "en",
    "target_lang": "es",
    "entries": [
        {"source": "Save the file", "target": "Guarde el archivo"},
        {"source": "Open the file", "target": "Abra el archivo"},
    ],
}


def app_for(redis_url: str, **settings: Any) -> FastAPI:
    """The API app, with the translation-memory routes (included here until api/app.py
    includes them itself)."""
    app = create_app(in_process(Settings(redis_url=redis_url, **settings)))
    paths = {getattr(r, "path", "") for r in app.routes}
    if "/v1/translation_memories" not in paths:
        app.include_router(routes.router)
    if "/v3/translation_memories" not in paths:
        app.include_router(deepl_tms.router, include_in_schema=False)
    return app


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def api(redis_url: str) -> Iterator[TestClient]:
    forget_indexes()
    with TestClient(app_for(redis_url, auth="off"), raise_server_exceptions=False) as c:
        yield c


@pytest.fixture
def keyed(redis_url: str) -> Iterator[TestClient]:
    app = app_for(redis_url, auth="required", auth_cache_s=0)
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def upload(c: TestClient, content: bytes, filename: str, **form: str) -> Any:
    fields = {"name": "shop", "source_lang": "en", "target_lang": "es", **form}
    return c.post("/v1/translation_memories", files={"file": (filename, content)}, data=fields)


def test_upload_list_read_export_correct_delete(api: TestClient) -> None:
    made = upload(api, TMX, "shop.tmx")
    assert made.status_code == 201, made.text
    tm = made.json()
    assert made.headers["location"] == f"/v1/translation_memories/{tm['id']}"
    assert (tm["source_lang"], tm["target_lang"], tm["entry_count"], tm["skipped"]) == (
        "en",
        "es",
        5,
        2,
    )
    assert api.get("/v1/translation_memories").json() == {"translation_memories": [tm]}
    assert api.get(f"/v1/translation_memories/{tm['id']}").json() == tm

    exported = api.get(f"/v1/translation_memories/{tm['id']}/export")
    assert exported.status_code == 200
    assert exported.headers["content-type"] == "application/x-tmx+xml"
    assert exported.headers["content-disposition"] == 'attachment; filename="shop.tmx"'
    assert b'<seg>Haga clic <bpt i="1" x="1">&lt;g1&gt;</bpt>aqu\xc3\xad' in exported.content

    fixed = api.post(
        f"/v1/translation_memories/{tm['id']}/entries",
        json={"entries": [{"source": "Free shipping on all orders.", "target": "Envío gratis."}]},
    )
    assert fixed.status_code == 200, fixed.text
    assert fixed.json()["version"] != tm["version"] and fixed.json()["entry_count"] == 5
    assert (
        b"<seg>Env\xc3\xado gratis.</seg>"
        in api.get(f"/v1/translation_memories/{tm['id']}/export").content
    )

    gone = api.delete(f"/v1/translation_memories/{tm['id']}")
    assert gone.status_code == 204 and gone.content == b""
    for resp in (
        api.get(f"/v1/translation_memories/{tm['id']}"),
        api.get(f"/v1/translation_memories/{tm['id']}/export"),
        api.post(f"/v1/translation_memories/{tm['id']}/entries", json={"entries": [
            {"source": "a", "target": "b"}]}),
        api.delete(f"/v1/translation_memories/{tm['id']}"),
    ):  # fmt: skip
        assert resp.status_code == 404
        assert resp.json()["error"]["type"] == "translation_memory_not_found"
    assert api.get("/v1/translation_memories").json() == {"translation_memories": []}


def test_json_bodies_entries_or_a_file(api: TestClient) -> None:
    made = api.post("/v1/translation_memories", json=ENTRIES)
    assert made.status_code == 201, made.text
    assert made.json()["entry_count"] == 2 and made.json()["skipped"] == 0
    as_text = api.post(
        "/v1/translation_memories",
        json={**ENTRIES, "entries": None, "file": {"content": "Yes\tSí\nNo\tNo\n"}},
    )
    assert as_text.status_code == 201 and as_text.json()["entry_count"] == 2
    as_base64 = api.post(
        "/v1/translation_memories",
        json={
            **ENTRIES,
            "entries": None,
            "file": {"content": base64.b64encode(TMX).decode(), "encoding": "base64",
                     "filename": "shop.tmx"},
        },
    )  # fmt: skip
    assert as_base64.status_code == 201 and as_base64.json()["entry_count"] == 5
    empty = api.post("/v1/translation_memories", json={**ENTRIES, "entries": []})
    assert empty.status_code == 201 and empty.json()["entry_count"] == 0
    assert len(api.get("/v1/translation_memories").json()["translation_memories"]) == 4


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({**ENTRIES, "file": {"content": "a\tb"}}, "not both"),
        ({**ENTRIES, "entries": None, "file": {"content": "%%%", "encoding": "base64"}}, "base64"),
        ({**ENTRIES, "target_lang": "xx"}, "unknown language"),
        ({**ENTRIES, "target_lang": "en-GB"}, "both 'en'"),
        ({**ENTRIES, "colour": "red"}, "colour"),
        ({**ENTRIES, "entries": [{"source": "", "target": "x"}]}, "entry 1: the source is empty"),
        ({**ENTRIES, "entries": [{"source": "x", "target": "y" * 5000}]}, "MT_TM_MAX_SEGMENT"),
        ({**ENTRIES, "entries": [{"source": "x\u0007", "target": "y"}]}, "U+0007"),
        ({**ENTRIES, "entries": None, "file": {"content": "<tmx><body>", "filename": "a.tmx"}},
         "not well-formed"),
        ({**ENTRIES, "entries": None, "file": {"content": "a,b", "format": "xlsx"}}, "format"),
    ],
)  # fmt: skip
def test_bad_json_bodies_are_422(api: TestClient, body: dict[str, Any], says: str) -> None:
    resp = api.post("/v1/translation_memories", json=body)
    assert resp.status_code == 422, resp.text
    assert says in resp.json()["error"]["message"]
    assert api.get("/v1/translation_memories").json() == {"translation_memories": []}


def test_bad_uploads_and_bodies(api: TestClient) -> None:
    surrogate = api.post(
        "/v1/translation_memories",
        content=b'{"name": "x", "source_lang": "en", "target_lang": "es", '
        b'"entries": [{"source": "\\ud800", "target": "y"}]}',
        headers={"Content-Type": "application/json"},
    )
    assert surrogate.status_code == 422  # (pydantic's JSON parser refuses it already)
    assert surrogate.json()["error"]["type"] == "invalid_input"
    no_file = api.post("/v1/translation_memories", data={"name": "x"}, files={"other": ("a", b"")})
    assert no_file.status_code == 422 and "'file'" in no_file.text
    no_pair = upload(api, TMX, "shop.tmx", target_lang="de")
    assert no_pair.status_code == 422 and "none of them is de" in no_pair.text
    bad_format = upload(api, TMX, "shop.tmx", format="docx")
    assert bad_format.status_code == 422 and "format 'docx'" in bad_format.text
    missing = api.post(
        "/v1/translation_memories", files={"file": ("a.tsv", b"a\tb")}, data={"name": "x"}
    )
    assert missing.status_code == 422 and "source_lang" in missing.text
    not_json = api.post(
        "/v1/translation_memories",
        content=b"{not json",
        headers={"Content-Type": "application/json"},
    )
    assert not_json.status_code == 422 and not_json.json()["error"]["type"] == "invalid_input"
    entries = api.post("/v1/translation_memories", json=ENTRIES).json()
    bodies: list[dict[str, Any]] = [{"entries": []}, {"entries": [{"source": "a"}]}, {}]
    for body in bodies:
        resp = api.post(f"/v1/translation_memories/{entries['id']}/entries", json=body)
        assert resp.status_code == 422, body
    assert api.get("/v1/translation_memories/not-an-id").status_code == 404


def test_the_limits_a_deployment_sets_are_the_ones_applied(redis_url: str) -> None:
    """MT_TM_MAX_PAIRS and MT_TM_MAX_PER_KEY as the deployment set them, not the defaults."""
    forget_indexes()
    app = app_for(redis_url, auth="off", tm_max_pairs=2, tm_max_per_key=1)
    with TestClient(app, raise_server_exceptions=False) as api:
        _check_limits(api)


def _check_limits(api: TestClient) -> None:
    over = api.post(
        "/v1/translation_memories",
        json={**ENTRIES, "entries": [*ENTRIES["entries"], {"source": "c", "target": "d"}]},
    )
    assert over.status_code == 422 and "MT_TM_MAX_PAIRS" in over.text
    tm = api.post("/v1/translation_memories", json=ENTRIES).json()
    assert "MT_TM_MAX_PER_KEY" in api.post("/v1/translation_memories", json=ENTRIES).text
    grow = api.post(
        f"/v1/translation_memories/{tm['id']}/entries",
        json={"entries": [{"source": "c", "target": "d"}]},
    )
    assert grow.status_code == 422 and "MT_TM_MAX_PAIRS" in grow.text


def test_a_request_larger_than_the_api_takes_is_413(redis_url: str) -> None:
    app = app_for(redis_url, auth="off", max_request_bytes=4096)
    with TestClient(app, raise_server_exceptions=False) as c:
        resp = upload(c, b"a\tb\n" * 2000, "big.tsv")
    assert resp.status_code == 413


def test_a_memory_is_visible_only_to_the_key_that_made_it(
    keyed: TestClient, r: redis.Redis
) -> None:
    store = KeyStore(r, cache_s=0)
    key_a, a = store.create("tm-a")
    _, b = store.create("tm-b")
    assert keyed.post("/v1/translation_memories", json=ENTRIES).status_code == 401
    tm = keyed.post("/v1/translation_memories", json=ENTRIES, headers=auth(a)).json()
    assert keyed.get("/v1/translation_memories", headers=auth(b)).json() == {
        "translation_memories": []
    }
    missing = "0" * 32
    for method, tail, body in (
        ("GET", "", None),
        ("GET", "/export", None),
        ("POST", "/entries", {"entries": [{"source": "x", "target": "y"}]}),
        ("DELETE", "", None),
    ):
        theirs = keyed.request(
            method, f"/v1/translation_memories/{tm['id']}{tail}", json=body, headers=auth(b)
        )
        nothing = keyed.request(
            method, f"/v1/translation_memories/{missing}{tail}", json=body, headers=auth(b)
        )
        assert theirs.status_code == nothing.status_code == 404
        assert theirs.json() == {
            "error": {
                "type": "translation_memory_not_found",
                "message": f"translation memory {tm['id']} not found",
            }
        }
    # the owner still has it, unchanged; what it keeps counts against its storage
    mine = keyed.get(f"/v1/translation_memories/{tm['id']}", headers=auth(a)).json()
    assert mine == tm
    quota = Storage(r, key_a.id, 1)
    assert quota.used() > 0
    assert keyed.delete(f"/v1/translation_memories/{tm['id']}", headers=auth(a)).status_code == 204
    assert quota.used() == 0


# --- DeepL's client ---------------------------------------------------------------------------


@contextlib.contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """``app`` served by uvicorn in a thread: its URL."""
    forget_indexes()
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(15)


@pytest.fixture
def served(redis_url: str) -> Iterator[str]:
    """The app served by uvicorn in a thread, API keys required (what DeepL's client talks to
    over HTTP)."""
    with serving(app_for(redis_url, auth="required", auth_cache_s=0)) as url:
        yield url


def test_the_official_deepl_client_lists_reads_pages_and_deletes_memories(
    served: str, r: redis.Redis
) -> None:
    keys = KeyStore(r, cache_s=0)
    _, a = keys.create("deepl-a")
    _, b = keys.create("deepl-b")
    made = []  # over HTTP, as a user would
    for n in range(3):
        resp = httpx.post(
            f"{served}/v1/translation_memories",
            headers=auth(a),
            files={"file": ("shop.tmx", TMX)},
            data={"name": f"shop {n}", "source_lang": "en", "target_lang": "es"},
            # the first file starts the API's document processes (MT_PRELOAD=false here):
            # seconds on a loaded machine, past httpx's default of 5
            timeout=60,
        )
        assert resp.status_code == 201, resp.text
        made.append(resp.json())
    client = deepl.DeepLClient(a, server_url=served)
    listed = client.list_translation_memories()
    assert [tm.name for tm in listed] == ["shop 0", "shop 1", "shop 2"]
    first = listed[0]
    assert isinstance(first, TranslationMemoryInfo)
    uuid = first.translation_memory_id
    assert uuid.replace("-", "") == made[0]["id"] and len(uuid) == 36
    assert (first.source_language, first.target_languages, first.segment_count) == (
        "en",
        ["es"],
        5,
    )
    assert first.creation_time is not None and first.updated_time is not None
    assert [tm.name for tm in client.list_translation_memories(page=1, page_size=2)] == ["shop 2"]
    assert client.get_translation_memory(uuid).name == "shop 0"
    assert client.get_translation_memory(first).segment_count == 5  # an info object works too

    page = client.list_translation_memory_segments(uuid, page_size=2)
    assert len(page) == 2 and page.segment_count == 5 and page.next_page_cursor
    seen = [s.source_text for s in page]
    while page.next_page_cursor:
        page = client.list_translation_memory_segments(
            uuid, page_size=2, page_cursor=page.next_page_cursor
        )
        seen += [s.source_text for s in page]
    assert len(seen) == 5 and "Click <g1>here</g1> to pay<x2/>" in seen
    found = client.list_translation_memory_segments(uuid, filter_text="HAGA clic")
    assert [s.targets[0].target_text for s in found] == ["Haga clic <g1>aquí</g1> para pagar<x2/>"]
    assert found.segments[0].targets[0].target_language == "es"
    assert len(client.list_translation_memory_segments(
        uuid, filter_text="HAGA", filter_case_sensitive=True)) == 0  # fmt: skip

    other = deepl.DeepLClient(b, server_url=served)
    assert other.list_translation_memories() == []
    with pytest.raises(deepl.DeepLException, match="Not found"):
        other.get_translation_memory(uuid)
    with pytest.raises(deepl.DeepLException, match="Not found"):
        other.delete_translation_memory(uuid)
    with pytest.raises(deepl.DeepLException, match=r"Bad request.*page_size"):
        client.list_translation_memories(page_size=26)

    client.delete_translation_memory(uuid)
    assert [tm.name for tm in client.list_translation_memories()] == ["shop 1", "shop 2"]
    with pytest.raises(deepl.DeepLException, match="Not found"):
        client.get_translation_memory(uuid)
    with pytest.raises(deepl.AuthorizationException):
        deepl.DeepLClient("mt_bad_key", server_url=served).list_translation_memories()


# --- the CLI and the SDK ------------------------------------------------------------------------


def test_mtfleet_tm_commands_and_the_sdk(served: str, r: redis.Redis, tmp_path: Path) -> None:
    _, key = KeyStore(r, cache_s=0).create("cli")
    env = {"MT_API_URL": served, "MT_API_KEY": key}
    cli = CliRunner()

    def run(*args: str) -> Result:
        result = cli.invoke(tm_app, list(args), env=env, catch_exceptions=True)
        assert result.exit_code == 0 or result.exception is not None, result.output
        return result

    shop = tmp_path / "shop.tmx"
    shop.write_bytes(TMX)
    made = run("import", str(shop), "--from", "en", "--to", "es")
    tm_id = made.stdout.strip()
    assert made.exit_code == 0 and len(tm_id) == 32, made.output
    assert "5 pairs, 2 units skipped" in made.stderr
    listed = run("list").stdout.splitlines()
    assert listed[0].startswith("id\tname\tpair") and listed[1].startswith(
        f"{tm_id}\tshop\ten->es\t5\t"
    )
    shown = json.loads(run("show", tm_id).stdout)
    assert shown["entry_count"] == 5 and shown["name"] == "shop"

    added = run("add", tm_id, "--source", "Thanks", "--target", "Gracias", "--source",
                "Free shipping on all orders.", "--target", "Envío gratis.")  # fmt: skip
    assert added.exit_code == 0 and added.stdout.strip() != shown["version"]
    assert "6 pairs" in added.stderr
    assert run("add", tm_id, "--source", "a").exit_code == 2  # a --target per --source

    out = tmp_path / "now.tmx"
    assert run("export", tm_id, "--out", str(out)).exit_code == 0
    assert b"<seg>Gracias</seg>" in out.read_bytes()
    assert b"<seg>Gracias</seg>" in run("export", tm_id).stdout_bytes

    ui = tmp_path / "ui.csv"
    ui.write_text("source,target\nSave,Guardar\n", encoding="utf-8")
    csv_id = run("import", str(ui), "--from", "en", "--to", "es", "--name", "ui").stdout.strip()

    # the SDK, the same memories
    with MTClient(served, api_key=key) as sdk:
        assert [t.id for t in sdk.translation_memories()] == [tm_id, csv_id]
        made_sdk = sdk.create_translation_memory(
            "sdk", source="en", target="fr", entries={"Hi": "Salut"}
        )
        assert made_sdk.entry_count == 1
        fixed = sdk.add_translation_memory_entries(
            made_sdk.id, [("Hi", "Bonjour"), ("Bye", "Salut")]
        )
        assert fixed.entry_count == 2 and fixed.version != made_sdk.version
        utf16 = sdk.import_translation_memory(
            "Yes\tOui\n".encode("utf-16"), name="u16", source="en", target="fr", fmt="tsv"
        )
        assert utf16.entry_count == 1  # sent as base64: not UTF-8
        assert sdk.translation_memory(utf16.id).name == "u16"
        assert b"<seg>Bonjour</seg>" in sdk.export_translation_memory(made_sdk.id)
        sdk.delete_translation_memory(utf16.id)
        with pytest.raises(MTClientError) as err:
            sdk.translation_memory(utf16.id)
        assert err.value.status == 404 and err.value.type == "translation_memory_not_found"

    assert run("delete", tm_id).stdout.strip() == f"deleted translation memory {tm_id}"
    gone = run("show", tm_id)
    assert isinstance(gone.exception, MTClientError) and gone.exception.status == 404


# --- each key's bounded share of memory work (issue 39, item 11) --------------------------------


def big_tmx(units: int) -> bytes:
    body = "".join(
        f'<tu><tuv xml:lang="en"><seg>Product {n} ships in {n % 9 + 1} days</seg></tuv>'
        f'<tuv xml:lang="es"><seg>El producto {n} se envía en {n % 9 + 1} días</seg></tuv></tu>'
        for n in range(units)
    )
    return f'<tmx version="1.4"><header/><body>{body}</body></tmx>'.encode()


class Held:
    """The document processes' work for one key held back until :meth:`release` (as
    FakeServer holds an engine's replies): that key's memory work stays in flight, in the
    order the API took it, whatever the machine's speed."""

    def __init__(self, app: FastAPI, owner: str) -> None:
        pool = app.state.services.jobs.documents
        self.waiting = 0
        self._go = threading.Event()
        self._lock = threading.Lock()
        real = pool.run

        def run(op: str, who: str, *args: Any, **kwargs: Any) -> Any:
            if who == owner:
                with self._lock:
                    self.waiting += 1
                assert self._go.wait(60)
            return real(op, who, *args, **kwargs)

        pool.run = run

    def release(self) -> None:
        self._go.set()


def in_thread(call: Any, *args: Any) -> tuple[threading.Thread, list[httpx.Response]]:
    got: list[httpx.Response] = []
    thread = threading.Thread(target=lambda: got.append(call(*args)), daemon=True)
    thread.start()
    return thread, got


def test_one_keys_flood_of_memory_work_is_its_own_problem(redis_url: str, r: redis.Redis) -> None:
    """Key A's imports each hold one of its share of memory work (MT_TM_WORK_PER_KEY, 2 by
    default) while a document process reads them: its next import, export or correction is
    429 with Retry-After, while key B imports, corrects, exports and reads pages meanwhile."""
    keys = KeyStore(r, cache_s=0)
    a_key, a = keys.create("flood", rate="none")
    _, b = keys.create("quiet", rate="none")
    app = app_for(redis_url, auth="required", auth_cache_s=0)
    tmx = big_tmx(2_000)
    with serving(app) as url:
        mine = httpx.post(
            f"{url}/v1/translation_memories", headers=auth(a), json=ENTRIES, timeout=30
        ).json()["id"]
        held = Held(app, a_key.id)
        flood = [in_thread(upload_to, url, a, tmx) for _ in range(2)]
        deadline = time.monotonic() + 30
        while held.waiting < 2 and not all(got for _, got in flood):  # both in the API
            assert time.monotonic() < deadline, "A's imports never reached the API"
            time.sleep(0.02)

        refused = [
            upload_to(url, a, tmx),
            httpx.get(f"{url}/v1/translation_memories/{mine}/export", headers=auth(a)),
            httpx.post(
                f"{url}/v1/translation_memories/{mine}/entries",
                json={"entries": [{"source": "Close", "target": "Cerrar"}]},
                headers=auth(a),
            ),
        ]
        for resp in refused:
            assert resp.status_code == 429, resp.text
            assert resp.json()["error"]["type"] == "rate_limited"
            assert "MT_TM_WORK_PER_KEY=2" in resp.json()["error"]["message"]
            assert int(resp.headers["retry-after"]) >= 1

        # key B meanwhile: every kind of memory work answers while A's imports are in flight
        made = upload_to(url, b, tmx)
        assert made.status_code == 201, made.text
        theirs = made.json()["id"]
        fixed = httpx.post(
            f"{url}/v1/translation_memories/{theirs}/entries",
            json={"entries": [{"source": "Product 1 ships in 2 days", "target": "Listo"}]},
            headers=auth(b),
            timeout=30,
        )
        assert fixed.status_code == 200 and fixed.json()["entry_count"] == 2_000
        exported = httpx.get(
            f"{url}/v1/translation_memories/{theirs}/export", headers=auth(b), timeout=30
        )
        assert exported.status_code == 200 and b"<seg>Listo</seg>" in exported.content
        page = deepl.DeepLClient(b, server_url=url).list_translation_memory_segments(
            theirs, filter_text="Product 17 "
        )
        assert [s.targets[0].target_text for s in page] == ["El producto 17 se envía en 9 días"]
        assert not any(got for _, got in flood)  # A's are still in flight

        held.release()  # A's own finish, and its share is free again
        for thread, got in flood:
            thread.join(60)
            assert got[0].status_code == 201 and got[0].json()["entry_count"] == 2_000
        again = httpx.get(f"{url}/v1/translation_memories/{mine}/export", headers=auth(a))
        assert again.status_code == 200 and b"<seg>Guarde el archivo</seg>" in again.content


def upload_to(url: str, token: str, content: bytes) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/translation_memories",
        files={"file": ("shop.tmx", content)},
        data={"name": "shop", "source_lang": "en", "target_lang": "es"},
        headers=auth(token),
        timeout=30,
    )


def test_an_import_is_read_in_a_document_process_under_its_deadline(redis_url: str) -> None:
    """A memory's file is read where documents are: a TMX that takes longer than
    MT_DOCUMENT_DEADLINE_S to read is stopped there and refused (422), not parsed at length
    in the API's own process."""
    app = app_for(redis_url, auth="off", document_deadline_s=0.01)
    with TestClient(app, raise_server_exceptions=False) as c:
        got = upload(c, big_tmx(20_000), "big.tmx")
        assert got.status_code == 422, got.text
        assert got.json()["error"]["type"] == "document_too_complex"
        assert "MT_DOCUMENT_DEADLINE_S" in got.json()["error"]["message"]
        assert c.get("/v1/translation_memories").json() == {"translation_memories": []}
