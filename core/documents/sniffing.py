"""What an upload is, told from its name or, for a file without a usable name, its bytes.

Every surface that takes a file (``POST /v1/documents``, DeepL's ``/v2/document``,
LibreTranslate's ``/translate_file``, ``mtfleet submit``, the web page) asks
:func:`mtfleet.core.documents.for_upload`, which asks here. The rule, in order:

1. a file whose name has an extension is the format of that extension, and one the fleet does
   not read is refused (:class:`UnsupportedFormat`), naming what it is when we know it (a
   gettext ``.po``, Android ``strings.xml``...) and the formats the fleet reads: translated as
   plain text, a localization file comes back with its keys, msgids and header translated;
2. a file without one (no name, or a name like ``file``, ``blob`` or ``upload``: DeepL's client
   names a nameless file object ``file``) is told by its first :data:`HEAD_BYTES` bytes, never
   parsed (the API sniffs on its event loop; the file is read in a document process, where a
   file that is not what its head says is refused): DOCX, XLSX and PPTX are ZIPs whose central
   directory (at their end, where a ZIP lists its members) names ``word/document.xml``,
   ``xl/workbook.xml`` or ``ppt/presentation.xml``; XLIFF, HTML, Android ``<resources>``, a
   ``.stringsdict`` plist, JSON (ARB when a key starts with ``@``, a String Catalog when
   ``sourceLanguage`` and ``strings`` are keys), SRT, WebVTT, gettext PO, Apple ``.strings``
   (UTF-16, or ``"key" = "value";`` lines), YAML (``key: value`` lines) and Java properties
   (``key = value`` lines) by how they start;
3. bytes that look like a structured format the fleet does not read (another ZIP, other XML,
   binary data) are refused, never read as plain text;
4. anything else is plain text (Markdown cannot be told from text by its first bytes: name the
   file ``.md``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mtfleet.core.documents.base import DocumentError

#: What files the fleet does not read are, by extension: named in refusals, so a user learns
#: what was recognised and why it was not translated as text.
KNOWN_UNREAD = {
    ".odt": "an OpenDocument text",
    ".ods": "an OpenDocument spreadsheet",
    ".odp": "an OpenDocument presentation",
    ".idml": "an InDesign package (IDML)",
    ".pdf": "a PDF",
    ".doc": "a Word 97-2003 document",
    ".xls": "an Excel 97-2003 workbook",
    ".ppt": "a PowerPoint 97-2003 deck",
    ".rtf": "an RTF document",
    ".csv": "a CSV file",
    ".tsv": "a TSV file",
    ".ts": "a Qt or TypeScript file",
    ".resx": "a .NET resource file",
    ".ini": "an INI file",
    ".toml": "a TOML file",
    ".tmx": "a translation memory (TMX)",
    ".zip": "a ZIP archive",
}

#: Bytes sniffed to tell a nameless upload.
HEAD_BYTES = 8192


class UnsupportedFormat(DocumentError):
    """A file of a format the fleet does not read (HTTP 415 on ``/v1``, 400 on the drop-in
    surfaces): refused, never translated as something it is not."""

    code = "unsupported_format"


def extension(filename: str | None) -> str | None:
    """The lower-case extension of a file name (``.po``; ``.tar.gz`` is ``.gz``), or None when
    the name has none (``file``, ``README``, ``.bashrc``): such a name does not say the format."""
    if not filename:
        return None
    base = re.split(r"[/\\]", filename)[-1].strip()
    stem, dot, ext = base.rpartition(".")
    if not dot or not stem or not ext or not re.fullmatch(r"[A-Za-z0-9_-]{1,16}", ext):
        return None
    return f".{ext.lower()}"


def refuse(what: str, reads: Iterable[str]) -> UnsupportedFormat:
    return UnsupportedFormat(
        f"{what}; this server reads {', '.join(sorted(reads))} files (name the file with one "
        "of these extensions)",
        formats=sorted(reads),
    )


def by_name(filename: str, extensions: dict[str, str]) -> str | None:
    """The format a file's name says (``extensions``: extension -> format name); None when
    the name has no extension; :class:`UnsupportedFormat` for one the fleet does not read."""
    ext = extension(filename)
    if ext is None:
        return None
    lower = filename.lower()
    for known, fmt in sorted(extensions.items(), key=lambda kv: -len(kv[0])):
        if lower.endswith(known):
            return fmt
    base = re.split(r"[/\\]", filename)[-1]
    what = KNOWN_UNREAD.get(ext, f"a {ext} file")
    raise refuse(f"{base!r} is {what}, which this server does not translate", extensions)


_SRT_START = re.compile(r"\d+[ \t]*\r?\n[ \t]*\d+:\d\d:\d\d[,.]\d+[ \t]*-->")
#: Elements an HTML page or fragment starts with.
HTML_ROOTS = frozenset({
    "html", "head", "body", "p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li",
    "table", "section", "article", "header", "footer", "main", "nav", "aside", "form", "span",
    "a", "b", "i", "em", "strong", "img", "br", "hr", "blockquote", "pre", "figure",
})  # fmt: skip
#: What comes before an XML or HTML file's first element: declarations, comments, PIs.
_PROLOG = re.compile(r"\s*(?:<\?.*?\?>|<!--.*?-->|<!doctype[^>]*>)", re.S)
_ELEMENT = re.compile(r"\s*<([a-z_][\w:.-]*)")
_PO_ENTRY = re.compile(r'^\s*(?:msgctxt|msgid|msgid_plural|msgstr(?:\[\d+\])?)\s+"', re.M)
_STRINGS_ENTRY = re.compile(r'^\s*"(?:[^"\\]|\\.)*"\s*=\s*"(?:[^"\\]|\\.)*"\s*;', re.M)
#: ``key = value`` (properties, INI) and ``key: value`` (YAML) lines.
_KEY_LINE = re.compile(r"^\s*(?:-\s+)?[\"']?[\w.@$/-]{1,100}[\"']?\s*([:=]\s|[:=]$|=)")
_COMMENT_LINE = re.compile(r"^\s*(?:#|!|;|//)")


def sniff(content: bytes, extensions: dict[str, str]) -> str:
    """The format name of a nameless upload, from its first bytes (see the module doc);
    :class:`UnsupportedFormat` for bytes of a structured format the fleet does not read."""
    if content.startswith(b"PK\x03\x04"):
        return _zip(content, extensions)
    if content.startswith((b"\xff\xfe", b"\xfe\xff")):
        return _read_or_refuse(
            "strings", "the file is UTF-16 text (an Apple .strings file?)", extensions
        )
    head_bytes = content[:HEAD_BYTES]
    if b"\0" in head_bytes:
        raise refuse("the file is binary data, not a document this server knows", extensions)
    head = head_bytes.decode("utf-8", "ignore").lstrip("\ufeff \t\r\n")
    low = head.lower()
    if low.startswith("<"):
        root = _root(low)
        if root == "xliff":
            return "xliff"
        if root in HTML_ROOTS or re.match(r"<!doctype\s+html\b", low):
            return "html"
        if root == "resources":
            return _read_or_refuse("android", _xml_kind(root), extensions)
        if root == "plist" and "nsstringlocalizedformatkey" in low:
            return _read_or_refuse("stringsdict", _xml_kind(root), extensions)
        if root is not None:
            raise refuse(_xml_kind(root), extensions)
    if head.startswith(("{", "[")):
        return _json(head, extensions)
    if _SRT_START.match(head):
        return "srt"
    if re.match(r"WEBVTT(?:[ \t\r\n]|$)", head):
        return _read_or_refuse("webvtt", "the file is WebVTT subtitles", extensions)
    if _PO_ENTRY.search(head):
        return _read_or_refuse(
            "po", "the file is a gettext PO file (msgid/msgstr entries)", extensions
        )
    if len(_STRINGS_ENTRY.findall(head)) >= 2:
        return _read_or_refuse(
            "strings", 'the file is an Apple .strings file ("key" = "value"; lines)', extensions
        )
    kind = _key_value(head)
    if kind == ":":
        return _read_or_refuse("yaml", "the file is YAML (most lines are 'key: value')", extensions)
    if kind == "=":
        return _read_or_refuse(
            "properties", "the file is a key-value file (most lines are 'key = value')", extensions
        )
    return "text"


def _read_or_refuse(name: str, what: str, extensions: dict[str, str]) -> str:
    """``name`` when the fleet reads that format, else a refusal saying what the file is."""
    if name in extensions.values():
        return name
    raise refuse(what, extensions)


#: A ZIP's end of central directory record, and how far from the end it may start (its 22
#: bytes and a comment of at most 65,535).
_END = b"PK\x05\x06"
_END_SPAN = 22 + 65_535
#: What a member's name in the central directory says the archive is.
_ZIP_KINDS = (
    (b"word/document.xml", "docx", "the file is a Word document (DOCX)"),
    (b"xl/workbook.xml", "xlsx", "the file is an Excel workbook (XLSX)"),
    (b"ppt/presentation.xml", "pptx", "the file is a PowerPoint deck (PPTX)"),
)


def _zip(content: bytes, extensions: dict[str, str]) -> str:
    """An Office document's format, from the members its central directory names: the
    directory ends at the end record and takes the size that record says (the whole file
    before it for a ZIP64), looked through for names and nothing inflated."""
    end = content.rfind(_END, max(0, len(content) - _END_SPAN))
    if end < 0 or len(content) < end + 22:
        raise refuse("the file is a damaged ZIP archive", extensions)
    size = int.from_bytes(content[end + 12 : end + 16], "little")
    start = max(0, end - size - 76)  # a ZIP64's end records lie between (56 + 20 bytes)
    for name, fmt, what in _ZIP_KINDS:
        if content.find(name, start, end) >= 0:
            return _read_or_refuse(fmt, what, extensions)
    kind = (
        "an OpenDocument file" if content.find(b"content.xml", start, end) >= 0 else "a ZIP archive"
    )
    raise refuse(f"the file is {kind}, not an Office document", extensions)


def _root(low: str) -> str | None:
    """The name of the first element of lower-cased markup, past its prolog (None when
    there is no element in the first bytes)."""
    pos = 0
    while m := _PROLOG.match(low, pos):
        if m.end() == pos:
            break
        pos = m.end()
    found = _ELEMENT.match(low, pos)
    return found.group(1) if found else None


def _xml_kind(root: str) -> str:
    kinds = {
        "resources": "Android string resources (strings.xml)",
        "plist": "an Apple property list (a .stringsdict?)",
        "tmx": "a translation memory (TMX)",
        "ts": "a Qt Linguist file",
        "root": "a .NET resource file (.resx)",
    }
    return f"the file is {kinds.get(root, f'XML (<{root}>) that is neither XLIFF nor HTML')}"


#: In the first bytes of a JSON object: a key that starts with ``@`` (ARB's metadata and
#: ``@@locale``), and a String Catalog's keys.
_ARB_KEY = re.compile(r'[{,]\s*"@')
_CATALOG_KEYS = (re.compile(r'[{,]\s*"sourceLanguage"\s*:'), re.compile(r'[{,]\s*"strings"\s*:'))


def _json(head: str, extensions: dict[str, str]) -> str:
    """JSON, ARB or a String Catalog, from the keys in the file's first bytes (whether it is
    valid JSON is for the format's reader to say)."""
    if _ARB_KEY.search(head):
        return _read_or_refuse(
            "arb", "the file is a Flutter ARB file (JSON with @-metadata)", extensions
        )
    if all(key.search(head) for key in _CATALOG_KEYS):
        return _read_or_refuse(
            "xcstrings", "the file is an Apple String Catalog (.xcstrings)", extensions
        )
    return "json"


def _key_value(head: str) -> str | None:
    """``":"`` when most of the first lines are ``key: value`` (YAML), ``"="`` when most are
    ``key = value`` (properties, INI), at least 3 of them either way; None otherwise (prose
    rarely is)."""
    lines = [
        ln
        for ln in head.splitlines()[:200]
        if ln.strip() and ln.strip() not in ("---", "...") and not _COMMENT_LINE.match(ln)
    ]
    if not lines:
        return None
    seps = [m.group(1)[0] for ln in lines if (m := _KEY_LINE.match(ln))]
    if len(seps) < 3 or len(seps) < 0.6 * len(lines):
        return None
    return ":" if seps.count(":") >= seps.count("=") else "="
