"""Flutter ARB files (``.arb``, Application Resource Bundle): JSON i18n with ``@`` metadata.

The messages are read and written as :mod:`mtfleet.formats.json_i18n` reads and writes
JSON resources (string values as units, ICU plural and select cases one by one, placeholders
as codes, the file's own escaping style) and every ``@key`` metadata entry and ``@@``
file attribute (``@@context``, ``@@last_modified``…) is left as it was. What makes the output
the target's file is ``@@locale``: set to the target language where the file has one, added as
the first member where it has none (in the file's indentation), so Flutter's ``gen-l10n``
takes the file for the target locale.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from mtfleet.formats import register
from mtfleet.formats.json_i18n import JsonI18nFormat

#: ``"@@locale": "en"`` in the file's text (a JSON string value, its escapes included).
_LOCALE = re.compile(r'("@@locale"\s*:\s*)"(?:[^"\\]|\\.)*"')
#: The object's opening brace and the white space before its first member.
_OPENING = re.compile(r"\A(\s*\{)(\s*)")


def _with_locale(text: str, locale: str) -> str:
    value = json.dumps(locale)
    found, n = _LOCALE.subn(lambda m: m.group(1) + value, text, count=1)
    if n:
        return found
    opening = _OPENING.match(text)
    if opening is None:  # not an object: gen-l10n would not read it anyway
        return text
    brace, space = opening.groups()
    rest = text[opening.end() :]
    if rest.startswith("}"):  # an empty object
        return f'{brace}{space}"@@locale": {value}{space}{rest}'
    return f'{brace}{space}"@@locale": {value},{space}{rest}'


class ArbFormat(JsonI18nFormat):
    name = "arb"
    extensions = (".arb",)
    media_type = "application/json"
    suffix_plurals = False

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        out = super().render(content, translations, target_lang=target_lang)
        if not target_lang:
            return out
        bom = "\ufeff" if out.startswith(b"\xef\xbb\xbf") else ""
        text = out.decode("utf-8")[len(bom) :]
        return (bom + _with_locale(text, target_lang)).encode("utf-8")


register(ArbFormat())
