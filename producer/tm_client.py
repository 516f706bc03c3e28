"""The SDK's translation-memory calls (``/v1/translation_memories``), defined once without I/O
as :class:`~mtfleet.producer.calls.Call` objects; :class:`~mtfleet.producer.client.MTClient`
and :class:`~mtfleet.producer.client.AsyncMTClient` have a method of the same name for each.

    with MTClient() as mt:
        tm = mt.import_translation_memory(Path("shop.tmx").read_bytes(), name="shop",
                                          source="en", target="es", filename="shop.tmx")
        mt.add_translation_memory_entries(tm.id, {"Free shipping": "Envío gratis"})
        Path("shop-now.tmx").write_bytes(mt.export_translation_memory(tm.id))
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from mtfleet.core.tm.schemas import TMList, TMPublic
from mtfleet.producer.calls import Call, checked

#: The SDK's name for a translation memory (without its pairs).
TranslationMemory = TMPublic

Entries = Mapping[str, str] | Sequence[tuple[str, str]]

PATH = "/v1/translation_memories"


def _entries(entries: Entries | None) -> list[dict[str, str]]:
    pairs = entries.items() if isinstance(entries, Mapping) else entries or ()
    return [{"source": s, "target": t} for s, t in pairs]


def _json(resp: httpx.Response) -> Any:
    return checked(resp).json()


def _tm(resp: httpx.Response) -> TMPublic:
    return TMPublic.model_validate(_json(resp))


def _nothing(resp: httpx.Response) -> None:
    checked(resp)


def file_body(content: bytes | str, filename: str | None, fmt: str | None) -> dict[str, Any]:
    """A file as the API takes it in JSON: text as text, bytes as text when they are UTF-8 and
    base64 otherwise (a UTF-16 TSV, a TMX in another encoding)."""
    if isinstance(content, str):
        body: dict[str, Any] = {"content": content, "encoding": "text"}
    else:
        try:
            body = {"content": content.decode("utf-8"), "encoding": "text"}
        except UnicodeDecodeError:
            body = {"content": base64.b64encode(content).decode(), "encoding": "base64"}
    if filename:
        body["filename"] = filename
    if fmt:
        body["format"] = fmt
    return body


def create_translation_memory(
    name: str, *, source: str, target: str, entries: Entries | None = None
) -> Call[TMPublic]:
    """A new memory of ``entries`` (source -> target; none: an empty memory that corrections
    fill); pass its ``id`` as ``translation_memory_id``."""
    body = {
        "name": name,
        "source_lang": source,
        "target_lang": target,
        "entries": _entries(entries),
    }
    return Call("POST", PATH, _tm, json=body)


def import_translation_memory(
    content: bytes | str,
    *,
    name: str,
    source: str,
    target: str,
    filename: str | None = None,
    fmt: str | None = None,
) -> Call[TMPublic]:
    """A new memory from a TMX, TSV or CSV file (``fmt``: ``tmx``, ``tsv`` or ``csv``;
    default: told by ``filename``'s extension, else by the bytes)."""
    body = {
        "name": name,
        "source_lang": source,
        "target_lang": target,
        "file": file_body(content, filename, fmt),
    }
    return Call("POST", PATH, _tm, json=body)


def translation_memories() -> Call[list[TMPublic]]:
    """This key's translation memories (without their pairs)."""
    return Call(
        "GET", PATH, lambda r: TMList.model_validate(checked(r).json()).translation_memories
    )


def translation_memory(tm_id: str) -> Call[TMPublic]:
    """A memory's description (its pairs: ``export_translation_memory``)."""
    return Call("GET", f"{PATH}/{tm_id}", _tm)


def add_translation_memory_entries(tm_id: str, entries: Entries) -> Call[TMPublic]:
    """Add or replace pairs (corrections); the next request sees them."""
    return Call("POST", f"{PATH}/{tm_id}/entries", _tm, json={"entries": _entries(entries)})


def export_translation_memory(tm_id: str) -> Call[bytes]:
    """The memory as a TMX 1.4 file."""
    return Call("GET", f"{PATH}/{tm_id}/export", lambda r: checked(r).content)


def delete_translation_memory(tm_id: str) -> Call[None]:
    """Delete a memory (jobs accepted with it still finish with it)."""
    return Call("DELETE", f"{PATH}/{tm_id}", _nothing)
