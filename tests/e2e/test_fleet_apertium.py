"""The fleet as a user meets it: separate API, worker and Flower processes, driven through
the ``mtfleet`` CLI and plain HTTP, with real Spanish from Apertium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mtfleet.core import keys
from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.producer.client import JobTimeout, MTClient
from tests.e2e.fleet_control import apertium_fleet, cli

FLOWER_AUTH = ("admin", "e2e-secret")


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    env = {
        "MT_FLOWER_PASSWORD": FLOWER_AUTH[1],
        "MT_CHUNK_SIZE": "32",  # the Flower test counts chunks
    }
    with apertium_fleet(redis_server, env, flower=True) as f:
        yield f


def test_cli_translate_prints_spanish(fleet: LocalFleet) -> None:
    proc = cli(
        fleet, "translate", "The cat is on the table.", "Red shoes", "--from", "en", "--to", "es"
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    assert "gato" in lines[0] and "mesa" in lines[0]
    assert "zapatos" in lines[1].lower()


def test_cli_submit_files_writes_translations_with_same_lines(
    fleet: LocalFleet, tmp_path: Path
) -> None:
    a = tmp_path / "catalogue.txt"
    a.write_text(
        "The red shirt is in the house.\n\nMy sister bought a new table.\r\n   \n"
        "The garden is green.",
        encoding="utf-8",
    )
    b = tmp_path / "ui.txt"
    b.write_text("Proceed to checkout\nAdd to cart\n", encoding="utf-8")
    out = tmp_path / "out"
    proc = cli(fleet, "submit", str(a), str(b), "--to", "es", "--lane", "bulk", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ta = (out / "catalogue.es.txt").read_bytes().decode("utf-8")
    tb = (out / "ui.es.txt").read_bytes().decode("utf-8")
    assert ta.count("\n") == 4 and "\r\n   \n" in ta and not ta.endswith("\n")
    assert "camisa" in ta and "casa" in ta and "jardín" in ta
    assert tb.endswith("\n") and len(tb.splitlines()) == 2 and "carro" in tb

    job_ids = proc.stdout.split()  # stdout: the job ids alone, one per line
    assert len(job_ids) == 2 and all(f"job {j}" in proc.stderr for j in job_ids)
    status = cli(fleet, "status", job_ids[0])
    assert json.loads(status.stdout)["status"] == "succeeded"
    result = cli(fleet, "result", job_ids[1])
    assert json.loads(result.stdout)["translations"] == tb.splitlines()


def test_500_segments_as_jobs_on_both_lanes_all_back_in_order(fleet: LocalFleet) -> None:
    """Three jobs of 100 segments asked for on the bulk lane and four of 50 (the most an
    interactive job carries: MT_INTERACTIVE_MAX_SEGMENTS) on the interactive one, interleaved."""
    jobs = []
    sizes = [50, 100, 50, 100, 50, 100, 50]
    with MTClient(fleet.api_url) as mt:
        for j, n in enumerate(sizes):
            texts = [f"The house number {j * 100 + i} is big." for i in range(n)]
            lane = "interactive" if n == 50 else "bulk"
            jobs.append((mt.submit(texts, source="en", target="es", lane=lane), j))
        for job, j in jobs:
            n = sizes[j]
            done = mt.wait(job.id, timeout=120)
            assert done.status.value == "succeeded", done
            assert (done.progress.done, done.progress.failed, done.progress.total) == (n, 0, n)
            assert done.lane.value == ("interactive" if n == 50 else "bulk")
            result = mt.result(job.id)
            assert len(result.translations) == n and not result.errors
            for i, t in enumerate(result.translations):
                assert t is not None and "casa" in t
                assert re.findall(r"\d+", t) == [str(j * 100 + i)]


@pytest.mark.parametrize("text", ["Hello", "Sale", "Add to cart"])
def test_a_short_string_is_detected_among_the_languages_served(
    fleet: LocalFleet, text: str
) -> None:
    """On an en<->es fleet, "Hello" looks Italian to a detector on its own: it goes to the
    source the fleet serves into es (English), never to "no pool serves it->es"."""
    proc = cli(fleet, "translate", text, "--to", "es")  # --from auto, the CLI's default
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip()
    # the first time (no phrase-cache answer): detected, and said so with the confidence
    assert re.search(r"detected en \(confidence 0\.\d\d, among the languages", proc.stderr)
    resp = httpx.post(
        f"{fleet.api_url}/v1/translate", json={"texts": [text], "target_lang": "es"}, timeout=30
    )  # no source_lang: auto, as the CLI
    assert resp.status_code == 200, resp.text
    body = resp.json()
    if body["id"] is not None:  # (the phrase cache answers a repeat without a job)
        assert body["detected_source_lang"] == "en"
        assert 0 <= body["detected_confidence"] < 0.5  # a few words: not clear


def test_a_text_clearly_in_a_language_no_pool_serves_is_refused_saying_so(
    fleet: LocalFleet,
) -> None:
    italian = "Ciao, come stai oggi? Tutto bene, grazie mille per la pazienza."
    resp = httpx.post(
        f"{fleet.api_url}/v1/translate", json={"texts": [italian], "target_lang": "es"}, timeout=30
    )
    assert resp.status_code == 422, resp.text
    error = resp.json()["error"]
    assert error["detected"] == "it" and error["confidence"] > 0.5 and error["served"] == ["en"]
    assert "Italian" in error["message"] and "into es from: en" in error["message"]


def test_sync_translate_over_http_and_cache(fleet: LocalFleet) -> None:
    body = {
        "texts": ["Only 3 left in stock.", "Free shipping"],
        "source_lang": "en",
        "target_lang": "es",
    }
    first = httpx.post(f"{fleet.api_url}/v1/translate", json=body, timeout=30)
    assert first.status_code == 200
    assert first.json()["cached"] == 0 and all(first.json()["translations"])
    again = httpx.post(f"{fleet.api_url}/v1/translate", json=body, timeout=30)
    assert again.status_code == 200
    assert again.json()["cached"] == 2
    assert again.json()["translations"] == first.json()["translations"]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"texts": [], "source_lang": "en", "target_lang": "es"}, "at least 1"),
        ({"texts": ["hi"], "source_lang": "xx", "target_lang": "es"}, "supported codes"),
        ({"texts": ["hi"], "source_lang": "en", "target_lang": "en"}, "both"),
        ({"texts": ["   "], "source_lang": "en", "target_lang": "es"}, "whitespace"),
        ({"texts": "hi", "source_lang": "en", "target_lang": "es"}, "list"),
    ],
)
def test_bad_input_is_a_clear_422(fleet: LocalFleet, body: dict, needle: str) -> None:  # type: ignore[type-arg]
    resp = httpx.post(f"{fleet.api_url}/v1/jobs", json=body, timeout=10)
    assert resp.status_code == 422
    assert needle in resp.json()["error"]["message"]


def test_unknown_job_is_404_and_unfinished_result_409(fleet: LocalFleet) -> None:
    assert httpx.get(f"{fleet.api_url}/v1/jobs/nope").status_code == 404
    assert httpx.get(f"{fleet.api_url}/v1/jobs/nope/result").status_code == 404


def test_flower_sees_the_worker_and_every_chunk(fleet: LocalFleet) -> None:
    assert httpx.get(f"{fleet.flower_url}/api/workers", timeout=10).status_code == 401
    with MTClient(fleet.api_url) as mt:
        job = mt.submit(
            [f"The window {i} is open." for i in range(70)], source="en", target="es", lane="bulk"
        )
        mt.wait(job.id, timeout=60)
    deadline = time.monotonic() + 30
    while True:
        workers = httpx.get(
            f"{fleet.flower_url}/api/workers?refresh=1", auth=FLOWER_AUTH, timeout=10
        ).json()  # refresh: Flower may have started before the worker answered its first inspect
        tasks = httpx.get(f"{fleet.flower_url}/api/tasks", auth=FLOWER_AUTH, timeout=10).json()
        mine = [
            t
            for t in tasks.values()
            if t["name"] == keys.TRANSLATE_TASK and job.id in (t.get("args") or "")
        ]
        if len(mine) == 3 and all(t["state"] == "SUCCESS" for t in mine):  # 70 in chunks of 32
            break
        assert time.monotonic() < deadline, (list(workers), mine)
        time.sleep(0.5)
    # the default worker of a CPU engine: a Celery worker per lane (MT_PROCESS_PER_LANE=auto)
    assert {name.split("@")[0] for name in workers} >= {"cpu-interactive", "cpu-bulk"}
    assert all(t["runtime"] is not None and t["worker"].startswith("cpu-bulk@") for t in mine)
    # Customer text stays out of Flower: args show a summary only.
    assert all("window" not in (t.get("args") or "") for t in mine)


def test_async_client_submit_wait_result(fleet: LocalFleet) -> None:
    import asyncio

    from mtfleet.producer.client import AsyncMTClient

    async def run() -> tuple[list[str | None], list[str | None]]:
        async with AsyncMTClient(fleet.api_url) as mt:
            quick = await mt.translate(["The green chair."], source="en", target="es")
            job = await mt.submit(["The old book.", "The new watch."], source="en", target="es")
            await mt.wait(job.id, timeout=60)
            return quick, (await mt.result(job.id)).translations

    quick, batch = asyncio.run(run())
    assert quick[0] is not None and "silla" in quick[0]
    assert batch[0] is not None and "libro" in batch[0]
    assert batch[1] is not None and "reloj" in batch[1]


def test_cli_languages_and_cancel(fleet: LocalFleet) -> None:
    langs = cli(fleet, "languages")
    assert langs.returncode == 0 and "en->es\tapertium\tapertium\tlive" in langs.stdout
    missing = cli(fleet, "cancel", "0" * 32)
    assert missing.returncode == 1 and "404" in missing.stderr


def test_jobs_wait_when_the_fleet_scales_to_zero(fleet: LocalFleet) -> None:
    """Pairs are remembered after the last worker stops; jobs queue and finish on restart."""
    worker = next(p for p in fleet.procs if p.name == "worker")
    worker.popen.terminate()
    worker.popen.wait(30)
    deadline = time.monotonic() + 20
    while httpx.get(f"{fleet.api_url}/readyz").status_code != 503:
        assert time.monotonic() < deadline
        time.sleep(0.3)
    pairs = httpx.get(f"{fleet.api_url}/v1/languages").json()["pairs"]
    assert {
        "source": "en",
        "target": "es",
        "pool": "apertium",
        "engine": "apertium",
        "model": "apertium",
        "live": False,
        "routed": True,
    } in pairs
    with MTClient(fleet.api_url) as mt:
        with pytest.raises(JobTimeout) as waited:
            mt.translate(["The white bag."], source="en", target="es", timeout=1.5)
        assert mt.get(waited.value.job_id).status.value == "queued"
        job = mt.submit(["The blue lamp is on the chair."], source="en", target="es")
        assert job.status.value == "queued"
        time.sleep(1.0)
        assert mt.get(job.id).status.value == "queued"
        fleet.start_worker("--engine", "apertium", name="worker-2")
        done = mt.wait(job.id, timeout=60)
        assert done.status.value == "succeeded"
        assert "lámpara" in (mt.result(job.id).translations[0] or "")


def test_swagger_ui_renders_offline_in_a_real_browser(fleet: LocalFleet) -> None:
    """/docs needs nothing from the internet: every asset is the package's own, and headless
    Chromium, with every host but 127.0.0.1 unresolvable, renders the API's operations."""
    page = httpx.get(f"{fleet.api_url}/docs", timeout=10)
    assert page.status_code == 200
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert assets and all(a.startswith("/static/swagger-ui/") for a in assets), assets
    for asset in assets:
        assert httpx.get(f"{fleet.api_url}{asset}", timeout=10).status_code == 200, asset
    browser = shutil.which("chromium")
    assert browser, "chromium is missing: `make test` installs it (Debian's chromium)"
    dom = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--virtual-time-budget=10000",
            "--dump-dom",
            f"{fleet.api_url}/docs",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    for operation in ("/v1/translate", "/v1/jobs/{job_id}", "/v1/limits"):
        assert operation in dom, dom[-2000:]
