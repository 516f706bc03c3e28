"""The pure tables of the drop-in surfaces: DeepL's and LibreTranslate's language codes, DeepL's
parameters, glossary ids, entries and timestamps (read back with the official client's own
parser), error statuses, and how an uploaded file's format is told without its name."""

from __future__ import annotations

import datetime as dt

import pytest
from deepl.util import parse_timestamp

from mtfleet.api.deepl import errors as deepl_errors
from mtfleet.api.deepl import languages as deepl_languages
from mtfleet.api.deepl.glossaries import Dictionary, entries_of, timestamp
from mtfleet.api.deepl.glossary_ids import from_deepl, to_deepl
from mtfleet.api.deepl.params import (
    TranslateIn,
    glossaries,
    guidance,
    parse,
)
from mtfleet.api.libretranslate import errors as lt_errors
from mtfleet.api.libretranslate.routes import lt_code, to_fleet
from mtfleet.api.surfaces import V1, answer
from mtfleet.core.errors import (
    EngineError,
    InvalidInput,
    JobNotFinished,
    QuotaExceeded,
    RateLimited,
    StillTranslating,
    TooLarge,
    Unauthorized,
    UnsupportedLanguage,
)
from mtfleet.core.glossary import UnknownGlossary
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "documents"


@pytest.mark.parametrize(
    ("deepl", "fleet"),
    [
        ("EN-US", "en"),
        ("EN-GB", "en"),
        ("PT-BR", "pt"),
        ("PT-PT", "pt"),
        ("ES-419", "es"),
        ("ZH", "zh"),
        ("ZH-HANS", "zh"),
        ("ZH-HANT", "zh-Hant"),
        ("DE", "de"),
    ],
)
def test_deepl_codes_in(deepl: str, fleet: str) -> None:
    assert deepl_languages.to_fleet(deepl) == fleet


def test_deepl_codes_out() -> None:
    assert [c for c, _ in deepl_languages.targets("en")] == ["EN-GB", "EN-US"]
    assert [c for c, _ in deepl_languages.targets("zh-Hant")] == ["ZH-HANT"]
    assert deepl_languages.targets("de") == (("DE", "German"),)
    assert deepl_languages.source_code("zh-Hant") == "ZH"
    assert deepl_languages.source_code("en") == "EN"
    assert deepl_languages.glossary_code("zh-Hant") == "zh"
    with pytest.raises(UnsupportedLanguage):
        deepl_languages.to_fleet("XX")


def test_libretranslate_codes() -> None:
    assert [to_fleet(c) for c in ("pb", "zt", "zh", "zh-Hans", "ZH-hant", "pt-BR")] == [
        "pt",
        "zh-Hant",
        "zh",
        "zh",
        "zh-Hant",
        "pt",
    ]
    assert (lt_code("zh"), lt_code("zh-Hant"), lt_code("es")) == ("zh-Hans", "zh-Hant", "es")
    with pytest.raises(InvalidInput, match="xx is not supported"):
        to_fleet("xx")


def test_glossary_ids_are_uuids_on_the_deepl_surface() -> None:
    fleet_id = "0123456789abcdef0123456789abcdef"
    shown = to_deepl(fleet_id)
    assert shown == "01234567-89ab-cdef-0123-456789abcdef"
    assert from_deepl(shown.upper()) == fleet_id == from_deepl(fleet_id)


def test_deepl_timestamps_parse_with_the_clients_own_parser() -> None:
    t = 1_700_000_000.123456
    assert timestamp(t) == "2023-11-14T22:13:20.123Z"
    assert parse_timestamp(timestamp(t)) == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, dt.UTC)


def test_translate_parameters_as_the_client_and_form_bodies_send_them() -> None:
    req = parse(
        TranslateIn,
        {
            "text": "one text",
            "target_lang": "DE",
            "split_sentences": 0,
            "ignore_tags": ["x,Y", "z"],
            "splitting_tags": "p, div",
            "preserve_formatting": "1",
            "outline_detection": "0",
            "source_lang": "",
            "glossary_ids": "a1,b2",
            "something_new": "ignored",
        },
    )
    assert req.text == ["one text"]
    assert req.split_sentences == "0"
    assert req.ignore_tags == ["x", "y", "z"] and req.splitting_tags == ["p", "div"]
    assert req.preserve_formatting is True and req.outline_detection is False
    assert req.source_lang is None and req.glossary_ids == ["a1", "b2"]
    assert glossaries(req.glossary_id, req.glossary_ids) == ["a1", "b2"]  # in order
    with pytest.raises(InvalidInput, match="cannot be used together with glossary_id"):
        glossaries("a0", req.glossary_ids)
    with pytest.raises(InvalidInput, match=r"not contain more than 5 glossary IDs \(it names 6"):
        glossaries(None, [f"g{n}" for n in range(6)])
    with pytest.raises(InvalidInput, match="split_sentences"):
        parse(TranslateIn, {"text": ["x"], "target_lang": "DE", "split_sentences": "2"})
    with pytest.raises(TooLarge, match="51 texts"):
        parse(TranslateIn, {"text": ["x"] * 51, "target_lang": "DE"})


def test_every_llm_field_becomes_the_jobs() -> None:
    """Context, instructions, formality, a style rule and a translation memory reach the job
    (core/guidance.py): none is refused at parsing (a pool that cannot follow instructions
    refuses them when the job is made)."""
    req = parse(
        TranslateIn,
        {
            "text": ["x"],
            "target_lang": "DE",
            "context": "A shop.",
            "custom_instructions": ["Be brief", "No dates"],
            "formality": "less",
            "style_id": "s1",
            "translation_memory_id": "t1",
            "translation_memory_threshold": "0",
        },
    )
    assert guidance(req) == {
        "context": "A shop.",
        "custom_instructions": ["Be brief", "No dates"],
        "formality": "less",
        "style_id": "s1",
        "translation_memory_id": "t1",
        "translation_memory_threshold": 0,
    }
    assert guidance(parse(TranslateIn, {"text": ["x"], "target_lang": "DE"})) == {}


def test_glossary_entries_in_tsv_and_deepls_csv() -> None:
    tsv = Dictionary(source_lang="en", target_lang="de", entries="case\tHülle\n\nbag\tTasche")
    assert entries_of(tsv) == [("case", "Hülle"), ("bag", "Tasche")]
    csv = Dictionary(
        source_lang="en",
        target_lang="de",
        entries='case,Hülle\n"red, big",rot\nbag,Tasche,en,de\n',
        entries_format="csv",
    )
    assert entries_of(csv) == [("case", "Hülle"), ("red, big", "rot"), ("bag", "Tasche")]
    with pytest.raises(InvalidInput, match="line 2"):
        entries_of(Dictionary(source_lang="en", target_lang="de", entries="a\tb\nc"))


@pytest.mark.parametrize(
    ("exc", "v1", "deepl", "libretranslate"),
    [
        (Unauthorized("bad key"), 401, 403, 403),
        (QuotaExceeded("spent", retry_after=5), 429, 456, 429),
        (RateLimited("slow down", retry_after=2), 429, 429, 429),
        (StillTranslating("still", retry_after=1), 409, 429, 503),
        (JobNotFinished("not yet"), 409, 503, 503),
        (TooLarge("51 texts"), 422, 413, 400),
        (UnknownGlossary("no such glossary"), 422, 404, 400),
        (InvalidInput("bad"), 422, 400, 400),
        (EngineError("engine failed"), 500, 500, 500),
    ],
)
def test_each_surface_maps_the_error_tree_to_its_clients_statuses(
    exc: Exception, v1: int, deepl: int, libretranslate: int
) -> None:
    assert answer(V1, exc).status_code == v1
    assert answer(deepl_errors.SURFACE, exc).status_code == deepl
    assert answer(lt_errors.SURFACE, exc).status_code == libretranslate


def test_error_bodies_are_each_clients_shape() -> None:
    d = deepl_errors.render(429, "rate_limited", "wait", retry_after=3)
    assert d.body == b'{"message":"wait"}' and d.headers["Retry-After"] == "3"
    assert answer(deepl_errors.SURFACE, Unauthorized("no key")).status_code == 403
    lt = lt_errors.render(429, "rate_limited", "wait")
    assert lt.body == b'{"error":"Slowdown: wait"}'
    assert lt.headers["Access-Control-Allow-Origin"] == "*"
