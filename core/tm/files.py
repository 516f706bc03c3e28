"""A translation memory's heavy work, on plain data: an import file read into what the store
keeps, an export written, a correction worked out, a page of segments filtered.

The API runs each of these functions in a document process
(:meth:`mtfleet.api.parsing.DocumentPool.run`: under its deadline and memory limit, within the
API key's share of the processes), so a memory's pairs are never held whole in the API's own
process; :class:`~mtfleet.core.tm.store.TranslationMemoryStore` hands them what Redis holds (the
base blob and the log's records) and stores what they give back. A file is read as it goes
(:mod:`mtfleet.core.tm.formats`), an export written a unit at a time.

**The blob** is every pair of a memory as of its last rewrite, ``[[source, target], ...]``
oldest first, JSON, zlib-compressed, base64; each record of the log is
``{"v": version, "pairs": [[s, t], ...]}``.
"""

from __future__ import annotations

import base64
import io
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from mtfleet.core.errors import InvalidInput
from mtfleet.core.tm.model import TMLimits
from mtfleet.core.tm.text import content_version, dedupe, next_version, unique_pairs

#: Bytes of an export written at once.
WRITE_CHUNK = 256 * 1024


def encode_pairs(pairs: list[tuple[str, str]]) -> str:
    raw = json.dumps(pairs, ensure_ascii=False, separators=(",", ":")).encode()
    return base64.b64encode(zlib.compress(raw, 6)).decode("ascii")


def decode_pairs(blob: str) -> list[tuple[str, str]]:
    return [(s, t) for s, t in json.loads(zlib.decompress(base64.b64decode(blob)))]


def merged(blob: str, records: Sequence[str]) -> list[tuple[str, str]]:
    """Every pair: the blob's, then each record's on top (a changed pair moves to the end)."""
    out = dict(decode_pairs(blob))
    for record in records:
        for s, t in json.loads(record)["pairs"]:
            out.pop(s, None)
            out[s] = t
    return list(out.items())


def check_count(count: int, limits: TMLimits) -> None:
    if count > limits.max_pairs:
        raise InvalidInput(
            f"{count:,} pairs; a translation memory holds at most "
            f"{limits.max_pairs:,} (MT_TM_MAX_PAIRS)"
        )


@dataclass(frozen=True)
class Prepared:
    """A new memory's pairs as the store keeps them, and its language pair."""

    blob: str
    version: str
    entry_count: int
    skipped: int = 0
    source: str = ""
    target: str = ""


def _prepared(
    pairs: list[tuple[str, str]], source: str, target: str, limits: TMLimits, skipped: int = 0
) -> Prepared:
    check_count(len(pairs), limits)
    version = content_version(source, target, pairs)
    return Prepared(encode_pairs(pairs), version, len(pairs), skipped, source, target)


def prepare_pairs(
    pairs: Sequence[tuple[str, str]], source: str, target: str, limits: TMLimits
) -> Prepared:
    """A memory of ``pairs`` (a request's entries: checked, one per source, the later wins)."""
    return _prepared(
        unique_pairs(pairs, max_bytes=limits.max_segment_bytes), source, target, limits
    )


def prepare_file(
    content: bytes | str,
    filename: str | None,
    fmt: str | None,
    source: str | None,
    target: str | None,
    limits: TMLimits,
) -> Prepared:
    """A memory of a TMX, TSV or CSV file's ``source`` -> ``target`` pairs: ``content`` is the
    file's bytes, or the path of a file (read as it goes); ``fmt``, else told by
    :func:`mtfleet.core.tm.formats.sniff`. Without ``source`` and ``target`` the file is a TMX
    that holds one pair (:func:`mtfleet.core.tm.formats.tmx_pair`: DeepL's import names none)."""
    from mtfleet.core.tm import formats  # (see export)

    what = f"the file {filename!r}" if filename else "the file"
    with open(content, "rb") if isinstance(content, str) else io.BytesIO(content) as file:
        fmt = (fmt or formats.sniff(file.read(4096), filename)).lower()
        file.seek(0)
        if source is None or target is None:
            if fmt != "tmx":
                raise InvalidInput(
                    f"{what} is not TMX; a file whose languages the request does not name "
                    "must be a TMX file (its <tuv xml:lang> name them)"
                )
            source, target = formats.tmx_pair(file, what)
            file.seek(0)
        parsed = formats.parse(
            file,
            fmt,
            source,
            target,
            max_bytes=limits.max_segment_bytes,
            filename=filename or "",
        )
    pairs = dedupe(parsed.pairs)
    if not pairs:
        raise InvalidInput(f"the file has no {source}->{target} pair")
    return _prepared(pairs, source, target, limits, parsed.skipped)


def export(blob: str, records: Sequence[str], source: str, target: str, path: str) -> None:
    """The memory as a TMX 1.4 file at ``path`` (UTF-8, written a unit at a time)."""
    # the file formats (and lxml) are imported by the two functions that read or write a file:
    # a worker imports this module for :func:`merged` and never loads them (0.06 s of its start)
    from mtfleet.core.tm import formats

    with open(path, "w", encoding="utf-8", newline="", buffering=WRITE_CHUNK) as out:
        for part in formats.tmx_parts(merged(blob, records), source, target):
            out.write(part)


@dataclass(frozen=True)
class Change:
    """A correction as the store writes it: the new version, the pairs it adds (the others
    replace a target), and either a record to append to the log or (``compact``) the whole
    memory as a new base blob."""

    version: str
    added: int
    compact: bool
    payload: str
    base_bytes: int
    log_bytes: int


def plan_change(
    blob: str,
    records: Sequence[str],
    pairs: Sequence[tuple[str, str]],
    *,
    version: str,
    entry_count: int,
    log_len: int,
    base_bytes: int,
    log_bytes: int,
    limits: TMLimits,
    log_max_records: int,
    log_min_bytes: int,
) -> Change | None:
    """``pairs`` (a request's entries) added to the memory, or put in place of the pairs with
    the same source; None when nothing changes. The log is rewritten into the base past
    ``log_max_records`` records or ``max(log_min_bytes, base_bytes)`` bytes."""
    changes = unique_pairs(pairs, max_bytes=limits.max_segment_bytes)
    current = dict(merged(blob, records))
    todo = [(s, t) for s, t in changes if current.get(s) != t]
    if not todo:
        return None
    added = sum(1 for s, _ in todo if s not in current)
    check_count(entry_count + added, limits)
    new_version = next_version(version, todo)
    record = json.dumps({"v": new_version, "pairs": todo}, ensure_ascii=False)
    log_bytes += len(record.encode())
    if log_len + 1 > log_max_records or log_bytes > max(log_min_bytes, base_bytes):
        for s, t in todo:
            current.pop(s, None)
            current[s] = t
        payload = encode_pairs(list(current.items()))
        return Change(new_version, added, True, payload, len(payload), 0)
    return Change(new_version, added, False, record, base_bytes, log_bytes)


def page(
    blob: str,
    records: Sequence[str],
    offset: int,
    size: int,
    needle: str | None = None,
    case_sensitive: bool = False,
) -> tuple[list[tuple[str, str]], bool]:
    """The pairs from ``offset`` (``size`` at most) of those holding ``needle`` in their source
    or target (all without it), and whether more follow."""
    pairs = merged(blob, records)
    if needle:
        if case_sensitive:
            pairs = [(s, t) for s, t in pairs if needle in s or needle in t]
        else:
            low = needle.casefold()
            pairs = [(s, t) for s, t in pairs if low in s.casefold() or low in t.casefold()]
    return pairs[offset : offset + size], offset + size < len(pairs)
