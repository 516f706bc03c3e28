"""A translation memory's metadata, its errors and its limits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel

from mtfleet.core.errors import InvalidInput, JobNotFound

if TYPE_CHECKING:  # the SDK reads these models without the server's settings installed
    from mtfleet.core.settings import GlossarySettings


class TMNotFound(JobNotFound):
    """No such translation memory, or another key's (HTTP 404, word for word the same)."""

    code = "translation_memory_not_found"


class UnknownTranslationMemory(InvalidInput):
    """A request names a translation memory that does not exist or that its key may not use
    (HTTP 422 on /v1; the DeepL surface answers 404 as for a glossary)."""

    code = "unknown_translation_memory"


class TMInfo(BaseModel):
    """A translation memory without its pairs: what lists show and what a job reads.
    ``version`` changes with every change of content (a hash: part of the phrase-cache key);
    ``skipped``: the units or lines its import file had without both languages."""

    id: str
    name: str
    source_lang: str
    target_lang: str
    owner: str = ""
    created_at: float
    updated_at: float
    version: str
    entry_count: int
    skipped: int = 0


@dataclass(frozen=True)
class TMLimits:
    """What one memory may hold (``MT_TM_MAX_PAIRS``, ``MT_TM_MAX_SEGMENT_BYTES``,
    ``MT_TM_MAX_IMPORT_BYTES``, ``MT_TM_MAX_PER_KEY``: :class:`GlossarySettings`)."""

    max_pairs: int = 100_000
    max_segment_bytes: int = 4_096
    max_import_bytes: int = 64 * 1024 * 1024
    max_per_owner: int = 100

    @classmethod
    def from_settings(cls, settings: GlossarySettings) -> TMLimits:
        """The limits the glossaries' and memories' settings set."""
        return cls(
            max_pairs=settings.tm_max_pairs,
            max_segment_bytes=settings.tm_max_segment_bytes,
            max_import_bytes=settings.tm_max_import_bytes,
            max_per_owner=settings.tm_max_per_key,
        )
