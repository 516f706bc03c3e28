"""Glossaries and translation memories: their sizes and each key's share."""

from __future__ import annotations

from pydantic import Field

from mtfleet.core.settings.base import (
    Component,
)


class GlossarySettings(Component):
    """Glossaries and translation memories: their sizes and each key's share."""

    glossary_max_terms: int = Field(
        10_000, ge=1, le=100_000, description="Entries plus protected terms in one glossary."
    )
    glossary_max_term_chars: int = Field(
        200, ge=1, le=1_000, description="Characters one glossary term may have."
    )
    glossary_max_per_key: int = Field(
        1_000, ge=1, description="Glossaries one API key may keep (MT_AUTH=off: in all)."
    )
    tm_max_pairs: int = Field(
        100_000, ge=1, le=1_000_000, description="Pairs one translation memory may hold."
    )
    tm_max_segment_bytes: int = Field(
        4_096, ge=64, le=65_536, description="Bytes (UTF-8) of one source or target in a memory."
    )
    tm_max_import_bytes: int = Field(
        64 * 1024 * 1024,
        ge=1024,
        description="Bytes of one TMX, TSV or CSV file imported as a translation memory.",
    )
    tm_max_per_key: int = Field(
        100, ge=1, description="Translation memories one API key may keep (MT_AUTH=off: in all)."
    )
    tm_work_per_key: int = Field(
        2,
        ge=1,
        le=64,
        description="Translation-memory imports, exports, corrections and segment listings "
        "one API key may run at once per API process (each in a document process, within the "
        "key's share of them); past it 429 with Retry-After, before the request's body is parsed.",
    )
