"""Glossaries on the durable Redis: create, read, list, delete, and the compiled matcher a
worker builds once per glossary version."""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections import OrderedDict

import redis

from mtfleet.core import keys
from mtfleet.core.apikeys import Storage
from mtfleet.core.errors import InvalidInput
from mtfleet.core.glossary.matching import Matcher
from mtfleet.core.glossary.terms import (
    Glossary,
    GlossaryInfo,
    GlossaryNotFound,
    UnknownGlossary,
    term_key,
)
from mtfleet.core.owned import Kind, OwnedRecords

_MATCHERS_KEPT = 32

_matchers: OrderedDict[tuple[str, str], Matcher] = OrderedDict()
_matchers_lock = threading.Lock()


_INFO_FIELDS = tuple(GlossaryInfo.model_fields)
#: Joins the ids (and the versions) of the glossaries one job applies together, in order: the
#: one glossary id (and version) its chunks carry (a worker that predates stacks finds no such
#: glossary and fails the chunk rather than translating without them).
STACK = ","
GLOSSARIES = Kind("g", "glossaries", "MT_GLOSSARY_MAX_PER_KEY")


def visible(info: GlossaryInfo, owner: str) -> bool:
    """A glossary is usable only by the key that made it ('' owner: the API runs without
    keys, and every glossary is visible)."""
    return not owner or info.owner == owner


class GlossaryStore:
    """Glossaries on the durable Redis (``MT_REDIS_URL``); ``r`` must decode responses."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r
        self._records = OwnedRecords(r, GLOSSARIES)

    def create(
        self,
        draft: Glossary,
        *,
        owner: str,
        max_per_owner: int,
        storage: Storage | None = None,
    ) -> Glossary:
        """Store a :func:`validate`-d glossary under a new id for ``owner`` (its bytes count
        against ``storage``, the owner's storage quota, until it is deleted)."""
        g = draft.model_copy(
            update={"id": secrets.token_hex(16), "owner": owner, "created_at": time.time()}
        )
        fields = {name: str(getattr(g, name)) for name in _INFO_FIELDS}
        body: dict[str, object] = {"entries": g.entries, "protected": g.protected}
        if g.protected_patterns:
            body["patterns"] = g.protected_patterns
        terms = json.dumps(body, ensure_ascii=False)
        size = len(terms.encode()) + sum(len(k) + len(v) for k, v in fields.items())
        self._records.create(
            record=keys.glossary(g.id),
            body_key=keys.glossary_terms(g.id),
            index=keys.glossaries(owner),
            record_id=g.id,
            body=terms,
            fields=fields,
            size=size,
            created_at=g.created_at,
            max_per_owner=max_per_owner,
            storage=storage,
        )
        return g

    def get(self, glossary_id: str) -> GlossaryInfo | None:
        """A live glossary's metadata (None: none, deleted, or not an id at all)."""
        raw = self.r.hgetall(keys.glossary(glossary_id)) if keys.is_id(glossary_id) else None
        if not raw or raw.get("deleted") == "1":
            return None
        return GlossaryInfo.model_validate({k: raw[k] for k in _INFO_FIELDS if k in raw})

    def get_full(self, glossary_id: str) -> Glossary | None:
        """A live glossary with its terms (None: none, or deleted)."""
        info = self.get(glossary_id)
        if info is None:
            return None
        return self._with_terms(info)

    def _with_terms(self, info: GlossaryInfo) -> Glossary | None:
        raw = self.r.get(keys.glossary_terms(info.id))
        if raw is None:
            return None
        terms = json.loads(raw)
        return Glossary(
            **info.model_dump(),
            entries=terms["entries"],
            protected=terms["protected"],
            protected_patterns=terms.get("patterns", []),
        )

    def list_for(self, owner: str) -> list[GlossaryInfo]:
        """The owner's live glossaries, oldest first."""
        ids = [str(i) for i in self.r.zrange(keys.glossaries(owner), 0, -1)]
        pipe = self.r.pipeline(transaction=False)
        for gid in ids:
            pipe.hgetall(keys.glossary(gid))
        out = []
        for raw in pipe.execute():
            if raw and raw.get("deleted") != "1":
                out.append(
                    GlossaryInfo.model_validate({k: raw[k] for k in _INFO_FIELDS if k in raw})
                )
        return out

    def delete(
        self, glossary_id: str, *, owner: str, retention_s: int, storage: Storage | None = None
    ) -> bool:
        """Hide a glossary now; its data expires after ``retention_s`` (jobs accepted before
        may still use it) and its bytes go back to ``storage``. False when there was no such
        live glossary."""
        return self._records.delete(
            record=keys.glossary(glossary_id),
            index=keys.glossaries(owner),
            data=[keys.glossary_terms(glossary_id)],
            record_id=glossary_id,
            retention_s=retention_s,
            storage=storage,
        )

    def delete_owned(self, owner: str, *, retention_s: int) -> int:
        """Delete every glossary of ``owner`` (an API key being deleted), and its multilingual
        glossaries (:mod:`mtfleet.core.glossary.multilingual`); how many glossaries there were.
        Jobs accepted before still finish with them for ``retention_s``."""
        owned = self.list_for(owner)
        for g in owned:
            self.delete(g.id, owner=owner, retention_s=retention_s)
        sets = [str(i) for i in self.r.zrange(keys.glossary_sets(owner), 0, -1)]
        self.r.delete(
            keys.glossaries(owner),
            keys.glossary_sets(owner),
            *(keys.glossary_set(i) for i in sets),
        )
        return len(owned)

    def for_job(self, glossary_id: str, *, owner: str, source: str, target: str) -> GlossaryInfo:
        """The glossary a job names, checked: 422 when it is unknown to this key or made for
        another language pair."""
        info = self.get(glossary_id)
        if info is None or not visible(info, owner):
            raise UnknownGlossary(f"unknown glossary {glossary_id!r}")
        if (info.source_lang, info.target_lang) != (source, target):
            raise InvalidInput(
                f"glossary {glossary_id} is for {info.source_lang}->{info.target_lang}; "
                f"this job is {source}->{target}"
            )
        return info

    def for_jobs(
        self, glossary_ids: list[str], *, owner: str, source: str, target: str
    ) -> GlossaryInfo | None:
        """The glossaries a job names, each checked (:meth:`for_job`), as the one glossary
        its chunks carry: several are one stack (:data:`STACK`), whose id and version list
        theirs in order (so the phrase cache's key holds every version)."""
        found = [self.for_job(g, owner=owner, source=source, target=target) for g in glossary_ids]
        if len(found) <= 1:
            return found[0] if found else None
        return found[0].model_copy(
            update={
                "id": STACK.join(g.id for g in found),
                "version": STACK.join(g.version for g in found),
            }
        )

    def matcher(self, glossary_id: str, version: str) -> Matcher:
        """The compiled glossary a chunk names (deleted ones too, while their data is kept),
        built once per version in this process; a stack (:meth:`for_jobs`) is its glossaries
        merged, the first listed winning a term (:func:`stacked`). GlossaryNotFound when one
        is gone or its version differs."""
        key = (glossary_id, version)
        with _matchers_lock:
            found = _matchers.get(key)
            if found is not None:
                _matchers.move_to_end(key)
                return found
        ids, versions = glossary_id.split(STACK), version.split(STACK)
        if len(ids) != len(versions):
            raise GlossaryNotFound(f"glossary {glossary_id} (version {version}) is not one")
        built = Matcher(stacked([self._at(i, v) for i, v in zip(ids, versions, strict=True)]))
        with _matchers_lock:
            _matchers[key] = built
            while len(_matchers) > _MATCHERS_KEPT:
                _matchers.popitem(last=False)
        return built

    def _at(self, glossary_id: str, version: str) -> Glossary:
        """A glossary at ``version`` (deleted too, while its data is kept)."""
        raw = self.r.hgetall(keys.glossary(glossary_id))
        g = None
        if raw and raw.get("version") == version:
            g = self._with_terms(
                GlossaryInfo.model_validate({k: raw[k] for k in _INFO_FIELDS if k in raw})
            )
        if g is None:
            raise GlossaryNotFound(
                f"glossary {glossary_id} (version {version}) is gone; it was deleted longer "
                "than MT_RESULT_TTL_S ago"
            )
        return g


def stacked(glossaries: list[Glossary]) -> Glossary:
    """Glossaries applied together as one, in order: a source term (case does not matter) is
    the first listed glossary's, as an entry or protected, and later glossaries' same term is
    left out; protected patterns are all of theirs."""
    if len(glossaries) == 1:
        return glossaries[0]
    first = glossaries[0]
    seen: set[str] = set()
    entries: dict[str, str] = {}
    protected: list[str] = []
    for g in glossaries:
        mine = [(s, t, False) for s, t in g.entries.items()] + [(t, t, True) for t in g.protected]
        taken = set()
        for src, tgt, kept in mine:
            if term_key(src) in seen:
                continue
            taken.add(term_key(src))
            if kept:
                protected.append(src)
            else:
                entries[src] = tgt
        seen |= taken
    return first.model_copy(
        update={
            "id": STACK.join(g.id for g in glossaries),
            "version": STACK.join(g.version for g in glossaries),
            "entries": entries,
            "protected": protected,
            "protected_patterns": list(
                dict.fromkeys(p for g in glossaries for p in g.protected_patterns)
            ),
            "entry_count": len(entries),
            "protected_count": len(protected),
        }
    )
