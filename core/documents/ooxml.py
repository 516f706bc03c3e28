"""The Office Open XML package (the ZIP under DOCX, XLSX and PPTX): opened against the limits
below before anything is decompressed, its parts found by content type, and written back with
every member that holds no translation copied byte for byte.

Each OOXML format reads the parts it translates through :class:`Package` and hands the rewritten
ones to :meth:`Package.write`; everything else (media, styles, charts, relationships...) is
streamed through with its name, order, timestamp and compression. The parts are parsed with the
hardened lxml parser of :mod:`mtfleet.core.documents.xliff` (no DTD, no entities, no network).
"""

from __future__ import annotations

import io
import re
import shutil
import struct
import zipfile
import zlib
from typing import Any

from mtfleet.core.documents.base import DocumentError
from mtfleet.core.documents.xliff import parse_untrusted_xml

#: Refuse archives that decompress to more than this in all (the sizes the ZIP declares; a
#: member that inflates past its declared size fails its read instead).
MAX_UNCOMPRESSED_BYTES = 256 * 1024 * 1024
#: Refuse a single XML part (document, sheet, slide...) larger than this, decompressed.
MAX_PART_BYTES = 64 * 1024 * 1024
#: Refuse archives with more members than this.
MAX_MEMBERS = 10_000
#: Refuse a member (over 1 MiB) that decompresses to more than this many times its compressed
#: size: XML compresses 5-20 times, images not at all; a ZIP bomb by a thousand.
MAX_RATIO = 100
_RATIO_FROM_BYTES = 1024 * 1024
#: Refuse an XML part with more markup than this (counted as its ``<`` before it is parsed: an
#: upper bound on its elements). A 600-page book's document.xml has about 500,000; each costs
#: the parse tree some 150 bytes, so this bounds a part's tree to about 100 MB.
MAX_PART_ELEMENTS = 600_000

_COPY_BYTES = 1024 * 1024
_CT = "http://schemas.openxmlformats.org/package/2006/content-types"


def natural(name: str) -> list[Any]:
    """A sort key that puts ``slide2.xml`` before ``slide10.xml``."""
    return [int(s) if s.isdigit() else s for s in re.split(r"(\d+)", name)]


class Package:
    """An OOXML package read from ``content``; ``kind`` ("DOCX", "XLSX"...) names it in
    every message."""

    def __init__(self, content: bytes, kind: str) -> None:
        self.kind = kind
        if not content.startswith(b"PK"):
            raise DocumentError(f"not a {kind} file: not a ZIP archive")
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(content))
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as exc:
            raise DocumentError(f"not a {kind} file: not a readable ZIP archive ({exc})") from None
        infos = self.zip.infolist()
        if len(infos) > MAX_MEMBERS:
            raise DocumentError(
                f"{kind} archive has {len(infos)} members; the limit is {MAX_MEMBERS}"
            )
        total = sum(i.file_size for i in infos)
        if total > MAX_UNCOMPRESSED_BYTES:
            raise DocumentError(
                f"{kind} archive decompresses to {total} bytes; "
                f"the limit is {MAX_UNCOMPRESSED_BYTES}"
            )
        if any(i.flag_bits & 0x1 for i in infos):
            raise DocumentError(f"{kind} archive is encrypted")
        for i in infos:
            if i.file_size > _RATIO_FROM_BYTES and i.file_size > MAX_RATIO * max(
                i.compress_size, 1
            ):
                raise DocumentError(
                    f"{kind} member {i.filename} decompresses "
                    f"{i.file_size // max(i.compress_size, 1)} times its size; "
                    f"the limit is {MAX_RATIO} (a ZIP bomb?)"
                )
        self.by_name = {i.filename.lower(): i for i in infos}

    def read(self, info: zipfile.ZipInfo, limit: int = MAX_UNCOMPRESSED_BYTES) -> bytes:
        """A member's bytes, refused past ``limit`` or past the size it declares."""
        if info.file_size > limit:
            raise DocumentError(
                f"{self.kind} member {info.filename} decompresses to {info.file_size} bytes; "
                f"the limit is {limit}"
            )
        try:
            with self.zip.open(info) as f:
                data = f.read(info.file_size + 1)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as exc:
            raise DocumentError(
                f"{self.kind} member {info.filename} cannot be read: {exc}"
            ) from None
        if len(data) > info.file_size:
            raise DocumentError(f"{self.kind} member {info.filename} is larger than it declares")
        return data

    def member(self, name: str) -> zipfile.ZipInfo | None:
        """The member at ``name`` (a part name, with or without its leading ``/``; ZIP names
        in OOXML are matched without regard to case)."""
        return self.by_name.get(name.lstrip("/").lower())

    def parts_by_type(self) -> dict[str, list[zipfile.ZipInfo]]:
        """Each content type's parts (from ``[Content_Types].xml``'s overrides), in name
        order."""
        types_info = self.member("[Content_Types].xml")
        if types_info is None:
            raise DocumentError(f"a ZIP archive but not a {self.kind} file: no [Content_Types].xml")
        types = parse_untrusted_xml(
            self.read(types_info, MAX_PART_BYTES), f"the {self.kind} part [Content_Types].xml"
        )
        kinds: dict[str, list[zipfile.ZipInfo]] = {}
        for override in types.iter(f"{{{_CT}}}Override"):
            info = self.member(str(override.get("PartName", "")))
            if info is not None:
                kinds.setdefault(str(override.get("ContentType", "")).strip(), []).append(info)
        for infos in kinds.values():
            infos.sort(key=lambda i: natural(i.filename))
        return kinds

    def parse(self, info: zipfile.ZipInfo) -> tuple[bytes, Any]:
        """A part's bytes and its parsed tree, within the part limits."""
        data = self.read(info, MAX_PART_BYTES)
        elements = data.count(b"<")
        if elements > MAX_PART_ELEMENTS:
            raise DocumentError(
                f"the {self.kind} part {info.filename} has {elements} pieces of markup; "
                f"the limit is {MAX_PART_ELEMENTS}"
            )
        return data, parse_untrusted_xml(data, f"the {self.kind} part {info.filename}")

    def write(self, rewritten: dict[str, bytes]) -> bytes:
        """The package with the members named in ``rewritten`` replaced; every other member
        copied as it is stored, compressed bytes and all (never inflated and deflated again:
        a deck's images or a workbook's 20 MB sheet of numbers cost a copy), with its name,
        order, timestamp and compression."""
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as zout:
            for info in self.zip.infolist():
                member = zipfile.ZipInfo(info.filename, info.date_time)
                member.compress_type = info.compress_type
                member.external_attr = info.external_attr
                member.create_system = info.create_system
                member.comment = info.comment
                data = rewritten.get(info.filename)
                if data is not None:
                    zout.writestr(member, data)
                elif not self._copy_stored(info, member, zout):
                    self._recompress(info, member, zout)
        return out.getvalue()

    def _copy_stored(
        self, info: zipfile.ZipInfo, member: zipfile.ZipInfo, zout: zipfile.ZipFile
    ) -> bool:
        """Copy ``info``'s compressed bytes into ``zout`` as ``member``; False (nothing
        written) when its local header is not where the central directory says.

        :mod:`zipfile` has no raw copy: this writes the local header and the data at the end
        of the archive and records the member as :meth:`zipfile.ZipFile.writestr` does (the
        same attributes: ``fp``, ``start_dir``, ``filelist``, ``NameToInfo``)."""
        src = self.zip.fp
        if src is None:
            return False
        src.seek(info.header_offset)
        local = src.read(30)
        if len(local) < 30 or local[:4] != b"PK\x03\x04":
            return False
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        member.CRC = info.CRC
        member.file_size = info.file_size
        member.compress_size = info.compress_size
        zip64 = max(info.file_size, info.compress_size) > zipfile.ZIP64_LIMIT
        zout.fp.seek(zout.start_dir)  # type: ignore[union-attr]
        member.header_offset = zout.fp.tell()  # type: ignore[union-attr]
        zout.fp.write(member.FileHeader(zip64))  # type: ignore[union-attr]
        src.seek(info.header_offset + 30 + name_len + extra_len)
        left = info.compress_size
        while left > 0:
            chunk = src.read(min(left, _COPY_BYTES))
            if not chunk:
                raise DocumentError(f"{self.kind} member {info.filename} is cut short")
            zout.fp.write(chunk)  # type: ignore[union-attr]
            left -= len(chunk)
        zout.start_dir = zout.fp.tell()  # type: ignore[union-attr]
        zout.filelist.append(member)
        zout.NameToInfo[member.filename] = member
        zout._didModify = True  # type: ignore[attr-defined]
        return True

    def _recompress(
        self, info: zipfile.ZipInfo, member: zipfile.ZipInfo, zout: zipfile.ZipFile
    ) -> None:
        try:
            with self.zip.open(info) as src, zout.open(member, "w") as dst:
                shutil.copyfileobj(src, dst, _COPY_BYTES)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
            raise DocumentError(
                f"{self.kind} member {info.filename} cannot be read: {exc}"
            ) from None
