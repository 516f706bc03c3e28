"""The OOXML package (``formats/ooxml.py``) under DOCX, XLSX and PPTX: a member that
holds no translation is copied as it is stored, never inflated and deflated again."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

import pytest

from mtfleet import formats as documents

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"


def stored(content: bytes, name: str) -> bytes:
    """A member's compressed bytes as the archive stores them."""
    z = zipfile.ZipFile(io.BytesIO(content))
    info = z.getinfo(name)
    raw = io.BytesIO(content)
    raw.seek(info.header_offset + 26)
    name_len, extra_len = (int.from_bytes(raw.read(2), "little") for _ in range(2))
    raw.seek(info.header_offset + 30 + name_len + extra_len)
    return raw.read(info.compress_size)


@pytest.mark.parametrize(
    "path",
    ["docx/product_sheet.docx", "xlsx/excelize_Book1.xlsx", "pptx/features.pptx"],
)
def test_an_untouched_member_keeps_its_compressed_bytes(path: str) -> None:
    """A member deflated at another level than Python's default (as Office or a phone's
    zip library writes them) comes back with the very bytes it had, and reads the same."""
    rng = random.Random(7)
    blob = bytes(rng.choice(b"abcdefgh ") for _ in range(300_000))
    buf = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO((FIXTURES / path).read_bytes())) as src,
        zipfile.ZipFile(buf, "w") as out,
    ):
        for info in src.infolist():
            out.writestr(info, src.read(info))
        out.writestr("media/blob.bin", blob, zipfile.ZIP_DEFLATED, compresslevel=1)
    content = buf.getvalue()
    fmt = documents.for_upload(content, path)
    units = fmt.extract(content)
    rendered = fmt.render(content, [u.text.upper() for u in units])
    assert rendered != content
    assert stored(rendered, "media/blob.bin") == stored(content, "media/blob.bin")
    with zipfile.ZipFile(io.BytesIO(rendered)) as z:
        assert z.testzip() is None  # every member's CRC checks
        assert z.read("media/blob.bin") == blob
        assert [i.filename for i in z.infolist()] == [
            i.filename for i in zipfile.ZipFile(io.BytesIO(content)).infolist()
        ]


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_a_member_whose_bytes_do_not_match_its_crc_is_refused(method: int) -> None:
    """Members are read from their stored bytes (not through zipfile's reader): a damaged one
    is refused as zipfile would refuse it, never read as text."""
    from mtfleet.formats.base import DocumentError
    from mtfleet.formats.ooxml import Package

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("word/document.xml", b"<w:document>" + b"hello " * 50 + b"</w:document>", method)
    good = out.getvalue()
    package = Package(good, "DOCX")
    assert package.read(package.member("word/document.xml")).count(b"hello") == 50
    at = good.index(b"hello") if method == zipfile.ZIP_STORED else 60
    damaged = bytearray(good)
    damaged[at] ^= 0x01
    package = Package(bytes(damaged), "DOCX")
    with pytest.raises(DocumentError, match=r"word/document\.xml"):
        package.read(package.member("word/document.xml"))
