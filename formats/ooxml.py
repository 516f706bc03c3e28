"""The Office Open XML package (the ZIP under DOCX, XLSX and PPTX): opened against the limits
below before anything is decompressed, its parts found by content type, and written back with
every member that holds no translation copied byte for byte.

Each OOXML format reads the parts it translates through :class:`Package` and hands the rewritten
ones to :meth:`Package.write`; everything else (media, styles, charts, relationships...) is
streamed through with its name, order, timestamp and compression. The parts are parsed with the
hardened lxml parser of :mod:`mtfleet.formats.xliff` (no DTD, no entities, no network).
"""

from __future__ import annotations

import io
import posixpath
import re
import shutil
import struct
import zipfile
import zlib
from abc import abstractmethod
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any, ClassVar, Protocol
from urllib.parse import unquote

from mtfleet.formats.base import DocumentError, DocumentFormat, Opened, Rendered, Unit
from mtfleet.formats.xliff import parse_untrusted_xml

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
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"


def _inflate(raw: memoryview, info: zipfile.ZipInfo) -> bytes:
    """A stored or deflated member's bytes from ``raw`` (its stored bytes): at most one byte
    past the size it declares (the caller refuses more), its CRC checked as
    :mod:`zipfile` checks it."""
    if info.compress_type == zipfile.ZIP_STORED:
        data = bytes(raw[: info.file_size + 1])
    else:
        inflater = zlib.decompressobj(-15)
        data = inflater.decompress(raw, info.file_size + 1)
        if len(data) < info.file_size or not (inflater.eof or len(data) > info.file_size):
            raise EOFError("compressed data ended before the end-of-stream marker was reached")
    if len(data) == info.file_size and zlib.crc32(data) != info.CRC:
        raise zipfile.BadZipFile(f"bad CRC-32 for file {info.filename!r}")
    return data


def natural(name: str) -> list[Any]:
    """A sort key that puts ``slide2.xml`` before ``slide10.xml``."""
    return [int(s) if s.isdigit() else s for s in re.split(r"(\d+)", name)]


class Package:
    """An OOXML package read from ``content``; ``kind`` ("DOCX", "XLSX"...) names it in
    every message."""

    def __init__(self, content: bytes, kind: str) -> None:
        self.kind = kind
        self.content = content
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
        raw = self._stored(info)
        try:
            if raw is not None and info.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                data = _inflate(raw, info)
            else:
                with self.zip.open(info) as f:
                    data = f.read(info.file_size + 1)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as exc:
            raise DocumentError(
                f"{self.kind} member {info.filename} cannot be read: {exc}"
            ) from None
        if len(data) > info.file_size:
            raise DocumentError(f"{self.kind} member {info.filename} is larger than it declares")
        return data

    def _stored(self, info: zipfile.ZipInfo) -> memoryview | None:
        """A member's bytes as stored (compressed), found through its local header; None
        when that header is not where the central directory says.

        :mod:`zipfile` has no raw access: this reads the local header as
        :meth:`zipfile.ZipFile.open` does. Reading a member through ``open`` costs some 15 µs
        of bookkeeping (a shared file handle, a lock, three reads); a 300-slide deck has 900
        small parts to read, twice per job."""
        offset = info.header_offset
        local = self.content[offset : offset + 30]
        if len(local) < 30 or local[:4] != b"PK\x03\x04":
            return None
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        start = offset + 30 + name_len + extra_len
        if start + info.compress_size > len(self.content):
            return None
        return memoryview(self.content)[start : start + info.compress_size]

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

    def relationships(self, info: zipfile.ZipInfo) -> list[tuple[str, str, str]]:
        """``(id, type, target member name)`` of a part's internal relationships, in their
        order; ``type`` is the relationship type's last segment (``slide``, ``chart``: the
        2006 and Microsoft namespaces alike)."""
        folder, name = posixpath.split(info.filename)
        rels = self.member(posixpath.join(folder, "_rels", f"{name}.rels"))
        if rels is None:
            return []
        _data, root = self.parse(rels)
        out = []
        for rel in root.iter(_REL):
            target = str(rel.get("Target", ""))
            mode = rel.get("TargetMode")
            if not target or (mode is not None and str(mode).lower() == "external"):
                continue
            if "%" in target:
                target = unquote(target)
            path = target.lstrip("/") if target[0] == "/" else posixpath.join(folder, target)
            kind = str(rel.get("Type", "")).rpartition("/")[2]
            out.append((str(rel.get("Id", "")), kind, posixpath.normpath(path)))
        return out

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
                    _write_new(member, data, zout)
                elif not self._copy_stored(info, member, zout):
                    self._recompress(info, member, zout)
        return out.getvalue()

    def _copy_stored(
        self, info: zipfile.ZipInfo, member: zipfile.ZipInfo, zout: zipfile.ZipFile
    ) -> bool:
        """Copy ``info``'s compressed bytes into ``zout`` as ``member``; False (nothing
        written) when its local header is not where the central directory says.

        :mod:`zipfile` has no raw copy: see :func:`_append`."""
        raw = self._stored(info)
        if raw is None:
            return False
        member.CRC = info.CRC
        member.file_size = info.file_size
        _append(member, raw, zout)
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


def _append(member: zipfile.ZipInfo, raw: bytes | memoryview, zout: zipfile.ZipFile) -> None:
    """Write ``member`` (its CRC and size set) with ``raw``, its bytes as stored, at the end
    of ``zout``, and record it as :meth:`zipfile.ZipFile.writestr` does (the same attributes:
    ``fp``, ``start_dir``, ``filelist``, ``NameToInfo``): :mod:`zipfile` writes nothing it
    did not compress itself."""
    member.compress_size = len(raw)
    zip64 = max(member.file_size, member.compress_size) > zipfile.ZIP64_LIMIT
    zout.fp.seek(zout.start_dir)  # type: ignore[union-attr]
    member.header_offset = zout.fp.tell()  # type: ignore[union-attr]
    zout.fp.write(member.FileHeader(zip64))  # type: ignore[union-attr]
    zout.fp.write(raw)  # type: ignore[union-attr]
    zout.start_dir = zout.fp.tell()  # type: ignore[union-attr]
    zout.filelist.append(member)
    zout.NameToInfo[member.filename] = member
    zout._didModify = True  # type: ignore[attr-defined]


def _write_new(member: zipfile.ZipInfo, data: bytes, zout: zipfile.ZipFile) -> None:
    """Write a rewritten part, stored or deflated as :meth:`zipfile.ZipFile.writestr` would
    (the same compressor settings, so the same bytes), without its per-member machinery
    (half the cost of writing a deck's 600 small parts)."""
    if member.compress_type == zipfile.ZIP_STORED:
        raw = data
    elif member.compress_type == zipfile.ZIP_DEFLATED:
        compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
        raw = compressor.compress(data) + compressor.flush()
    else:
        zout.writestr(member, data)
        return
    member.CRC = zlib.crc32(data)
    member.file_size = len(data)
    _append(member, raw, zout)


# --- the formats --------------------------------------------------------------------------------


class PackageReading(Protocol):
    """A package read once by its format: its units, and the package with translations of
    them (``render``, called at most once: it rebuilds the parts it read)."""

    units: list[Unit]

    def render(self, translations: Sequence[str], target_lang: str | None) -> Rendered: ...


class PackageFormat(DocumentFormat):
    """A format of OOXML packages (DOCX, XLSX, PPTX): :meth:`read` opens the package and parses
    its parts once, and extracting, rendering and :meth:`open` (a job's result: the units and
    the render from one reading) all go through it."""

    binary: ClassVar[bool] = True

    @abstractmethod
    def read(self, content: bytes) -> PackageReading:
        """``content`` read: its parts parsed, its units made."""

    def extract(self, content: bytes) -> list[Unit]:
        return self.read(content).units

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        return self.read(content).render(translations, target_lang).content

    def render_result(
        self,
        content: bytes,
        translations: Sequence[str],
        untranslated: AbstractSet[int] = frozenset(),
        *,
        target_lang: str | None = None,
        review: AbstractSet[int] = frozenset(),
    ) -> Rendered:
        return self.read(content).render(translations, target_lang)

    def open(self, content: bytes) -> Opened:
        doc = self.read(content)

        def render(
            translations: Sequence[str],
            untranslated: AbstractSet[int],
            target_lang: str | None,
            review: AbstractSet[int] = frozenset(),
        ) -> Rendered:
            return doc.render(translations, target_lang)

        return Opened(doc.units, render)
