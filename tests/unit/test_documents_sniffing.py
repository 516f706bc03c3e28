"""What an upload is (:func:`mtfleet.formats.for_upload`, every surface's one answer):
the name's extension when it has one, refused when the fleet does not read it; the first bytes
of a file without a usable name, refused when they look like a structured format the fleet does
not read. A localization file is never taken for plain text."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from mtfleet import formats as documents
from mtfleet.formats import UnsupportedFormat, sniffing
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "documents"


def archive(*members: str) -> bytes:
    """A ZIP archive holding ``members`` (each a small XML part)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name in members:
            z.writestr(name, "<root/>")
    return buf.getvalue()


TMX = b"""<?xml version="1.0" encoding="UTF-8"?>
<tmx version="1.4"><header srclang="en" datatype="plaintext" segtype="sentence"
 adminlang="en" creationtool="t" creationtoolversion="1" o-tmf="t"/>
<body><tu><tuv xml:lang="en"><seg>Hello</seg></tuv><tuv xml:lang="de"><seg>Hallo</seg></tuv></tu>
</body></tmx>
"""
RESX = b"""<?xml version="1.0" encoding="utf-8"?>
<root><data name="Greeting" xml:space="preserve"><value>Hello</value></data></root>
"""
QT_TS = b"""<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS><TS version="2.1" language="de"><context><name>Main</name>
<message><source>Open</source><translation type="unfinished"></translation></message>
</context></TS>
"""

#: Files of formats the fleet does not read: (name, bytes).
UNREAD_FILES = [
    ("brochure.idml", archive("mimetype", "designmap.xml", "Stories/Story_u1.xml")),
    ("letter.odt", archive("mimetype", "content.xml", "styles.xml")),
    ("memory.tmx", TMX),
    ("Resources.resx", RESX),
    ("app_de.ts", QT_TS),
]


@pytest.mark.parametrize("name,content", UNREAD_FILES, ids=[n for n, _ in UNREAD_FILES])
def test_a_file_the_fleet_does_not_read_is_refused_by_name_and_by_content(
    name: str, content: bytes
) -> None:
    with pytest.raises(UnsupportedFormat) as named:
        documents.for_upload(content, name)
    assert name in named.value.message and ".html" in named.value.message  # what it reads
    assert named.value.details["formats"] == sorted(documents.extensions())
    for nameless in (None, "", "file", "blob"):
        with pytest.raises(UnsupportedFormat) as sniffed:
            documents.for_upload(content, nameless)
        assert "this server reads" in sniffed.value.message


def package(mimetype: str, *members: str) -> bytes:
    """An ODF or IDML package: its ``mimetype`` member first and stored, as they write it."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), mimetype, zipfile.ZIP_STORED)
        for name in members:
            z.writestr(name, "<root/>")
    return buf.getvalue()


def tmx(encoding: str, bom: bytes, declaration: bool) -> bytes:
    """The unread TMX fixture in ``encoding``, after ``bom``, with or without its XML
    declaration (which then names that encoding)."""
    text = (FIXTURES / "unread" / "memory.tmx").read_text(encoding="utf-8")
    decl, _, body = text.partition("\n")
    head = decl.replace("UTF-8", encoding.upper()) + "\n" if declaration else ""
    return bom + (head + body).encode(encoding)


UNREAD = FIXTURES / "unread"
#: Each format the fleet recognises and does not read: (id, name, bytes, kind, what the
#: refusal calls it).
RECOGNISED = [
    ("fluent", "send.ftl", (UNREAD / "mozilla-send_en-US.ftl").read_bytes(), "fluent", "Fluent"),
    ("tmx", "memory.tmx", (UNREAD / "memory.tmx").read_bytes(), "tmx", "translation memory"),
    ("tmx-utf16le-trados", "tm.tmx", (UNREAD / "memory-utf16.tmx").read_bytes(), "tmx", "TMX"),
    ("tmx-utf16le", "tm.tmx", tmx("utf-16-le", b"\xff\xfe", True), "tmx", "TMX"),
    ("tmx-utf16be", "tm.tmx", tmx("utf-16-be", b"\xfe\xff", True), "tmx", "TMX"),
    ("tmx-utf16le-no-decl", "tm.tmx", tmx("utf-16-le", b"\xff\xfe", False), "tmx", "TMX"),
    ("tmx-utf16be-no-decl", "tm.tmx", tmx("utf-16-be", b"\xfe\xff", False), "tmx", "TMX"),
    ("tmx-utf16le-no-bom", "tm.tmx", tmx("utf-16-le", b"", True), "tmx", "TMX"),
    ("tmx-utf8-bom-no-decl", "tm.tmx", tmx("utf-8", b"\xef\xbb\xbf", False), "tmx", "TMX"),
    ("qt-ts", "app_de.ts", (UNREAD / "app_de.ts").read_bytes(), "qt", "Qt Linguist"),
    ("resx", "Resources.resx", (UNREAD / "Resources.resx").read_bytes(), "resx", ".NET resource"),
    (
        "odt",
        "styles.odt",
        (UNREAD / "docutils_styles.odt").read_bytes(),
        "odt",
        "OpenDocument text",
    ),
    (
        "ods",
        "sheet.ods",
        package("application/vnd.oasis.opendocument.spreadsheet", "content.xml"),
        "ods",
        "OpenDocument spreadsheet",
    ),
    (
        "odp",
        "deck.odp",
        package("application/vnd.oasis.opendocument.presentation", "content.xml"),
        "odp",
        "OpenDocument presentation",
    ),
    ("idml", "brochure.idml", (UNREAD / "brochure.idml").read_bytes(), "idml", "InDesign package"),
]


@pytest.mark.parametrize(
    "name,content,kind,what", [r[1:] for r in RECOGNISED], ids=[r[0] for r in RECOGNISED]
)
def test_a_format_the_fleet_recognises_is_refused_by_name_named_or_not(
    name: str, content: bytes, kind: str, what: str
) -> None:
    """A nameless Fluent file was translated as Java properties, a nameless UTF-16 TMX refused
    as "not a valid .strings file": each is told by its bytes and refused as what it is, as it
    is when its name says so."""
    for nameless in (None, "file", "upload"):
        with pytest.raises(UnsupportedFormat) as sniffed:
            documents.for_upload(content, nameless)
        assert sniffed.value.details["kind"] == kind
        assert what in sniffed.value.message and "this server reads" in sniffed.value.message
    with pytest.raises(UnsupportedFormat) as named:
        documents.for_upload(content, name)
    assert named.value.details["kind"] == kind
    assert what in named.value.message and name in named.value.message


def test_each_refusal_says_what_to_do_with_the_file() -> None:
    """A TMX is a translation memory to import (with the command and route that exist), an
    ODF document one to save as its Office twin, a Qt file one to convert to XLIFF."""
    advice = {}
    for name in ("memory.tmx", "docutils_styles.odt", "app_de.ts"):
        with pytest.raises(UnsupportedFormat) as refused:
            documents.for_upload((UNREAD / name).read_bytes(), name)
        advice[name] = refused.value.message
    assert "mtfleet tm import memory.tmx --from" in advice["memory.tmx"]
    assert "POST /v1/translation_memories" in advice["memory.tmx"]
    tm_docs = (ROOT / "docs" / "translation-memories.md").read_text(encoding="utf-8")
    assert "mtfleet tm import shop.tsv" in tm_docs and "POST /v1/translation_memories" in tm_docs
    assert "save it as DOCX" in advice["docutils_styles.odt"]
    assert "lconvert -i app_de.ts -o app_de.xlf" in advice["app_de.ts"]
    assert "name the file with" not in "".join(advice.values())  # renaming would not help


def test_a_ts_or_zip_name_is_told_by_its_bytes() -> None:
    with pytest.raises(UnsupportedFormat, match="a TypeScript file"):
        documents.for_upload(b"export const cart = 'Your cart';\n", "cart.ts")
    with pytest.raises(UnsupportedFormat, match="InDesign"):
        documents.for_upload((UNREAD / "brochure.idml").read_bytes(), "brochure.zip")


@pytest.mark.parametrize(
    "text,fmt",
    [
        ("title = Send\nimportingFile = Importing\ncopied = Copied!\n", "properties"),
        (
            "app.title = Shop\napp.cart = Cart {0}\napp.empty = Your cart is { empty }\n",
            "properties",
        ),
        ("a = 1\nb = 2\nc = { $x }\n[section]\nd = 4\n", "properties"),  # INI, not Fluent
    ],
)
def test_key_value_files_without_fluent_syntax_stay_properties(text: str, fmt: str) -> None:
    assert documents.for_upload(text.encode(), None).name == fmt


def test_xml_in_utf16_is_told_by_its_root() -> None:
    """UTF-16 that is XML is told like UTF-8 XML (Android resources stay Android); UTF-16
    that is not stays an Apple .strings file."""
    android = (FIXTURES / "android" / "shop_strings.xml").read_text(encoding="utf-8")
    body = android.partition("\n")[2]
    assert documents.for_upload(b"\xff\xfe" + body.encode("utf-16-le"), None).name == "android"
    assert documents.for_upload(b"\xfe\xff" + body.encode("utf-16-be"), "file").name == "android"
    strings = (FIXTURES / "strings" / "Localizable-utf16.strings").read_bytes()
    assert documents.for_upload(strings, None).name == "strings"


def test_android_resources_that_declare_entities_are_told_by_their_bytes() -> None:
    """The DOCTYPE's internal subset is read past (its entity values may hold ``>``)."""
    content = (FIXTURES / "android" / "entities_app_name.xml").read_bytes()
    assert documents.for_upload(content, None).name == "android"
    subset = b'<?xml version="1.0"?>\n<!DOCTYPE resources [<!ENTITY arrow "->">]>\n<resources/>'
    assert documents.for_upload(subset, "upload").name == "android"


@pytest.mark.parametrize(
    "name,what",
    [
        ("brochure.idml", "InDesign package"),
        ("Resources.resx", ".NET resource file"),
        ("a/b/report.xls", "Excel 97-2003 workbook"),
        ("memory.tmx", "translation memory"),
        ("send.ftl", "Mozilla Fluent"),
        ("Strings.ts", "TypeScript"),
    ],
)
def test_the_refusal_says_what_the_file_was_taken_for(name: str, what: str) -> None:
    with pytest.raises(UnsupportedFormat, match=what):
        documents.for_upload(b"anything", name)


@pytest.mark.parametrize(
    "path,fmt",
    [
        ("docx/product_sheet.docx", "docx"),
        ("html/product-page.html", "html"),
        ("html/help-article-fragment.html", "html"),
        ("xliff/v12_product_sheet.xlf", "xliff"),
        ("xliff/v20_app_strings.xlf", "xliff"),
        ("json/i18next-en.json", "json"),
        ("srt/product-video.srt", "srt"),
        ("srt/tutorial-crlf-bom.srt", "srt"),
        ("webvtt/captions.vtt", "webvtt"),
        ("webvtt/bom-crlf-rtl.vtt", "webvtt"),
        ("arb/app_en.arb", "arb"),
        ("arb/finamp_app_en.arb", "arb"),
        ("strings/Localizable.strings", "strings"),
        ("strings/Localizable-utf16.strings", "strings"),
        ("po/messages.po", "po"),
        ("po/hamster_en_GB.po", "po"),
        ("android/etar_calendar_strings.xml", "android"),
        ("stringsdict/macpass_Localizable.stringsdict", "stringsdict"),
        ("xcstrings/ultimate-portfolio-app_Localizable.xcstrings", "xcstrings"),
        ("yaml/rails-i18n_en-US.yml", "yaml"),
        ("properties/jenkins_hudson_Messages.properties", "properties"),
        ("xlsx/excelize_Book1.xlsx", "xlsx"),
        ("pptx/Open-XML-SDK_Bug571679_Brownbag.pptx", "pptx"),
        ("text/product-description.txt", "text"),
        ("text/edge-cases.txt", "text"),
        ("markdown/shipping-faq.md", "text"),  # Markdown is told by its name only
        ("markdown/release-notes.md", "text"),
    ],
)
def test_a_nameless_upload_of_a_format_the_fleet_reads_is_told_by_its_first_bytes(
    path: str, fmt: str
) -> None:
    content = (FIXTURES / path).read_bytes()
    for nameless in (None, "file", "upload"):
        assert documents.for_upload(content, nameless).name == fmt
    assert documents.for_upload(content, Path(path).name).name == Path(path).parent.name


@pytest.mark.parametrize(
    "text",
    [
        "Hello",
        "Sale",
        "Price: 20 euros.\nFree shipping on every order over 50 euros.\n",
        "Note: the shop closes at 6 pm.\nWe open again on Monday.\nThank you!\n",
    ],
)
def test_prose_with_a_colon_is_still_text(text: str) -> None:
    assert documents.for_upload(text.encode(), "file").name == "text"


def test_a_declared_format_wins_and_an_unknown_declared_one_is_refused() -> None:
    assert documents.for_upload(b"<p>Hi</p>", "notes.yml", "html").name == "html"
    with pytest.raises(documents.DocumentError, match="unknown document format"):
        documents.for_upload(b"Hi", "notes.txt", "idml")


@pytest.mark.parametrize(
    "name,ext",
    [
        ("messages.po", ".po"),
        ("a/b/Report.DOCX", ".docx"),
        ("file", None),
        (".bashrc", None),
        ("archive.tar.gz", ".gz"),
        ("", None),
        ("weird.name with spaces", None),
    ],
)
def test_what_counts_as_an_extension(name: str, ext: str | None) -> None:
    assert sniffing.extension(name) == ext


def test_binary_and_damaged_archives_are_refused() -> None:
    with pytest.raises(UnsupportedFormat, match="binary"):
        documents.for_upload(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", None)
    with pytest.raises(UnsupportedFormat, match="ZIP archive, not an Office document"):
        documents.for_upload(archive("a.txt"), None)
    with pytest.raises(UnsupportedFormat, match="damaged ZIP"):
        documents.for_upload(b"PK\x03\x04 not really a zip", None)


def test_a_nameless_upload_is_told_from_its_head_and_read_by_its_format() -> None:
    """Sniffing never parses (the API does it on its event loop): JSON nested 100,000 deep is
    JSON at once, and a file that is not what its head says is the reader's to refuse."""
    deep = b'{"a": ' * 100_000 + b'"x"' + b"}" * 100_000
    assert documents.for_upload(deep, None).name == "json"
    with pytest.raises(documents.DocumentError, match="more than 64 levels"):
        documents.for_name("json").extract(deep)
    cut = b'{"title": "Sale", "body": ' + b'"x", ' * 5_000  # broken past the head
    assert documents.for_upload(cut, "file").name == "json"
    arb = b'{"@@locale": "en", "title": "Sale"' + b", " * 5_000 + b"}"
    assert documents.for_upload(arb, None).name == "arb"
    # a DOCX is told by its central directory, at its end, however large what comes first
    docx = (FIXTURES / "docx" / "product_sheet.docx").read_bytes()
    with zipfile.ZipFile(io.BytesIO(docx)) as src:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as dst:
            dst.writestr("media/padding.bin", b"\0" * 200_000)  # before every named member
            for info in src.infolist():
                dst.writestr(info, src.read(info))
            dst.comment = b"PK\x05\x06 a comment that looks like an end record"
    assert documents.for_upload(buf.getvalue(), None).name == "docx"
