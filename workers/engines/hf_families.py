"""The Hugging Face model families the transformers engine runs, and the language codes each
one needs: one table (:data:`CODES`) and one function (:func:`family_of`).

====================  =================================  =====================================
family                how it is recognised               how the languages are given
====================  =================================  =====================================
``marian`` (OPUS-MT)  ``model_type`` marian              one pair, from the tokenizer's
                                                         ``source_lang``/``target_lang`` (or an
                                                         ``opus-mt-SRC-TGT`` name); multi-target
                                                         models: a ``>>spa<<`` token before the
                                                         text
``nllb`` (NLLB-200)   m2m_100 with FLORES-200 tokens     the source code as the tokenizer's
                      (``eng_Latn``)                     ``src_lang``; the target code forced as
                                                         the first generated token
``m2m100``            m2m_100 with ``__en__`` tokens     the same, with ISO 639-1 codes
``madlad`` (MADLAD)   t5/mt5 with ``<2es>`` tokens       a ``<2es>`` token before the text (the
                                                         source is not named)
``causal``            any decoder-only model             the prompts of :mod:`~mtfleet.workers.
                                                         prompts`, as vLLM gets them
====================  =================================  =====================================

Each cell of :data:`CODES` lists the model's code(s) for one of our languages, most likely
first; the engine serves exactly the languages whose code its tokenizer has, so a guess that a
model lacks costs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from mtfleet.core import languages
from mtfleet.core.errors import EngineUnavailable, UnsupportedLanguage
from mtfleet.workers import prompts


@dataclass(frozen=True)
class Codes:
    """One of our languages in each family's codes (candidates, most likely first)."""

    nllb: tuple[str, ...]  # FLORES-200, NLLB's tokens
    madlad: tuple[str, ...]  # MADLAD-400's <2xx> tokens, without the brackets
    opus: tuple[str, ...]  # OPUS-MT's >>xxx<< target tokens (ISO 639-3, script where needed)
    m2m100: tuple[str, ...] = ()  # M2M100's __xx__ tokens; empty: our own code


def _c(nllb: str, madlad: str | tuple[str, ...], opus: str | tuple[str, ...]) -> Codes:
    as_tuple = lambda v: (v,) if isinstance(v, str) else v  # noqa: E731
    return Codes((nllb,), as_tuple(madlad), as_tuple(opus))


CODES: dict[str, Codes] = {
    "zh": _c("zho_Hans", "zh", ("cmn_Hans", "zho_Hans", "cmn", "zho")),
    "en": _c("eng_Latn", "en", "eng"),
    "fr": _c("fra_Latn", "fr", "fra"),
    "pt": _c("por_Latn", "pt", "por"),
    "es": _c("spa_Latn", "es", "spa"),
    "ja": _c("jpn_Jpan", "ja", ("jpn", "jpn_Jpan")),
    "tr": _c("tur_Latn", "tr", "tur"),
    "ru": _c("rus_Cyrl", "ru", "rus"),
    "ar": _c("arb_Arab", "ar", ("ara", "arb")),
    "ko": _c("kor_Hang", "ko", ("kor", "kor_Hang")),
    "th": _c("tha_Thai", "th", "tha"),
    "it": _c("ita_Latn", "it", "ita"),
    "de": _c("deu_Latn", "de", "deu"),
    "vi": _c("vie_Latn", "vi", "vie"),
    "ms": _c("zsm_Latn", "ms", ("zsm_Latn", "msa", "zlm_Latn")),
    "id": _c("ind_Latn", "id", "ind"),
    "tl": _c("tgl_Latn", ("fil", "tl"), ("tgl", "fil")),
    "hi": _c("hin_Deva", "hi", "hin"),
    "zh-Hant": _c("zho_Hant", ("zh_Hant", "zh_TW"), ("cmn_Hant", "zho_Hant")),
    "pl": _c("pol_Latn", "pl", "pol"),
    "cs": _c("ces_Latn", "cs", "ces"),
    "nl": _c("nld_Latn", "nl", "nld"),
    "km": _c("khm_Khmr", "km", "khm"),
    "my": _c("mya_Mymr", "my", "mya"),
    "fa": _c("pes_Arab", "fa", ("pes", "fas")),
    "gu": _c("guj_Gujr", "gu", "guj"),
    "ur": _c("urd_Arab", "ur", "urd"),
    "te": _c("tel_Telu", "te", "tel"),
    "mr": _c("mar_Deva", "mr", "mar"),
    "he": _c("heb_Hebr", ("he", "iw"), "heb"),
    "bn": _c("ben_Beng", "bn", "ben"),
    "ta": _c("tam_Taml", "ta", "tam"),
    "uk": _c("ukr_Cyrl", "uk", "ukr"),
    "bo": _c("bod_Tibt", "bo", "bod"),
    "kk": _c("kaz_Cyrl", "kk", "kaz"),
    "mn": _c("khk_Cyrl", "mn", ("khk", "mon")),
    "ug": _c("uig_Arab", "ug", "uig"),
    "yue": _c("yue_Hant", "yue", ("yue_Hant", "yue")),
    "ca": _c("cat_Latn", "ca", "cat"),
    "gl": _c("glg_Latn", "gl", "glg"),
    "eu": _c("eus_Latn", "eu", "eus"),
    "oc": _c("oci_Latn", "oc", "oci"),
    "eo": _c("epo_Latn", "eo", "epo"),
}
assert set(CODES) == set(languages.LANGUAGES), "every language of ours has a row"


@dataclass(frozen=True)
class Family:
    """What the engine needs to know about a model's languages (plain data)."""

    name: str  # marian, nllb, m2m100, madlad, causal
    pairs: tuple[tuple[str, str], ...]
    src_lang: Mapping[str, str] = field(default_factory=dict)  # ours -> tokenizer.src_lang
    forced_bos: Mapping[str, str] = field(default_factory=dict)  # ours -> first output token
    prefix: Mapping[str, str] = field(default_factory=dict)  # target -> text put before input

    def source_text(self, text: str, target: str) -> str:
        return self.prefix.get(target, "") + text


def _found(candidates: tuple[str, ...], vocab: Mapping[str, int], fmt: str) -> str | None:
    return next((fmt.format(c) for c in candidates if fmt.format(c) in vocab), None)


def _ours(code: str) -> str | None:
    """Our code for a model's language code (ISO 639-1 or -3, BCP-47-ish), or None."""
    code = code.strip()
    by_iso3 = languages.from_iso3(code.lower()) if len(code) == 3 else None
    if by_iso3:
        return by_iso3
    try:
        return languages.normalize(code)
    except UnsupportedLanguage:
        return None


_OPUS_NAME = re.compile(r"opus-mt-([a-zA-Z_]+)-([a-zA-Z_]+)$")


def _marian(
    vocab: Mapping[str, int], source_lang: str | None, target_lang: str | None, name: str
) -> Family:
    if not (source_lang and target_lang):
        m = _OPUS_NAME.search(name.rstrip("/"))
        if m:
            source_lang, target_lang = m.groups()
    source = _ours(source_lang or "")
    if source is None:
        raise EngineUnavailable(
            f"cannot tell the source language of Marian model {name}: its tokenizer_config.json "
            "has no source_lang we know and its name is not opus-mt-SRC-TGT"
        )
    prefix = {}
    for ours, codes in CODES.items():
        token = _found(codes.opus, vocab, ">>{}<<")
        if token and ours != source:
            prefix[ours] = token + " "
    if prefix:  # multi-target: the token names the target
        return Family("marian", tuple((source, t) for t in prefix), prefix=prefix)
    target = _ours(target_lang or "")
    if target is None:
        raise EngineUnavailable(
            f"cannot tell the target language of Marian model {name}: no target_lang we know "
            "and no >>xxx<< target tokens"
        )
    return Family("marian", ((source, target),))


def _coded(name: str, vocab: Mapping[str, int], column: str, fmt: str) -> Family:
    """NLLB and M2M100: the source code as src_lang, the target's token forced first."""
    tokens: dict[str, str] = {}
    for ours, codes in CODES.items():
        candidates = getattr(codes, column) or (ours,)
        token = _found(candidates, vocab, fmt)
        if token:
            tokens[ours] = token
    src_lang = {ours: tok.strip("_") if column == "m2m100" else tok for ours, tok in tokens.items()}
    pairs = tuple((a, b) for a in tokens for b in tokens if a != b)
    return Family(name, pairs, src_lang=src_lang, forced_bos=tokens)


def family_of(
    model_type: str,
    encoder_decoder: bool,
    vocab: Mapping[str, int],
    *,
    source_lang: str | None = None,
    target_lang: str | None = None,
    name: str = "",
) -> Family:
    """The family of a model from its config's ``model_type`` and its tokenizer's vocabulary
    (and, for Marian, the tokenizer's declared languages and the model's name)."""
    if not encoder_decoder:
        return Family("causal", tuple(prompts.llm_pairs()))
    if model_type == "marian":
        return _marian(vocab, source_lang, target_lang, name)
    if model_type == "m2m_100" and "eng_Latn" in vocab:
        return _coded("nllb", vocab, "nllb", "{}")
    if model_type == "m2m_100":
        return _coded("m2m100", vocab, "m2m100", "__{}__")
    if model_type in ("t5", "mt5", "umt5"):
        prefix = {}
        for ours, codes in CODES.items():
            token = _found(codes.madlad, vocab, "<2{}>")
            if token:
                prefix[ours] = token + " "
        if prefix:
            sources = list(languages.LANGUAGES)
            pairs = tuple((a, b) for a in sources for b in prefix if a != b)
            return Family("madlad", pairs, prefix=prefix)
    raise EngineUnavailable(
        f"the transformers engine does not know how to name languages for {name or 'this model'} "
        f"(model_type {model_type}): it runs Marian (OPUS-MT), NLLB, M2M100, MADLAD (T5 with "
        "<2xx> tokens) and decoder-only models"
    )
