"""What an upload is (:func:`mtfleet.core.documents.for_upload`, every surface's one answer):
the name's extension when it has one, refused when the fleet does not read it; the first bytes
of a file without a usable name, refused when they look like a structured format the fleet does
not read. A localization file is never taken for plain text."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from mtfleet.core import documents
from mtfleet.core.documents import UnsupportedFormat, sniffing
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


@pytest.mark.parametrize(
    "name,what",
    [
        ("brochure.idml", "InDesign package"),
        ("Resources.resx", ".NET resource file"),
        ("a/b/report.xls", "Excel 97-2003 workbook"),
        ("memory.tmx", "translation memory"),
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
