"""Where ``mtfleet submit`` writes each translated file (the table in docs/api.md, "Output
names", is this module's, row for row; a test reads it).

A file's translation is named as its ecosystem names one: Android's ``values/strings.xml``
becomes ``values-es/strings.xml``, Apple's ``en.lproj/Localizable.strings``
``es.lproj/Localizable.strings``, Flutter's ``app_en.arb`` ``app_es.arb``, a gettext template
``messages.pot`` ``es.po``, Rails' ``en.yml`` ``es.yml``; any other file ``name.es.ext``
(``--naming suffix``: every file). Under ``--out`` each keeps its path relative to the folder
the inputs share (for a file in a language folder, that folder's parent), so two
``strings.xml`` of two modules are two files.

What tells a locale (Babel's CLDR data) and Android's qualifiers are the document formats'
(``mtfleet[formats]``): imported where a document's name asks them, so the client install
loads this module (a line file's name needs neither).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Naming = Literal["ecosystem", "suffix"]

#: An Android resource folder for strings of the default locale or of one locale (``values``,
#: ``values-fr``, ``values-pt-rBR``, ``values-b+sr+Latn``); other qualifiers (``-night``)
#: are not a language's.
_ANDROID_VALUES = re.compile(r"values(?:-[a-z]{2,3}(?:-r[A-Z]{2})?|-b\+[A-Za-z0-9+]+)?")


@dataclass(frozen=True)
class Named:
    """A translated file's ``name`` (a relative path) under ``root``, the folder of its input
    it is relative to."""

    root: Path
    name: Path


def is_locale(text: str) -> bool:
    """Whether ``text`` names a locale (``en``, ``pt_BR``, ``en-GB``, ``zh_Hant``)."""
    from babel import Locale, UnknownLocaleError

    try:
        Locale.parse(text.replace("-", "_"))
    except (UnknownLocaleError, ValueError):
        return False
    return True


def _parts(target: str) -> list[str]:
    """``target``'s subtags in their usual case: language lower, script title, region upper."""
    parts = [p for p in re.split(r"[-_]", target.strip()) if p]
    return [
        p.lower() if i == 0 else p.title() if len(p) == 4 else p.upper()
        for i, p in enumerate(parts)
    ]


def bcp47(target: str) -> str:
    """``pt-BR``, ``zh-Hant``: Apple's ``.lproj``, Rails' YAML, the suffix of any file."""
    return "-".join(_parts(target))


def posix(target: str) -> str:
    """``pt_BR``, ``zh_Hant``: gettext catalogues, Flutter's ARB files."""
    return "_".join(_parts(target))


def _arb_prefix(stem: str) -> str | None:
    """``app`` of ``app_en`` (``app_en_US``, ``my_app_zh_Hant``), or None when the name ends
    in no locale."""
    parts = stem.split("_")
    for n in (3, 2, 1):
        if len(parts) > n and is_locale("_".join(parts[-n:])):
            return "_".join(parts[:-n])
    return None


def named(path: Path, fmt: str | None, target: str, naming: Naming = "ecosystem") -> Named:
    """How ``path``, read as the document format ``fmt`` (None: a line file), is named in
    ``target``."""
    folder = path.parent
    ext = ".po" if fmt == "po" else path.suffix  # a template translated is a catalogue
    generic = Named(folder, Path(f"{path.stem}.{bcp47(target)}{ext}"))
    if naming == "suffix":
        return generic
    if fmt == "android" and _ANDROID_VALUES.fullmatch(folder.name):
        from mtfleet.formats.android_strings import _resource_locale as android_qualifier

        return Named(folder.parent, Path(f"values-{android_qualifier(bcp47(target))}") / path.name)
    if fmt in ("strings", "stringsdict") and folder.suffix == ".lproj":
        return Named(folder.parent, Path(f"{bcp47(target)}.lproj") / path.name)
    if fmt == "arb" and (prefix := _arb_prefix(path.stem)) is not None:
        return Named(folder, Path(f"{prefix}_{posix(target)}.arb"))
    if fmt == "po":
        if folder.name == "LC_MESSAGES" and is_locale(folder.parent.name):
            return Named(folder.parent.parent, Path(posix(target), "LC_MESSAGES", path.name))
        if path.suffix.lower() == ".pot" or is_locale(path.stem):
            return Named(folder, Path(f"{posix(target)}.po"))
    if fmt == "yaml" and is_locale(path.stem):
        return Named(folder, Path(f"{bcp47(target)}{path.suffix}"))
    return generic


def destinations(
    files: Sequence[tuple[Path, str | None]], target: str, out: Path, naming: Naming
) -> list[Path]:
    """Where each of ``files`` (a path and its format) is written under ``out``: its
    :func:`named` name, at its root's path relative to the folder all roots share."""
    names = [named(path.absolute(), fmt, target, naming) for path, fmt in files]
    if not names:
        return []
    common = Path(os.path.commonpath([n.root for n in names]))
    return [out / n.root.relative_to(common) / n.name for n in names]
