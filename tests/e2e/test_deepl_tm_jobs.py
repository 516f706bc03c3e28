"""DeepL's translation-memory jobs as the official ``deepl`` client (1.32, unchanged) runs them
against a real fleet (``mtfleet api`` with API keys required and an Apertium worker, each a
process of its own): ``import_translation_memory_from_filepath`` (create the job, PUT the file
to its upload URL, poll), ``list_translation_memory_segments`` with its filter,
``export_translation_memory_to_filepath``, ``delete_translation_memory``; the memories are the
ones ``/v1/translation_memories`` and ``mtfleet tm`` show, and a bad file is the client's
exception with the reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import deepl
import httpx
import pytest

from mtfleet.fleet.localfleet import LocalFleet
from tests.e2e.fleet_control import apertium_fleet, cli

STORE_TMX = """<?xml version="1.0" encoding="UTF-8"?>
<tmx version="1.4">
  <header creationtool="test" creationtoolversion="1" o-tmf="test" datatype="plaintext"
          segtype="sentence" adminlang="en-US" srclang="en-US"/>
  <body>
    <tu><tuv xml:lang="en-US"><seg>Add to cart</seg></tuv>
        <tuv xml:lang="es-ES"><seg>Añadir a la cesta</seg></tuv></tu>
    <tu><tuv xml:lang="en-US"><seg>You have <ph>{0}</ph> items in your cart</seg></tuv>
        <tuv xml:lang="es-ES"><seg>Tiene <ph>{0}</ph> artículos en la cesta</seg></tuv></tu>
    <tu><tuv xml:lang="en-US"><seg>Click <bpt i="1">&lt;b&gt;</bpt>here<ept i="1"
        >&lt;/b&gt;</ept></seg></tuv>
        <tuv xml:lang="es-ES"><seg>Haga clic <bpt i="1">&lt;b&gt;</bpt>aquí<ept i="1"
        >&lt;/b&gt;</ept></seg></tuv></tu>
    <tu><tuv xml:lang="en-US"><seg>Only English here</seg></tuv></tu>
  </body>
</tmx>
"""


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    env = {"MT_AUTH": "required", "MT_AUTH_CACHE_S": "0"}
    with apertium_fleet(redis_server, env) as f:
        yield f


@pytest.fixture(scope="module")
def key(fleet: LocalFleet) -> str:
    return fleet.create_api_key("deepl-tm-jobs")


@pytest.fixture(scope="module")
def client(fleet: LocalFleet, key: str) -> deepl.DeepLClient:
    return deepl.DeepLClient(key, server_url=fleet.api_url)


def v1(fleet: LocalFleet, key: str, path: str = "") -> httpx.Response:
    return httpx.get(
        f"{fleet.api_url}/v1/translation_memories{path}",
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )


def segments(client: deepl.DeepLClient, tm: str, **filters: object) -> list[tuple[str, str]]:
    page = client.list_translation_memory_segments(
        tm,
        page_size=100,
        **filters,  # type: ignore[arg-type]
    )
    assert page.next_page_cursor is None
    return [(s.source_text, s.targets[0].target_text) for s in page]


def test_import_list_export_delete_through_the_official_client(
    fleet: LocalFleet, key: str, client: deepl.DeepLClient, tmp_path: Path
) -> None:
    tmx = tmp_path / "store.tmx"
    tmx.write_text(STORE_TMX, encoding="utf-8")
    job = client.import_translation_memory_from_filepath(tmx, display_name="store", timeout_s=60)
    assert job.ok and job.status == "completed" and job.operation == "import"
    assert job.display_name == "store" and job.source_content_length == tmx.stat().st_size
    assert job.result is not None and job.result.skipped_segment_count == 1  # English only
    uuid = job.result.translation_memory_id
    assert uuid is not None and len(uuid) == 36
    tm_id = uuid.replace("-", "")

    # the same memory on /v1, in mtfleet tm, and in the client's own listing
    got = v1(fleet, key, f"/{tm_id}")
    assert got.status_code == 200, got.text
    assert {k: got.json()[k] for k in ("name", "source_lang", "target_lang", "entry_count")} == {
        "name": "store",
        "source_lang": "en",
        "target_lang": "es",
        "entry_count": 3,
    }
    listed = cli(fleet, "tm", "list", MT_API_KEY=key)
    assert listed.returncode == 0, listed.stderr
    assert f"{tm_id}\tstore\ten->es\t3\t" in listed.stdout
    info = client.get_translation_memory(uuid)
    assert (info.source_language, info.target_languages, info.segment_count) == ("en", ["es"], 3)

    # a request names it: the stored translation, not Apertium's ("Añade a carro")
    served = client.translate_text(
        "Add to cart", source_lang="EN", target_lang="ES", translation_memory=uuid
    )
    assert served.text == "Añadir a la cesta"  # type: ignore[union-attr]

    # the segments, filtered as the client asks (case-insensitive unless told)
    assert segments(client, uuid, filter_text="CART") == [
        ("Add to cart", "Añadir a la cesta"),
        ("You have {0} items in your cart", "Tiene {0} artículos en la cesta"),
    ]
    assert segments(client, uuid, filter_text="CART", filter_case_sensitive=True) == []
    assert segments(client, uuid, filter_text="aquí") == [
        ("Click <g1>here</g1>", "Haga clic <g1>aquí</g1>")
    ]
    everything = segments(client, uuid)
    assert len(everything) == 3

    # the export: /v1's file byte for byte, and imported again it is the same memory
    out = tmp_path / "exported.tmx"
    done = client.export_translation_memory_to_filepath(uuid, out, timeout_s=60)
    assert done.ok and done.operation == "export" and done.translation_memory_id == uuid
    assert out.read_bytes() == v1(fleet, key, f"/{tm_id}/export").content
    again = client.import_translation_memory_from_filepath(out, timeout_s=60)
    assert again.result is not None and again.result.translation_memory_id
    assert segments(client, again.result.translation_memory_id) == everything
    assert again.display_name == "exported.tmx"  # no display_name: the file's name
    client.delete_translation_memory(again.result.translation_memory_id)

    # deleted through the client: gone from /v1, the CLI and the client alike
    client.delete_translation_memory(uuid)
    assert v1(fleet, key, f"/{tm_id}").status_code == 404
    assert tm_id not in cli(fleet, "tm", "list", MT_API_KEY=key).stdout
    with pytest.raises(deepl.DeepLException, match="Not found"):
        client.get_translation_memory(uuid)
    with pytest.raises(deepl.DeepLException, match="Not found"):
        client.export_translation_memory_to_filepath(uuid, out)


THREE_LANGUAGES = STORE_TMX.replace(
    '<tuv xml:lang="es-ES"><seg>Añadir a la cesta</seg></tuv>',
    '<tuv xml:lang="es-ES"><seg>Añadir a la cesta</seg></tuv>'
    '<tuv xml:lang="fr-FR"><seg>Ajouter au panier</seg></tuv>',
)


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("broken.tmx", "<tmx><body><tu><tuv>", "is not well-formed XML"),
        ("page.tmx", "<html><body/></html>", "is not TMX: its root element is <html>"),
        ("shop.csv", "source,target\nAdd to cart,Añadir\n", "is not TMX"),
        ("three.tmx", THREE_LANGUAGES, r"one language pair.*it has 2 \(es, fr\)"),
        ("english.tmx", STORE_TMX.replace("es-ES", "en-GB"), "one target: it has none"),
    ],
)
def test_a_bad_file_is_the_clients_exception_with_the_reason(
    fleet: LocalFleet,
    key: str,
    client: deepl.DeepLClient,
    tmp_path: Path,
    name: str,
    content: str,
    reason: str,
) -> None:
    before = v1(fleet, key).json()
    bad = tmp_path / name
    bad.write_text(content, encoding="utf-8")
    with pytest.raises(deepl.DeepLException, match="importing translation memory: .*" + reason):
        client.import_translation_memory_from_filepath(bad, timeout_s=60)
    assert v1(fleet, key).json() == before  # no memory was made


def test_jobs_and_urls_are_their_keys_own(
    fleet: LocalFleet, key: str, client: deepl.DeepLClient, tmp_path: Path
) -> None:
    created = client.create_translation_memory_import("shop.tmx", len(STORE_TMX.encode()))
    assert created.upload_url.startswith(fleet.api_url + "/")
    assert created.expires_at is not None
    waiting = client.get_translation_memory_job(created.job_id)
    assert waiting.status == "awaiting_input" and not waiting.done
    other = deepl.DeepLClient(fleet.create_api_key("someone-else"), server_url=fleet.api_url)
    with pytest.raises(deepl.DeepLException, match="Not found"):
        other.get_translation_memory_job(created.job_id)
    wrong = created.upload_url.rsplit("/", 1)[0] + "/not-the-token"
    with pytest.raises(deepl.DeepLException, match="HTTP status: 404"):
        client.upload_translation_memory_file(wrong, STORE_TMX.encode())
    # declared one size, sent another: the job fails and says so
    client.upload_translation_memory_file(created, STORE_TMX.encode() + b"\n")
    failed = client.wait_until_translation_memory_job_done(created.job_id, timeout_s=60)
    assert not failed.ok and failed.result is not None
    assert "the import declared content_length" in (failed.result.error_message or "")

    tmx = tmp_path / "mine.tmx"
    tmx.write_text(STORE_TMX, encoding="utf-8")
    mine = client.import_translation_memory_from_filepath(tmx, timeout_s=60)
    assert mine.result is not None and mine.result.translation_memory_id
    with pytest.raises(deepl.DeepLException, match="Not found"):
        other.create_translation_memory_export(mine.result.translation_memory_id)
    with pytest.raises(deepl.DeepLException, match=r"Bad request.*MT_TM_MAX_IMPORT_BYTES"):
        client.create_translation_memory_import("huge.tmx", 10**12)
    client.delete_translation_memory(mine.result.translation_memory_id)
