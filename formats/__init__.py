"""Document formats, the filters: cut a file into translatable units and put the translations
back. Files in, files out: nothing here knows Redis, a job or a setting (the one import from
``core`` is its error tree, so a refused file is a 422 like any other refusal).

The room holds three things every format shares, and one module per format:

* **the contract**, :class:`mtfleet.formats.base.DocumentFormat`: a format names itself
  (``name``, ``extensions``, ``binary``, ``media_type``), extracts units (``extract``) and
  renders translations back (``render``), with the round trip
  ``render(c, [u.text for u in extract(c)]) == c``;
  ``open`` and ``render_result`` have defaults a format overrides where it reads once or marks
  a missing translation. The inline tags units carry (``<xN/>``, ``<gN>``) are in the same
  module;
* **the registry**, this module: :data:`MODULES` names each format's module (which ends with
  ``register(TheFormat())``), :data:`FORMATS` maps a name to its format, :func:`for_name` looks
  one up and :func:`for_upload` tells what an uploaded file is (every surface asks it, through
  :mod:`mtfleet.formats.sniffing`);
* **the plural table**, :mod:`mtfleet.formats.plurals`: the plural forms each platform's runtime
  selects for a target language, one rule for every format with plural messages.

Shared by several formats: sentences and protected spans (:mod:`mtfleet.formats.pipeline`), ICU
messages (:mod:`mtfleet.formats.icu`), the OOXML package (:mod:`mtfleet.formats.ooxml`), HTML
fragments of the drop-in APIs (:mod:`mtfleet.formats.fragments`).
"""

from __future__ import annotations

import threading

from mtfleet.formats import sniffing
from mtfleet.formats.base import DocumentError, DocumentFormat
from mtfleet.formats.sniffing import UnsupportedFormat

FORMATS: dict[str, DocumentFormat] = {}
_loaded = False
_loading = threading.Lock()


def register(fmt: DocumentFormat) -> DocumentFormat:
    FORMATS[fmt.name] = fmt
    return fmt


#: Every format's module, in the order formats are listed: adding a format is its module
#: (ending with ``register(TheFormat())``) and one name here.
MODULES = (
    "text", "markdown", "html", "json_i18n", "arb", "yaml_i18n", "srt", "webvtt", "properties",
    "apple_strings", "stringsdict", "xcstrings", "gettext_po", "android_strings", "xliff",
    "docx", "xlsx", "pptx",
)  # fmt: skip


def _load() -> None:
    """Import every format module (each registers itself). A module that is missing is an
    error, never a format silently left out. Under a lock, and marked loaded only once every
    module is: the API's first two uploads arrive on two threads at once, and the second must
    not see FORMATS still empty."""
    global _loaded
    if _loaded:
        return
    with _loading:
        if _loaded:
            return
        import importlib

        for name in MODULES:
            importlib.import_module(f"mtfleet.formats.{name}")
        _loaded = True


def formats() -> list[DocumentFormat]:
    """Every format, by name."""
    _load()
    return [FORMATS[name] for name in sorted(FORMATS)]


def for_name(name: str) -> DocumentFormat:
    _load()
    fmt = FORMATS.get(name.lower())
    if fmt is None:
        raise DocumentError(
            f"unknown document format {name!r}; formats: {', '.join(sorted(FORMATS))}"
        )
    return fmt


def extensions() -> dict[str, str]:
    """Every file extension the fleet reads (``.html``) and its format's name."""
    _load()
    return {ext: fmt.name for fmt in FORMATS.values() for ext in fmt.extensions}


def for_upload(
    content: bytes, filename: str | None = None, declared: str | None = None
) -> DocumentFormat:
    """The format of an uploaded file, the one answer every surface gives (see
    :mod:`mtfleet.formats.sniffing`): the format the caller ``declared`` by name, else
    the one its name's extension says (refused when the fleet does not read it), else, for a
    file without a usable name, what its first bytes say; bytes that look like a structured
    format the fleet does not read are refused, never taken for plain text."""
    if declared:
        return for_name(declared)
    exts = extensions()
    name = sniffing.by_name(filename, exts, content) if filename else None
    return FORMATS[name or sniffing.sniff(content, exts)]


__all__ = [
    "FORMATS",
    "DocumentError",
    "DocumentFormat",
    "UnsupportedFormat",
    "extensions",
    "for_name",
    "for_upload",
    "register",
]
