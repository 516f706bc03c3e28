"""core/languages.py: code normalisation, the Hunyuan-MT catalogue, ISO 639-3 lookup."""

from __future__ import annotations

import pytest

from mtfleet.core import languages
from mtfleet.core.errors import UnsupportedLanguage

# The 38 codes of Hunyuan-MT-7B's model card.
HUNYUAN_CODES = (
    *("zh", "en", "fr", "pt", "es", "ja", "tr", "ru", "ar", "ko", "th", "it", "de"),
    *("vi", "ms", "id", "tl", "hi", "zh-Hant", "pl", "cs", "nl", "km", "my", "fa"),
    *("gu", "ur", "te", "mr", "he", "bn", "ta", "uk", "bo", "kk", "mn", "ug", "yue"),
)


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("en", "en"),
        ("EN", "en"),
        (" en ", "en"),
        ("en-US", "en"),
        ("en_gb", "en"),
        ("pt-BR", "pt"),
        ("zh", "zh"),
        ("zh-CN", "zh"),
        ("zh_CN", "zh"),
        ("zh-Hans", "zh"),
        ("zh-TW", "zh-Hant"),
        ("zh-HK", "zh-Hant"),
        ("zh-hant", "zh-Hant"),
        ("zh-Hant", "zh-Hant"),
        ("ZH-HANT", "zh-Hant"),
        ("YUE", "yue"),
        ("fil", "tl"),
        ("iw", "he"),
        ("in", "id"),
    ],
)
def test_normalize(raw: str, code: str) -> None:
    assert languages.normalize(raw) == code


@pytest.mark.parametrize("raw", ["xx", "klingon", "", "  ", "e"])
def test_unknown_code_lists_supported_codes(raw: str) -> None:
    with pytest.raises(UnsupportedLanguage) as info:
        languages.normalize(raw)
    err = info.value
    assert err.code == "unsupported_language"
    assert "supported codes:" in err.message
    for code in ("en", "es", "zh-Hant", "yue"):
        assert code in err.message
    assert err.details["supported"] == languages.supported_codes()


def test_hunyuan_codes_present() -> None:
    assert len(HUNYUAN_CODES) == 38
    assert len(set(HUNYUAN_CODES)) == 38
    for code in HUNYUAN_CODES:
        assert code in languages.LANGUAGES
        assert languages.normalize(code) == code


def test_every_language_has_names_for_prompts() -> None:
    for code, lang in languages.LANGUAGES.items():
        assert lang.code == code
        assert lang.english and lang.chinese
        assert len(lang.iso3) == 3


def test_get_returns_names() -> None:
    assert languages.get("ES").english == "Spanish"
    assert languages.get("zh-TW").chinese == "繁体中文"
    assert languages.get("en").chinese == "英语"


@pytest.mark.parametrize(
    ("iso3", "code"),
    [("eng", "en"), ("spa", "es"), ("cat", "ca"), ("zho", "zh"), ("yue", "yue")],
)
def test_from_iso3(iso3: str, code: str) -> None:
    assert languages.from_iso3(iso3) == code


@pytest.mark.parametrize("iso3", ["xxx", "", "en"])
def test_from_iso3_unknown(iso3: str) -> None:
    assert languages.from_iso3(iso3) is None


def test_chinese_set() -> None:
    assert frozenset({"zh", "zh-Hant", "yue"}) == languages.CHINESE


@pytest.mark.parametrize("raw", ["zh-Hant-TW", "zh-Hant-HK", "zh_Hant_TW"])
def test_traditional_chinese_with_region(raw: str) -> None:
    assert languages.normalize(raw) == "zh-Hant"


@pytest.mark.parametrize(("raw", "code"), [("fil-PH", "tl"), ("iw-IL", "he"), ("in-ID", "id")])
def test_alias_with_region(raw: str, code: str) -> None:
    assert languages.normalize(raw) == code
