"""Language codes mtfleet accepts, and the names translation prompts need.

The catalogue is the 38 codes Hunyuan-MT-7B was trained on (its model card), plus a few that
Apertium pairs commonly serve. Codes are BCP-47-like and case-insensitive on input
(``EN``, ``en-us`` -> ``en``; ``zh-hant``, ``zh-TW`` -> ``zh-Hant``). Whether a *pair* can be
translated is decided by the engines that registered it, not by this table.
"""

from __future__ import annotations

from dataclasses import dataclass

from mtfleet.core.errors import UnsupportedLanguage


@dataclass(frozen=True)
class Language:
    code: str
    english: str
    chinese: str
    iso3: str  # ISO 639-3 (Apertium mode names)


_TABLE: tuple[Language, ...] = (
    Language("zh", "Chinese", "中文", "zho"),
    Language("en", "English", "英语", "eng"),
    Language("fr", "French", "法语", "fra"),
    Language("pt", "Portuguese", "葡萄牙语", "por"),
    Language("es", "Spanish", "西班牙语", "spa"),
    Language("ja", "Japanese", "日语", "jpn"),
    Language("tr", "Turkish", "土耳其语", "tur"),
    Language("ru", "Russian", "俄语", "rus"),
    Language("ar", "Arabic", "阿拉伯语", "ara"),
    Language("ko", "Korean", "韩语", "kor"),
    Language("th", "Thai", "泰语", "tha"),
    Language("it", "Italian", "意大利语", "ita"),
    Language("de", "German", "德语", "deu"),
    Language("vi", "Vietnamese", "越南语", "vie"),
    Language("ms", "Malay", "马来语", "msa"),
    Language("id", "Indonesian", "印尼语", "ind"),
    Language("tl", "Filipino", "菲律宾语", "tgl"),
    Language("hi", "Hindi", "印地语", "hin"),
    Language("zh-Hant", "Traditional Chinese", "繁体中文", "zho"),
    Language("pl", "Polish", "波兰语", "pol"),
    Language("cs", "Czech", "捷克语", "ces"),
    Language("nl", "Dutch", "荷兰语", "nld"),
    Language("km", "Khmer", "高棉语", "khm"),
    Language("my", "Burmese", "缅甸语", "mya"),
    Language("fa", "Persian", "波斯语", "fas"),
    Language("gu", "Gujarati", "古吉拉特语", "guj"),
    Language("ur", "Urdu", "乌尔都语", "urd"),
    Language("te", "Telugu", "泰卢固语", "tel"),
    Language("mr", "Marathi", "马拉地语", "mar"),
    Language("he", "Hebrew", "希伯来语", "heb"),
    Language("bn", "Bengali", "孟加拉语", "ben"),
    Language("ta", "Tamil", "泰米尔语", "tam"),
    Language("uk", "Ukrainian", "乌克兰语", "ukr"),
    Language("bo", "Tibetan", "藏语", "bod"),
    Language("kk", "Kazakh", "哈萨克语", "kaz"),
    Language("mn", "Mongolian", "蒙古语", "mon"),
    Language("ug", "Uyghur", "维吾尔语", "uig"),
    Language("yue", "Cantonese", "粤语", "yue"),
    # Beyond Hunyuan-MT: common Apertium pairs.
    Language("ca", "Catalan", "加泰罗尼亚语", "cat"),
    Language("gl", "Galician", "加利西亚语", "glg"),
    Language("eu", "Basque", "巴斯克语", "eus"),
    Language("oc", "Occitan", "奥克语", "oci"),
    Language("eo", "Esperanto", "世界语", "epo"),
)

LANGUAGES: dict[str, Language] = {lang.code: lang for lang in _TABLE}
_BY_ISO3: dict[str, str] = {}
for _lang in _TABLE:
    _BY_ISO3.setdefault(_lang.iso3, _lang.code)
_ALIASES = {
    "zh-tw": "zh-Hant",
    "zh-hk": "zh-Hant",
    "zh-hant": "zh-Hant",
    "zh-hans": "zh",
    "zh-cn": "zh",
    "fil": "tl",
    "iw": "he",
    "in": "id",
}
#: Languages for which Hunyuan-MT's Chinese (ZH<=>XX) prompt applies.
CHINESE = frozenset({"zh", "zh-Hant", "yue"})


def supported_codes() -> list[str]:
    return list(LANGUAGES)


def normalize(code: str) -> str:
    """Canonical code for ``code`` or :class:`UnsupportedLanguage` naming the valid ones."""
    raw = (code or "").strip()
    low = raw.lower().replace("_", "-")
    if low in _ALIASES:
        return _ALIASES[low]
    if low in LANGUAGES:
        return low
    parts = low.split("-")
    if parts[0] == "zh":
        # Script (Hant) or a traditional-script region anywhere in the tag wins.
        traditional = {"hant", "tw", "hk", "mo"}
        return "zh-Hant" if traditional & set(parts[1:]) else "zh"
    base = _ALIASES.get(parts[0], parts[0])
    if base in LANGUAGES:
        return base
    raise UnsupportedLanguage(
        f"unknown language code {raw!r}; supported codes: {', '.join(supported_codes())}",
        supported=supported_codes(),
    )


def from_iso3(iso3: str) -> str | None:
    """Our code for an ISO 639-3 code (as Apertium names modes), or None."""
    return _BY_ISO3.get(iso3)


def get(code: str) -> Language:
    return LANGUAGES[normalize(code)]
