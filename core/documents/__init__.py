"""Document formats: cut a file into translatable units and put the translations back.

``FORMATS`` maps a format name to its implementation; :func:`for_name` and
:func:`for_filename` look one up. Each format lives in its own module and registers itself here.
"""

from __future__ import annotations

from mtfleet.core.documents.base import DocumentError, DocumentFormat

FORMATS: dict[str, DocumentFormat] = {}
_loaded = False


def register(fmt: DocumentFormat) -> DocumentFormat:
    FORMATS[fmt.name] = fmt
    return fmt


def _load() -> None:
    # imported for their register() calls; a module missing here is a format not yet built
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib

    for name in ("text", "markdown", "html", "json_i18n", "srt", "xliff", "docx"):
        try:
            importlib.import_module(f"mtfleet.core.documents.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"mtfleet.core.documents.{name}":
                raise


def for_name(name: str) -> DocumentFormat:
    _load()
    fmt = FORMATS.get(name.lower())
    if fmt is None:
        raise DocumentError(
            f"unknown document format {name!r}; formats: {', '.join(sorted(FORMATS))}"
        )
    return fmt


def for_filename(filename: str) -> DocumentFormat:
    _load()
    lower = filename.lower()
    for fmt in FORMATS.values():
        if any(lower.endswith(ext) for ext in fmt.extensions):
            return fmt
    raise DocumentError(
        f"cannot tell the format of {filename!r} from its extension; known: "
        + ", ".join(sorted(e for f in FORMATS.values() for e in f.extensions))
    )


__all__ = ["FORMATS", "DocumentError", "DocumentFormat", "for_filename", "for_name", "register"]
