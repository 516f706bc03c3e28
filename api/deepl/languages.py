"""DeepL's language codes and the fleet's (:mod:`mtfleet.core.languages`), in one table.

Going in, a DeepL code is read as the fleet reads any code: ``EN-US`` and ``EN-GB`` are
``en``, ``PT-BR`` and ``PT-PT`` ``pt``, ``ES-419`` ``es``, ``ZH`` and ``ZH-HANS`` ``zh``,
``ZH-HANT`` ``zh-Hant`` (the engines translate into the language; a regional variant is
accepted and not told apart). Going out, the fleet's codes are listed as DeepL lists them:
upper-case, a target language under each of its DeepL variants, glossary languages in lower
case without a variant.
"""

from __future__ import annotations

from mtfleet.core import languages

#: A fleet target language -> the DeepL target codes that name it (and their names), where
#: they are not simply the code in upper case.
TARGET_VARIANTS: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (("EN-GB", "English (British)"), ("EN-US", "English (American)")),
    "pt": (("PT-BR", "Portuguese (Brazilian)"), ("PT-PT", "Portuguese (European)")),
    "es": (("ES", "Spanish"), ("ES-419", "Spanish (Latin American)")),
    "zh": (("ZH", "Chinese (simplified)"), ("ZH-HANS", "Chinese (simplified)")),
    "zh-Hant": (("ZH-HANT", "Chinese (traditional)"),),
}

#: DeepL has one Chinese source language.
SOURCE_CODES = {"zh-Hant": "ZH"}


def to_fleet(code: str) -> str:
    """The fleet's code for a DeepL code (UnsupportedLanguage, a 400, when it knows none)."""
    return languages.normalize(code)


def source_code(fleet: str) -> str:
    """How DeepL writes a source language (``detected_source_language``, /v2/languages)."""
    return SOURCE_CODES.get(fleet, fleet.upper())


def targets(fleet: str) -> tuple[tuple[str, str], ...]:
    """The DeepL target codes, with their names, for a fleet target language."""
    name = languages.LANGUAGES[fleet].english if fleet in languages.LANGUAGES else fleet
    return TARGET_VARIANTS.get(fleet, ((fleet.upper(), name),))


def glossary_code(fleet: str) -> str:
    """How DeepL writes a glossary's language: lower case, no variant (``zh-Hant`` is ``zh``)."""
    return fleet.split("-")[0].lower()


def name(fleet: str) -> str:
    lang = languages.LANGUAGES.get(fleet)
    return lang.english if lang is not None else fleet
