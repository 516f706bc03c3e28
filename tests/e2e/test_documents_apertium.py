"""Documents end to end, as the content team uses them: ``mtfleet glossary create`` and
``mtfleet submit`` against separate API and worker processes with real Apertium (English to
Spanish). Each format comes back in its own format, translated, with markup, placeholders and
protected brand names intact (and a lower-cased brand restored to its canonical casing)."""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import javaproperties
import pytest
import redis
import srt
from lxml import etree, html

from mtfleet import formats as documents
from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.formats.base import Unit
from tests.conftest import ROOT
from tests.e2e.fleet_control import apertium_fleet, cli, jobs_made, written

HTML = """<!DOCTYPE html>
<html><head><title>Red running shoes</title>
<script>var sku = "The shoes";</script></head>
<body><h1>Red running shoes</h1>
<p>The <b>red shoes</b> are very light. Order before <a href="https://shop.example.com/x?id=7">the
weekend</a> and get free shipping on orders over $50.</p>
<p>Works with your iphone and your PlayStation.</p>
<img src="shoe.png" alt="A red shoe on the table">
<ul><li>Weight: 250 g</li><li>Code SKU-12345</li></ul>
</body></html>
"""

MARKDOWN = """# Returns

You can return the shoes within **30 days**. See [the returns page](https://example.com/returns).

- The package must be closed.
- Your iphone case is not returned.

```bash
curl https://example.com/api --data "keep this"
```
"""

JSON_DOC = (
    '{\n  "cart": {\n    "title": "Your cart",\n'
    '    "items": "You have {{count}} items in the cart",\n'
    '    "greeting": "Hello {name}, welcome back to the store"\n  },\n'
    '  "brand": "Buy the new iPhone today",\n  "limit": 5\n}\n'
)

SRT_DOC = """1
00:00:01,000 --> 00:00:03,500
The red shoes are very light.

2
00:00:04,000 --> 00:00:06,000
<i>Order them</i> today
with your PlayStation.
"""

VTT_DOC = """WEBVTT
Language: en

NOTE chapter markers below are read by the player

shoes
00:00:01.000 --> 00:00:03.500 align:start
<v Ana>The red shoes are very light.

00:00:04.000 --> 00:00:06.000
<i>Order them</i> today
with your PlayStation.
"""

PROPERTIES_DOC = """# Shop messages (ISO-8859-1 readers: non-ASCII as \\u escapes)
cart.title = The red shoes
cart.count=You have {0} items in your cart.
cart.brand=Order the PlayStation \\
    today.
"""

XLIFF = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file original="app.properties" source-language="en" datatype="plaintext">
    <body>
      <trans-unit id="1">
        <source>The <g id="b1">red</g> shoes are in the house.</source>
      </trans-unit>
      <trans-unit id="2"><source>Press <x id="icon"/> to buy the iPhone.</source></trans-unit>
      <trans-unit id="3" translate="no"><source>SKU-0001</source></trans-unit>
    </body>
  </file>
</xliff>
"""

SPANISH = re.compile(r"\b(el|la|los|las|de|en|con|su|y|es|zapatos|rojos?|casa)\b", re.I)


def make_docx() -> bytes:
    import docx

    d = docx.Document()
    p = d.add_paragraph("The ")
    p.add_run("red shoes").bold = True
    p.add_run(" are in the house. Buy them with your iphone.")
    d.add_paragraph("The cat is on the table.")
    table = d.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Weight"
    table.cell(0, 1).text = "The big box"
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    with apertium_fleet(redis_server.rsplit("/", 1)[0] + "/4") as f:
        yield f


@pytest.fixture(scope="module")
def translated(fleet: LocalFleet, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    src = tmp_path_factory.mktemp("docs")
    files = {
        "page.html": HTML.encode(),
        "returns.md": MARKDOWN.encode(),
        "strings.json": JSON_DOC.encode(),
        "video.srt": SRT_DOC.encode(),
        "captions.vtt": VTT_DOC.encode(),
        "Messages.properties": PROPERTIES_DOC.encode(),
        "app.xlf": XLIFF.encode(),
        "sheet.docx": make_docx(),
    }
    for name, data in files.items():
        (src / name).write_bytes(data)
    made = cli(
        fleet, "glossary", "create", "--name", "brands", "--from", "en", "--to", "es",
        "--protect", "iPhone,PlayStation",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    glossary_id = made.stdout.strip().splitlines()[-1]
    out = src / "out"
    proc = cli(
        fleet, "submit", *[str(src / n) for n in files], "--from", "en", "--to", "es",
        "--out", str(out), "--glossary", glossary_id,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = {}
    for name in files:
        stem, ext = name.rsplit(".", 1)
        dest = out / f"{stem}.es.{ext}"
        assert dest.exists(), proc.stdout + proc.stderr
        got[name] = dest.read_bytes()
    got["_stdout"] = proc.stdout.encode()
    return got


def test_html_product_page(translated: dict[str, bytes]) -> None:
    out = translated["page.html"].decode()
    before, after = html.fromstring(HTML), html.fromstring(out)
    assert Counter(e.tag for e in before.iter()) == Counter(e.tag for e in after.iter())
    assert after.xpath("//a/@href") == ["https://shop.example.com/x?id=7"]
    assert after.xpath("//script/text()") == before.xpath("//script/text()")
    assert "zapatos" in after.xpath("string(//h1)").lower()
    assert "mesa" in after.xpath("//img/@alt")[0]  # attribute translated
    body = after.xpath("string(//body)")
    assert "iPhone" in body and "PlayStation" in body and "iphone" not in body
    assert "$50" in body and "SKU-12345" in body and "250 g" in body


def test_markdown_article(translated: dict[str, bytes]) -> None:
    out = translated["returns.md"].decode()
    assert out.startswith("# ")
    assert "](https://example.com/returns)" in out
    assert '```bash\ncurl https://example.com/api --data "keep this"\n```\n' in out
    assert out.count("\n- ") == 2 and "**" in out
    assert "iPhone" in out and "iphone" not in out
    assert len(SPANISH.findall(out)) >= 4


def test_json_i18n(translated: dict[str, bytes]) -> None:
    before, after = json.loads(JSON_DOC), json.loads(translated["strings.json"])
    assert after.keys() == before.keys() and after["cart"].keys() == before["cart"].keys()
    assert after["limit"] == 5
    assert "{{count}}" in after["cart"]["items"] and "{name}" in after["cart"]["greeting"]
    assert "iPhone" in after["brand"]
    assert after["cart"]["title"] != before["cart"]["title"]


def test_srt_subtitles(translated: dict[str, bytes]) -> None:
    before = list(srt.parse(SRT_DOC))
    after = list(srt.parse(translated["video.srt"].decode()))
    assert [(c.start, c.end) for c in after] == [(c.start, c.end) for c in before]
    assert "zapatos" in after[0].content.lower()
    assert "<i>" in after[1].content and "</i>" in after[1].content
    assert "\n" in after[1].content and "PlayStation" in after[1].content


def test_webvtt_captions(translated: dict[str, bytes]) -> None:
    out = translated["captions.vtt"].decode()
    kept = [ln for ln in VTT_DOC.splitlines() if "-->" in ln or ln.startswith(("NOTE", "shoes"))]
    assert [ln for ln in out.splitlines() if ln in kept] == kept  # ids, timings, settings, NOTE
    assert out.startswith("WEBVTT\nLanguage: es\n\n")
    first = out.split("align:start\n", 1)[1].split("\n\n", 1)[0]
    assert first.startswith("<v Ana>") and "zapatos" in first.lower()
    assert "<i>" in out and "</i>" in out and "PlayStation" in out


def test_java_properties(translated: dict[str, bytes]) -> None:
    out = translated["Messages.properties"]
    before = dict(javaproperties.loads(PROPERTIES_DOC))
    after = dict(javaproperties.loads(out.decode("ascii")))  # still ASCII: \\u escapes
    assert list(after) == list(before)
    assert out.startswith(b"# Shop messages (ISO-8859-1 readers: non-ASCII as \\u escapes)\n")
    assert "zapatos" in after["cart.title"].lower() and "{0}" in after["cart.count"]
    assert "PlayStation" in after["cart.brand"]


def test_xliff_targets(translated: dict[str, bytes]) -> None:
    ns = {"x": "urn:oasis:names:tc:xliff:document:1.2"}
    tree = etree.fromstring(translated["app.xlf"])
    units = {u.get("id"): u for u in tree.iterfind(".//x:trans-unit", ns)}
    t1 = units["1"].find("x:target", ns)
    assert t1 is not None and t1.find("x:g", ns) is not None  # inline code kept
    assert "casa" in "".join(t1.itertext())
    t2 = units["2"].find("x:target", ns)
    assert t2 is not None and t2.find("x:x", ns) is not None
    assert "iPhone" in "".join(t2.itertext())
    assert units["3"].find("x:target", ns) is None or "SKU-0001" in "".join(
        units["3"].find("x:target", ns).itertext()  # type: ignore[union-attr]
    )


def test_docx(translated: dict[str, bytes]) -> None:
    import docx

    data = translated["sheet.docx"]
    assert zipfile.ZipFile(io.BytesIO(data)).testzip() is None
    d = docx.Document(io.BytesIO(data))
    texts = [p.text for p in d.paragraphs]
    assert "zapatos" in texts[0].lower() and "iPhone" in texts[0] and "iphone" not in texts[0]
    assert any(r.bold for r in d.paragraphs[0].runs)  # the bold run survived
    assert "mesa" in texts[1]
    assert d.tables[0].cell(0, 1).text != "The big box"


def test_result_json_carries_the_document_and_detected_language(fleet: LocalFleet) -> None:
    with httpx.Client(base_url=fleet.api_url, timeout=60) as client:
        resp = client.post(
            "/v1/jobs",
            json={
                "document": {"format": "markdown", "content": MARKDOWN},
                "source_lang": "auto",
                "target_lang": "es",
            },
        )
        assert resp.status_code in (200, 202), resp.text
        job = resp.json()
        assert job["document_format"] == "markdown" and job["detected_source_lang"] == "en"
        done = client.get(f"/v1/jobs/{job['id']}", params={"wait": 30}).json()
        assert done["status"] == "succeeded", done
        result = client.get(f"/v1/jobs/{job['id']}/result").json()
        assert result["document"]["format"] == "markdown"
        download = client.get(f"/v1/jobs/{job['id']}/document")
        assert download.status_code == 200
        assert download.text == result["document"]["content"]
        assert "attachment" in download.headers["content-disposition"]
        bad = client.post(
            "/v1/jobs",
            json={"document": {"format": "json", "content": "{not json"}, "source_lang": "en",
                  "target_lang": "es"},
        )  # fmt: skip
        assert bad.status_code == 422 and bad.json()["error"]["type"] == "invalid_document"


def test_auto_detection_keeps_segments_already_in_the_target_language(
    fleet: LocalFleet,
) -> None:
    texts = [
        "The red shoes are in the house and they are very light.",
        "Los zapatos rojos están en la casa y son muy ligeros.",
        "Where is the big cat today?",
    ]
    with httpx.Client(base_url=fleet.api_url, timeout=60) as client:
        resp = client.post(
            "/v1/translate", json={"texts": texts, "source_lang": "auto", "target_lang": "es"}
        )
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["translations"][1] == texts[1]  # kept as it was
        assert [w["type"] for w in body["warnings"] if w["index"] == 1] == [
            "already_in_target_language"
        ]
        assert "zapatos" in body["translations"][0] and "gato" in body["translations"][2]
        result = client.get(f"/v1/jobs/{body['id']}/result").json()
        assert result["detected_langs"] == [None, "es", None]
        assert client.get(f"/v1/jobs/{body['id']}").json()["detected_source_lang"] == "en"


def test_multipart_upload_of_a_docx(fleet: LocalFleet) -> None:
    import docx

    with httpx.Client(base_url=fleet.api_url, timeout=60) as client:
        resp = client.post(
            "/v1/documents",
            files={"file": ("sheet.docx", make_docx())},
            data={"target_lang": "es"},  # source_lang: auto
        )
        assert resp.status_code in (200, 202), resp.text
        job = resp.json()
        assert job["document_format"] == "docx" and job["detected_source_lang"] == "en"
        assert client.get(f"/v1/jobs/{job['id']}", params={"wait": 30}).json()["status"] == (
            "succeeded"
        )
        download = client.get(f"/v1/jobs/{job['id']}/document")
        assert download.headers["content-type"].startswith(
            "application/vnd.openxmlformats-officedocument"
        )
        assert "sheet.docx" in download.headers["content-disposition"]
        assert "mesa" in docx.Document(io.BytesIO(download.content)).paragraphs[1].text
        unknown = client.post(
            "/v1/documents", files={"file": ("scan.pdf", b"%PDF-1.7")}, data={"target_lang": "es"}
        )
        assert unknown.status_code == 415 and ".docx" in unknown.json()["error"]["message"]


def test_a_final_document_is_rendered_once_and_its_spans_were_protected_once(
    fleet: LocalFleet,
) -> None:
    """A document's sentences reach the worker with their URLs and prices as text (the worker
    protects spans, once: the phrase cache holds the sentence as written), and the file of a
    final job is rendered once and kept: with the original gone, it still downloads, the same
    bytes (nothing is extracted or rendered again)."""
    from mtfleet.core import keys
    from mtfleet.core.cache import PhraseCache
    from mtfleet.core.registry import Registry
    from mtfleet.producer.client import MTClient

    assert fleet.redis_url
    r = redis.Redis.from_url(fleet.redis_url, decode_responses=True)
    page = "<p>Order at https://shop.example.com/r7 today.</p><p>The red shoes cost $50.</p>"
    with MTClient(fleet.api_url) as mt:
        job = mt.submit_document(page, format="html", source="en", target="es")
        assert mt.wait(job.id, timeout=60).status == "succeeded"
        first = mt.document(job.id)
        assert b"https://shop.example.com/r7" in first and b"$50" in first
        pool = Registry(r).pools()["apertium"]
        sentence = "Order at https://shop.example.com/r7 today."
        assert r.exists(PhraseCache.key(pool.fingerprint, "en", "es", sentence))
        assert r.hget(keys.job_rendered(job.id), "settled") == "2"
        r.delete(keys.job_document(job.id))  # the original: a new render would need it
        assert mt.document(job.id) == first
        assert mt.result(job.id).document is not None


#: A shop's catalogue as plain text: a category line above its products, one product a line,
#: CRLF, a byte-order mark, a blank line, an indented line. Sent as one text, Apertium read
#: "Kitchen" with the next line ("Piel / de lámpara / de mesa de cocina ..."): words moved
#: between the lines of different products.
CATALOGUE = (
    "\ufeffKitchen\r\nTable lamp with a white shade\r\nLeather\r\nWallet for men\r\n\r\n"
    "Bathroom\r\n  White\r\nSoft towels, set of 2\r\n"
).encode()
_BLANKS = " \t\r\n\ufeff"


def assert_line_for_line(api: httpx.Client, source: bytes, out: bytes) -> None:
    """``out`` has ``source``'s lines (endings, blank lines, indentation and byte-order mark
    as they were), and line i is line i translated on its own (each line's text through
    ``/v1/translate``, the same engine)."""
    src = source.decode("utf-8").splitlines(keepends=True)
    got = out.decode("utf-8").splitlines(keepends=True)
    assert len(got) == len(src), out.decode("utf-8")
    cores = [line.strip(_BLANKS) for line in src]
    resp = api.post(
        "/v1/translate",
        json={"texts": [c for c in cores if c], "source_lang": "en", "target_lang": "es"},
    )
    assert resp.status_code == 200, resp.text
    alone = iter(resp.json()["translations"])
    for line, core, translated in zip(src, cores, got, strict=True):
        at = line.find(core)
        expected = line[:at] + next(alone) + line[at + len(core) :] if core else line
        assert translated == expected, (line, translated)


def test_a_text_file_comes_back_line_for_line_on_every_surface(
    fleet: LocalFleet, tmp_path: Path
) -> None:
    """One rule for a plain-text file everywhere (the page: tests/e2e/test_pages.py): line i of
    the translation is line i of the file, translated."""
    import deepl

    outs: dict[str, bytes] = {}
    with httpx.Client(base_url=fleet.api_url, timeout=60) as api:
        job = api.post(
            "/v1/documents",
            files={"file": ("catalogue.txt", CATALOGUE)},
            data={"source_lang": "en", "target_lang": "es"},
        ).json()
        assert api.get(f"/v1/jobs/{job['id']}", params={"wait": 30}).json()["status"] == (
            "succeeded"
        )
        outs["/v1/documents"] = api.get(f"/v1/jobs/{job['id']}/document").content
        out = io.BytesIO()
        deepl.Translator("any-key", server_url=fleet.api_url).translate_document(
            io.BytesIO(CATALOGUE), out, source_lang="EN", target_lang="ES", filename="cat.txt"
        )
        outs["DeepL /v2/document"] = out.getvalue()
        link = api.post(
            "/libretranslate/translate_file",
            files={"file": ("catalogue.txt", CATALOGUE)},
            data={"source": "en", "target": "es"},
        ).json()["translatedFileUrl"]
        outs["LibreTranslate /translate_file"] = httpx.get(link, timeout=60).content
        (tmp_path / "catalogue.txt").write_bytes(CATALOGUE)
        proc = cli(
            fleet, "submit", str(tmp_path / "catalogue.txt"), "--from", "en", "--to", "es",
            "--out", str(tmp_path / "out"),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        outs["mtfleet submit"] = (tmp_path / "out" / "catalogue.es.txt").read_bytes()
        for surface, got in outs.items():
            assert got.startswith("\ufeffCocina\r\n".encode()), (surface, got)
            assert_line_for_line(api, CATALOGUE, got)


UNREAD = sorted((ROOT / "tests" / "fixtures" / "documents" / "unread").iterdir())
#: What each of them is (the refusal's ``kind``) and what the refusal calls it.
UNREAD_KINDS = {
    "Resources.resx": ("resx", ".NET resource file"),
    "app_de.ts": ("qt", "Qt Linguist"),
    "brochure.idml": ("idml", "InDesign package"),
    "docutils_styles.odt": ("odt", "OpenDocument text"),
    "memory-utf16.tmx": ("tmx", "translation memory (TMX)"),
    "memory.tmx": ("tmx", "translation memory (TMX)"),
    "mozilla-send_en-US.ftl": ("fluent", "Mozilla Fluent"),
}


@pytest.mark.parametrize("path", UNREAD, ids=[p.name for p in UNREAD])
def test_a_file_the_fleet_does_not_read_is_refused_on_v1_named_or_not(
    fleet: LocalFleet, path: Path
) -> None:
    """A TMX (UTF-16 too), Fluent, Qt, RESX, ODF or IDML file is a 415 saying what it is and
    naming the formats the fleet reads, whether its name says what it is or, nameless, its
    bytes do: never a job translating it as text (a nameless Fluent file was translated as
    Java properties, a nameless UTF-16 TMX refused as a broken .strings file)."""
    kind, what = UNREAD_KINDS[path.name]
    made = jobs_made(fleet)
    with httpx.Client(base_url=fleet.api_url, timeout=30) as client:
        for name in (path.name, "upload"):
            resp = client.post(
                "/v1/documents",
                files={"file": (name, path.read_bytes())},
                data={"target_lang": "es", "source_lang": "en"},
            )
            assert resp.status_code == 415, resp.text
            error = resp.json()["error"]
            assert error["type"] == "unsupported_format" and ".html" in error["formats"]
            assert error["kind"] == kind and what in error["message"], error
            assert "this server reads" in error["message"]
    assert jobs_made(fleet) == made


ENTITIES = ROOT / "tests" / "fixtures" / "documents" / "android" / "entities_app_name.xml"


def entity_refs(content: bytes) -> dict[str, list[str]]:
    """The entities each string and array item of a strings.xml refers to, in order (the
    plural items, whose categories the target sets, left out)."""
    root = etree.fromstring(content, etree.XMLParser(resolve_entities=False))
    return {
        f"{el.getparent().get('name')}/{k}" if el.tag == "item" else el.get("name"): [
            e.name for e in el.iter() if isinstance(e, etree._Entity)
        ]
        for k, el in enumerate(root.iter("string", "item"))
        if not el.get("quantity")
    }


def test_android_strings_that_declare_entities_come_back_translated_with_them(
    fleet: LocalFleet,
) -> None:
    """A strings.xml naming the app once in its DOCTYPE (``&app_name;``), uploaded named or
    nameless, comes back in Spanish with the DOCTYPE as written and every reference where it
    was, never expanded nor translated; one whose entities expand (billion laughs) or reach
    outside the file is a 422 saying so, and no job is made of it."""
    content = ENTITIES.read_bytes()
    with httpx.Client(base_url=fleet.api_url, timeout=60) as client:
        for name in ("strings.xml", "upload"):
            job = client.post(
                "/v1/documents",
                files={"file": (name, content)},
                data={"target_lang": "es", "source_lang": "en"},
            )
            assert job.status_code in (200, 202), job.text
            assert job.json()["document_format"] == "android"
            done = client.get(f"/v1/jobs/{job.json()['id']}", params={"wait": 30}).json()
            assert done["status"] == "succeeded", done
            out = client.get(f"/v1/jobs/{job.json()['id']}/document").content
            assert out.startswith(content[: content.index(b"<resources")])
            assert entity_refs(out) == entity_refs(content)
            read = {
                el.get("name"): "".join(el.itertext())
                for el in etree.fromstring(out, etree.XMLParser(resolve_entities=True)).iter(
                    "string"
                )
            }
            assert read["app_name"] == read["app_title"] == "NewPipe"
            assert "NewPipe" in read["welcome_title"] and "Welcome" not in read["welcome_title"]
            assert "newpipe.net" in read["crash_report"]
        made = jobs_made(fleet)
        laughs = b"".join(
            b'<!ENTITY lol%d "%s">' % (k, (b"&lol%d;" % (k - 1)) * 10) for k in range(1, 10)
        )
        for doctype, says in (
            (b'<!DOCTYPE resources [<!ENTITY lol0 "lol">' + laughs + b"]>", "refers to entities"),
            (
                b'<!DOCTYPE resources [<!ENTITY app_name SYSTEM "file:///etc/passwd">]>',
                "external entity",
            ),
        ):
            bad = doctype + content[content.index(b"<resources") :]
            resp = client.post(
                "/v1/documents",
                files={"file": ("strings.xml", bad)},
                data={"target_lang": "es", "source_lang": "en"},
            )
            assert resp.status_code == 422, resp.text
            assert says in resp.json()["error"]["message"]
        assert jobs_made(fleet) == made


def test_submit_sends_the_files_it_can_and_reports_the_one_it_cannot(
    fleet: LocalFleet, tmp_path: Path
) -> None:
    idml = tmp_path / "brochure.idml"  # an InDesign package: not read
    idml.write_bytes((ROOT / "tests/fixtures/documents/unread/brochure.idml").read_bytes())
    page = tmp_path / "page.html"
    page.write_text("<p>The red shoes are in the house.</p>", encoding="utf-8")
    notes = tmp_path / "notes"  # no extension: told by its bytes (YAML)
    notes.write_text("shop:\n  cart: Add to cart\n  empty: Your cart is empty\n")
    out = tmp_path / "out"
    proc = cli(fleet, "submit", str(idml), str(page), str(notes), "--to", "es", "--out", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "brochure.idml" in proc.stderr and "InDesign package" in proc.stderr
    assert "one segment per line" not in proc.stderr  # never advised to send it as text
    assert "1 of 3 file(s) not sent" in proc.stderr
    assert "casa" in (out / "page.es.html").read_text(encoding="utf-8")
    assert not (out / "brochure.es.idml").exists()


#: The real localization files of the newer formats (``../shared/corpus/real2`` and ``real3``,
#: copied into the fixtures): each comes back translated in place through Apertium.
REAL_FILES = [
    "po/hamster_en_GB.po",
    "android/etar_calendar_strings.xml",
    "strings/facebook-ios-sdk_FacebookSDK.strings",
    "stringsdict/macpass_Localizable.stringsdict",
    "xcstrings/ultimate-portfolio-app_Localizable.xcstrings",
    "yaml/rails-i18n_en-US.yml",
    "arb/finamp_app_en.arb",
    "properties/jenkins_hudson_Messages.properties",
    "webvtt/ableplayer_wwa_captions_en.vtt",
    "xlsx/excelize_Book1.xlsx",
    "pptx/Open-XML-SDK_Bug571679_Brownbag.pptx",
    # real3
    "po/gnome-calculator_de.po",
    "markdown/jekyll_docs_front-matter.md",
    "json/lemmy_frontend_en.json",
    "android/newpipe_strings.xml",
    "docx/pandoc_comments.docx",
    "pptx/python-pptx_cht-charts.pptx",
    "yaml/rails_activemodel_en.yml",
    "webvtt/webvtt-py_youtube_dl.vtt",
    "xliff/xliff2-om_everything-core.xlf",
]
#: Catalogues: the output holds the source's units (and the target's beside them).
CATALOGUES = {"po", "xcstrings", "yaml", "arb", "xliff"}


@pytest.fixture(scope="module")
def real_translated(fleet: LocalFleet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("real-es")
    paths = [str(ROOT / "tests" / "fixtures" / "documents" / p) for p in REAL_FILES]
    proc = cli(fleet, "submit", *paths, "--from", "en", "--to", "es", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


#: What Office recomputes on a rebuilt run (its language, the target's; spelling marks), and
#: the attributes of inline HTML that are text and translated (a link's title, an image's alt).
RECOMPUTED = re.compile(r'\s(?:lang|dirty|err|title|alt)="[^"]*"')


def codes(unit: Unit) -> list[str]:
    """A unit's inline codes as the file writes them (placeholders, markup), in order, less
    the attributes Office recomputes and those translated as text."""
    return sorted(RECOMPUTED.sub("", c.start + (c.end or "")) for c in unit.codes.values())


@pytest.mark.parametrize("name", REAL_FILES, ids=[Path(n).name for n in REAL_FILES])
def test_a_real_localization_file_comes_back_translated_in_place(
    real_translated: Path, name: str
) -> None:
    """Keys, placeholders and markup are where they were and the text is Spanish: read back
    by the format itself, the output has the source's units (a catalogue: beside the target's),
    each with the same codes, and most of their texts changed."""
    path = ROOT / "tests" / "fixtures" / "documents" / name
    out = written(real_translated, path).read_bytes()
    fmt = documents.for_upload(path.read_bytes(), path.name)
    source = fmt.extract(path.read_bytes())
    assert out != path.read_bytes()
    if fmt.name in CATALOGUES:
        return  # their own e2e checks below read the target's fields
    got = fmt.extract(out)
    assert len(got) >= len(source)  # plural forms the target adds, never fewer
    by_path = {u.path: u for u in got}
    changed = 0
    for unit in source:
        twin = by_path.get(unit.path)
        assert twin is not None, unit.path
        assert codes(twin) == codes(unit), unit.path
        changed += twin.text != unit.text
    assert changed >= len(source) / 3, (changed, len(source))  # brand names stay


def test_a_real_po_catalogue_gets_spanish_msgstrs(real_translated: Path) -> None:
    import polib

    src = polib.pofile(str(ROOT / "tests/fixtures/documents/po/hamster_en_GB.po"))
    out = polib.pofile(str(real_translated / "po" / "hamster_en_GB.es.po"))
    assert [e.msgid for e in out] == [e.msgid for e in src]
    assert [e.msgctxt for e in out] == [e.msgctxt for e in src]
    assert out.metadata["Language"] == "es"
    assert len(out.obsolete_entries()) == len(src.obsolete_entries())
    spanish = [e for e in out.translated_entries() if SPANISH.search(e.msgstr or "")]
    assert len(spanish) >= 20


def test_a_real_yaml_file_gets_the_spanish_root_and_keeps_its_anchors(
    real_translated: Path,
) -> None:
    from ruamel.yaml import YAML

    text = (real_translated / "yaml" / "rails-i18n_en-US.es.yml").read_text(encoding="utf-8")
    data = YAML(typ="safe").load(text)
    assert list(data) == ["es"]
    assert "&errors_messages" in text and "<<: *errors_messages" in text
    assert "%{count}" in text and "%{attribute} %{message}" in text
    assert SPANISH.search(str(data["es"]["errors"]["messages"]))


def test_a_real_xlsx_keeps_its_formulas_and_numbers(real_translated: Path) -> None:
    import openpyxl

    src = openpyxl.load_workbook(ROOT / "tests/fixtures/documents/xlsx/excelize_Book1.xlsx")
    out = openpyxl.load_workbook(real_translated / "xlsx" / "excelize_Book1.es.xlsx")
    assert src.sheetnames == out.sheetnames
    texts_changed = 0
    for ws in src.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                twin = out[ws.title][cell.coordinate]
                if isinstance(cell.value, str) and cell.data_type == "f":
                    assert twin.value == cell.value  # a formula
                elif isinstance(cell.value, str):
                    texts_changed += twin.value != cell.value
                else:
                    assert twin.value == cell.value  # numbers, dates, empties
    assert texts_changed >= 3


# --- the third round's real files (real3): what each platform's runtime reads --------------------


def test_a_real_gnome_catalogue_replaces_its_german_with_spanish(real_translated: Path) -> None:
    """gnome-calculator's German catalogue sent into Spanish: every msgid and msgctxt kept, the
    obsolete entries kept, the German replaced (none left as a translation: at most kept
    marked fuzzy), and each plural entry with Spanish's two gettext forms."""
    import polib

    path = ROOT / "tests/fixtures/documents/po/gnome-calculator_de.po"
    src = polib.pofile(str(path))
    out = polib.pofile(str(written(real_translated, path)))
    live = [e for e in src if not e.obsolete]
    kept = [e for e in out if not e.obsolete]
    assert [(e.msgctxt, e.msgid) for e in kept] == [(e.msgctxt, e.msgid) for e in live]
    assert len(out.obsolete_entries()) == len(src.obsolete_entries())
    assert out.metadata["Language"] == "es"
    german = {(e.msgctxt, e.msgid): e.msgstr for e in live if e.msgstr and e.msgstr != e.msgid}
    stale = [e for e in kept if german.get((e.msgctxt, e.msgid)) == e.msgstr and not e.fuzzy]
    assert len(stale) <= 3, [e.msgstr for e in stale]  # "Volumen": German and Spanish alike
    assert len([e for e in kept if SPANISH.search(e.msgstr or "")]) >= 50
    plural = [e for e in kept if e.msgid_plural]
    assert plural and all(sorted(e.msgstr_plural) == [0, 1] for e in plural)
    assert "nplurals=2" in out.metadata["Plural-Forms"].replace(" ", "")


def test_a_real_rails_model_file_gets_a_form_for_every_count(real_translated: Path) -> None:
    """Rails' activemodel messages into Spanish: the target's plural keys, each form that covers
    more than one number carrying ``%{count}`` (the source's ``one`` spells "1")."""
    from ruamel.yaml import YAML

    path = ROOT / "tests/fixtures/documents/yaml/rails_activemodel_en.yml"
    data = YAML(typ="safe").load(written(real_translated, path).read_text(encoding="utf-8"))
    assert list(data) == ["es"]
    found = 0

    def walk(node: object) -> None:
        nonlocal found
        if isinstance(node, dict):
            if "other" in node and "one" in node:
                found += 1
                assert "%{count}" in node["other"], node
            for value in node.values():
                walk(value)

    walk(data["es"])
    assert found >= 2
    assert "%{attribute} %{message}" in str(data)


def test_a_real_xliff2_sample_names_the_target_and_keeps_what_is_not_translated(
    real_translated: Path,
) -> None:
    """The OASIS everything-core sample (trgLang="fr" with French targets) sent into Spanish:
    trgLang names Spanish, units under translate="no" keep their targets, the others get
    Spanish, and every code (pc, ph with dataRef) is where it was."""
    path = ROOT / "tests/fixtures/documents/xliff/xliff2-om_everything-core.xlf"
    out = written(real_translated, path).read_bytes()
    root = etree.fromstring(out)
    assert root.get("trgLang") == "es"
    src_root = etree.fromstring(path.read_bytes())
    ns = {"x": "urn:oasis:names:tc:xliff:document:2.0"}
    assert len(root.findall(".//x:unit", ns)) == len(src_root.findall(".//x:unit", ns))
    for tag in ("pc", "ph", "originalData", "ignorable", "skeleton"):
        assert len(root.findall(f".//x:{tag}", ns)) >= len(src_root.findall(f".//x:{tag}", ns))


def test_a_real_youtube_caption_file_keeps_every_cue(real_translated: Path) -> None:
    """youtube-dl's captions (a timing line right after cue text): as many cues out as in, no
    timing line turned into text."""
    path = ROOT / "tests/fixtures/documents/webvtt/webvtt-py_youtube_dl.vtt"
    out = written(real_translated, path).read_text(encoding="utf-8")
    arrow = re.compile(r"^\S+ --> \S+", re.M)
    assert len(arrow.findall(out)) == len(arrow.findall(path.read_text(encoding="utf-8")))
    assert "--&gt;" not in out


def test_a_real_jekyll_page_keeps_its_liquid_and_code(real_translated: Path) -> None:
    """Jekyll's front-matter page: each Liquid tag and backtick span back as written."""
    path = ROOT / "tests/fixtures/documents/markdown/jekyll_docs_front-matter.md"
    src = path.read_text(encoding="utf-8")
    out = written(real_translated, path).read_text(encoding="utf-8")
    tags = re.compile(r"\{%.*?%\}|\{\{.*?\}\}|`[^`\n]+`")
    assert Counter(tags.findall(out)) == Counter(tags.findall(src))
    assert SPANISH.search(out)


def test_real_office_files_get_their_comments_and_charts_translated(real_translated: Path) -> None:
    """pandoc's comments.docx: its comments come back in Spanish; python-pptx's charts deck
    (its only text is in charts): the charts' titles and series come back in Spanish."""
    docx = ROOT / "tests/fixtures/documents/docx/pandoc_comments.docx"
    with zipfile.ZipFile(written(real_translated, docx)) as z:
        comments = z.read("word/comments.xml").decode()
    with zipfile.ZipFile(docx) as z:
        assert comments != z.read("word/comments.xml").decode()
    assert SPANISH.search(" ".join(etree.fromstring(comments.encode()).itertext()))
    pptx = ROOT / "tests/fixtures/documents/pptx/python-pptx_cht-charts.pptx"
    with zipfile.ZipFile(pptx) as z:
        before = {n: z.read(n) for n in z.namelist() if n.startswith("ppt/charts/chart")}
    with zipfile.ZipFile(written(real_translated, pptx)) as z:
        after = {n: z.read(n) for n in before}
    assert [n for n in before if before[n] != after[n]], "no chart translated"
