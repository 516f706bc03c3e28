"""The pages as people meet them, in headless Chromium (Debian's, driven by Playwright), on a real
fleet: the API with API keys required, an Apertium worker serving its metrics, Flower behind
its password. Also: every metric the Grafana dashboard and the alert rules name is exported.

Screenshots go to ``$MT_SCREENSHOTS`` (default ``/tmp/mtfleet-screenshots``), outside the
repository: translator-text.png, translator-documents.png, translator-phone.png, ops-bulk.png,
ops-phone.png, flower-workers.png, flower-tasks.png.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from docx import Document
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Page,
    Playwright,
    expect,
    sync_playwright,
)
from playwright.sync_api import Error as PlaywrightError

from mtfleet import formats as documents
from mtfleet.core import keys
from mtfleet.core.apikeys import parse_token
from mtfleet.core.registry import Registry
from mtfleet.fleet.localfleet import LocalFleet, free_port
from tests.conftest import ROOT
from tests.deployfiles import alert_exprs, dashboard_exprs, metric_names
from tests.e2e.fleet_control import apertium_fleet, cli
from tests.e2e.test_documents_apertium import CATALOGUE, assert_line_for_line
from tests.support import free_port_run

FLOWER_AUTH = ("admin", "pages-e2e-secret")
SHOTS = Path(os.environ.get("MT_SCREENSHOTS", "/tmp/mtfleet-screenshots"))
DOCX = ROOT / "tests" / "fixtures" / "documents" / "docx" / "product_sheet.docx"
#: Chromium as this machine has it (Debian's package); Playwright's own builds are never
#: downloaded. Without the network flags it stalls on a machine without internet.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    api_metrics = free_port()
    env = {
        "MT_AUTH": "required",
        "MT_FLOWER_PASSWORD": FLOWER_AUTH[1],
        "MT_CHUNK_SIZE": "16",  # a document's progress moves in steps a page can see
        # the worker's two lane processes serve on this port and the next
        "MT_WORKER_METRICS_PORT": str(free_port_run(2, avoid={api_metrics})),
        "MT_API_METRICS_PORT": str(api_metrics),  # what Prometheus scrapes (no key)
    }
    with apertium_fleet(redis_server, env, flower=True) as f:
        wait_flower_listening(f.flower_url)
        f.env["USER_KEY"] = f.create_api_key("content-team")
        f.env["OPERATOR_KEY"] = f.create_api_key("ops", role="operator")
        yield f


def wait_flower_listening(flower: str) -> None:
    """Until Flower has seen a worker heartbeat: from then on it receives every task event."""
    deadline = time.monotonic() + 30
    while not any(
        httpx.get(f"{flower}/api/workers?status=1", auth=FLOWER_AUTH, timeout=10).json().values()
    ):
        assert time.monotonic() < deadline, "Flower never saw a worker heartbeat"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    SHOTS.mkdir(parents=True, exist_ok=True)
    pw: Playwright
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Console:
    """Every console error and uncaught exception of a page."""

    def __init__(self, page: Page) -> None:
        self.errors: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(30_000)
    yield ctx
    ctx.close()


def open_page(context: BrowserContext, url: str) -> tuple[Page, Console]:
    page = context.new_page()
    console = Console(page)
    page.goto(url)
    return page, console


def sign_in(page: Page, key: str) -> None:
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#app")).to_be_visible()


def test_translator_translates_text_through_its_labelled_controls(
    fleet: LocalFleet, context: BrowserContext
) -> None:
    page, console = open_page(context, f"{fleet.api_url}/")
    expect(page.get_by_label("API key")).to_be_focused()
    sign_in(page, fleet.env["USER_KEY"])
    page.get_by_label("Source language").select_option("en")
    page.get_by_label("Target language").select_option("es")
    expect(page.get_by_label("Glossary")).to_have_value("")
    page.get_by_label("Text to translate").fill("The cat is on the table.\n\nRed shoes")
    page.get_by_role("button", name="Translate").click()
    result = page.get_by_role("region", name="Translation")
    expect(result).to_contain_text("gato")
    text = result.locator(".translated").inner_text()
    lines = text.split("\n")
    assert (
        len(lines) == 3 and "mesa" in lines[0] and lines[1] == "" and "zapatos" in lines[2].lower()
    )
    # keyboard: the text, then Translate, reached with Tab and pressed with Enter
    page.get_by_label("Text to translate").fill("The house is green.")
    page.get_by_label("Text to translate").focus()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Translate")).to_be_focused()
    page.keyboard.press("Enter")
    expect(result).to_contain_text("casa")
    page.screenshot(path=str(SHOTS / "translator-text.png"), full_page=True)
    assert page.evaluate("sessionStorage.length") == 1
    assert page.evaluate("document.cookie") == ""
    assert console.errors == []


@contextlib.contextmanager
def speaking(browser: Browser, locale: str) -> Iterator[BrowserContext]:
    """A browser whose language is ``locale`` (``navigator.languages``, ``Accept-Language``)."""
    ctx = browser.new_context(locale=locale, viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(30_000)
    try:
        yield ctx
    finally:
        ctx.close()


def test_translator_targets_the_browsers_language_by_default(
    fleet: LocalFleet, browser: Browser
) -> None:
    with speaking(browser, "es-ES") as ctx:
        page, console = open_page(ctx, f"{fleet.api_url}/")
        sign_in(page, fleet.env["USER_KEY"])
        expect(page.get_by_label("Source language")).to_have_value("auto")  # left as it is
        page.get_by_label("Text to translate").fill("The cat is on the table.")
        page.get_by_role("button", name="Translate").click()
        result = page.get_by_role("region", name="Translation")
        expect(result).to_contain_text("gato", timeout=30_000)
        expect(result.locator(".error")).to_have_count(0)
        expect(page.get_by_label("Target language")).to_have_value("es")
        assert console.errors == []


def test_translator_remembers_the_chosen_languages_after_a_reload(
    fleet: LocalFleet, browser: Browser
) -> None:
    key = fleet.env["USER_KEY"]
    with speaking(browser, "ca-ES") as ctx:  # a choice wins over the browser's Catalan
        page, console = open_page(ctx, f"{fleet.api_url}/")
        sign_in(page, key)
        page.get_by_label("Source language").select_option("en")
        page.get_by_label("Target language").select_option("es")
        page.reload()
        expect(page.locator("#app")).to_be_visible()  # the key is still in the tab's session
        expect(page.get_by_label("Source language")).to_have_value("en")
        expect(page.get_by_label("Target language")).to_have_value("es")
        # a new tab: signed in again (the key stays in its own tab), the same choice
        again, console_again = open_page(ctx, f"{fleet.api_url}/")
        sign_in(again, key)
        expect(again.get_by_label("Source language")).to_have_value("en")
        expect(again.get_by_label("Target language")).to_have_value("es")
        again.get_by_label("Text to translate").fill("The cat is on the table.")
        again.get_by_role("button", name="Translate").click()
        translation = again.get_by_role("region", name="Translation")
        expect(translation).to_contain_text("gato", timeout=30_000)
        assert key not in again.evaluate("JSON.stringify(localStorage)")  # never the key
        assert console.errors == console_again.errors == []


def test_choosing_the_target_as_source_moves_the_target_to_the_next_sensible_one(
    fleet: LocalFleet, browser: Browser
) -> None:
    with speaking(browser, "es-ES") as ctx:
        page, console = open_page(ctx, f"{fleet.api_url}/")
        sign_in(page, fleet.env["USER_KEY"])
        source = page.get_by_label("Source language")
        target = page.get_by_label("Target language")
        target.select_option("en")
        source.select_option("en")  # the text turns out to be English after all
        expect(target).not_to_have_value("en")
        expect(target).to_have_value("es")  # the browser's language, not the first in the list
        page.get_by_label("Text to translate").fill("The cat is on the table.")
        page.get_by_role("button", name="Translate").click()
        translation = page.get_by_role("region", name="Translation")
        expect(translation).to_contain_text("gato", timeout=30_000)
        assert console.errors == []


def catalogue_docx(path: Path, paragraphs: int) -> Path:
    doc = Document()
    doc.add_heading("Spring catalogue", level=1)
    for i in range(paragraphs):
        doc.add_paragraph(f"The red shirt number {i} is in the house. My sister bought a table.")
    doc.save(str(path))
    return path


def docx_text(path: Path) -> str:
    return "\n".join(p.text for p in Document(str(path)).paragraphs)


def test_documents_upload_show_progress_and_download_in_their_format(
    fleet: LocalFleet, context: BrowserContext, tmp_path: Path
) -> None:
    page, console = open_page(context, f"{fleet.api_url}/")
    requests: list[str] = []
    page.on("request", lambda r: requests.append(f"{r.method} {r.url}"))
    sign_in(page, fleet.env["USER_KEY"])
    page.get_by_label("Source language").select_option("en")
    page.get_by_label("Target language").select_option("es")
    # every state text each upload shows, as it changes
    page.evaluate(
        """() => { window.__states = [];
        new MutationObserver(() => document.querySelectorAll('#uploads .state')
          .forEach((s) => window.__states.push(s.textContent)))
        .observe(document.getElementById('uploads'), {subtree: true, childList: true,
                                                      characterData: true}); }"""
    )
    big = catalogue_docx(tmp_path / "catalogue.docx", 60)
    page.get_by_label("Upload documents").set_input_files([str(DOCX), str(big)])
    uploads = page.get_by_role("list", name="Documents being translated")
    for name in ("product_sheet.docx", "catalogue.docx"):
        expect(uploads.get_by_role("button", name=f"Download {name}")).to_be_visible(
            timeout=120_000
        )
        bar = page.get_by_label(f"Progress of {name}")
        assert bar.evaluate("b => b.value === b.max && b.max > 1")
    states: list[str] = page.evaluate("window.__states")
    assert any(re.match(r"(queued|running): \d+ of \d+", s) for s in states), states
    assert any(s.startswith("succeeded:") for s in states), states
    # progress came from each job's event stream, not from polling the job
    streams = [u for u in requests if re.search(r"GET .*/v1/jobs/[0-9a-f]+/events$", u)]
    polls = [u for u in requests if re.search(r"GET .*/v1/jobs/[0-9a-f]+$", u)]
    assert len(streams) >= 2 and polls == [], requests
    page.screenshot(path=str(SHOTS / "translator-documents.png"), full_page=True)

    for name, check in (
        ("catalogue.docx", "mi hermana compró una mesa"),
        ("product_sheet.docx", ""),
    ):
        with page.expect_download() as info:
            uploads.get_by_role("button", name=f"Download {name}").click()
        saved = tmp_path / f"out-{name}"
        info.value.save_as(saved)
        assert info.value.suggested_filename.endswith(".docx")
        translated = docx_text(saved)  # python-docx opens it: a DOCX again
        assert check in translated.lower()
        assert translated != docx_text(DOCX if name == "product_sheet.docx" else big)
    # both are in the key's recent jobs, each with its download
    recent = page.get_by_role("region", name="Recent jobs")
    for name in ("product_sheet.docx", "catalogue.docx"):
        expect(recent.get_by_role("button", name=f"Download {name}")).to_be_visible()
    assert console.errors == []


def test_the_documents_hint_names_every_format_and_a_text_file_comes_back_line_for_line(
    fleet: LocalFleet, context: BrowserContext, tmp_path: Path
) -> None:
    page, console = open_page(context, f"{fleet.api_url}/")
    sign_in(page, fleet.env["USER_KEY"])
    hint = page.locator("#drop .hint").inner_text()
    for fmt in documents.formats():  # the registry's formats, each with its extensions
        assert f"{fmt.name} ({', '.join(fmt.extensions)})" in hint, (fmt.name, hint)
    page.get_by_label("Source language").select_option("en")
    page.get_by_label("Target language").select_option("es")
    source = tmp_path / "catalogue.txt"
    source.write_bytes(CATALOGUE)
    page.get_by_label("Upload documents").set_input_files(str(source))
    uploads = page.get_by_role("list", name="Documents being translated")
    download = uploads.get_by_role("button", name="Download catalogue.txt")
    expect(download).to_be_visible(timeout=120_000)
    with page.expect_download() as info:
        download.click()
    saved = tmp_path / "out.txt"
    info.value.save_as(saved)
    key = {"Authorization": f"Bearer {fleet.env['USER_KEY']}"}
    with httpx.Client(base_url=fleet.api_url, headers=key, timeout=60) as api:
        assert_line_for_line(api, CATALOGUE, saved.read_bytes())
    assert console.errors == []


def test_a_document_can_be_cancelled_from_the_page(
    fleet: LocalFleet, context: BrowserContext, tmp_path: Path
) -> None:
    page, console = open_page(context, f"{fleet.api_url}/")
    sign_in(page, fleet.env["USER_KEY"])
    page.get_by_label("Source language").select_option("en")
    page.get_by_label("Target language").select_option("es")
    big = catalogue_docx(tmp_path / "long.docx", 1500)
    page.get_by_label("Upload documents").set_input_files(str(big))
    page.get_by_role("button", name="Cancel long.docx").click()
    row = page.locator("#uploads li", has_text="long.docx")
    expect(row.locator(".state")).to_contain_text("cancelled", timeout=60_000)
    expect(row.get_by_role("button", name="Download long.docx")).to_have_count(0)
    assert console.errors == []


def test_pages_read_well_on_a_phone(fleet: LocalFleet, browser: Browser) -> None:
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    try:
        for path, key, shot in (
            ("/", fleet.env["USER_KEY"], "translator-phone.png"),
            ("/ops", fleet.env["OPERATOR_KEY"], "ops-phone.png"),
        ):
            page, console = open_page(ctx, f"{fleet.api_url}{path}")
            sign_in(page, key)
            page.wait_for_load_state("networkidle")
            # nothing wider than the screen but the tables, which scroll inside their box
            assert page.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
            ) == [390, 390]
            page.screenshot(path=str(SHOTS / shot), full_page=True)
            assert console.errors == []
    finally:
        ctx.close()


def test_ops_panel_shows_the_live_worker_and_moving_throughput_during_a_bulk_job(
    fleet: LocalFleet, context: BrowserContext
) -> None:
    page, console = open_page(context, f"{fleet.api_url}/ops")
    sign_in(page, fleet.env["OPERATOR_KEY"])
    # the Apertium worker at its defaults: a process per lane, each a worker of its own
    workers = page.locator("#workers tbody tr")
    expect(workers).to_have_count(2)
    for lane in ("interactive", "bulk"):
        row = workers.filter(has_text=f"-{lane}")
        expect(row).to_have_count(1)
        expect(row).to_contain_text("apertium")
        expect(row).to_contain_text("no GPU")
        expect(row).to_contain_text("serving")

    texts = [f"The blue lamp number {i} is on the chair." for i in range(3000)]
    headers = {"Authorization": f"Bearer {fleet.env['USER_KEY']}"}
    made = httpx.post(
        f"{fleet.api_url}/v1/jobs",
        json={"texts": texts, "source_lang": "en", "target_lang": "es", "lane": "bulk"},
        headers=headers,
        timeout=30,
    )
    assert made.status_code == 202, made.text
    tile = page.locator("#tile-throughput")
    seen: set[float] = set()
    deadline = time.monotonic() + 120
    while len({v for v in seen if v > 0}) < 2:  # two different non-zero figures: it moves
        assert time.monotonic() < deadline, f"throughput never moved: {seen}"
        text = tile.inner_text()
        if text != "–":
            seen.add(float(text))
        page.wait_for_timeout(500)
    bulk = page.locator("#lanes tbody tr", has_text="bulk")
    expect(bulk).to_contain_text("apertium")
    assert page.locator("#chart-throughput polyline").count() >= 1
    page.screenshot(path=str(SHOTS / "ops-bulk.png"), full_page=True)
    job = made.json()["id"]  # seen moving: the rest is not needed
    httpx.delete(f"{fleet.api_url}/v1/jobs/{job}?purge=true", headers=headers, timeout=30)
    assert console.errors == []


def test_ops_panel_flags_the_lanes_of_a_pool_whose_workers_are_gone(
    fleet: LocalFleet, context: BrowserContext
) -> None:
    # a pool the registry still knows (its hosts retired, say) and no worker of it is alive
    assert fleet.redis_url is not None
    r = redis.Redis.from_url(fleet.redis_url)
    registry = Registry(r)
    gone = registry.pools()["apertium"].model_copy(update={"name": "retired", "live_until": 0.0})
    r.hset(keys.POOLS, "retired", gone.model_dump_json())
    try:
        page, console = open_page(context, f"{fleet.api_url}/ops")
        sign_in(page, fleet.env["OPERATOR_KEY"])
        retired = page.locator("#lanes tbody tr", has_text="retired")
        expect(retired).to_have_count(2)  # its interactive and bulk lanes
        for row in retired.all():
            expect(row.locator("td.alarm")).to_have_text("no live worker")
        live = page.locator("#lanes tbody tr", has_text="apertium")
        expect(live.first).not_to_contain_text("no live worker")
        assert console.errors == []
    finally:
        registry.forget_pool("retired")


def test_ops_panel_stops_polling_once_its_key_is_revoked(
    fleet: LocalFleet, context: BrowserContext
) -> None:
    token = fleet.create_api_key("ops-to-revoke", role="operator")
    page, _ = open_page(context, f"{fleet.api_url}/ops")
    sign_in(page, token)
    updated = page.locator("#updated")
    expect(updated).to_contain_text("Updated")
    key_id = parse_token(token)[0]  # type: ignore[index]
    revoked = cli(fleet, "keys", "revoke", key_id)  # the operator's own command
    assert revoked.returncode == 0, revoked.stderr
    expect(updated).to_contain_text("Stopped: ", timeout=20_000)
    expect(updated).to_contain_text("sign in with an operator's key")
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/v1/ops" in r.url else None)
    page.wait_for_timeout(3 * 2000)  # three of its polling periods
    assert asked == []


def test_flower_shows_the_worker_and_its_succeeded_chunks_behind_its_password(
    fleet: LocalFleet, browser: Browser
) -> None:
    # chunks for Flower to list (it keeps the task events it received since it started)
    with httpx.Client(base_url=fleet.api_url, timeout=60) as http:
        headers = {"Authorization": f"Bearer {fleet.env['USER_KEY']}"}
        job = http.post(
            "/v1/jobs",
            json={
                "texts": [f"The dog {i} runs." for i in range(40)],
                "source_lang": "en",
                "target_lang": "es",
                "lane": "bulk",
            },
            headers=headers,
        ).json()["id"]
        assert http.get(f"/v1/jobs/{job}?wait=60", headers=headers).json()["status"] == "succeeded"

    anonymous = browser.new_context()
    try:
        # Chromium ends a navigation answered 401 without credentials with an error page
        with pytest.raises(PlaywrightError, match="ERR_INVALID_AUTH_CREDENTIALS"):
            anonymous.new_page().goto(f"{fleet.flower_url}/workers")
        assert anonymous.request.get(f"{fleet.flower_url}/workers").status == 401
    finally:
        anonymous.close()
    assert httpx.get(f"{fleet.flower_url}/tasks", timeout=10).status_code == 401

    ctx = browser.new_context(
        http_credentials={"username": FLOWER_AUTH[0], "password": FLOWER_AUTH[1]},
        viewport={"width": 1280, "height": 900},
    )
    try:
        page = ctx.new_page()
        page.goto(f"{fleet.flower_url}/workers")
        workers = page.locator("#workers-table tbody tr")
        expect(workers.first).to_contain_text("cpu-", timeout=30_000)  # a worker per lane
        expect(workers.first).to_contain_text("Online")
        page.screenshot(path=str(SHOTS / "flower-workers.png"), full_page=True)
        page.goto(f"{fleet.flower_url}/tasks")
        # this job's chunk (its task id starts with the job's id): another test's bulk chunk
        # may still run, and the table lists the newest first
        rows = page.locator("#tasks-table tbody tr", has_text=job)
        expect(rows.first).to_contain_text("mtfleet.translate_chunk", timeout=30_000)
        expect(rows.first).to_contain_text("SUCCESS", timeout=30_000)
        text = rows.first.inner_text()
        assert re.search(r"\b\d+(\.\d+)? (ms|s)\b", text), text  # its runtime
        assert re.search(r"\bcpu-(bulk|interactive)@", text), text  # the lane's worker that ran it
        page.screenshot(path=str(SHOTS / "flower-tasks.png"), full_page=True)
    finally:
        ctx.close()


def scraped_names(url: str, auth: Any = None) -> set[str]:
    text = httpx.get(url, auth=auth, timeout=10).text
    return {
        line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and line[0] != "#"
    }


def test_every_metric_the_dashboard_and_alerts_name_is_exported(fleet: LocalFleet) -> None:
    headers = {"Authorization": f"Bearer {fleet.env['USER_KEY']}"}
    with httpx.Client(base_url=fleet.api_url, timeout=60, headers=headers) as http:
        # an interactive and a bulk job, so every lane's latency has been observed
        assert (
            http.post(
                "/v1/translate",
                json={"texts": ["The white bag."], "source_lang": "en", "target_lang": "es"},
            ).status_code
            == 200
        )
        bulk = http.post(
            "/v1/jobs",
            json={
                "texts": ["A small black bag."],
                "source_lang": "en",
                "target_lang": "es",
                "lane": "bulk",
            },
        ).json()["id"]
        assert http.get(f"/v1/jobs/{bulk}?wait=60").json()["status"] == "succeeded"
    exported = (
        scraped_names(f"http://127.0.0.1:{fleet.env['MT_API_METRICS_PORT']}/metrics")
        | scraped_names(f"http://127.0.0.1:{fleet.env['MT_WORKER_METRICS_PORT']}/metrics")
        | scraped_names(f"{fleet.flower_url}/metrics")
    )
    used = metric_names(dashboard_exprs()) | metric_names(alert_exprs())
    assert len(used) >= 20
    assert used <= exported, sorted(used - exported)
