"""Phrase cache: finished translations keyed by model, language pair and normalized text.

Keys carry the model fingerprint (model, revision, prompt and sampling settings), the pair, a
glossary version, the *scope* and a SHA-256 of the normalized text, so a new model or prompt
never serves an old answer. The scope is the API key that asked (``MT_CACHE_SCOPE=key``, the
default): one tenant's translations are never served to another, and a fast answer tells
nobody what another key translated. ``MT_CACHE_SCOPE=shared`` shares entries between keys
(more hits; it reveals to every key whether a text was translated before). Each job's chunks
remember the keys they wrote, so purging a job removes its own entries (:meth:`forget`).

The cache may live on its own allkeys-lru Redis (``MT_CACHE_URL``); it is an optimisation, so a
cache outage is logged and treated as a miss, never as a failed job.
"""

from __future__ import annotations

import hashlib
import logging
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio

from mtfleet.core import keys, scripts

log = logging.getLogger(__name__)


def normalize(text: str) -> str:
    """The form cache keys are computed from: Unicode NFC, outer whitespace removed.

    Outer whitespace is restored around the translation by the worker, so " Red shoes" and
    "Red shoes" share one entry.
    """
    return unicodedata.normalize("NFC", text).strip()


def keyed(text: str, context: str | None) -> str:
    """What the cache keys a segment by: its normalised text, and the neighbouring sentences an
    LLM read with it (a document segment's, :class:`~mtfleet.core.models.ChunkSegment`), after a
    NUL, which no text holds (:mod:`mtfleet.core.schemas` refuses control characters): no text
    alone names an entry made with a context, nor one context another's."""
    return text if context is None else f"{text}\x00{context}"


def text_digest(text: str) -> str:
    """The digest a phrase is kept under; ``text`` is normalised already (the API normalises
    every text once, and chunks carry the normalised form)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


def _keys(
    fingerprint: str,
    glossary: str | None,
    scope: str | None,
    source: str,
    target: str,
    texts: Iterable[str],
) -> list[str]:
    """The keys of ``texts`` (normalised), all of one model, pair, glossary version and scope
    (None: shared): the key format is :func:`mtfleet.core.keys.phrase`, its part before the
    digest computed once."""
    space = f"{fingerprint}:{glossary or '-'}" + (f"@{scope}" if scope else "")
    prefix = keys.phrase(space, source, target, "")
    return [prefix + text_digest(t) for t in texts]


@dataclass(frozen=True)
class Lookup:
    """One read of the cache: the distinct texts asked (normalised, each once) and their keys,
    built once by :func:`lookup` for the worker's read and the API's alike."""

    texts: list[str]
    keys: list[str]

    def found(self, values: list[Any]) -> dict[str, str]:
        return _found(self.texts, values)


def lookup(
    fingerprint: str,
    source: str,
    target: str,
    texts: Iterable[str],
    *,
    glossary: str | None = None,
    scope: str | None = None,
) -> Lookup:
    """The read of ``texts`` (normalised) in one model's, pair's, glossary variant's and
    scope's entries: ``glossary``, the variant of the glossary and guidance applied
    (:func:`mtfleet.core.guidance.cache_variant`), None without; ``scope``, the API key whose
    entries these are, None for the shared ones."""
    unique = list(dict.fromkeys(texts))
    return Lookup(unique, _keys(fingerprint, glossary, scope, source, target, unique))


class PhraseCache:
    def __init__(
        self,
        client: redis.Redis,
        *,
        ttl_s: int,
        job_ttl_s: int = 7 * 24 * 3600,
        aclient: redis.asyncio.Redis | None = None,
    ) -> None:
        """``aclient``: the same Redis for an event loop (:meth:`aget_many`; the API's)."""
        self.r = client
        self.ar = aclient
        self.ttl = ttl_s
        self.job_ttl = job_ttl_s  # how long a job's list of its entries is kept (its results')
        self._put = scripts.register(client, "cache_put")

    @staticmethod
    def key(
        fingerprint: str,
        source: str,
        target: str,
        text: str,
        glossary: str | None = None,
        scope: str | None = None,
    ) -> str:
        return _keys(fingerprint, glossary, scope, source, target, [text])[0]

    def get_many(self, asked: Lookup) -> dict[str, str]:
        """Cached translations of the texts ``asked`` that have one (text -> translation): the
        workers' read (a chunk that waited looks itself up again)."""
        try:
            return asked.found(self.r.mget(asked.keys)) if asked.keys else {}
        except redis.RedisError as exc:
            return _unavailable(exc)

    async def aget_many(self, asked: Lookup) -> dict[str, str]:
        """:meth:`get_many` on the event loop (one ``MGET``), through ``aclient``: the API's."""
        assert self.ar is not None, "PhraseCache built without an asyncio client"
        try:
            return asked.found(await self.ar.mget(asked.keys)) if asked.keys else {}
        except redis.RedisError as exc:
            return _unavailable(exc)

    def put_many(
        self,
        fingerprint: str,
        source: str,
        target: str,
        pairs: Mapping[str, str],
        *,
        job_id: str,
        glossary: str | None = None,
        scope: str | None = None,
    ) -> None:
        """Keep ``pairs`` (normalised text -> translation), as entries of ``job_id``."""
        if not pairs:
            return
        try:
            self._put(
                keys=[
                    *_keys(fingerprint, glossary, scope, source, target, pairs),
                    keys.job_phrases(job_id),
                    keys.job_purged(job_id),
                ],
                args=[self.ttl, self.job_ttl, *pairs.values()],
            )
        except redis.RedisError as exc:
            log.warning("phrase cache unavailable, result not cached: %s", exc)

    def forget(self, job_id: str) -> None:
        """Delete the entries ``job_id``'s chunks wrote (a purge). Raises redis errors: a purge
        that could not remove them must say so. The job is marked purged first (for as long as
        its list of entries would have been kept): a chunk of it still in the engine, or
        delivered again, then writes nothing after this (``cache_put.lua``), and whatever one
        wrote before the mark is in the list read after it."""
        self.r.set(keys.job_purged(job_id), 1, ex=self.job_ttl)
        written = keys.job_phrases(job_id)
        members = list(self.r.smembers(written))
        for i in range(0, len(members), 1000):
            self.r.unlink(*members[i : i + 1000])
        self.r.unlink(written)


def _found(texts: list[str], values: list[Any]) -> dict[str, str]:
    """A lookup's hits (text -> translation) from ``MGET``'s values."""
    return {t: str(v) for t, v in zip(texts, values, strict=True) if v is not None}


def _unavailable(exc: Exception) -> dict[str, str]:
    """A lookup the cache could not answer: an optimisation missing, a miss for everything."""
    log.warning("phrase cache unavailable, treating as miss: %s", exc)
    return {}


def rewrap(original: str, translation: str) -> str:
    """Put ``original``'s outer whitespace around the translation of its normalized text."""
    stripped = original.strip()
    if not stripped:
        return original
    start = original.index(stripped)
    return f"{original[:start]}{translation.strip()}{original[start + len(stripped) :]}"
