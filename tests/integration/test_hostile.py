"""Hostile and careless clients against a real ``mtfleet api`` (MT_AUTH=required), one test per
finding of the security review (docs/security.md): what a request may cost the API, what ids
may reach, what a download may name.

The fleet: a private redis-server, the API and an Apertium worker (real Spanish). Documents are
read in the API's document workers with a short deadline (3 s) so the deadline is met in a test.
"""

from __future__ import annotations

import base64
import io
import json
import random
import re
import socket
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import redis

from mtfleet.fleet.localfleet import LocalFleet

ROOT = Path(__file__).resolve().parents[2]
DOCX = ROOT / "tests" / "fixtures" / "documents" / "docx" / "product_sheet.docx"
DEADLINE_S = 3
SLOW_S = 2  # body and header deadlines
W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
TO_ES = {"source_lang": "en", "target_lang": "es"}


@pytest.fixture(scope="module")
def fleet() -> Iterator[LocalFleet]:
    env = {
        "MT_AUTH": "required",
        "MT_HEARTBEAT_S": "1",
        "MT_DOCUMENT_DEADLINE_S": str(DEADLINE_S),
        "MT_BODY_TIMEOUT_S": str(SLOW_S),
        "MT_HEADER_TIMEOUT_S": str(SLOW_S),
        "MT_AUTH_FAILURES_PER_MINUTE": "20",
        "MT_CHECK_LANGUAGE": "false",
    }
    with LocalFleet(env=env) as f:
        f.start_redis()
        f.start_worker("--engine", "apertium", "--lanes", "interactive,bulk", "--concurrency", "2")
        f.start_api()
        f.wait_ready(90)
        yield f


def client_for(fleet: LocalFleet, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=fleet.api_url, timeout=120, headers={"Authorization": f"Bearer {token}"}
    )


@pytest.fixture(scope="module")
def api(fleet: LocalFleet) -> Iterator[httpx.Client]:
    with client_for(fleet, fleet.create_api_key("tenant-a")) as c:
        yield c


@pytest.fixture(scope="module")
def ops(fleet: LocalFleet) -> Iterator[httpx.Client]:
    """An operator key's client: /metrics is an operator's."""
    with client_for(fleet, fleet.create_api_key("ops", role="operator")) as c:
        yield c


def api_process(fleet: LocalFleet) -> psutil.Process:
    return psutil.Process(next(p for p in fleet.procs if p.name == "api").popen.pid)


def refused(api: httpx.Client, resp: httpx.Response, status: int, type_: str) -> str:
    """A clear JSON error with this status and type, and a server still healthy."""
    assert resp.status_code == status, resp.text[:500]
    error = resp.json()["error"]
    assert error["type"] == type_, error
    assert api.get("/healthz").status_code == 200
    return str(error["message"])


def document_job(fmt: str, content: str | bytes, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"format": fmt}
    if isinstance(content, bytes):
        doc.update(content=base64.b64encode(content).decode(), encoding="base64")
    else:
        doc["content"] = content
    return {"document": {**doc, **extra}, "source_lang": "en", "target_lang": "es"}


def finished(api: httpx.Client, job_id: str) -> dict[str, Any]:
    resp = api.get(f"/v1/jobs/{job_id}", params={"wait": 30})
    assert resp.status_code == 200, resp.text
    job: dict[str, Any] = resp.json()
    assert job["status"] == "succeeded", job
    return job


def document_work(ops: httpx.Client) -> dict[tuple[str, str], float]:
    """mt_api_document_seconds_count by (op, outcome), from the API's /metrics (``ops``: an
    operator key's client)."""
    found: dict[tuple[str, str], float] = {}
    pattern = r'mt_api_document_seconds_count\{op="(\w+)",outcome="(\w+)"\} ([0-9.e+]+)'
    for m in re.finditer(pattern, ops.get("/metrics").text):
        found[(m.group(1), m.group(2))] = float(m.group(3))
    return found


def docx_with(members: dict[str, bytes]) -> bytes:
    """The fixture DOCX with some members replaced or added."""
    out = io.BytesIO()
    with zipfile.ZipFile(DOCX) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename not in members:
                dst.writestr(info, src.read(info))
        for name, data in members.items():
            dst.writestr(name, data)
    return out.getvalue()


# --- 1. a small request must not burn minutes of API CPU ---------------------------------------


def test_nested_emphasis_is_refused_at_once_and_the_api_stays_responsive(
    api: httpx.Client,
) -> None:
    text = "*" * 200_000 + "Hello world" + "*" * 200_000  # 400 KB: 112 s of API CPU before
    message = refused(
        api, api.post("/v1/jobs", json=document_job("markdown", text)), 422, "invalid_document"
    )
    assert "200000 '*' characters" in message and "limit is 256" in message


def test_markup_nested_past_the_limit_is_refused_in_every_format(api: httpx.Client) -> None:
    deep = "<span>" * 100 + "Hello world" + "</span>" * 100
    message = refused(
        api,
        api.post("/v1/jobs", json=document_job("html", f"<p>{deep}</p>")),
        422,
        "invalid_document",
    )
    assert "64 levels" in message


def test_an_icu_plural_nested_past_what_renders_is_refused_at_upload(api: httpx.Client) -> None:
    # a plural inside a select inside a plural ... 31 deep: accepted and charged before, and its
    # file could never be downloaded (Arabic's six categories copy each other case)
    value = "".join(
        "{n, plural, one {# item} other {" if i % 2 == 0 else "{g, select, male {he} other {"
        for i in range(31)
    )
    content = json.dumps({"cart": value + "items" + "}}" * 31}).encode()
    for resp in (
        api.post("/v1/jobs", json=document_job("json", content.decode())),
        api.post("/v1/documents", files={"file": ("cart.json", content)}, data=TO_ES),
    ):
        message = refused(api, resp, 422, "invalid_document")
        assert "nests plurals 16 levels deep" in message and "250,000 characters" in message


def test_a_parse_error_is_a_short_sentence_not_the_input_echoed(api: httpx.Client) -> None:
    # polib's message quoted the unknown keyword whole: a 3 MB answer before
    po = 'msgid "Cart"\nmsgstr ""\n\n#| ' + "k" * 3_000_000 + ' "x"\n'
    message = refused(
        api, api.post("/v1/jobs", json=document_job("po", po)), 422, "invalid_document"
    )
    assert len(message) <= 300, message[:400]
    assert "PO" in message and "line 4" in message and "kkkkk…" in message


def test_a_document_past_the_deadline_is_refused_and_the_api_answers_meanwhile(
    api: httpx.Client, ops: httpx.Client
) -> None:
    # Unclosed link labels: markdown-it's label scan is superlinear in them (minutes for this
    # 2 MB body); the document worker is stopped at the deadline.
    text = "[a" * 1_000_000 + " Hello world."
    before = document_work(ops).get(("read", "too_complex"), 0)
    with httpx.Client(base_url=str(api.base_url), headers=api.headers, timeout=120) as other:
        answer: list[httpx.Response] = []
        thread = threading.Thread(
            target=lambda: answer.append(
                other.post("/v1/jobs", json=document_job("markdown", text))
            )
        )
        thread.start()
        time.sleep(0.5)
        healthy = 0
        while thread.is_alive():  # the API process itself is free while the document is read
            assert api.get("/healthz", timeout=5).status_code == 200
            healthy += 1
            time.sleep(0.2)
        thread.join()
    message = refused(api, answer[0], 422, "document_too_complex")
    assert f"longer than {DEADLINE_S} s" in message and "MT_DOCUMENT_DEADLINE_S" in message
    assert healthy >= 1
    assert document_work(ops)[("read", "too_complex")] == before + 1
    # the pool replaced the stopped worker: the next document is read as usual
    ok = api.post("/v1/jobs", json=document_job("markdown", "# Hello\n\nRed shoes.\n"))
    assert ok.status_code in (200, 202), ok.text


def test_a_result_is_rendered_once_however_often_it_is_read(
    api: httpx.Client, ops: httpx.Client
) -> None:
    text = "# Shipping\n\nFree *shipping* on [all orders](https://example.com).\n\nRed shoes.\n"
    resp = api.post("/v1/jobs", json=document_job("markdown", text, filename="p.md"))
    assert resp.status_code in (200, 202), resp.text
    job_id = resp.json()["id"]
    finished(api, job_id)
    before = document_work(ops)
    for _ in range(3):
        assert api.get(f"/v1/jobs/{job_id}/result").status_code == 200
        download = api.get(f"/v1/jobs/{job_id}/document")
        assert download.status_code == 200
        assert "envío" in download.text.lower() or "zapatos" in download.text.lower()
    after = document_work(ops)
    renders = after.get(("render", "ok"), 0) - before.get(("render", "ok"), 0)
    reads = sum(v for (op, _), v in after.items() if op == "read") - sum(
        v for (op, _), v in before.items() if op == "read"
    )
    assert (renders, reads) == (1, 0)


# --- 2. a small DOCX must not take gigabytes -----------------------------------------------------


def test_a_docx_of_millions_of_empty_paragraphs_is_refused_before_it_is_parsed(
    fleet: LocalFleet, api: httpx.Client
) -> None:
    body = b"<w:p/>" * (10 * 1024 * 1024 // 6)  # 16 KB of ZIP: 1.6 GB of API memory before
    xml = f'<w:document xmlns:w="{W}"><w:body>'.encode() + body + b"</w:body></w:document>"
    content = docx_with({"word/document.xml": xml})
    assert len(content) < 64 * 1024
    rss0 = api_process(fleet).memory_info().rss
    message = refused(
        api, api.post("/v1/jobs", json=document_job("docx", content)), 422, "invalid_document"
    )
    assert "word/document.xml decompresses 681 times its size; the limit is 100" in message
    assert api_process(fleet).memory_info().rss - rss0 < 100 * 1024 * 1024


def test_a_docx_part_with_more_markup_than_the_limit_is_refused(
    fleet: LocalFleet, api: httpx.Client
) -> None:
    # random words keep the ratio of a real document (8x): the element count refuses it
    rng = random.Random(7)
    paras = b"".join(
        b"<w:p><w:r><w:t>%06x</w:t></w:r></w:p>" % rng.getrandbits(24) for _ in range(200_000)
    )
    xml = f'<w:document xmlns:w="{W}"><w:body>'.encode() + paras + b"</w:body></w:document>"
    content = docx_with({"word/document.xml": xml})
    rss0 = api_process(fleet).memory_info().rss
    message = refused(
        api, api.post("/v1/jobs", json=document_job("docx", content)), 422, "invalid_document"
    )
    assert "word/document.xml has 1200004 pieces of markup; the limit is 600000" in message
    assert api_process(fleet).memory_info().rss - rss0 < 100 * 1024 * 1024


def test_a_docx_member_that_inflates_a_thousand_times_is_refused(api: httpx.Client) -> None:
    content = docx_with({"word/media/zeros.bin": bytes(250 * 1024 * 1024)})
    assert len(content) < 1024 * 1024
    message = refused(
        api, api.post("/v1/jobs", json=document_job("docx", content)), 422, "invalid_document"
    )
    assert "word/media/zeros.bin" in message and "limit is 100" in message


def test_an_untouched_docx_member_comes_back_byte_equal(api: httpx.Client) -> None:
    media = bytes(range(256)) * 4096 + b"".join(i.to_bytes(4, "big") for i in range(200_000))
    content = docx_with({"word/media/blob.bin": media})
    resp = api.post("/v1/jobs", json=document_job("docx", content, filename="sheet.docx"))
    assert resp.status_code in (200, 202), resp.text
    job_id = resp.json()["id"]
    finished(api, job_id)
    out = api.get(f"/v1/jobs/{job_id}/document")
    assert out.status_code == 200
    with zipfile.ZipFile(io.BytesIO(out.content)) as z:
        assert z.read("word/media/blob.bin") == media
        assert z.testzip() is None


# --- 6. ids in URLs reach nothing but their own job or glossary ---------------------------------


def test_ids_that_are_not_ids_are_404_and_reach_no_other_key(api: httpx.Client) -> None:
    text_job = api.post(
        "/v1/jobs", json={"texts": ["Red shoes"], "source_lang": "en", "target_lang": "es"}
    ).json()["id"]
    doc_job = api.post("/v1/jobs", json=document_job("markdown", "Red shoes.\n")).json()["id"]
    glossary = api.post(
        "/v1/glossaries",
        json={"name": "g", "source_lang": "en", "target_lang": "es", "protected": ["iPhone"]},
    ).json()["id"]
    for job_id in (text_job, doc_job, "0" * 32):  # existing or not, the answer is the same
        for suffix in (":out", ":document", ":deliveries", "*", "%0Aout"):
            bad = job_id + suffix
            for method, path in (
                ("GET", f"/v1/jobs/{bad}"),
                ("GET", f"/v1/jobs/{bad}/result"),
                ("GET", f"/v1/jobs/{bad}/document"),
                ("DELETE", f"/v1/jobs/{bad}?purge=true"),
            ):
                resp = api.request(method, path)
                assert resp.status_code == 404, (method, path, resp.text)
                assert resp.json()["error"]["type"] == "job_not_found"
    for bad in (glossary + ":terms", glossary + "*", "../" + glossary):
        assert api.get(f"/v1/glossaries/{bad}").status_code == 404
        assert api.delete(f"/v1/glossaries/{bad}").status_code == 404
        named = api.post(
            "/v1/jobs",
            json={
                "texts": ["Red shoes"],
                "source_lang": "en",
                "target_lang": "es",
                "glossary_id": bad,
            },
        )
        assert named.status_code == 422 and named.json()["error"]["type"] == "unknown_glossary"
    assert api.get(f"/v1/glossaries/{glossary}").status_code == 200  # the real one is intact


# --- 7. any file name downloads --------------------------------------------------------------


def test_a_non_latin_file_name_downloads_with_an_rfc_6266_header(api: httpx.Client) -> None:
    resp = api.post(
        "/v1/jobs", json=document_job("html", "<p>Red shoes</p>", filename='文件 "1".html')
    )
    job_id = resp.json()["id"]
    finished(api, job_id)
    out = api.get(f"/v1/jobs/{job_id}/document")
    assert out.status_code == 200, out.text
    header = out.headers["content-disposition"]
    assert header.isascii()
    assert 'filename="____1_.html"' in header
    assert "filename*=UTF-8''%E6%96%87%E4%BB%B6%20%221%22.html" in header


# --- 4. the phrase cache is each key's own, and a purge empties it --------------------------------


def test_the_phrase_cache_is_per_key_and_a_purge_removes_the_jobs_entries(
    fleet: LocalFleet, api: httpx.Client
) -> None:
    secret = {
        "texts": ["The merger with Acme closes on Friday."],
        "source_lang": "en",
        "target_lang": "es",
    }

    def translate(client: httpx.Client) -> dict[str, Any]:
        resp = client.post("/v1/translate", json={**secret, "timeout": 30})
        assert resp.status_code == 200, resp.text
        return dict(resp.json())

    first = translate(api)
    assert first["cached"] == 0
    with client_for(fleet, fleet.create_api_key("tenant-d")) as other:
        assert translate(other)["cached"] == 0  # nothing tells D that A translated it
    again = translate(api)
    assert again["cached"] == 1 and again["translations"] == first["translations"]
    assert api.delete(f"/v1/jobs/{first['id']}", params={"purge": "true"}).status_code == 200
    assert translate(api)["cached"] == 0  # the purged job's entry is gone


# --- 5. a glossary cannot carry a script link into a document ------------------------------------


def test_a_glossary_target_term_with_a_script_url_is_refused(api: httpx.Client) -> None:
    for target in ("[shop](javascript:alert(document.cookie))", "jav&#x61;script:alert(1)"):
        resp = api.post(
            "/v1/glossaries",
            json={
                "name": "g",
                "source_lang": "en",
                "target_lang": "es",
                "entries": {"shop": target},
            },
        )
        message = refused(api, resp, 422, "invalid_input")
        assert "script URL (javascript:)" in message


# --- 3. what a key stores stays inside its storage quota ----------------------------------------


def test_storage_is_counted_against_the_key_and_a_refusal_writes_nothing(
    fleet: LocalFleet,
) -> None:
    r = redis.Redis.from_url(str(fleet.redis_url))
    script_only = "<html><body><script>" + "x = 1;\n" * 40_000 + "</script></body></html>"
    token = fleet.create_api_key("tenant-s", chars_per_day=10, storage_mb=2)  # ~280 KB each
    with client_for(fleet, token) as api:
        documents = set(r.scan_iter("mt:job:*:document"))
        jobs = [api.post("/v1/jobs", json=document_job("html", script_only)) for _ in range(5)]
        assert [j.status_code for j in jobs[:2]] == [200, 200]  # no text: 0 characters charged
        refused_jobs = jobs[2:]
        for resp in refused_jobs:
            message = refused(api, resp, 429, "storage_quota_exceeded")
            assert "of its 2 MiB" in message and int(resp.headers["retry-after"]) > 3600
        added = set(r.scan_iter("mt:job:*:document")) - documents
        assert len(added) == 2  # the refused ones wrote nothing

        # an Idempotency-Key reused with another body is 409 and leaves nothing behind
        first = api.post(
            "/v1/jobs", json=document_job("html", "<p>1</p>"), headers={"Idempotency-Key": "k1"}
        )
        assert first.status_code == 200, first.text
        before = set(r.scan_iter("mt:job:*"))
        for n in range(3):
            clash = api.post(
                "/v1/jobs",
                json=document_job("html", f"<p>{n + 2}</p>"),
                headers={"Idempotency-Key": "k1"},
            )
            refused(api, clash, 409, "idempotency_conflict")
        assert set(r.scan_iter("mt:job:*")) == before

        # a glossary counts too; a purge gives a job's bytes back
        big = {  # 1 MB of terms
            f"the long product name number {i} of our big summer catalogue": (
                f"el nombre largo del producto número {i} de nuestro gran catálogo"
            )
            for i in range(9_000)
        }
        g = api.post(
            "/v1/glossaries",
            json={"name": "big", "source_lang": "en", "target_lang": "es", "entries": big},
        )
        refused(api, g, 429, "storage_quota_exceeded")
        assert (
            api.delete(f"/v1/jobs/{jobs[0].json()['id']}", params={"purge": "true"}).status_code
            == 200
        )
        again = api.post("/v1/jobs", json=document_job("html", script_only))
        assert again.status_code == 200, again.text


# --- 8. no body is read before its key is checked, and nothing waits for a slow client ----------


def raw_request(
    fleet: LocalFleet, head: str, body: bytes = b"", source: str = "127.0.0.1"
) -> socket.socket:
    host, port = fleet.api_url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30, source_address=(source, 0))
    sock.sendall(head.encode("latin-1") + body)
    return sock


def answer_of(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (or 30 s pass)."""
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
        if b"\r\n\r\n" in data and b'"error"' in data and data.endswith(b"}"):
            return data


def post_head(length: int, token: str | None) -> str:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (
        f"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{auth}"
        f"Content-Length: {length}\r\n\r\n"
    )


def test_an_unauthenticated_upload_is_refused_before_its_body_is_read(
    fleet: LocalFleet,
) -> None:
    rss0 = api_process(fleet).memory_info().rss
    # from an address of its own: past 20 failures a minute it is throttled (429, no read)
    socks = [
        raw_request(
            fleet, post_head(8 * 1024 * 1024, token), b"{" + b" " * (1024 * 1024), "127.0.0.3"
        )
        for token in [None, "mt_0123456789abcdef_wrong"] * 20
    ]
    try:
        answers = [answer_of(s) for s in socks]  # answered without the other 7 MB
    finally:
        for s in socks:
            s.close()
    statuses = {a.split(b" ", 2)[1] for a in answers}
    assert statuses <= {b"401", b"429"}, statuses  # refused, past 20 a minute throttled
    assert api_process(fleet).memory_info().rss - rss0 < 64 * 1024 * 1024


def test_a_body_that_stops_short_is_408_and_the_connection_closed(
    fleet: LocalFleet, api: httpx.Client
) -> None:
    token = str(api.headers["authorization"]).split(" ", 1)[1]
    sock = raw_request(fleet, post_head(1000, token), b'{"texts": ["Red')
    try:
        answer = answer_of(sock)
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"request_timeout" in answer and b"MT_BODY_TIMEOUT_S" in answer
    assert b"connection: close" in answer.lower()


@pytest.mark.parametrize("sent", ["", "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-"])
def test_a_connection_with_slow_headers_is_closed(fleet: LocalFleet, sent: str) -> None:
    socks = [raw_request(fleet, sent) for _ in range(50)]
    try:
        assert all(answer_of(s) == b"" for s in socks)  # closed by the server, nothing said
    finally:
        for s in socks:
            s.close()


# --- 9. the smaller ones ----------------------------------------------------------------------


def test_failed_keys_are_throttled_per_client_and_cost_no_redis_read_each(
    fleet: LocalFleet, api: httpx.Client
) -> None:
    r = redis.Redis.from_url(str(fleet.redis_url), decode_responses=True)
    reads: list[str] = []
    watching = threading.Event()

    def watch() -> None:  # every command Redis runs that names the unknown key
        with r.monitor() as m:
            watching.set()
            for command in m.listen():
                if "deadbeef" in command["command"]:
                    reads.append(command["command"])
                if "stop-watching" in command["command"]:
                    return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    watching.wait(10)
    token = str(api.headers["authorization"]).split(" ", 1)[1]
    key_id = token.split("_")[1]
    # another loopback address: the throttle is per client address
    transport = httpx.HTTPTransport(local_address="127.0.0.2")
    with httpx.Client(base_url=fleet.api_url, transport=transport, timeout=30) as guesser:
        malformed = guesser.get("/v1/languages", headers={"Authorization": "Bearer mt_deadbeef_x"})
        assert malformed.status_code == 401  # never read from Redis: not a key id
        unknown = [
            guesser.get("/v1/languages", headers={"Authorization": "Bearer mt_00000000deadbeef_x"})
            for _ in range(10)
        ]
        known = [
            guesser.get("/v1/languages", headers={"Authorization": f"Bearer mt_{key_id}_guess"})
            for _ in range(9)
        ]  # 20 failures: the limit
        assert {u.status_code for u in unknown + known} == {401}
        assert {u.json()["error"]["message"] for u in unknown + known} == {"invalid API key"}
        r.get("stop-watching")
        watcher.join(10)
        assert len(reads) == 1, reads  # the unknown id was read once, then remembered
        blocked = guesser.get("/v1/languages", headers={"Authorization": "Bearer mt_deadbeef"})
        assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) >= 1
        # the address's valid key is served all the same
        served = guesser.get("/v1/languages", headers={"Authorization": f"Bearer {token}"})
        assert served.status_code == 200, served.text
    assert api.get("/v1/languages").status_code == 200  # other clients are not throttled


def test_an_idempotency_key_of_a_purged_job_is_410(api: httpx.Client) -> None:
    body = {"texts": ["Red shoes"], "source_lang": "en", "target_lang": "es"}
    first = api.post("/v1/jobs", json=body, headers={"Idempotency-Key": "purged-1"}).json()
    assert api.delete(f"/v1/jobs/{first['id']}", params={"purge": "true"}).status_code == 200
    again = api.post("/v1/jobs", json=body, headers={"Idempotency-Key": "purged-1"})
    message = refused(api, again, 410, "job_purged")
    assert first["id"] in message and "purged" in message


def test_with_redis_full_a_rate_limited_key_still_reads(fleet: LocalFleet) -> None:
    r = redis.Redis.from_url(str(fleet.redis_url))
    token = fleet.create_api_key("tenant-r", rate=50)
    with client_for(fleet, token) as api:
        job = api.post(
            "/v1/jobs", json={"texts": ["Red shoes"], "source_lang": "en", "target_lang": "es"}
        ).json()
        r.config_set("maxmemory-policy", "noeviction")
        # Half of what it holds: far enough below that the fleet freeing some (a chunk done and
        # acknowledged meanwhile) cannot let a write in (used_memory itself once did).
        r.config_set("maxmemory", int(r.info("memory")["used_memory"]) // 2)
        try:
            read = api.get(f"/v1/jobs/{job['id']}")
            assert read.status_code == 200, read.text
            write = api.post(
                "/v1/jobs", json={"texts": ["Blue shoes"], "source_lang": "en", "target_lang": "es"}
            )
            message = refused(api, write, 503, "unavailable")
            assert "OOM" not in message and "127.0.0.1" not in message  # internals stay in the log
        finally:
            r.config_set("maxmemory", 0)


# --- 10. a bad key from one client never costs a valid key its access -----------------------

LT_FORM = {"q": "Red shoes", "source": "en", "target": "es"}


def from_address(base_url: str, address: str) -> httpx.Client:
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(base_url=base_url, transport=transport, timeout=60)


def bad_key_attempt(client: httpx.Client, n: int, **headers: str) -> httpx.Response:
    """A request with a bad key (a fresh one each time), on /v1, DeepL's /v2 and
    LibreTranslate in turn."""
    token = f"mt_{n:016x}_guess"
    surface = n % 3
    if surface == 0:
        return client.get("/v1/languages", headers={"Authorization": f"Bearer {token}", **headers})
    if surface == 1:
        return client.post(
            "/v2/translate",
            json={"text": ["Red shoes"], "target_lang": "ES"},
            headers={"Authorization": f"DeepL-Auth-Key {token}", **headers},
        )
    return client.post(
        "/libretranslate/translate", data={**LT_FORM, "api_key": token}, headers=headers
    )


def assert_throttled_after(answers: list[httpx.Response], limit: int) -> None:
    """Refused as a bad key (401; 403 on DeepL and LibreTranslate) up to ``limit``, then 429
    with Retry-After."""
    statuses = [a.status_code for a in answers]
    assert set(statuses[:limit]) <= {401, 403}, statuses
    assert set(statuses[limit:]) == {429}, statuses
    assert all(int(a.headers["retry-after"]) >= 1 for a in answers[limit:])


def assert_served(client: httpx.Client, token: str, **headers: str) -> None:
    """The key's calls succeed on every surface: /v1, DeepL (DeepL-Auth-Key), LibreTranslate
    (api_key in the body)."""
    v1 = client.post(
        "/v1/translate",
        json={"texts": ["Red shoes"], "source_lang": "en", "target_lang": "es", "timeout": 30},
        headers={"Authorization": f"Bearer {token}", **headers},
    )
    assert v1.status_code == 200 and v1.json()["translations"], v1.text
    deepl = client.post(
        "/v2/translate",
        json={"text": ["Red shoes"], "source_lang": "EN", "target_lang": "ES"},
        headers={"Authorization": f"DeepL-Auth-Key {token}", **headers},
    )
    assert deepl.status_code == 200 and deepl.json()["translations"][0]["text"], deepl.text
    lt = client.post(
        "/libretranslate/translate", json={**LT_FORM, "api_key": token}, headers=headers
    )
    assert lt.status_code == 200 and lt.json()["translatedText"], lt.text


def test_a_hundred_bad_keys_from_an_address_cost_its_valid_keys_nothing(
    fleet: LocalFleet,
) -> None:
    """Behind a proxy every client shares one address: 100 bad keys from it (on every surface)
    are throttled past MT_AUTH_FAILURES_PER_MINUTE (20 here), and two tenants' valid keys
    from that same address are served on every surface all the while."""
    keys = [fleet.create_api_key("tenant-proxied-1"), fleet.create_api_key("tenant-proxied-2")]
    with from_address(fleet.api_url, "127.0.0.4") as shared:
        answers = [bad_key_attempt(shared, n) for n in range(100)]
        assert_throttled_after(answers, 20)
        lt_bad = shared.post("/libretranslate/translate", data={**LT_FORM, "api_key": "x"})
        assert lt_bad.status_code == 429 and lt_bad.json()["error"].startswith("Slowdown: ")
        for token in keys:
            assert_served(shared, token)
        assert bad_key_attempt(shared, 100).status_code == 429  # still throttled


def test_bad_keys_sent_to_libretranslate_are_counted_by_the_same_throttle(
    fleet: LocalFleet,
) -> None:
    with from_address(fleet.api_url, "127.0.0.5") as client:
        answers = [
            client.post(
                "/libretranslate/translate", data={**LT_FORM, "api_key": f"mt_{n:016x}_guess"}
            )
            for n in range(21)
        ]
        assert_throttled_after(answers, 20)
        assert bad_key_attempt(client, 0).status_code == 429  # /v1 too: one throttle


def test_a_rotating_x_forwarded_for_does_not_evade_the_throttle(fleet: LocalFleet) -> None:
    """By default no proxy is trusted, loopback included: X-Forwarded-For from anyone is
    ignored and the throttle counts the peer's address."""
    with from_address(fleet.api_url, "127.0.0.1") as client:
        answers = [
            bad_key_attempt(client, n, **{"X-Forwarded-For": f"198.51.100.{n}"}) for n in range(30)
        ]
        assert_throttled_after(answers, 20)


def test_behind_a_trusted_proxy_the_forwarded_client_is_throttled(fleet: LocalFleet) -> None:
    """``mtfleet api --trusted-proxies 127.0.0.7``: from that proxy, X-Forwarded-For names the
    client (throttled alone, its valid key served); another address's X-Forwarded-For is
    ignored."""
    env = {"MT_AUTH": "required", "MT_AUTH_FAILURES_PER_MINUTE": "20"}
    with LocalFleet(redis_url=str(fleet.redis_url), env=env) as behind:
        behind.start_redis()  # the fleet's own: its worker translates for this API too
        behind.start_api(args=("--trusted-proxies", "127.0.0.7"))
        token = fleet.create_api_key("tenant-behind-proxy")
        with from_address(behind.api_url, "127.0.0.7") as proxy:
            first = {"X-Forwarded-For": "203.0.113.1"}
            answers = [bad_key_attempt(proxy, n, **first) for n in range(21)]
            assert_throttled_after(answers, 20)
            other = bad_key_attempt(proxy, 0, **{"X-Forwarded-For": "203.0.113.2"})
            assert other.status_code == 401, other.text  # another client, not throttled
            assert_served(proxy, token, **first)
        with from_address(behind.api_url, "127.0.0.8") as untrusted:
            answers = [
                bad_key_attempt(untrusted, n, **{"X-Forwarded-For": f"203.0.113.{n}"})
                for n in range(21)
            ]
            assert_throttled_after(answers, 20)
