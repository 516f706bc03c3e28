"""Bad documents never answer 5xx: malformed, truncated and deeply nested files of every format
the registry lists (:func:`mtfleet.formats.formats`), sent to every upload route, get a
4xx with a short reason, or a 2xx where what was sent is a valid file.

The seeds are the real files of ``tests/fixtures/documents/<format>/`` (the smallest of each and
its largest of at most 64 KiB); each is truncated, corrupted in its middle, and given content
nested thousands of levels deep (objects and arrays, markup, ICU plurals, Markdown quotes), as
the whole file and in place of its first translatable word (in an Office file: in the XML part
holding it). What is accepted is downloaded once translated. Each goes to
``POST /v1/documents`` named without an extension (its format sniffed), ``POST /v1/jobs`` with
its format declared, DeepL's ``/v2/document`` and LibreTranslate's ``/translate_file`` with a
name of its format. The fleet: a private redis-server, the API and an Apertium worker (real
Spanish).
"""

from __future__ import annotations

import base64
import io
import re
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mtfleet import formats as documents
from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.formats.base import MESSAGE_CHARS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"
DEPTH = 3_000  # past every format's bound and Python's recursion limit
#: What nests, in several syntaxes: objects and arrays (JSON, YAML flow), markup (XML, HTML,
#: inline tags), ICU plurals, Markdown block quotes.
NESTS = {
    "objects": b'{"a": [' * DEPTH + b'"x"' + b"]}" * DEPTH,
    "markup": b"<b>" * DEPTH + b"x" + b"</b>" * DEPTH,
    "plurals": b"{n, plural, other {" * DEPTH + b"x" + b"}}" * DEPTH,
    "quotes": b"> " * DEPTH + b"x\n",
}
TO_ES = {"source_lang": "en", "target_lang": "es"}


@pytest.fixture(scope="module")
def api() -> Iterator[httpx.Client]:
    env = {
        "MT_AUTH": "off",
        "MT_HEARTBEAT_S": "1",
        "MT_CHECK_LANGUAGE": "false",
        "MT_DOCUMENT_DEADLINE_S": "5",
        "MT_LIBRETRANSLATE_WAIT_S": "0.1",  # an accepted file answers at once
    }
    with LocalFleet(env=env) as f:
        f.start_redis()
        f.start_worker("--engine", "apertium", "--lanes", "interactive,bulk", "--concurrency", "2")
        f.start_api()
        f.wait_ready(90)
        with httpx.Client(base_url=f.api_url, timeout=60) as client:
            yield client


def seeds(fmt: str) -> list[Path]:
    """The format's smallest real file and its largest of at most 64 KiB."""
    files = sorted((FIXTURES / fmt).iterdir(), key=lambda p: p.stat().st_size)
    small = [p for p in files if p.stat().st_size <= 64 * 1024]
    return sorted({files[0], small[-1]})


def in_place_of_text(fmt: documents.DocumentFormat, content: bytes, nest: bytes) -> bytes:
    """``content`` with ``nest`` where its first translatable word was (in an Office file: in
    the text of the XML part that holds it)."""
    words = [w.encode() for u in fmt.extract(content) for w in u.text.split() if w.isalpha()]
    if not words:
        return content + nest
    found = re.compile(
        rb">[^<]*?\b(" + re.escape(words[0]) + rb")\b" if fmt.binary else re.escape(words[0])
    )

    def change(data: bytes) -> bytes:
        m = found.search(data)
        at, end = m.span(m.lastindex or 0) if m else (len(data), len(data))
        return data[:at] + nest + data[end:]

    if not fmt.binary:
        return change(content)
    with zipfile.ZipFile(io.BytesIO(content)) as src:
        infos = src.infolist()
        part = next(i for i in infos if found.search(src.read(i)))
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in infos:
                data = src.read(info)
                dst.writestr(info, change(data) if info is part else data)
    return out.getvalue()


def variants(fmt: documents.DocumentFormat, content: bytes) -> Iterator[tuple[str, bytes]]:
    mid = len(content) // 2
    yield "as it is", content
    yield "truncated", content[:mid]
    yield "corrupted", content[: mid - 8] + b"<{[\"'\\&#\x7f\xff}]>" + content[mid + 8 :]
    for name, nest in NESTS.items():
        yield f"{name} as the file", nest
        yield f"{name} in its text", in_place_of_text(fmt, content, nest)


CASES = [
    pytest.param(fmt.name, id=fmt.name) for fmt in documents.formats()
]  # every format the fleet reads


def reason(resp: httpx.Response) -> str:
    """The reason of a refusal in each surface's dialect (/v1: error.message; DeepL:
    message; LibreTranslate: error)."""
    body = resp.json()
    found = body.get("error", body.get("message"))
    return str(found.get("message") if isinstance(found, dict) else found)


def uploads(
    api: httpx.Client, fmt: documents.DocumentFormat, content: bytes
) -> dict[str, httpx.Response]:
    named = f"file{fmt.extensions[0]}"
    return {
        "/v1/documents": api.post("/v1/documents", files={"file": ("upload", content)}, data=TO_ES),
        "/v1/jobs": api.post(
            "/v1/jobs",
            json={
                "document": {
                    "format": fmt.name,
                    "content": base64.b64encode(content).decode(),
                    "encoding": "base64",
                },
                **TO_ES,
            },
        ),
        "/v2/document": api.post(
            "/v2/document", files={"file": (named, content)}, data={"target_lang": "ES"}
        ),
        "/translate_file": api.post(
            "/libretranslate/translate_file",
            files={"file": (named, content)},
            data={"source": "en", "target": "es"},
        ),
    }


@pytest.mark.parametrize("name", CASES)
def test_bad_documents_of_every_format_get_a_4xx_with_a_reason_on_every_route(
    api: httpx.Client, name: str
) -> None:
    fmt = documents.for_name(name)
    wrong = []
    accepted: dict[str, str] = {}  # job id -> what was sent
    sent: dict[bytes, str] = {}  # each content once (the nested files are the same for both)
    for path in seeds(name):
        for what, content in variants(fmt, path.read_bytes()):
            sent.setdefault(content, f"{path.name} {what}")
    for content, what in sent.items():
        for route, resp in uploads(api, fmt, content).items():
            if resp.status_code >= 500 or (
                resp.status_code >= 400 and not 0 < len(reason(resp)) <= MESSAGE_CHARS + 100
            ):
                wrong.append(f"{what} -> {route}: {resp.status_code} {resp.text[:300]}")
            elif route == "/v1/jobs" and resp.status_code < 300:
                accepted[resp.json()["id"]] = what
    # what was accepted can be downloaded (a file is never taken that could not be rendered)
    for job_id, what in accepted.items():
        deadline = time.monotonic() + 180  # (a saturated machine: every format's jobs at once)
        job = api.get(f"/v1/jobs/{job_id}", params={"wait": 30}).json()
        while job["status"] in ("queued", "running") and time.monotonic() < deadline:
            job = api.get(f"/v1/jobs/{job_id}", params={"wait": 30}).json()
        got = api.get(f"/v1/jobs/{job_id}/document")
        if job["status"] not in ("succeeded", "partial") or got.status_code != 200:
            wrong.append(f"{what} accepted: {job['status']}, download {got.status_code}")
    assert wrong == []
    assert api.get("/healthz").status_code == 200


def test_json_nested_100000_deep_without_a_name_is_a_4xx_naming_the_depth(
    api: httpx.Client,
) -> None:
    deep = b'{"a": ' * 100_000 + b'"x"' + b"}" * 100_000
    answers = uploads(api, documents.for_name("json"), deep)
    answers["/v2/document nameless"] = api.post(
        "/v2/document", files={"file": ("file", deep)}, data={"target_lang": "ES"}
    )
    for route, resp in answers.items():
        assert 400 <= resp.status_code < 500, (route, resp.text[:300])
        assert "more than 64 levels" in reason(resp), (route, resp.text[:300])
