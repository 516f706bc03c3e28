"""Scenario: documents. Two measurements:

1. **Parse and render per MB**: each format's ``extract`` and ``render`` (an identity
   translation, into Russian where the format writes plural forms or a language) on the real
   localization files under ``tests/fixtures/documents/``, in seconds per MB of file, in this
   process (no fleet); and a ``.properties`` value continued over every line of 256 KiB and of
   2 MiB, whose seconds per MB must stay alike (read in linear time).
2. **Fleet throughput on big Office files**: a 5 MB XLSX (text cells among many numbers), a
   300-slide PPTX (title, bullets and speaker notes on each) and a DOCX report of as many
   sentences as the deck (headings, bold words), each sent to
   ``POST /v1/documents`` on a fleet whose engine costs nothing (the cost model's ``zero``
   preset): what is measured is the document path itself (upload, extract, segments queued and
   translated, render, download), in milliseconds per segment. Target: XLSX and PPTX not slower
   per segment than DOCX by more than 1.5 times.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.fleet import ROOT, cost_env, running_fleet
from bench.report import Check, Outcome
from bench.run_context import Context
from bench.workload import phrases
from mtfleet import formats as documents

FIXTURES = ROOT / "tests" / "fixtures" / "documents"
#: Formats whose render writes the target's plural forms or language: rendered into Russian.
TARGETED = {"po", "android", "stringsdict", "xcstrings", "yaml", "arb", "json", "xliff"}


def _per_mb(ctx: Context) -> dict[str, dict[str, float]]:
    """Seconds per MB of extract and render, per format, over its fixture files."""
    out: dict[str, dict[str, float]] = {}
    for fmt in documents.formats():
        folder = FIXTURES / fmt.name
        files = [p for p in sorted(folder.iterdir()) if p.is_file()] if folder.is_dir() else []
        if not files:
            continue
        size = extract_s = render_s = 0.0
        for path in files:
            content = path.read_bytes()
            rounds = max(1, min(50, int(2_000_000 / max(len(content), 1))))
            rounds = max(1, rounds // 10) if ctx.quick else rounds
            target = "ru" if fmt.name in TARGETED else None
            t0 = time.perf_counter()
            for _ in range(rounds):
                units = fmt.extract(content)
            t1 = time.perf_counter()
            texts = [u.text for u in units]
            for _ in range(rounds):
                fmt.render(content, texts, target_lang=target)
            t2 = time.perf_counter()
            size += len(content) * rounds
            extract_s += t1 - t0
            render_s += t2 - t1
        mb = size / 1e6
        out[fmt.name] = {"extract_s_per_mb": extract_s / mb, "render_s_per_mb": render_s / mb}
        ctx.log(f"documents: {fmt.name}: extract {extract_s / mb:.3f} s/MB, render "
                f"{render_s / mb:.3f} s/MB over {len(files)} file(s)")  # fmt: skip
    return out


def _continued_properties(ctx: Context) -> dict[str, float]:
    """Seconds per MB of reading a ``.properties`` value continued over every line (a
    backslash at each line's end), at 256 KiB and at 2 MiB: linear, the two are alike (the
    logical line copied at each continuation took 4.5 s for 256 KiB)."""
    fmt = documents.for_name("properties")
    line = "word word \\\n"
    out: dict[str, float] = {}
    for kib in (256, ctx.n(2048, 1024)):
        content = ("key = " + line * (kib * 1024 // len(line)) + "end\n").encode()
        t0 = time.perf_counter()
        fmt.extract(content)
        out[f"{kib} KiB"] = (time.perf_counter() - t0) / (len(content) / 1e6)
        ctx.log(f"documents: properties continued over {kib} KiB: {out[f'{kib} KiB']:.3f} s/MB")
    return out


def make_xlsx(path: Path, texts: list[str], target_bytes: int, seed: int) -> None:
    """A workbook of ``texts`` (one per row, with a number beside it) and random numbers
    beside them until the file is about ``target_bytes``."""
    from openpyxl import Workbook

    rng = random.Random(seed)
    wb = Workbook()
    ws = wb.active
    ws.title = "Catalogue"
    numbers = wb.create_sheet("Figures")
    for i, text in enumerate(texts, start=1):
        ws.cell(row=i, column=1, value=text)
        ws.cell(row=i, column=2, value=round(rng.uniform(1, 500), 2))
    # random floats hardly compress: about 12 bytes of ZIP each
    cells = max(0, target_bytes - 60 * len(texts)) // 12
    cols = 20
    for _ in range(cells // cols):
        numbers.append([rng.random() for _ in range(cols)])
    wb.save(path)


def make_pptx(path: Path, texts: list[str], slides: int) -> None:
    """``slides`` slides, each a title, three bullets and a note, from ``texts``."""
    from pptx import Presentation

    deck = Presentation()
    it = iter(texts * (1 + 5 * slides // max(len(texts), 1)))
    for _ in range(slides):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = next(it)
        body = slide.placeholders[1].text_frame
        body.text = next(it)
        for _ in range(2):
            body.add_paragraph().text = next(it)
        slide.notes_slide.notes_text_frame.text = next(it)
    deck.save(str(path))


def make_docx(path: Path, texts: list[str]) -> None:
    """A report of ``texts``: a heading every fifth paragraph, a bold word in every third."""
    from docx import Document

    doc = Document()
    for i, text in enumerate(texts):
        if i % 5 == 0:
            doc.add_heading(text, level=2)
        elif i % 3 == 0:
            first, _, rest = text.partition(" ")
            p = doc.add_paragraph()
            p.add_run(first).bold = True
            p.add_run(f" {rest}")
        else:
            doc.add_paragraph(text)
    doc.save(str(path))


def _send(api_url: str, path: Path) -> dict[str, Any]:
    """One document through ``/v1/documents``: wall time from upload to download."""
    with httpx.Client(base_url=api_url, timeout=600) as client:
        t0 = time.perf_counter()
        made = client.post(
            "/v1/documents",
            files={"file": (path.name, path.read_bytes())},
            data={"source_lang": "en", "target_lang": "de", "lane": "bulk"},
        )
        made.raise_for_status()
        job_id = made.json()["id"]
        while True:
            job = client.get(f"/v1/jobs/{job_id}", params={"wait": 60}).json()
            if job["status"] not in ("queued", "running"):
                break
        got = client.get(f"/v1/jobs/{job_id}/document")
        wall = time.perf_counter() - t0
    if job["status"] != "succeeded" or got.status_code != 200:
        raise RuntimeError(f"{path.name}: {job['status']} {got.status_code} {got.text[:200]}")
    segments = int(job["progress"]["total"])
    return {
        "bytes": path.stat().st_size,
        "segments": segments,
        "wall_s": wall,
        "ms_per_segment": 1000 * wall / max(segments, 1),
    }


def documents_scenario(ctx: Context) -> Outcome:
    per_mb = _per_mb(ctx)
    continued = _continued_properties(ctx)
    slides = ctx.n(300, 30)
    # each file its own sentences: a sentence one file shares with another would be answered
    # from the phrase cache, and the later file would look faster than it is
    sizes = {"docx": 5 * slides, "xlsx": ctx.n(6000, 600), "pptx": 5 * slides}
    pool = phrases(sum(sizes.values()) + 200, seed=ctx.seed)
    texts: dict[str, list[str]] = {}
    start = 0
    for name, n in sizes.items():
        texts[name] = pool[start : start + n]
        start += n
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = {
            "xlsx": folder / "catalogue.xlsx",
            "pptx": folder / "deck.pptx",
            "docx": folder / "manual.docx",
        }
        make_xlsx(files["xlsx"], texts["xlsx"], ctx.n(5_000_000, 500_000), ctx.seed)
        make_pptx(files["pptx"], texts["pptx"], slides)
        make_docx(files["docx"], texts["docx"])
        warm = folder / "warm.docx"
        make_docx(warm, pool[start:])
        runs: dict[str, dict[str, Any]] = {}
        with running_fleet(cost_env("zero")) as fleet:
            _send(fleet.api_url, warm)  # the document processes started, nothing cached
            for name in ("docx", "xlsx", "pptx"):
                runs[name] = _send(fleet.api_url, files[name])
                r = runs[name]
                ctx.log(f"documents: {name} {r['bytes'] / 1e6:.1f} MB, {r['segments']} "
                        f"segments in {r['wall_s']:.1f} s")  # fmt: skip
    docx_ms = runs["docx"]["ms_per_segment"]
    figures: dict[str, Any] = {
        f"{name} ms/segment ({r['segments']} seg, {r['bytes'] / 1e6:.1f} MB)": r["ms_per_segment"]
        for name, r in runs.items()
    }
    total = {k: v["extract_s_per_mb"] + v["render_s_per_mb"] for k, v in per_mb.items()}
    slowest = max(total, key=total.__getitem__)
    figures["slowest format (extract+render s/MB)"] = f"{slowest} {total[slowest]:.2f}"
    short, long = continued.values()
    figures["properties continued value (s/MB)"] = ", ".join(
        f"{k} {v:.3f}" for k, v in continued.items()
    )
    return Outcome(
        figures=figures,
        checks=[
            Check("xlsx / docx per segment", runs["xlsx"]["ms_per_segment"] / docx_ms, "<=", 1.5),
            Check("pptx / docx per segment", runs["pptx"]["ms_per_segment"] / docx_ms, "<=", 1.5),
            Check("properties continued: s/MB long / 256 KiB", long / short, "<=", 2.0),
        ],
        raw={"per_mb": per_mb, "fleet": runs, "slides": slides, "continued": continued},
        notes=[
            "per-MB figures: "
            + ", ".join(
                f"{k} {v['extract_s_per_mb']:.2f}+{v['render_s_per_mb']:.2f}"
                for k, v in sorted(per_mb.items())
            )
            + " s/MB (extract+render)"
        ],
    )
