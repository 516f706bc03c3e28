"""The bodies of ``/v1/translation_memories`` (the API's and the SDK's one definition)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mtfleet.core.schemas import LangCode
from mtfleet.core.tm.model import TMInfo

#: The longest a segment may be in a request body (the store's own limit,
#: MT_TM_MAX_SEGMENT_BYTES, is checked with a message naming the entry).
_SEGMENT_CHARS = 65_536


class TMEntry(BaseModel):
    """One pair: ``source`` (compared normalized) and ``target`` (served exactly as given)."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(max_length=_SEGMENT_CHARS, examples=["Free shipping on all orders."])
    target: str = Field(max_length=_SEGMENT_CHARS, examples=["Envío gratis en todos los pedidos."])


class TMFile(BaseModel):
    """A TMX, TSV or CSV file in a JSON body (multipart uploads send it as the ``file`` part)."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(description="The file: as text (UTF-8), or base64.")
    encoding: Literal["text", "base64"] = "text"
    filename: str | None = Field(None, max_length=255, examples=["shop.tmx"])
    format: Literal["tmx", "tsv", "csv"] | None = Field(
        None, description="Default: told by the file name's extension, else by its bytes."
    )


class TMCreate(BaseModel):
    """A new translation memory: ``entries``, or a ``file`` to import (neither: an empty
    memory, for corrections to fill)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=100, examples=["shop"])
    source_lang: LangCode = Field(examples=["en"])
    target_lang: LangCode = Field(examples=["es"])
    entries: list[TMEntry] | None = Field(
        None, description="The pairs (a later pair replaces an earlier one with its source)."
    )
    file: TMFile | None = None

    @model_validator(mode="after")
    def _one_source(self) -> TMCreate:
        if self.entries is not None and self.file is not None:
            raise ValueError("send entries or a file, not both")
        return self


class TMEntriesAdd(BaseModel):
    """Pairs to add, or to put in place of the pairs with the same (normalized) source."""

    model_config = ConfigDict(extra="forbid")

    entries: list[TMEntry] = Field(min_length=1)


class TMPublic(BaseModel):
    id: str
    name: str
    source_lang: str
    target_lang: str
    entry_count: int
    version: str = Field(
        description="Changes with every change of content; part of the phrase-cache key."
    )
    created_at: float
    updated_at: float
    skipped: int = Field(
        0, description="Units or lines of the imported file without both languages."
    )

    @classmethod
    def of(cls, info: TMInfo) -> TMPublic:
        return cls(**info.model_dump(include=set(cls.model_fields)))


class TMList(BaseModel):
    translation_memories: list[TMPublic]
