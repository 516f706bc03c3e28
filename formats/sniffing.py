"""What an upload is, told from its name or, for a file without a usable name, its bytes.

Every surface that takes a file (``POST /v1/documents``, DeepL's ``/v2/document``,
LibreTranslate's ``/translate_file``, ``mtfleet submit``, the web page) asks
:func:`mtfleet.formats.for_upload`, which asks here. The rule, in order:

1. a file whose name has an extension is the format of that extension, and one the fleet does
   not read is refused (:class:`UnsupportedFormat`), naming what it is when we know it
   (:data:`KNOWN_UNREAD`; a ``.ts`` is told Qt Linguist or TypeScript by its bytes) and the
   formats the fleet reads: translated as plain text, a localization file comes back with its
   keys, msgids and header translated;
2. a file without one (no name, or a name like ``file``, ``blob`` or ``upload``: DeepL's client
   names a nameless file object ``file``) is told by its first :data:`HEAD_BYTES` bytes, never
   parsed (the API sniffs on its event loop; the file is read in a document process, where a
   file that is not what its head says is refused): DOCX, XLSX and PPTX are ZIPs whose central
   directory (at their end, where a ZIP lists its members) names ``word/document.xml``,
   ``xl/workbook.xml`` or ``ppt/presentation.xml``; XLIFF, HTML, Android ``<resources>``, a
   ``.stringsdict`` plist, JSON (ARB when a key starts with ``@``, a String Catalog when
   ``sourceLanguage`` and ``strings`` are keys), SRT, WebVTT, gettext PO, Apple ``.strings``
   (UTF-16 that is no XML, or ``"key" = "value";`` lines), YAML (``key: value`` lines) and Java
   properties (``key = value`` lines) by how they start. Text is read by its byte-order mark
   (UTF-8, UTF-16, UTF-32) or, for XML in UTF-16 without one, by its first ``<``;
3. formats the fleet recognises and does not read are refused by name (:data:`UNREAD`, the
   refusal's ``kind``), with what to do instead: a TMX (``<tmx>``, in any of those encodings:
   import it as a translation memory), a Qt Linguist ``.ts`` (``<TS>``), a ``.resx``
   (``<root>``), Mozilla Fluent (:func:`_fluent`), ODF text, spreadsheets and presentations
   (the ``mimetype`` member they start with) and IDML (its ``mimetype``, or
   ``designmap.xml``); other bytes that look structured (another ZIP, other XML, binary data)
   are refused too, never read as plain text;
4. anything else is plain text (Markdown cannot be told from text by its first bytes: name the
   file ``.md``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mtfleet.formats.base import DocumentError


@dataclass(frozen=True)
class Unread:
    """A format the fleet recognises and does not read: what a refusal calls it (``what``),
    and what to do with such a file instead (``advice``; ``FILE`` stands for its name,
    ``STEM`` for its name without the extension).
    ``kind`` goes into the refusal (``kind`` in the API's error) for a client to act on."""

    kind: str
    what: str
    advice: str = ""


_ODF_ADVICE = "open it in LibreOffice, save it as {} (File > Save As) and send that"
#: The formats recognised by their bytes (and, most, by their name too), by kind.
UNREAD = {
    u.kind: u
    for u in (
        Unread(
            "tmx",
            "a translation memory (TMX)",
            "import it as a translation memory instead (mtfleet tm import FILE --from LANG "
            "--to LANG, or POST /v1/translation_memories) and name it in requests "
            "(translation_memory_id, mtfleet --memory)",
        ),
        Unread("fluent", "a Mozilla Fluent file (.ftl)"),
        Unread(
            "qt",
            "a Qt Linguist translation file (.ts)",
            "convert it to XLIFF with Qt's lconvert (lconvert -i FILE -o STEM.xlf), send the "
            "XLIFF and convert its translation back",
        ),
        Unread("resx", "a .NET resource file (.resx)"),
        Unread("odt", "an OpenDocument text (ODT)", _ODF_ADVICE.format("DOCX")),
        Unread("ods", "an OpenDocument spreadsheet (ODS)", _ODF_ADVICE.format("XLSX")),
        Unread("odp", "an OpenDocument presentation (ODP)", _ODF_ADVICE.format("PPTX")),
        Unread("odf", "an OpenDocument file"),
        Unread("idml", "an InDesign package (IDML)"),
    )
}

#: What files the fleet does not read are, by extension: named in refusals, so a user learns
#: what was recognised and why it was not translated as text.
KNOWN_UNREAD = {
    ".odt": UNREAD["odt"],
    ".ods": UNREAD["ods"],
    ".odp": UNREAD["odp"],
    ".idml": UNREAD["idml"],
    ".pdf": Unread("pdf", "a PDF"),
    ".doc": Unread("doc", "a Word 97-2003 document", "save it as DOCX and send that"),
    ".xls": Unread("xls", "an Excel 97-2003 workbook", "save it as XLSX and send that"),
    ".ppt": Unread("ppt", "a PowerPoint 97-2003 deck", "save it as PPTX and send that"),
    ".rtf": Unread("rtf", "an RTF document", "save it as DOCX and send that"),
    ".csv": Unread("csv", "a CSV file"),
    ".tsv": Unread("tsv", "a TSV file"),
    ".ts": Unread("typescript", "a TypeScript file"),
    ".resx": UNREAD["resx"],
    ".ini": Unread("ini", "an INI file"),
    ".toml": Unread("toml", "a TOML file"),
    ".tmx": UNREAD["tmx"],
    ".ftl": UNREAD["fluent"],
    ".zip": Unread("zip", "a ZIP archive"),
}

#: Extensions that formats of different kinds share: the bytes say which (a ``.ts`` is Qt
#: Linguist XML or TypeScript, a ``.zip`` may be an ODF or IDML package).
_SHARED = frozenset({".ts", ".zip"})

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


def refuse(
    what: str, reads: Iterable[str], unread: Unread | None = None, name: str = "FILE"
) -> UnsupportedFormat:
    """The refusal of a file: ``what`` it was taken for, the formats the fleet reads, and
    what to do: for a format recognised (``unread``) its own advice (about the file ``name``),
    else to name the file."""
    formats = sorted(reads)
    listed = f"this server reads {', '.join(formats)} files"
    if unread is None:
        return UnsupportedFormat(
            f"{what}; {listed} (name the file with one of these extensions)", formats=formats
        )
    stem = name.rpartition(".")[0] or name
    advice = unread.advice.replace("FILE", name).replace("STEM", stem)
    advice = f": {advice}" if advice else ""
    return UnsupportedFormat(
        f"{what}, which this server does not translate{advice}; {listed}",
        formats=formats,
        kind=unread.kind,
    )


def by_name(filename: str, extensions: dict[str, str], content: bytes = b"") -> str | None:
    """The format a file's name says (``extensions``: extension -> format name); None when
    the name has no extension; :class:`UnsupportedFormat` for one the fleet does not read,
    named by its name, or by its bytes where the extension is shared (:data:`_SHARED`)."""
    ext = extension(filename)
    if ext is None:
        return None
    lower = filename.lower()
    for known, fmt in sorted(extensions.items(), key=lambda kv: -len(kv[0])):
        if lower.endswith(known):
            return fmt
    base = re.split(r"[/\\]", filename)[-1]
    told = _identify(content) if ext in _SHARED and content else None
    unread = told if isinstance(told, Unread) and told.kind in UNREAD else KNOWN_UNREAD.get(ext)
    if unread is None:
        raise refuse(f"{base!r} is a {ext} file, which this server does not translate", extensions)
    raise refuse(f"{base!r} is {unread.what}", extensions, unread, base)


_SRT_START = re.compile(r"\d+[ \t]*\r?\n[ \t]*\d+:\d\d:\d\d[,.]\d+[ \t]*-->")
#: Elements an HTML page or fragment starts with.
HTML_ROOTS = frozenset({
    "html", "head", "body", "p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li",
    "table", "section", "article", "header", "footer", "main", "nav", "aside", "form", "span",
    "a", "b", "i", "em", "strong", "img", "br", "hr", "blockquote", "pre", "figure",
})  # fmt: skip
#: What comes before an XML or HTML file's first element: declarations, comments, PIs, and a
#: DOCTYPE, with its internal subset (where a quoted entity value may hold ``>``).
_PROLOG = re.compile(
    r"""\s*(?:<\?.*?\?>|<!--.*?-->|<!doctype(?:[^>\["']|"[^"]*"|'[^']*')*"""
    r"""(?:\[(?:<!--.*?-->|"[^"]*"|'[^']*'|<(?!!--)|[^\]"'<])*+\])?\s*>)""",
    re.S,
)
_ELEMENT = re.compile(r"\s*<([a-z_][\w:.-]*)")
_PO_ENTRY = re.compile(r'^\s*(?:msgctxt|msgid|msgid_plural|msgstr(?:\[\d+\])?)\s+"', re.M)
_STRINGS_ENTRY = re.compile(r'^\s*"(?:[^"\\]|\\.)*"\s*=\s*"(?:[^"\\]|\\.)*"\s*;', re.M)
#: ``key = value`` (properties, INI) and ``key: value`` (YAML) lines.
_KEY_LINE = re.compile(r"^\s*(?:-\s+)?[\"']?[\w.@$/-]{1,100}[\"']?\s*([:=]\s|[:=]$|=)")
_COMMENT_LINE = re.compile(r"^\s*(?:#|!|;|//)")

#: What each format the fleet reads is called in a refusal where this server lacks it.
_READ_AS = {
    "docx": "a Word document (DOCX)",
    "xlsx": "an Excel workbook (XLSX)",
    "pptx": "a PowerPoint deck (PPTX)",
    "android": "Android string resources (strings.xml)",
    "stringsdict": "an Apple property list (a .stringsdict?)",
    "strings": "an Apple .strings file",
    "webvtt": "WebVTT subtitles",
    "po": "a gettext PO file (msgid/msgstr entries)",
    "yaml": "YAML (most lines are 'key: value')",
    "properties": "a key-value file (most lines are 'key = value')",
    "arb": "a Flutter ARB file (JSON with @-metadata)",
    "xcstrings": "an Apple String Catalog (.xcstrings)",
}


def sniff(content: bytes, extensions: dict[str, str]) -> str:
    """The format name of a nameless upload, from its first bytes (see the module doc);
    :class:`UnsupportedFormat` for bytes of a structured format the fleet does not read."""
    found = _identify(content)
    if isinstance(found, Unread):
        known = found if found.kind in UNREAD else None
        raise refuse(f"the file is {found.what}", extensions, known)
    if found != "text" and found not in extensions.values():
        raise refuse(f"the file is {_READ_AS.get(found, found)}", extensions)
    return found


def _identify(content: bytes) -> str | Unread:
    """What the first bytes of ``content`` say it is: a format name, or an :class:`Unread`
    (one of :data:`UNREAD`, or a description of bytes the fleet cannot read: binary, other XML,
    another ZIP)."""
    if content.startswith(b"PK\x03\x04"):
        return _zip(content)
    head, utf16 = _head(content[:HEAD_BYTES])
    if head is None:
        return Unread("", "binary data, not a document this server knows")
    low = head.lower()
    if low.startswith("<"):
        root = _root(low)
        if root == "xliff":
            return "xliff"
        if root in HTML_ROOTS or re.match(r"<!doctype\s+html\b", low):
            return "html"
        if root == "resources":
            return "android"
        if root == "plist" and "nsstringlocalizedformatkey" in low:
            return "stringsdict"
        if root is not None:
            return _XML_ROOTS.get(root) or Unread(
                "", f"XML (<{root}>) that is neither XLIFF nor HTML"
            )
        if low.startswith("<?xml"):
            return Unread("", f"XML whose first element is past its first {HEAD_BYTES} bytes")
    if utf16:
        return "strings"  # UTF-16 text that is no XML: Apple's .strings are written so
    if head.startswith(("{", "[")):
        return _json(head)
    if _SRT_START.match(head):
        return "srt"
    if re.match(r"WEBVTT(?:[ \t\r\n]|$)", head):
        return "webvtt"
    if _PO_ENTRY.search(head):
        return "po"
    if len(_STRINGS_ENTRY.findall(head)) >= 2:
        return "strings"
    if _fluent(head):
        return UNREAD["fluent"]
    kind = _key_value(head)
    if kind == ":":
        return "yaml"
    if kind == "=":
        return "properties"
    return "text"


#: How text starts: a byte-order mark (left out), or ``<`` in UTF-16 without one (an XML
#: document may start so: the XML specification's appendix F). The longest first.
_STARTS = (
    (b"\xff\xfe\x00\x00", "utf-32-le", 4),
    (b"\x00\x00\xfe\xff", "utf-32-be", 4),
    (b"\xef\xbb\xbf", "utf-8", 3),
    (b"\xff\xfe", "utf-16-le", 2),
    (b"\xfe\xff", "utf-16-be", 2),
    (b"<\x00", "utf-16-le", 0),
    (b"\x00<", "utf-16-be", 0),
)


def _head(head: bytes) -> tuple[str | None, bool]:
    """The first bytes as text (None for binary data) and whether they are UTF-16 or UTF-32,
    decoded as :data:`_STARTS` says, else as UTF-8 (what does not decode is left out: a
    character the head cuts, a Latin-1 letter)."""
    codec, skip = next(((c, n) for s, c, n in _STARTS if head.startswith(s)), ("utf-8", 0))
    text = head[skip:].decode(codec, "ignore").lstrip(" \t\r\n")
    if "\0" in text:
        return None, False
    return text, codec != "utf-8"


#: Roots of XML formats the fleet recognises and does not read.
_XML_ROOTS = {
    "tmx": UNREAD["tmx"],
    "ts": UNREAD["qt"],
    "root": UNREAD["resx"],  # a .resx: <root> with <resheader>s and <data name=…>s
    "plist": Unread("", "an Apple property list (a .stringsdict?)"),
}


#: A ZIP's end of central directory record, and how far from the end it may start (its 22
#: bytes and a comment of at most 65,535).
_END = b"PK\x05\x06"
_END_SPAN = 22 + 65_535
#: What a member's name in the central directory says the archive is.
_ZIP_MEMBERS = (
    (b"word/document.xml", "docx"),
    (b"xl/workbook.xml", "xlsx"),
    (b"ppt/presentation.xml", "pptx"),
    (b"designmap.xml", UNREAD["idml"]),
    (b"content.xml", UNREAD["odf"]),
)
#: A package's first member, ``mimetype``, stored as it is (ODF and IDML write it so): the
#: type it holds.
_MIMETYPE = re.compile(
    rb"mimetype.{0,64}?application/(vnd\.oasis\.opendocument\.(?P<odf>[a-z]+)"
    rb"|vnd\.adobe\.indesign-idml-package)",
    re.S,
)
_ODF = {b"text": "odt", b"spreadsheet": "ods", b"presentation": "odp"}


def _zip(content: bytes) -> str | Unread:
    """A package's format: ODF and IDML by the ``mimetype`` member they begin with; Office
    documents (and ODF or IDML without one) by the members their central directory names:
    the directory ends at the end record and takes the size that record says (the whole file
    before it for a ZIP64), looked through for names and nothing inflated."""
    typed = _MIMETYPE.match(content, 30, 30 + 8 + 64 + 80)
    if typed:
        odf = typed.group("odf")
        return UNREAD[_ODF.get(odf, "odf")] if odf is not None else UNREAD["idml"]
    end = content.rfind(_END, max(0, len(content) - _END_SPAN))
    if end < 0 or len(content) < end + 22:
        return Unread("", "a damaged ZIP archive")
    size = int.from_bytes(content[end + 12 : end + 16], "little")
    start = max(0, end - size - 76)  # a ZIP64's end records lie between (56 + 20 bytes)
    for name, found in _ZIP_MEMBERS:
        if content.find(name, start, end) >= 0:
            return found
    return Unread("", "a ZIP archive, not an Office document")


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


#: In the first bytes of a JSON object: a key that starts with ``@`` (ARB's metadata and
#: ``@@locale``), and a String Catalog's keys.
_ARB_KEY = re.compile(r'[{,]\s*"@')
_CATALOG_KEYS = (re.compile(r'[{,]\s*"sourceLanguage"\s*:'), re.compile(r'[{,]\s*"strings"\s*:'))


def _json(head: str) -> str:
    """JSON, ARB or a String Catalog, from the keys in the file's first bytes (whether it is
    valid JSON is for the format's reader to say)."""
    if _ARB_KEY.search(head):
        return "arb"
    if all(key.search(head) for key in _CATALOG_KEYS):
        return "xcstrings"
    return "json"


#: Fluent (https://projectfluent.org/fluent/guide/): an entry starts a line with a message
#: or ``-term`` identifier (letters, digits, ``-``, ``_``: never the dots of a properties key)
#: and ``=``; what follows it is indented (a multiline value, ``.attribute =``, a variant
#: ``[one]`` / ``*[other]``) or closes a placeable (``}``). What only Fluent writes: a
#: placeable of a variable or term (``{ $num }``, ``{ -brand }``, a selector ``{ $num ->``),
#: a default variant, a term's definition, an attribute.
_FLUENT_ENTRY = re.compile(r"-?[a-zA-Z][\w-]*[ \t]*=")
_FLUENT_ONLY = re.compile(
    r"\{[ \t]*[$-][a-zA-Z][\w-]*"  # { $var, { -term
    r"|^[ \t]+\*\[[^\]\n]+\]"  # *[other]
    r"|^-[a-zA-Z][\w-]*[ \t]*="  # -term =
    r"|^[ \t]+\.[a-zA-Z][\w-]*[ \t]*=",  # .attribute =
    re.M,
)


def _fluent(head: str) -> bool:
    """Whether the first lines are Fluent: at least 3 entries, every other line (but
    comments, ``#`` to ``###``) indented or a closing ``}``, and a construct only Fluent
    writes. Written here: sniffing reads only the head, and no Fluent parser tells a
    fragment of Fluent from a properties file (``key = value`` is both)."""
    lines = [ln for ln in head.splitlines()[:-1] if ln.strip() and not ln.startswith("#")]
    entries = sum(1 for ln in lines if _FLUENT_ENTRY.match(ln))
    others = sum(1 for ln in lines if not _FLUENT_ENTRY.match(ln) and ln[:1] not in " \t}")
    return entries >= 3 and not others and _FLUENT_ONLY.search(head) is not None


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
