"""Every real localization file, on every surface that takes documents, through an engine that
gives each segment back as it was sent (``tests.identity_engine``, loaded as an operator's
engine plugin is): what comes back is exactly what the format makes of a translation that
changed nothing. A monolingual file (Android, Apple, properties, subtitles, Office, HTML...)
comes back byte-equal but for the fields that name the language; a catalogue (PO, String
Catalog, YAML, ARB, XLIFF) keeps every source field and gets the target's filled in.

Surfaces: ``POST /v1/documents``, DeepL's ``/v2/document`` through the official client,
LibreTranslate's ``/translate_file``, and ``mtfleet submit`` (all files in one command). The
same files refused: a format the fleet does not read, a truncated XLSX and a YAML file that does
not parse are a 4xx naming the problem on each surface, and no job is made."""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

import deepl
import httpx
import pytest

from mtfleet import formats as documents
from mtfleet.fleet.localfleet import LocalFleet
from tests.conftest import ROOT
from tests.e2e.fleet_control import cli, jobs_made, written

FIXTURES = ROOT / "tests" / "fixtures" / "documents"

#: The real files (``../shared/corpus/real``, ``real2`` and ``real3``, copied into the fixtures),
#: by their format's folder, and the target each is sent into.
REAL = {
    "json/excalidraw_en.json": "es",
    "markdown/fastapi_docs_index.md": "es",
    "srt/go-astisub_example-in-styled.srt": "es",
    "srt/sintel_en.srt": "es",
    "html/html5-test-page_index.html": "es",
    "docx/python-docx_par-hyperlinks.docx": "es",
    "xliff/symfony_validators.en.xlf": "es",
    "xliff/uber-sites_en_us-ar_xliff2.xlf": "ar",
    "po/hamster_en_GB.po": "ru",
    "po/django-allauth_en_django.po": "pl",
    "android/etar_calendar_strings.xml": "ru",
    "android/sunflower_strings.xml": "es",
    "android/zxing_strings.xml": "ar",
    "strings/facebook-ios-sdk_FacebookSDK.strings": "es",
    "stringsdict/macpass_Localizable.stringsdict": "ja",
    "xcstrings/ultimate-portfolio-app_Localizable.xcstrings": "pl",
    "yaml/rails-i18n_en-US.yml": "de",
    "arb/finamp_app_en.arb": "ru",
    "properties/jenkins_hudson_Messages.properties": "de",
    "webvtt/ableplayer_wwa_captions_en.vtt": "es",
    "xlsx/excelize_Book1.xlsx": "es",
    "pptx/Open-XML-SDK_Bug571679_Brownbag.pptx": "es",
    # real3
    "po/gnome-calculator_de.po": "es",
    "markdown/jekyll_docs_front-matter.md": "es",
    "json/lemmy_frontend_en.json": "ru",
    "android/newpipe_strings.xml": "ru",
    "docx/pandoc_comments.docx": "es",
    "pptx/python-pptx_cht-charts.pptx": "es",
    "yaml/rails_activemodel_en.yml": "pl",
    "webvtt/webvtt-py_youtube_dl.vtt": "es",
    "xliff/xliff2-om_everything-core.xlf": "de",
}
#: Formats whose file holds one language: the output is the input, but for what names it.
MONOLINGUAL = {
    "text", "markdown", "html", "json", "srt", "webvtt", "docx", "xlsx", "pptx", "android",
    "strings", "stringsdict", "properties",
}  # fmt: skip
#: What names a file's language, where a format writes the target's: an HTML or Office
#: ``lang`` attribute, a WebVTT header's language line, a plural category the target's CLDR
#: rules add or drop (Android, .stringsdict).
LANGUAGE = re.compile(rb'(\blang(?:uage)?\s*[=:]\s*"?)[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]+)?', re.I)


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    import redis

    redis.Redis.from_url(redis_server).flushdb()
    env = {
        "MT_HEARTBEAT_S": "1",
        "MT_AUTH": "required",
        "MT_DEEPL_WAIT_S": "2",
        "PYTHONPATH": str(ROOT),
    }
    with LocalFleet(redis_url=redis_server, env=env) as f:
        f.start_redis()
        f.start_worker("--engine", "tests.identity_engine:IdentityEngine", "--lanes",
                       "interactive,bulk")  # fmt: skip
        f.start_api()
        f.wait_ready(60)
        yield f


@pytest.fixture(scope="module")
def key(fleet: LocalFleet) -> str:
    return fleet.create_api_key("localization-team")


def expected(path: Path, target: str) -> bytes:
    """What the format makes of ``path`` translated into ``target`` by a translation that
    changes nothing."""
    content = path.read_bytes()
    fmt = documents.for_upload(content, path.name)
    units = fmt.extract(content)
    return fmt.render(content, [u.text for u in units], target_lang=target)


def without_language(data: bytes) -> bytes:
    return LANGUAGE.sub(rb"\1LANG", data)


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def check(path: Path, target: str, got: bytes, surface: str) -> None:
    want = expected(path, target)
    assert got == want, f"{surface}: {path.name} came back other than the format renders it"
    fmt = documents.for_upload(path.read_bytes(), path.name)
    if fmt.name not in MONOLINGUAL:
        return
    source = path.read_bytes()
    if fmt.binary:
        old, new = members(source), members(got)
        assert list(old) == list(new), f"{surface}: {path.name}'s parts changed"
        changed = [n for n in old if old[n] != new[n]]
        assert all(without_language(old[n]) == without_language(new[n]) for n in changed), (
            f"{surface}: {path.name}: {changed} changed beyond the language they name"
        )
    elif got != source:
        assert fmt.name in ("html", "webvtt", "android", "stringsdict", "json"), (path, surface)
        if fmt.name in ("html", "webvtt"):
            assert without_language(got) == without_language(source), (path, surface)
        if fmt.name == "json":  # i18next's suffix plurals: the target's keys, nothing else
            assert without_plurals(json.loads(got)) == without_plurals(json.loads(source))
        if fmt.name == "android":  # the target's plural items, nothing else
            assert PLURALS.sub(b"", got) == PLURALS.sub(b"", source), (path, surface)


#: An Android ``<plurals>`` element, whose items are the target's categories.
PLURALS = re.compile(rb"<plurals\b.*?</plurals>", re.S)

#: An i18next v4 plural key: ``name_one``, ``name_few``, ``name_ordinal_two``...
I18NEXT_PLURAL = re.compile(r"^(.+?)_(?:ordinal_)?(?:zero|one|two|few|many|other)$")


def without_plurals(data: object) -> object:
    """``data`` less its i18next plural forms (a key whose stem also has an ``_other``)."""
    if not isinstance(data, dict):
        return data
    stems = {m.group(1) for k in data if (m := I18NEXT_PLURAL.match(k)) and k.endswith("_other")}
    return {
        k: without_plurals(v)
        for k, v in data.items()
        if not ((m := I18NEXT_PLURAL.match(k)) and m.group(1) in stems)
    }


PATHS = [pytest.param(FIXTURES / p, t, id=p) for p, t in REAL.items()]


@pytest.mark.parametrize("path,target", PATHS)
def test_v1_documents(fleet: LocalFleet, key: str, path: Path, target: str) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=fleet.api_url, headers=headers, timeout=120) as client:
        made = client.post(
            "/v1/documents",
            files={"file": (path.name, path.read_bytes())},
            data={"source_lang": "en", "target_lang": target},
        )
        assert made.status_code in (200, 201, 202), made.text
        job = made.json()
        done = client.get(f"/v1/jobs/{job['id']}", params={"wait": 60})
        assert done.json()["status"] == "succeeded", done.text
        got = client.get(f"/v1/jobs/{job['id']}/document")
        assert got.status_code == 200, got.text
    check(path, target, got.content, "/v1/documents")


@pytest.mark.parametrize("path,target", PATHS)
def test_deepl_v2_document(
    fleet: LocalFleet, key: str, path: Path, target: str, tmp_path: Path
) -> None:
    client = deepl.DeepLClient(key, server_url=fleet.api_url)
    out = tmp_path / path.name
    done = client.translate_document_from_filepath(
        path, out, source_lang="EN", target_lang=target.upper()
    )
    assert done.done
    check(path, target, out.read_bytes(), "DeepL /v2/document")


@pytest.mark.parametrize("path,target", PATHS)
def test_libretranslate_translate_file(
    fleet: LocalFleet, key: str, path: Path, target: str
) -> None:
    got = httpx.post(
        f"{fleet.api_url}/libretranslate/translate_file",
        files={"file": (path.name, path.read_bytes())},
        data={"source": "en", "target": target, "api_key": key},
        timeout=120,
    )
    assert got.status_code == 200, got.text
    file = httpx.get(got.json()["translatedFileUrl"], timeout=120)
    assert file.status_code == 200
    check(path, target, file.content, "LibreTranslate /translate_file")


def test_mtfleet_submit_sends_them_all_in_one_command(
    fleet: LocalFleet, key: str, tmp_path: Path
) -> None:
    by_target: dict[str, list[Path]] = {}
    for p, t in REAL.items():
        by_target.setdefault(t, []).append(FIXTURES / p)
    for target, paths in by_target.items():
        out = tmp_path / target
        proc = cli(
            fleet, "submit", *map(str, paths), "--from", "en", "--to", target, "--out",
            str(out), "--wait", MT_API_KEY=key,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        for path in paths:
            check(path, target, written(out, path).read_bytes(), "mtfleet submit")


# --- refused -----------------------------------------------------------------------------------

UNREAD = sorted((FIXTURES / "unread").iterdir())
REFUSED = [
    *(pytest.param(p, "unsupported_format", id=p.name) for p in UNREAD),
    pytest.param(FIXTURES / "broken/truncated.xlsx", "ZIP", id="truncated.xlsx"),
    pytest.param(FIXTURES / "broken/broken.yml", "YAML", id="broken.yml"),
]  # fmt: skip


@pytest.mark.parametrize("path,problem", REFUSED)
def test_a_file_that_cannot_be_read_is_refused_on_every_surface(
    fleet: LocalFleet, key: str, path: Path, problem: str, tmp_path: Path
) -> None:
    made = jobs_made(fleet)
    content = path.read_bytes()
    v1 = httpx.post(
        f"{fleet.api_url}/v1/documents",
        files={"file": (path.name, content)},
        data={"source_lang": "en", "target_lang": "es"},
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    )
    assert 400 <= v1.status_code < 500, v1.text
    error = v1.json()["error"]
    assert problem == error["type"] or problem in error["message"], error
    with pytest.raises(deepl.DeepLException) as refused:
        deepl.DeepLClient(key, server_url=fleet.api_url).translate_document_from_filepath(
            path, tmp_path / path.name, target_lang="ES"
        )
    assert path.name in str(refused.value) or problem in str(refused.value)
    lt = httpx.post(
        f"{fleet.api_url}/libretranslate/translate_file",
        files={"file": (path.name, content)},
        data={"source": "en", "target": "es", "api_key": key},
        timeout=60,
    )
    assert lt.status_code == 400, lt.text
    page = tmp_path / "page.html"
    page.write_text("<p>Hello</p>", encoding="utf-8")
    copy = tmp_path / path.name
    copy.write_bytes(content)
    proc = cli(
        fleet, "submit", str(copy), str(page), "--to", "es", "--out", str(tmp_path / "out"),
        MT_API_KEY=key,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert path.name in proc.stderr and "1 of 2 file(s) not sent" in proc.stderr
    assert jobs_made(fleet) == made + 1  # the page alone
