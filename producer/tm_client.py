"""The SDK's translation-memory calls (``/v1/translation_memories``), defined once without I/O
as :class:`~mtfleet.producer.calls.Call` objects, and the methods that send them:
:class:`TranslationMemoryMixin` for :class:`~mtfleet.producer.client.MTClient` and
:class:`AsyncTranslationMemoryMixin` for :class:`~mtfleet.producer.client.AsyncMTClient`.

    with MTClient() as mt:
        tm = mt.import_translation_memory(Path("shop.tmx").read_bytes(), name="shop",
                                          source="en", target="es", filename="shop.tmx")
        mt.add_translation_memory_entries(tm.id, {"Free shipping": "Envío gratis"})
        Path("shop-now.tmx").write_bytes(mt.export_translation_memory(tm.id))
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import httpx

from mtfleet.core.tm.schemas import TMList, TMPublic
from mtfleet.producer.calls import Call, checked

T = TypeVar("T")

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


def create(name: str, source: str, target: str, entries: Entries | None) -> Call[TMPublic]:
    body = {
        "name": name,
        "source_lang": source,
        "target_lang": target,
        "entries": _entries(entries),
    }
    return Call("POST", PATH, _tm, json=body)


def import_file(
    content: bytes | str,
    name: str,
    source: str,
    target: str,
    filename: str | None,
    fmt: str | None,
) -> Call[TMPublic]:
    body = {
        "name": name,
        "source_lang": source,
        "target_lang": target,
        "file": file_body(content, filename, fmt),
    }
    return Call("POST", PATH, _tm, json=body)


def listed() -> Call[list[TMPublic]]:
    return Call(
        "GET", PATH, lambda r: TMList.model_validate(checked(r).json()).translation_memories
    )


def get(tm_id: str) -> Call[TMPublic]:
    return Call("GET", f"{PATH}/{tm_id}", _tm)


def add_entries(tm_id: str, entries: Entries) -> Call[TMPublic]:
    return Call("POST", f"{PATH}/{tm_id}/entries", _tm, json={"entries": _entries(entries)})


def export(tm_id: str) -> Call[bytes]:
    return Call("GET", f"{PATH}/{tm_id}/export", lambda r: checked(r).content)


def delete(tm_id: str) -> Call[None]:
    return Call("DELETE", f"{PATH}/{tm_id}", _nothing)


class _Sends(Protocol):
    def _send(self, call: Call[T]) -> T: ...


class _SendsAsync(Protocol):
    def _send(self, call: Call[T]) -> Awaitable[T]: ...


class TranslationMemoryMixin:
    """Translation-memory methods of :class:`~mtfleet.producer.client.MTClient`."""

    def create_translation_memory(
        self: _Sends, name: str, *, source: str, target: str, entries: Entries | None = None
    ) -> TMPublic:
        """A new memory of ``entries`` (source -> target; none: an empty memory that
        corrections fill); pass its ``id`` as ``translation_memory_id``."""
        return self._send(create(name, source, target, entries))

    def import_translation_memory(
        self: _Sends,
        content: bytes | str,
        *,
        name: str,
        source: str,
        target: str,
        filename: str | None = None,
        fmt: str | None = None,
    ) -> TMPublic:
        """A new memory from a TMX, TSV or CSV file (``fmt``: ``tmx``, ``tsv`` or ``csv``;
        default: told by ``filename``'s extension, else by the bytes)."""
        return self._send(import_file(content, name, source, target, filename, fmt))

    def translation_memories(self: _Sends) -> list[TMPublic]:
        """This key's translation memories (without their pairs)."""
        return self._send(listed())

    def translation_memory(self: _Sends, tm_id: str) -> TMPublic:
        return self._send(get(tm_id))

    def add_translation_memory_entries(self: _Sends, tm_id: str, entries: Entries) -> TMPublic:
        """Add pairs, or correct the target of those with the same source; the memory as it is
        now (a new ``version``), which the next request sees."""
        return self._send(add_entries(tm_id, entries))

    def export_translation_memory(self: _Sends, tm_id: str) -> bytes:
        """The memory as a TMX 1.4 file."""
        return self._send(export(tm_id))

    def delete_translation_memory(self: _Sends, tm_id: str) -> None:
        self._send(delete(tm_id))


class AsyncTranslationMemoryMixin:
    """The same methods for :class:`~mtfleet.producer.client.AsyncMTClient`."""

    async def create_translation_memory(
        self: _SendsAsync,
        name: str,
        *,
        source: str,
        target: str,
        entries: Entries | None = None,
    ) -> TMPublic:
        return await self._send(create(name, source, target, entries))

    async def import_translation_memory(
        self: _SendsAsync,
        content: bytes | str,
        *,
        name: str,
        source: str,
        target: str,
        filename: str | None = None,
        fmt: str | None = None,
    ) -> TMPublic:
        return await self._send(import_file(content, name, source, target, filename, fmt))

    async def translation_memories(self: _SendsAsync) -> list[TMPublic]:
        return await self._send(listed())

    async def translation_memory(self: _SendsAsync, tm_id: str) -> TMPublic:
        return await self._send(get(tm_id))

    async def add_translation_memory_entries(
        self: _SendsAsync, tm_id: str, entries: Entries
    ) -> TMPublic:
        return await self._send(add_entries(tm_id, entries))

    async def export_translation_memory(self: _SendsAsync, tm_id: str) -> bytes:
        return await self._send(export(tm_id))

    async def delete_translation_memory(self: _SendsAsync, tm_id: str) -> None:
        await self._send(delete(tm_id))
