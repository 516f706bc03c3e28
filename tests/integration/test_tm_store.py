"""Translation memories (core/tm/store.py, core/tm/formats.py) on a real Redis: importing TMX,
TSV and CSV files as CAT tools and spreadsheets write them (inline codes, several languages in
one TMX, headers, quoting, UTF-16), what a bad file is told, every limit a clear 4xx, versions
and the index after corrections (incrementally, after a rewrite of the base, in another
process), owners kept apart, delete, the storage quota, concurrent corrections, and export."""

from __future__ import annotations

import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis

from mtfleet.core.apikeys import Storage
from mtfleet.core.errors import InvalidInput, StorageQuotaExceeded
from mtfleet.core.tm import (
    TMInfo,
    TMLimits,
    TMLookup,
    TMMatch,
    TMNotFound,
    TranslationMemoryStore,
    UnknownTranslationMemory,
    forget_indexes,
)
from mtfleet.core.tm import store as tm_store
from mtfleet.core.tm.store import tm_base_key, tm_key, tm_log_key, tms_key
from mtfleet.formats.base import DocumentError
from tests.conftest import ROOT

A, B = "key-a", "key-b"

# As Trados and memoQ write them: a header with props, several languages per unit (regional
# codes), inline codes with their native markup, notes and props in the units, a unit without
# Spanish, one with an empty target, and one whose source differs from another's in spacing.
TMX = (ROOT / "tests" / "fixtures" / "tm" / "shop.tmx").read_bytes()


@pytest.fixture
def tms(r: redis.Redis) -> TranslationMemoryStore:
    forget_indexes()
    return TranslationMemoryStore(r)


def matched(found: TMLookup) -> TMMatch:
    assert found.match is not None
    return found.match


def stored(tms: TranslationMemoryStore, tm_id: str) -> list[tuple[str, str]]:
    """A memory's pairs as a worker reads them (its index, loaded from Redis afresh)."""
    forget_indexes()
    info = tms.get(tm_id)
    assert info is not None
    return tms.index(tm_id, info.version).pairs()


def imported(
    tms: TranslationMemoryStore, content: bytes, name: str, src: str, tgt: str
) -> tuple[TMInfo, dict[str, str]]:
    info = tms.import_file(A, "shop", src, tgt, content, name)
    return info, dict(stored(tms, info.id))


# --- formats ----------------------------------------------------------------------------------


def test_a_tmx_from_a_cat_tool_keeps_its_inline_codes_as_the_fleets_tags(
    tms: TranslationMemoryStore,
) -> None:
    info, pairs = imported(tms, TMX, "shop.tmx", "en", "es")
    assert (info.source_lang, info.target_lang, info.entry_count) == ("en", "es", 5)
    assert info.skipped == 2  # unit 4 has no Spanish, unit 7 an empty target
    assert pairs == {
        # unit 8 normalizes to unit 1's source: the later one wins
        "Free shipping on all orders.": "Envío gratuito en todos los pedidos.",
        "Click <g1>here</g1> to pay<x2/>": "Haga clic <g1>aquí</g1> para pagar<x2/>",
        # a code holding a placeholder is the placeholder; the target's codes take the
        # numbers of the source's, whatever their order there
        "{0} items in <g1>your cart</g1>": "<g1>Su carrito</g1> tiene {0} artículos",
        # <hi> keeps its text; <it> is a standalone code
        "An order was <x1/>placed": "Se hizo un pedido<x1/>",
        # crossed pairs: the pair that nests well stays paired, the other two are standalone
        # (the target's pair is the source's first code)
        "Crossed <x1/>codes<g2> here<x3/>)</g2>": "Códigos <g1>cruzados</g1>",
    }


def test_one_tmx_gives_any_pair_of_its_languages(tms: TranslationMemoryStore) -> None:
    info, fr = imported(tms, TMX, "shop.tmx", "en", "fr")
    assert info.entry_count == 2 and info.skipped == 6
    assert fr["Only in English and French."] == "Seulement en anglais et en français."
    info, es_en = imported(tms, TMX, "shop.tmx", "es-ES", "EN_us")
    assert (info.source_lang, info.target_lang) == ("es", "en")
    assert es_en["Envío gratis en todos los pedidos."] == "Free shipping on all orders."
    with pytest.raises(InvalidInput, match=r"en-US, es-ES, fr-FR; none of them is de"):
        tms.import_file(A, "x", "en", "de", TMX, "shop.tmx")


def test_tmx_1_1_lang_attributes_and_a_nameless_file_told_by_its_bytes(
    tms: TranslationMemoryStore,
) -> None:
    old = (
        b"<?xml version='1.0' encoding='ISO-8859-1'?>\n<tmx version='1.1'><header/>"
        b"<body><tu><tuv lang='EN'><seg>Caf\xe9 menu</seg></tuv>"
        b"<tuv lang='PT-BR'><seg>Card\xe1pio do caf\xe9</seg></tuv></tu></body></tmx>"
    )
    _, pairs = imported(tms, old, "", "en", "pt")
    assert pairs == {"Café menu": "Cardápio do café"}


def test_tsv_and_csv_as_spreadsheets_write_them(tms: TranslationMemoryStore) -> None:
    # a header of language codes picks two columns of several; blank lines are skipped
    tsv = (
        "en-US\tde-DE\tes-ES\nSave\tSpeichern\tGuardar\n\nOpen\tÖffnen\t\n"
        "Close\tSchließen\tCerrar\n"
    )
    info, pairs = imported(tms, tsv.encode(), "ui.tsv", "en", "es")
    assert pairs == {"Save": "Guardar", "Close": "Cerrar"} and info.skipped == 1
    # Excel's "Unicode text": UTF-16 with a byte-order mark, no header
    info, pairs = imported(tms, "Save\tGuardar\r\nOpen\tAbrir\r\n".encode("utf-16"), "", "en", "es")
    assert pairs == {"Save": "Guardar", "Open": "Abrir"}
    # CSV with a source,target header, quoted commas, quotes and line breaks
    csv_text = (
        'source,target\n"Hello, world","Hola, mundo"\n"Say ""hi""","Di ""hola"""\n'
        '"Two\nlines","Dos\nlíneas"\n'
    )
    info, pairs = imported(tms, csv_text.encode("utf-8-sig"), "hello.csv", "en", "es")
    assert pairs == {
        "Hello, world": "Hola, mundo",
        'Say "hi"': 'Di "hola"',
        "Two lines": "Dos\nlíneas",
    }
    # CSV without a header, told by its bytes
    info, pairs = imported(tms, b"Yes,S\xc3\xad\nNo,No\n", "", "en", "es")
    assert pairs == {"Yes": "Sí", "No": "No"}


@pytest.mark.parametrize(
    ("content", "name", "says"),
    [
        (b"<tmx version='1.4'><body><tu>", "x.tmx", "not well-formed"),
        (
            b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 '
            b'"&lol;&lol;&lol;">]><tmx><body><tu><tuv xml:lang="en"><seg>&lol2;</seg></tuv>'
            b"</tu></body></tmx>",
            "bomb.tmx",
            "DOCTYPE",
        ),
        (b"<xliff version='1.2'/>", "x.tmx", "root element is <xliff>"),
        (b"<tmx version='1.4'><header/></tmx>", "x.tmx", "no <body>"),
        (
            b"<tmx><body><tu><tuv xml:lang='en'><seg>a</seg></tuv><tuv xml:lang='es'><seg> "
            b"</seg></tuv></tu></body></tmx>",
            "x.tmx",
            "no <tu> with both",
        ),
        (b"one\ttwo\tthree\n", "x.tsv", "line 1: expected 2 columns"),
        (b"a,b\nc\n", "x.csv", "line 2: expected 2 columns"),
        (b"en,fr\nhello,bonjour\n", "x.csv", "none of them is es"),
        (b"caf\xe9\tcaf\xe9\n", "x.tsv", "not UTF-8 (byte 0xe9 at offset 3)"),
        (b"a\x00b,c\n", "x.csv", "control character U+0000"),
        (b"\n\n", "x.tsv", "no en->es pair"),
    ],
)
def test_a_bad_file_is_a_422_that_says_what_and_where(
    tms: TranslationMemoryStore, content: bytes, name: str, says: str
) -> None:
    with pytest.raises(InvalidInput) as err:
        tms.import_file(A, "bad", "en", "es", content, name)
    assert says in err.value.message
    assert tms.list_for(A) == []


def test_limits_are_clear_4xx(r: redis.Redis) -> None:
    tms = TranslationMemoryStore(
        r, TMLimits(max_pairs=3, max_segment_bytes=20, max_import_bytes=200, max_per_owner=2)
    )
    with pytest.raises(InvalidInput, match=r"4 pairs; a translation memory holds at most 3 "):
        tms.create(A, "x", "en", "es", [(f"s{i}", "t") for i in range(4)])
    with pytest.raises(InvalidInput, match=r"entry 2: the target .* has 21 bytes; .*SEGMENT"):
        tms.create(A, "x", "en", "es", [("a", "b"), ("c", "é" * 10 + "x")])
    with pytest.raises(InvalidInput, match=r"line 2: the source .* has 26 bytes"):
        tms.import_file(A, "x", "en", "es", b"a\tb\n" + b"y" * 26 + b"\tz\n", "x.tsv")
    with pytest.raises(InvalidInput, match=r"201 bytes; an import may have 200 .*IMPORT"):
        tms.import_file(A, "x", "en", "es", b"a\tb\n" * 50 + b"c", "x.tsv")
    with pytest.raises(InvalidInput, match="entry 1: the source is not valid Unicode"):
        tms.create(A, "x", "en", "es", [("\ud800", "y")])
    with pytest.raises(InvalidInput, match="name"):
        tms.create(A, "", "en", "es", [])
    with pytest.raises(InvalidInput, match="both 'en'"):
        tms.create(A, "x", "en-US", "EN", [])
    first = tms.create(A, "x", "en", "es", [("a", "b")])
    tms.create(A, "y", "en", "es", [])  # an empty memory, for corrections to fill
    with pytest.raises(InvalidInput, match="MT_TM_MAX_PER_KEY"):
        tms.create(A, "z", "en", "es", [])
    tms.create(B, "z", "en", "es", [])  # another key has its own
    with pytest.raises(InvalidInput, match=r"4 pairs; .* at most 3"):
        tms.add_entries(first.id, A, [("c", "d"), ("e", "f"), ("g", "h")])
    assert tms.add_entries(first.id, A, [("c", "d"), ("a", "B")]).entry_count == 2


# --- versions, corrections and the index ------------------------------------------------------


def test_a_correction_makes_a_new_version_the_next_lookup_sees(
    tms: TranslationMemoryStore,
) -> None:
    info = tms.create(A, "shop", "en", "es", [("Save the file", "Guarde el archivo")])
    before = tms.index(info.id, info.version)
    assert matched(before.lookup("Save the file")).target == "Guarde el archivo"
    t0 = time.monotonic()
    changed = tms.add_entries(
        info.id, A, [("Save  the file", "Guardar el archivo"), ("Open it", "Ábralo")]
    )
    seen = tms.for_job(changed.id, owner=A, source="en", target="es")
    after = tms.index(seen.id, seen.version).lookup("Save the file").match
    assert time.monotonic() - t0 < 1.0
    assert after is not None and after.target == "Guardar el archivo"
    assert changed.version != info.version and changed.entry_count == 2
    assert changed.updated_at >= info.updated_at
    # a job accepted before the correction still has its version in this process
    assert tms.index(info.id, info.version) is before
    # the same pairs again change nothing: no new version
    same = tms.add_entries(info.id, A, [("Save the file", "Guardar el archivo")])
    assert same.version == changed.version
    # another process (nothing held) loads the same memory from Redis
    forget_indexes()
    fresh = tms.index(info.id, changed.version)
    assert fresh.pairs() == [("Save the file", "Guardar el archivo"), ("Open it", "Ábralo")]


def test_the_index_follows_the_log_and_a_rewrite_of_the_base(
    tms: TranslationMemoryStore, r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tm_store, "LOG_MAX_RECORDS", 3)
    info = tms.create(
        A, "shop", "en", "es", [(f"Sentence number {i}", f"Frase {i}") for i in range(50)]
    )
    held = tms.index(info.id, info.version)
    versions = [info.version]
    for n in range(9):
        changed = tms.add_entries(
            info.id, A, [(f"Sentence number {n}", f"Oración {n}"), (f"New {n}", f"Nueva {n}")]
        )
        versions.append(changed.version)
        ix = tms.index(info.id, changed.version)
        assert ix.version == changed.version
        assert matched(ix.lookup(f"Sentence number {n}")).target == f"Oración {n}"
        assert matched(ix.lookup(f"New {n}")).target == f"Nueva {n}"
    meta = r.hgetall(tm_key(info.id))
    # appended 3 times, then rewritten with the 4th (and the 8th): the 9th is in the log
    assert int(meta["gen"]) == 2 and int(meta["log_len"]) == 1
    assert r.llen(tm_log_key(info.id)) == 1
    assert len(set(versions)) == 10 and int(meta["entry_count"]) == 59
    final = tms.index(info.id, versions[-1])
    assert matched(held.lookup("Sentence number 0")).target == "Frase 0"  # still version 1
    assert stored(tms, info.id) == final.pairs()  # the index and a full read agree
    # an index at an old version no longer held gives the memory as it is now
    forget_indexes()
    assert tms.index(info.id, versions[2]).version == versions[-1]


def test_concurrent_corrections_are_all_kept(tms: TranslationMemoryStore) -> None:
    info = tms.create(A, "shop", "en", "es", [])
    barrier = threading.Barrier(8)

    def correct(n: int) -> None:
        barrier.wait()
        for k in range(5):
            tms.add_entries(info.id, A, [(f"segment {n} {k}", f"segmento {n} {k}")])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(correct, range(8)))
    final = tms.get(info.id)
    assert final is not None and final.entry_count == 40
    assert len(stored(tms, info.id)) == 40
    assert len(tms.index(info.id, final.version)) == 40


# --- owners, delete, storage ------------------------------------------------------------------


def test_a_memory_is_its_owners_alone(tms: TranslationMemoryStore) -> None:
    info = tms.create(A, "shop", "en", "es", [("Save", "Guardar")])
    assert [i.id for i in tms.list_for(A)] == [info.id] and tms.list_for(B) == []
    with pytest.raises(TMNotFound):
        tms.visible(info.id, B)
    with pytest.raises(TMNotFound):
        tms.add_entries(info.id, B, [("Save", "Salvar")])
    with pytest.raises(UnknownTranslationMemory):
        tms.for_job(info.id, owner=B, source="en", target="es")
    with pytest.raises(UnknownTranslationMemory):
        tms.for_job("0" * 32, owner=A, source="en", target="es")
    with pytest.raises(UnknownTranslationMemory):
        tms.for_job("../../etc", owner=A, source="en", target="es")
    with pytest.raises(InvalidInput, match="is for en->es; this request is en->fr"):
        tms.for_job(info.id, owner=A, source="en", target="fr")
    assert not tms.delete(info.id, B)
    # DeepL's form of the id is the same memory
    uuid = f"{info.id[:8]}-{info.id[8:12]}-{info.id[12:16]}-{info.id[16:20]}-{info.id[20:]}"
    assert tms.for_job(uuid.upper(), owner=A, source="en", target="es").id == info.id
    # without auth ('' owner) every memory is visible
    assert tms.visible(info.id, "").id == info.id


def test_delete_hides_at_once_and_keeps_the_pairs_for_accepted_jobs(
    tms: TranslationMemoryStore, r: redis.Redis
) -> None:
    info = tms.create(A, "shop", "en", "es", [("Save", "Guardar")])
    tms.add_entries(info.id, A, [("Open", "Abrir")])
    version = tms.for_job(info.id, owner=A, source="en", target="es").version
    assert tms.delete(info.id, A, retention_s=600)
    assert tms.get(info.id) is None and tms.list_for(A) == [] and not tms.delete(info.id, A)
    with pytest.raises(UnknownTranslationMemory):
        tms.for_job(info.id, owner=A, source="en", target="es")
    with pytest.raises(TMNotFound):
        tms.add_entries(info.id, A, [("Close", "Cerrar")])
    for key in (tm_key(info.id), tm_base_key(info.id), tm_log_key(info.id)):
        assert 0 < r.ttl(key) <= 600
    forget_indexes()  # a worker that never saw it, running a job accepted before the delete
    assert matched(tms.index(info.id, version).lookup("Open")).target == "Abrir"
    r.delete(tm_key(info.id), tm_base_key(info.id), tm_log_key(info.id))  # expired
    forget_indexes()
    with pytest.raises(TMNotFound):
        tms.index(info.id, version)
    other = tms.create(A, "a", "en", "es", [])
    tms.create(A, "b", "en", "es", [])
    assert tms.delete_owned(A) == 2 and tms.get(other.id) is None
    assert r.exists(tms_key(A)) == 0


def test_what_a_memory_keeps_counts_against_its_keys_storage(
    tms: TranslationMemoryStore, r: redis.Redis
) -> None:
    quota = Storage(r, A, 4_000)
    pairs = [(f"Sentence {i} of the shop", f"Frase {i} de la tienda") for i in range(20)]
    info = tms.create(A, "shop", "en", "es", pairs, storage=quota)
    used = quota.used()
    assert 0 < used < 4_000
    big = [(secrets.token_hex(200), secrets.token_hex(200)) for _ in range(10)]
    with pytest.raises(StorageQuotaExceeded):
        tms.add_entries(info.id, A, big, storage=quota)
    assert (
        quota.used() == used and tms.visible(info.id, A).version == info.version
    )  # nothing changed
    with pytest.raises(StorageQuotaExceeded):
        tms.create(A, "big", "en", "es", big, storage=quota)
    grown = tms.add_entries(info.id, A, [("One more", "Una más")], storage=quota)
    assert quota.used() > used and grown.entry_count == 21
    assert tms.delete(info.id, A, storage=quota) and quota.used() == 0


# --- export -----------------------------------------------------------------------------------


def test_export_is_tmx_that_imports_back_to_the_same_pairs(
    tms: TranslationMemoryStore, tmp_path: Path
) -> None:
    info, _ = imported(tms, TMX, "shop.tmx", "en", "es")
    tms.add_entries(info.id, A, [('Fish & chips <x1/> "quoted"', 'Pescado <x1/> & "patatas"')])
    tms.add_entries(info.id, A, [("<g1>{n}</g1> of %s", "%s: <g1>{n}</g1>")])
    path = tmp_path / "export.tmx"
    tms.export(info.id, path)
    tmx = path.read_bytes()
    assert tmx.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4">')
    assert b'<bpt i="1" x="1">&lt;g1&gt;</bpt>here<ept i="1">&lt;/g1&gt;</ept>' in tmx
    # a placeholder is a code holding it, numbered after the pair's tags, alike on both sides
    assert b'<seg><ph x="2">{0}</ph> items in <bpt i="1" x="1">' in tmx
    assert (
        b'<seg><bpt i="1" x="1">&lt;g1&gt;</bpt><ph x="2">{n}</ph><ept i="1">&lt;/g1&gt;</ept>'
        in tmx
    )
    assert b' of <ph x="3">%s</ph></seg>' in tmx and b'<seg><ph x="3">%s</ph>: <bpt' in tmx
    again = tms.import_file(A, "again", "en", "es", path, "export.tmx")  # a file read as it goes
    assert stored(tms, again.id) == stored(tms, info.id)
    with pytest.raises(TMNotFound):
        tms.export("f" * 32, path)


def test_xliff_style_codes_and_a_placeholder_in_any_code(tms: TranslationMemoryStore) -> None:
    """``<x/>`` and ``<g>`` (as tools that convert from XLIFF write them) are codes too; a code
    whose content, or ``equiv-text``, is a placeholder is that placeholder."""
    tmx = (
        b'<tmx version="1.4"><header/><body><tu>'
        b'<tuv xml:lang="en"><seg>Hi <x id="7"/> and <g id="2">bye <x id="8" '
        b'equiv-text="{{name}}"/></g> <it pos="begin">%1$d</it></seg></tuv>'
        b'<tuv xml:lang="es"><seg><g id="2">adi\xc3\xb3s <x id="8" equiv-text="{{name}}"/></g>'
        b' y hola <x id="7"/> <ut>%1$d</ut></seg></tuv></tu></body></tmx>'
    )
    _, pairs = imported(tms, tmx, "x.tmx", "en", "es")
    assert pairs == {
        "Hi <x1/> and <g2>bye {{name}}</g2> %1$d": "<g2>adiós {{name}}</g2> y hola <x1/> %1$d"
    }


def test_the_hardened_parser_is_the_one_used(tms: TranslationMemoryStore) -> None:
    """A TMX that names an external entity is refused before anything is read from disk."""
    xxe = (
        b'<?xml version="1.0"?><!DOCTYPE tmx [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b"<tmx><body><tu><tuv xml:lang='en'><seg>&x;</seg></tuv><tuv xml:lang='es'><seg>x</seg>"
        b"</tuv></tu></body></tmx>"
    )
    with pytest.raises(DocumentError, match="DOCTYPE"):
        tms.import_file(A, "xxe", "en", "es", xxe, "x.tmx")
