"""Phrase cache: finished translations keyed by model, language pair and normalized text.

Keys carry the model fingerprint (model, revision, prompt and sampling settings), the pair, a
glossary version and a SHA-256 of the normalized text, so a new model or prompt never serves an
old answer. The cache may live on its own allkeys-lru Redis (``MT_CACHE_URL``); it is an
optimisation, so a cache outage is logged and treated as a miss, never as a failed job.
"""

from __future__ import annotations

import hashlib
import logging
import unicodedata
from collections.abc import Iterable, Mapping

import redis

from mtfleet.core import keys, scripts

log = logging.getLogger(__name__)


def normalize(text: str) -> str:
    """The form cache keys are computed from: Unicode NFC, outer whitespace removed.

    Outer whitespace is restored around the translation by the worker, so " Red shoes" and
    "Red shoes" share one entry.
    """
    return unicodedata.normalize("NFC", text).strip()


def text_digest(text: str) -> str:
    """The digest a phrase is kept under; ``text`` is normalised already (the API normalises
    every text once, and chunks carry the normalised form)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


def _keys(
    fingerprint: str, glossary: str, source: str, target: str, texts: Iterable[str]
) -> list[str]:
    """The keys of ``texts`` (normalised), all of one model, pair and glossary version: the key
    format is :func:`mtfleet.core.keys.phrase`, its part before the digest computed once."""
    prefix = keys.phrase(f"{fingerprint}:{glossary}", source, target, "")
    return [prefix + text_digest(t) for t in texts]


class PhraseCache:
    def __init__(self, client: redis.Redis, *, ttl_s: int) -> None:
        self.r = client
        self.ttl = ttl_s
        self._put = scripts.register(client, "cache_put")

    @staticmethod
    def key(fingerprint: str, source: str, target: str, text: str, glossary: str = "-") -> str:
        return _keys(fingerprint, glossary, source, target, [text])[0]

    def get_many(
        self,
        fingerprint: str,
        source: str,
        target: str,
        texts: Iterable[str],
        *,
        glossary: str | None = None,
    ) -> dict[str, str]:
        """Cached translations for the texts that have one (text -> translation); ``glossary``:
        the version of the glossary applied (core.glossary), None without one."""
        unique = list(dict.fromkeys(texts))
        if not unique:
            return {}
        g = glossary or "-"
        try:
            values = self.r.mget(_keys(fingerprint, g, source, target, unique))
        except redis.RedisError as exc:
            log.warning("phrase cache unavailable, treating as miss: %s", exc)
            return {}
        return {t: str(v) for t, v in zip(unique, values, strict=True) if v is not None}

    def put_many(
        self,
        fingerprint: str,
        source: str,
        target: str,
        pairs: Mapping[str, str],
        *,
        glossary: str | None = None,
    ) -> None:
        if not pairs:
            return
        g = glossary or "-"
        try:
            self._put(
                keys=_keys(fingerprint, g, source, target, pairs),
                args=[self.ttl, *pairs.values()],
            )
        except redis.RedisError as exc:
            log.warning("phrase cache unavailable, result not cached: %s", exc)


def rewrap(original: str, translation: str) -> str:
    """Put ``original``'s outer whitespace around the translation of its normalized text."""
    stripped = original.strip()
    if not stripped:
        return original
    start = original.index(stripped)
    return f"{original[:start]}{translation.strip()}{original[start + len(stripped) :]}"
