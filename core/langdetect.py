"""Language detection with lingua (``lingua-language-detector``), which ships its models.

Candidates are the catalogue languages (:mod:`core.languages`) lingua knows: every catalogue
code but Khmer, Burmese, Tibetan, Uyghur, Cantonese, Galician and Occitan. Chinese is reported
as ``zh`` (lingua does not tell Traditional from Simplified); ``zh-Hant`` counts as supported
because its text is recognised as Chinese.

    detect("Zapatillas para correr")            # ("es", 0.50)
    detect_many(["Free shipping", "12345"])     # [("en", 0.42), None]
    confidence_many(["Hello there, friend"], "es")   # [0.002]: how likely each is Spanish
    supports("km")                              # False

``confidence`` is lingua's relative confidence (the candidates' values sum to 1); short or
ambiguous text spreads it out, so a top value of 0.3-0.5 is normal for a few words. ``None``
means there is nothing to tell (no letters).

Two detectors, each built lazily once per process (thread-safe) on first use:

* ``accuracy="high"`` (the default): lingua's full n-gram models. Measured on this 2-core
  machine for the 35 candidates: building is instant, the first detection loads the models
  (~2.2 s, RSS +465 MiB; preloading them all at build instead costs 1.6 s and +650 MiB);
  then ~130-150 µs per text. On 132 short e-commerce strings (2-5 words, 11 Latin-script
  languages) it named 122 right.
* ``accuracy="low"``: trigram models only: first detection ~0.13 s, RSS +65 MiB, ~45 µs per
  text, but 100/132 on the same short strings. Good enough for sentence-length text, which is
  what the workers' wrong-language output check uses it for.

Models are lingua's own process-wide memory: both detectors share what they have in common.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from mtfleet.core import languages
from mtfleet.core.errors import UnsupportedLanguage

if TYPE_CHECKING:
    from lingua import Language, LanguageDetector

Accuracy = Literal["high", "low"]

# Our code -> lingua's Language name (the catalogue languages lingua knows).
_LINGUA_NAMES: dict[str, str] = {
    "zh": "CHINESE",
    "zh-Hant": "CHINESE",
    "en": "ENGLISH",
    "fr": "FRENCH",
    "pt": "PORTUGUESE",
    "es": "SPANISH",
    "ja": "JAPANESE",
    "tr": "TURKISH",
    "ru": "RUSSIAN",
    "ar": "ARABIC",
    "ko": "KOREAN",
    "th": "THAI",
    "it": "ITALIAN",
    "de": "GERMAN",
    "vi": "VIETNAMESE",
    "ms": "MALAY",
    "id": "INDONESIAN",
    "tl": "TAGALOG",
    "hi": "HINDI",
    "pl": "POLISH",
    "cs": "CZECH",
    "nl": "DUTCH",
    "fa": "PERSIAN",
    "gu": "GUJARATI",
    "ur": "URDU",
    "te": "TELUGU",
    "mr": "MARATHI",
    "he": "HEBREW",
    "bn": "BENGALI",
    "ta": "TAMIL",
    "uk": "UKRAINIAN",
    "kk": "KAZAKH",
    "mn": "MONGOLIAN",
    "ca": "CATALAN",
    "eu": "BASQUE",
    "eo": "ESPERANTO",
}
assert set(_LINGUA_NAMES) <= set(languages.LANGUAGES)

#: Catalogue codes the detector can recognise (``zh-Hant`` as Chinese).
SUPPORTED: frozenset[str] = frozenset(_LINGUA_NAMES)

# lingua's name -> the code we report (zh for Chinese, never zh-Hant)
_CODE_OF: dict[str, str] = {}
for _code, _name in _LINGUA_NAMES.items():
    _CODE_OF.setdefault(_name, _code)

_lock = threading.Lock()
_detectors: dict[str, LanguageDetector] = {}

Detection = tuple[str, float]


def supports(code: str) -> bool:
    """Whether ``code`` (a catalogue code, any casing) is a language the detector knows."""
    try:
        return languages.normalize(code) in SUPPORTED
    except UnsupportedLanguage:
        return False


def _detector(accuracy: Accuracy) -> LanguageDetector:
    found = _detectors.get(accuracy)
    if found is not None:
        return found
    with _lock:
        found = _detectors.get(accuracy)
        if found is None:
            from lingua import Language, LanguageDetectorBuilder

            wanted = [getattr(Language, n) for n in sorted(set(_LINGUA_NAMES.values()))]
            builder = LanguageDetectorBuilder.from_languages(*wanted)
            if accuracy == "low":
                builder = builder.with_low_accuracy_mode()
            found = _detectors[accuracy] = builder.build()
    return found


def _language(code: str) -> Language:
    from lingua import Language

    name = _LINGUA_NAMES.get(languages.normalize(code))
    if name is None:
        raise UnsupportedLanguage(
            f"the language detector does not know {code!r}; it knows: "
            + ", ".join(sorted(SUPPORTED)),
            supported=sorted(SUPPORTED),
        )
    lang: Language = getattr(Language, name)
    return lang


def detect(text: str, *, accuracy: Accuracy = "high") -> Detection | None:
    """``(code, confidence)`` of the most likely language of ``text``, or None when there is
    nothing to tell (no letters)."""
    return detect_many([text], accuracy=accuracy)[0]


def detect_many(texts: Sequence[str], *, accuracy: Accuracy = "high") -> list[Detection | None]:
    """:func:`detect` for each text (one call into lingua per text: see
    :func:`confidence_many`)."""
    if not texts:
        return []
    detector = _detector(accuracy)
    out: list[Detection | None] = []
    for text in texts:
        ranked = detector.compute_language_confidence_values(text)
        if not ranked or ranked[0].value <= 0:
            out.append(None)
        else:
            out.append((_CODE_OF[ranked[0].language.name], float(ranked[0].value)))
    return out


def ranked_many(texts: Sequence[str], *, accuracy: Accuracy = "high") -> list[dict[str, float]]:
    """For each text, every candidate language's confidence (``{code: confidence}``, the
    values summing to 1; empty for text without letters): what a caller that knows which
    languages are possible (those the fleet translates from) chooses among."""
    if not texts:
        return []
    detector = _detector(accuracy)
    out: list[dict[str, float]] = []
    for text in texts:
        ranked: dict[str, float] = {}
        for found in detector.compute_language_confidence_values(text):
            if found.value > 0:
                code = _CODE_OF[found.language.name]
                ranked[code] = ranked.get(code, 0.0) + float(found.value)
        out.append(ranked)
    return out


def preload() -> None:
    """Load the detectors' models now (the API does at start-up, before it says it is ready:
    the first detection otherwise pays ~2 s for them)."""
    for accuracy in ("high", "low"):
        _detector(accuracy).compute_language_confidence_values("Warm up the language models.")


def confidence_many(texts: Sequence[str], code: str, *, accuracy: Accuracy = "high") -> list[float]:
    """How likely each text is in language ``code`` (0..1; 0 for text without letters).
    Raises :class:`core.errors.UnsupportedLanguage` for a code the detector does not know
    (check :func:`supports` first).

    One call into lingua per text, not its ``_in_parallel`` batch calls: a call holds the GIL
    from start to end (512 sentences in one batch held it for 50 ms here, stalling every
    other thread of a worker, an interactive chunk's among them) and a batch spreads over
    every core on lingua's own threads, beside the engine. Text by text the GIL is held for
    ~0.2 ms at a time, on one core, for about the same CPU in all."""
    if not texts:
        return []
    lang = _language(code)
    detector = _detector(accuracy)
    return [float(detector.compute_language_confidence(t, lang)) for t in texts]
