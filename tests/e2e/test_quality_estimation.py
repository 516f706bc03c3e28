"""Quality estimation per segment on a real fleet: two Apertium pools (English to Spanish), one
whose worker loads the tiny MetricX-style model ``make test`` generates (MT_QE_MODEL, read by
the production code, :mod:`mtfleet.workers.quality`) and one without. A request asking for
``quality_estimation`` gets a score per translated segment on every surface (``/v1/translate``,
a job's result, a document job, the SDK, the CLI), a ``low_quality`` warning above the pool's
threshold, and a PO and an XLIFF download mark those segments for review; a pool without the
model refuses the request with the setting it lacks.

The expected scores are the same model's, loaded here with the same code: the tiny model's
weights are random, so what it scores is meaningless, but which segments are flagged is
then known exactly (the fixtures mix segments it scores 0 and 25)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import polib
import pytest
import redis
from lxml import etree
from playwright.sync_api import expect, sync_playwright

from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.producer.client import MTClient
from mtfleet.workers.quality import QualityEstimator
from tests.conftest import metricx_calibration, tiny_seq2seq
from tests.e2e.fleet_control import cli
from tests.e2e.test_pages import CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.slow]

THRESHOLD = 12.5
#: Apertium's translations of these score 0 or 25 on the tiny model (some of each).
TEXTS = ["Add to cart", "The dog sleeps in the garden.", "Cancel", "The cat is black.", "Delete"]

PO = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

#: shop.py:1
msgid "Add to cart"
msgstr ""

#. the garden page
#: shop.py:2
msgid "The dog sleeps in the garden."
msgstr ""

#: shop.py:3
#, c-format
msgid "Delete"
msgstr ""

msgid "The cat is black."
msgstr ""
"""

XLIFF = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file source-language="en" datatype="plaintext" original="shop">
    <body>
      <trans-unit id="1"><source>Add to cart</source></trans-unit>
      <trans-unit id="2"><source>The dog sleeps in the garden.</source></trans-unit>
      <trans-unit id="3"><source>Cancel</source></trans-unit>
    </body>
  </file>
</xliff>
"""


@pytest.fixture(scope="module")
def scorer() -> QualityEstimator:
    estimator = QualityEstimator(tiny_seq2seq("metricx"))
    estimator.load()
    return estimator


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    redis.Redis.from_url(redis_server).flushdb()
    env = {
        "MT_HEARTBEAT_S": "1",
        "MT_AUTH": "off",
        "MT_PROCESS_PER_LANE": "false",
        "MT_ROUTES": "en-es=scored",  # (both pools serve it; plain is first by name)
    }
    with LocalFleet(redis_url=redis_server, env=env) as f:
        f.start_redis()
        f.start_worker(
            *("--engine", "apertium", "--pool", "scored", "--qe-model", tiny_seq2seq("metricx")),
            name="w-scored",
            env={"MT_QE_THRESHOLD": str(THRESHOLD)},
        )
        f.start_worker("--engine", "apertium", "--pool", "plain", name="w-plain")
        f.start_api()
        f.wait_ready(180, pool="scored")
        f.wait_ready(180, pool="plain")
        yield f


def expected(scorer: QualityEstimator, sources: list[str], targets: list[str]) -> list[float]:
    return scorer.score(list(zip(sources, targets, strict=True)))


def check_scores(body: dict, sources: list[str], scorer: QualityEstimator) -> list[bool]:
    """Every translated segment has its score, the model's for its (source, translation), and a
    low_quality warning exactly when it is above the threshold; returns which are flagged."""
    translations = body["translations"]
    assert all(t for t in translations), body
    want = expected(scorer, sources, translations)
    got = {q["index"]: q for q in body["quality"]}
    assert sorted(got) == list(range(len(sources))), body["quality"]
    low = {w["index"] for w in body["warnings"] if w["type"] == "low_quality"}
    flags = []
    for i, score in enumerate(want):
        assert got[i]["score"] == pytest.approx(score, abs=0.01)
        assert 0 <= got[i]["score"] <= 25
        flagged = score > THRESHOLD
        assert got[i]["low_quality"] is flagged and (i in low) is flagged
        flags.append(flagged)
    return flags


def test_translate_scores_each_segment_and_flags_the_low_ones(
    fleet: LocalFleet, scorer: QualityEstimator
) -> None:
    body = {"texts": TEXTS, "source_lang": "en", "target_lang": "es", "pool": "scored"}
    got = httpx.post(
        f"{fleet.api_url}/v1/translate", json={**body, "quality_estimation": True}, timeout=60
    )
    assert got.status_code == 200, got.text
    flags = check_scores(got.json(), TEXTS, scorer)
    assert any(flags) and not all(flags), "the fixture should have segments of each kind"
    # asked again: the phrase cache holds every text now, and still each is scored
    again = httpx.post(
        f"{fleet.api_url}/v1/translate", json={**body, "quality_estimation": True}, timeout=60
    )
    assert again.status_code == 200, again.text
    assert check_scores(again.json(), TEXTS, scorer) == flags
    # not asked: no scores, no warnings of it
    plain = httpx.post(f"{fleet.api_url}/v1/translate", json=body, timeout=60)
    assert plain.status_code == 200, plain.text
    assert plain.json()["quality"] == []
    assert not [w for w in plain.json()["warnings"] if w["type"] == "low_quality"]


def test_a_job_result_carries_the_scores(fleet: LocalFleet, scorer: QualityEstimator) -> None:
    client = MTClient(fleet.api_url)
    job = client.submit(
        TEXTS, source="en", target="es", pool="scored", lane="bulk", quality_estimation=True
    )
    assert client.wait(job.id, timeout=60).status == "succeeded"
    result = client.result(job.id)
    flags = check_scores(result.model_dump(mode="json"), TEXTS, scorer)
    assert [q.low_quality for q in result.quality] == flags


def test_a_pool_without_the_model_refuses_with_what_it_lacks(fleet: LocalFleet) -> None:
    body = {"texts": TEXTS, "source_lang": "en", "target_lang": "es", "pool": "plain"}
    for path in ("/v1/translate", "/v1/jobs"):
        got = httpx.post(
            f"{fleet.api_url}{path}", json={**body, "quality_estimation": True}, timeout=60
        )
        assert got.status_code == 422, got.text
        message = got.json()["error"]["message"]
        assert "MT_QE_MODEL" in message and "'plain'" in message
    assert httpx.post(f"{fleet.api_url}/v1/translate", json=body, timeout=60).status_code == 200
    # /v1/languages says which pools score
    pools = {p["name"]: p for p in httpx.get(f"{fleet.api_url}/v1/languages").json()["pools"]}
    assert pools["plain"]["quality_model"] is None
    assert pools["scored"]["quality_model"] == tiny_seq2seq("metricx")


def test_given_translations_are_scored_not_translated(fleet: LocalFleet) -> None:
    """An evaluation: the tiny model's calibration pairs, whose scores are known (its own
    translations low, others' high), come back with those scores, untranslated."""
    pairs, raw = metricx_calibration()
    body = {
        "texts": [src for src, _ in pairs],
        "translations": [hyp for _, hyp in pairs],
        "source_lang": "en",
        "target_lang": "es",
        "quality_estimation": True,
    }
    got = httpx.post(f"{fleet.api_url}/v1/translate", json=body, timeout=60)
    assert got.status_code == 200, got.text
    answer = got.json()
    assert answer["translations"] == [hyp for _, hyp in pairs]
    scores = [q["score"] for q in sorted(answer["quality"], key=lambda q: q["index"])]
    assert scores == pytest.approx([min(25.0, max(0.0, r)) for r in raw], abs=0.01)
    assert [q["low_quality"] for q in answer["quality"]] == [r > THRESHOLD for r in raw]
    # the given translations are not the engine's: nothing of them went to the phrase cache
    again = httpx.post(
        f"{fleet.api_url}/v1/translate",
        json={"texts": body["texts"][:1], "source_lang": "en", "target_lang": "es"},
        timeout=60,
    )
    assert again.status_code == 200 and again.json()["cached"] == 0, again.text
    unasked = httpx.post(
        f"{fleet.api_url}/v1/translate", json={**body, "quality_estimation": False}, timeout=60
    )
    assert unasked.status_code == 422 and "quality_estimation" in unasked.text


def test_deepls_quality_evaluation_shape(fleet: LocalFleet) -> None:
    pairs, raw = metricx_calibration()
    key = {"Authorization": "DeepL-Auth-Key anything"}  # (MT_AUTH=off: any key)
    made = httpx.post(
        f"{fleet.api_url}/v1/quality-evaluations",
        json={
            "source_lang": "EN",
            "target_lang": "ES",
            "segments": [{"source": s, "target": t} for s, t in pairs],
        },
        headers=key,
        timeout=60,
    )
    assert made.status_code == 201, made.text
    job_id = made.json()["job_id"]
    deadline = time.monotonic() + 60
    while True:
        polled = httpx.get(
            f"{fleet.api_url}/v1/quality-evaluations/{job_id}", headers=key, timeout=30
        ).json()
        if polled["status"] == "done" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert polled["status"] == "done", polled
    segments = polled["segments"]
    assert [s["segment_index"] for s in segments] == list(range(len(pairs)))
    clipped = [min(25.0, max(0.0, r)) for r in raw]
    assert [s["metricx_score"] for s in segments] == pytest.approx(clipped, abs=0.01)
    assert [s["segment_score"] for s in segments] == pytest.approx(
        [100 - 4 * c for c in clipped], abs=0.1
    )
    assert [s["target"] for s in segments] == [t for _, t in pairs]
    bad = httpx.post(
        f"{fleet.api_url}/v1/quality-evaluations",
        json={"target_lang": "ES", "segments": []},
        headers=key,
        timeout=30,
    )
    assert bad.status_code == 400, bad.text


def document_job(fleet: LocalFleet, fmt: str, content: str) -> tuple[dict, str]:
    got = httpx.post(
        f"{fleet.api_url}/v1/jobs",
        json={
            "document": {"format": fmt, "content": content},
            "source_lang": "en",
            "target_lang": "es",
            "pool": "scored",
            "quality_estimation": True,
        },
        timeout=60,
    )
    assert got.status_code in (200, 201, 202), got.text
    job = got.json()["id"]
    final = httpx.get(f"{fleet.api_url}/v1/jobs/{job}?wait=60", timeout=90).json()
    assert final["status"] == "succeeded", final
    result = httpx.get(f"{fleet.api_url}/v1/jobs/{job}/result", timeout=60).json()
    download = httpx.get(f"{fleet.api_url}/v1/jobs/{job}/document", timeout=60)
    assert download.status_code == 200, download.text
    return result, download.text


def test_a_po_download_marks_low_scored_entries_fuzzy(
    fleet: LocalFleet, scorer: QualityEstimator
) -> None:
    result, text = document_job(fleet, "po", PO)
    assert len(result["quality"]) == 4
    po = polib.pofile(text)
    entries = [e for e in po if e.msgid]
    want = expected(scorer, [e.msgid for e in entries], [e.msgstr for e in entries])
    fuzzy = [e.fuzzy for e in entries]
    assert fuzzy == [w > THRESHOLD for w in want]
    assert any(fuzzy) and not all(fuzzy)
    delete = next(e for e in entries if e.msgid == "Delete")
    if delete.fuzzy:  # its flags line kept its own flag beside fuzzy
        assert "#, fuzzy, c-format" in text and "c-format" in delete.flags
    # nothing else of the file moved: comments and references stay where they were
    assert "#. the garden page\n#: shop.py:2\n" in text


def test_an_xliff_download_marks_low_scored_units_for_review(
    fleet: LocalFleet, scorer: QualityEstimator
) -> None:
    result, text = document_job(fleet, "xliff", XLIFF)
    assert len(result["quality"]) == 3
    ns = {"x": "urn:oasis:names:tc:xliff:document:1.2"}
    root = etree.fromstring(text.encode())
    units = root.findall(".//x:trans-unit", ns)
    sources = [u.find("x:source", ns).text for u in units]
    targets = [u.find("x:target", ns) for u in units]
    want = expected(scorer, sources, [t.text for t in targets])
    states = [t.get("state") for t in targets]
    assert states == ["needs-review-translation" if w > THRESHOLD else "translated" for w in want]
    assert "needs-review-translation" in states and "translated" in states


def test_the_cli_asks_with_qe_and_prints_the_scores(
    fleet: LocalFleet, scorer: QualityEstimator
) -> None:
    args = ("translate", "--from", "en", "--to", "es", "--pool", "scored", "--qe")
    done = cli(fleet, *args, "--json", *TEXTS)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    want = expected(scorer, TEXTS, [r["translation"] for r in rows])
    assert [r["quality"] for r in rows] == pytest.approx(want, abs=0.01)
    assert [r["low_quality"] for r in rows] == [w > THRESHOLD for w in want]
    flagged = sum(w > THRESHOLD for w in want)
    assert f"{flagged} of {len(TEXTS)} translation(s) scored low quality" in done.stderr
    # as lines: the translation, a tab, its score (and the mark above the threshold)
    lines = cli(fleet, *args, *TEXTS)
    assert lines.returncode == 0, lines.stderr
    for line, row in zip(lines.stdout.splitlines(), rows, strict=True):
        text, _, rest = line.partition("\t")
        assert text == row["translation"]
        assert rest == f"{row['quality']:.2f}" + (" low quality" if row["low_quality"] else "")


def test_cli_submit_with_qe_writes_a_po_file_marked_for_review(
    fleet: LocalFleet, scorer: QualityEstimator, tmp_path: Path
) -> None:
    source = tmp_path / "shop.po"
    source.write_text(PO)
    out = tmp_path / "out"
    args = ("submit", str(source), "--from", "en", "--to", "es", "--pool", "scored", "--qe")
    done = cli(fleet, *args, "--out", str(out))
    assert done.returncode == 0, done.stderr
    (written,) = out.glob("*.po")
    entries = [e for e in polib.pofile(str(written)) if e.msgid]
    want = expected(scorer, [e.msgid for e in entries], [e.msgstr for e in entries])
    assert [e.fuzzy for e in entries] == [w > THRESHOLD for w in want]
    assert any(e.fuzzy for e in entries)


def test_the_page_asks_for_scores_and_its_table_has_them(
    fleet: LocalFleet, scorer: QualityEstimator, tmp_path: Path
) -> None:
    """The translator page (headless Chromium, as tests/e2e/test_pages.py drives it): the
    quality checkbox, the scores' warnings under the translation, and the table it downloads
    with a quality and a needs-review column."""
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(accept_downloads=True).new_page()
            page.goto(f"{fleet.api_url}/")
            page.get_by_label("Source language").select_option("en")
            page.get_by_label("Target language").select_option("es")
            expect(page.locator("#qe-hint")).to_have_text("(pools that score: scored)")
            page.get_by_label("Score each translation").check()
            page.get_by_label("Text to translate").fill("\n".join(TEXTS))
            page.get_by_role("button", name="Translate").click()
            expect(page.locator("#text-status")).to_have_text(re.compile("^Done"), timeout=60_000)
            with page.expect_download() as info:
                page.get_by_role("button", name="Download as a table").click()
            saved = tmp_path / "table.tsv"
            info.value.save_as(saved)
            notes = page.locator("#translation .note").all_inner_texts()
        finally:
            browser.close()
    header, *rows = [line.split("\t") for line in saved.read_text().splitlines()]
    assert header == ["line", "source", "translation", "quality", "needs review"]
    assert [r[1] for r in rows] == TEXTS
    want = expected(scorer, TEXTS, [r[2] for r in rows])
    assert [float(r[3]) for r in rows] == pytest.approx(want, abs=0.01)
    assert [r[4] for r in rows] == ["yes" if w > THRESHOLD else "no" for w in want]
    flagged = [n + 1 for n, w in enumerate(want) if w > THRESHOLD]
    assert [int(re.match(r"Line (\d+):", n)[1]) for n in notes if "quality" in n] == flagged
