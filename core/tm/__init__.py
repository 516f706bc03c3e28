"""Translation memories: pairs of a customer's earlier translations (source -> target), per
API key and language pair, that a request names with ``translation_memory_id``.

A memory never changes a request's meaning: a segment gets a stored target as its translation
only when it is the pair's source once its placeables (numbers, prices, percentages, dates,
placeholders, inline tags) are carried over into the target (:mod:`mtfleet.core.tm.placeables`,
:meth:`TMIndex.exact`); the best other pair scoring at least the request's threshold
(``translation_memory_threshold``, 0-100, default 75) is a near match an LLM edits, and below
the threshold the ``k`` (default 5) best pairs at or above a floor go to an LLM's prompt as
examples (Google Adaptive MT's semantics; the worker's side: :mod:`mtfleet.workers.memory`).
**What the score means**: :mod:`mtfleet.core.tm.text` (rapidfuzz ``fuzz.ratio`` over word
tokens of the normalized texts, 0-100); how a lookup finds every pair above the threshold
among 100,000 without scoring them all: :mod:`mtfleet.core.tm.index`. The heavy work on a
memory's pairs (an import, an export, a correction) is :mod:`mtfleet.core.tm.files`, run by
the API in a document process.

* :class:`TranslationMemoryStore` (:mod:`~mtfleet.core.tm.store`): create (pairs, or a TMX,
  TSV or CSV file: :mod:`~mtfleet.core.tm.formats`), list, read, add or replace pairs (a
  correction: a new version, seen by the next request), delete, export as TMX, a page of
  segments, and
  :meth:`~TranslationMemoryStore.index`, a process's index of a memory at a version.
* :class:`TMInfo`: a memory without its pairs; ``version`` is a hash that changes with every
  change of content, part of the phrase-cache key (a translation made with one memory, or one
  version of it, is never served for another).
* A memory belongs to one API key (``owner``; '' when the API runs with ``MT_AUTH=off``):
  another key's memory answers exactly as a missing one. Limits (:class:`TMLimits`): pairs
  per memory (``MT_TM_MAX_PAIRS``, 100,000), bytes per segment (``MT_TM_MAX_SEGMENT_BYTES``,
  4,096), bytes per import file (``MT_TM_MAX_IMPORT_BYTES``, 64 MiB, and a request's
  ``MT_MAX_REQUEST_BYTES``), memories per key (``MT_TM_MAX_PER_KEY``, 100); each a 422 that
  names it. What a memory stores counts against its key's storage quota (``MT_KEY_STORAGE_MB``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mtfleet.core.tm.index import TMIndex, TMLookup, TMMatch
    from mtfleet.core.tm.model import TMInfo, TMLimits, TMNotFound, UnknownTranslationMemory
    from mtfleet.core.tm.store import TranslationMemoryStore, fleet_id, forget_indexes, visible
    from mtfleet.core.tm.text import normalize, similarity, tokens

__all__ = [
    "TMIndex",
    "TMInfo",
    "TMLimits",
    "TMLookup",
    "TMMatch",
    "TMNotFound",
    "TranslationMemoryStore",
    "UnknownTranslationMemory",
    "fleet_id",
    "forget_indexes",
    "normalize",
    "similarity",
    "tokens",
    "visible",
]

#: The module of each name above. Imported on first use: the SDK imports
#: :mod:`mtfleet.core.tm.schemas` (the API's shapes), which must not pull the store's Redis, the
#: index's numpy or rapidfuzz into the client install (pyproject.toml's base dependencies).
_HOME = {
    **dict.fromkeys(("TMIndex", "TMLookup", "TMMatch"), "index"),
    **dict.fromkeys(("TMInfo", "TMLimits", "TMNotFound", "UnknownTranslationMemory"), "model"),
    **dict.fromkeys(("TranslationMemoryStore", "fleet_id", "forget_indexes", "visible"), "store"),
    **dict.fromkeys(("normalize", "similarity", "tokens"), "text"),
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
