"""Document formats: cut a file into translatable units and put the translations back.

``FORMATS`` maps a format name to its implementation; :func:`for_name` and
:func:`for_filename` look one up. Each format lives in its own module and registers itself here.
"""

from __future__ import annotations

import json
import re
import threading

from mtfleet.core.documents.base import DocumentError, DocumentFormat

FORMATS: dict[str, DocumentFormat] = {}
_loaded = False
_loading = threading.Lock()


def register(fmt: DocumentFormat) -> DocumentFormat:
    FORMATS[fmt.name] = fmt
    return fmt


def _load() -> None:
    # imported for their register() calls; a module missing here is a format not yet built.
    # Under a lock, and marked loaded only once every module is: the API's first two uploads
    # arrive on two threads at once, and the second must not see FORMATS still empty.
    global _loaded
    if _loaded:
        return
    with _loading:
        if _loaded:
            return
        import importlib

        for name in ("text", "markdown", "html", "json_i18n", "srt", "xliff", "docx"):
            try:
                importlib.import_module(f"mtfleet.core.documents.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"mtfleet.core.documents.{name}":
                    raise
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


_SRT_START = re.compile(r"\d+[ \t]*\r?\n[ \t]*\d+:\d\d:\d\d[,.]\d+[ \t]*-->")
_HTML_START = re.compile(
    r"<(?:!doctype html|html|head|body|p|div|h[1-6]|ul|ol|table|section|span|a)\b"
)


def for_content(content: bytes, filename: str | None = None) -> DocumentFormat:
    """The format of an uploaded file: its name's extension when it is a known one, else
    what its first bytes look like (a client may send a file without a usable name: DeepL's
    does, for a file object that has none). A DOCX is a ZIP archive; XLIFF, HTML, JSON and
    SRT are told by how they start; anything else is plain text (Markdown cannot be told
    from text by its first bytes: name the file ``.md``)."""
    _load()
    if filename:
        try:
            return for_filename(filename)
        except DocumentError:
            pass
    if content.startswith(b"PK\x03\x04"):
        return FORMATS["docx"]
    head = content[:4096].decode("utf-8", "ignore").lstrip("\ufeff \t\r\n")
    low = head.lower()
    if (low.startswith("<?xml") and "<xliff" in low) or low.startswith("<xliff"):
        return FORMATS["xliff"]
    if _HTML_START.match(low) or (low.startswith("<!--") and "<html" in low):
        return FORMATS["html"]
    if head.startswith("{"):
        try:
            json.loads(content)
        except ValueError:
            pass
        else:
            return FORMATS["json"]
    if _SRT_START.match(head):
        return FORMATS["srt"]
    return FORMATS["text"]


__all__ = [
    "FORMATS",
    "DocumentError",
    "DocumentFormat",
    "for_content",
    "for_filename",
    "for_name",
    "register",
]
