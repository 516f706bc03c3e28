"""core/langdetect.py over the real lingua models: codes from our catalogue, None for text
without letters, confidences for one language, and which codes the detector knows."""

from __future__ import annotations

import threading

import pytest

from mtfleet.core import langdetect, languages
from mtfleet.core.errors import UnsupportedLanguage

SENTENCES = {
    "en": "Your order has shipped and will arrive tomorrow morning.",
    "es": "Tu pedido ha sido enviado y llegará mañana por la mañana.",
    "de": "Ihre Bestellung wurde versandt und kommt morgen früh an.",
    "ru": "Ваш заказ отправлен и прибудет завтра утром.",
    "zh": "您的订单已发货，明天早上到达。",
    "ja": "ご注文の商品は発送済みで、明日の朝に届きます。",
}


@pytest.mark.parametrize("accuracy", ["high", "low"])
def test_sentences_are_detected_with_catalogue_codes(accuracy: langdetect.Accuracy) -> None:
    found = langdetect.detect_many(list(SENTENCES.values()), accuracy=accuracy)
    assert [f[0] if f else None for f in found] == list(SENTENCES)
    assert all(f is not None and 0 < f[1] <= 1 for f in found)


def test_detect_is_detect_many_of_one() -> None:
    one, many = langdetect.detect(SENTENCES["es"]), langdetect.detect_many([SENTENCES["es"]])[0]
    assert one is not None and many is not None
    assert one[0] == many[0] and one[1] == pytest.approx(many[1])


@pytest.mark.parametrize("text", ["", "12345", "  -- ?! "])
def test_nothing_to_tell_is_none(text: str) -> None:
    assert langdetect.detect(text) is None
    assert langdetect.detect_many([]) == []


def test_confidence_many() -> None:
    es = langdetect.confidence_many([SENTENCES["es"], SENTENCES["en"], "12345"], "es")
    assert es[0] > 0.5 and es[1] < 0.05 and es[2] == 0
    # zh-Hant is judged as Chinese
    assert langdetect.confidence_many([SENTENCES["zh"]], "zh-TW")[0] > 0.9
    with pytest.raises(UnsupportedLanguage):
        langdetect.confidence_many(["hello"], "km")


def test_supported_codes_are_catalogue_codes() -> None:
    assert set(languages.LANGUAGES) >= langdetect.SUPPORTED
    assert langdetect.supports("EN") and langdetect.supports("zh-Hant")
    for code in ("km", "my", "bo", "ug", "yue", "gl", "oc", "xx"):
        assert not langdetect.supports(code)


def test_detectors_are_built_once_under_concurrency() -> None:
    langdetect._detectors.clear()
    results: list[object] = []

    def use() -> None:
        results.append(langdetect.detect(SENTENCES["de"], accuracy="low"))

    threads = [threading.Thread(target=use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(langdetect._detectors) == 1
    assert all(r is not None and r[0] == "de" for r in results)
