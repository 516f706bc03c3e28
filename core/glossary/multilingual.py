"""Multilingual glossaries (DeepL's v3 glossaries): a named set of dictionaries, one per
language pair, under one id.

Each dictionary is an ordinary glossary (:class:`mtfleet.core.glossary.GlossaryStore`: the
workers apply it, its version keys the phrase cache, it counts against its key's glossary and
storage limits); the set only maps language pairs to their glossary ids. Glossaries do not
change, so changing a dictionary stores a new glossary and points the set at it (the caller
deletes the old one: jobs already accepted finish with it).
"""

from __future__ import annotations

import secrets
import time

import redis
from pydantic import BaseModel

from mtfleet.core import keys

_DICT = "dict:"


class GlossarySet(BaseModel):
    id: str
    name: str
    owner: str = ""
    created_at: float
    dictionaries: dict[tuple[str, str], str]  # (source, target) -> glossary id


def _field(source: str, target: str) -> str:
    return f"{_DICT}{source}:{target}"


class GlossarySets:
    """Multilingual glossaries on the durable Redis; ``r`` must decode responses."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r

    def create(self, *, owner: str, name: str, dictionaries: dict[tuple[str, str], str]) -> str:
        """Store a new set for ``owner``; its id."""
        set_id = secrets.token_hex(16)
        now = time.time()
        items = ["name", name, "owner", owner, "created_at", repr(now)]
        for (source, target), gid in dictionaries.items():
            items += [_field(source, target), gid]
        pipe = self.r.pipeline(transaction=True)
        pipe.hset(keys.glossary_set(set_id), items=items)
        pipe.zadd(keys.glossary_sets(owner), {set_id: now})
        pipe.execute()
        return set_id

    def get(self, set_id: str) -> GlossarySet | None:
        """A set (None: none, or not an id at all)."""
        raw = self.r.hgetall(keys.glossary_set(set_id)) if keys.is_id(set_id) else None
        return _parse(set_id, {str(k): str(v) for k, v in raw.items()}) if raw else None

    def list_for(self, owner: str) -> list[GlossarySet]:
        """The owner's sets, oldest first."""
        ids = [str(i) for i in self.r.zrange(keys.glossary_sets(owner), 0, -1)]
        pipe = self.r.pipeline(transaction=False)
        for set_id in ids:
            pipe.hgetall(keys.glossary_set(set_id))
        return [
            _parse(i, {str(k): str(v) for k, v in raw.items()})
            for i, raw in zip(ids, pipe.execute(), strict=True)
            if raw
        ]

    def rename(self, set_id: str, name: str) -> None:
        self.r.hset(keys.glossary_set(set_id), "name", name)

    def put(self, set_id: str, source: str, target: str, glossary_id: str) -> None:
        """Point the set's (source, target) dictionary at ``glossary_id``."""
        self.r.hset(keys.glossary_set(set_id), _field(source, target), glossary_id)

    def remove(self, set_id: str, source: str, target: str) -> None:
        self.r.hdel(keys.glossary_set(set_id), _field(source, target))

    def delete(self, set_id: str, owner: str) -> None:
        pipe = self.r.pipeline(transaction=True)
        pipe.delete(keys.glossary_set(set_id))
        pipe.zrem(keys.glossary_sets(owner), set_id)
        pipe.execute()


def _parse(set_id: str, raw: dict[str, str]) -> GlossarySet:
    dictionaries: dict[tuple[str, str], str] = {}
    for name, value in raw.items():
        if name.startswith(_DICT):
            source, target = name[len(_DICT) :].split(":", 1)
            dictionaries[(source, target)] = value
    return GlossarySet(
        id=set_id,
        name=raw.get("name", ""),
        owner=raw.get("owner", ""),
        created_at=float(raw.get("created_at", 0)),
        dictionaries=dictionaries,
    )
