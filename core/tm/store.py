"""Translation memories on the durable Redis: create, import, read, list, change, delete, export,
and the index each process builds once per version and keeps up to date.

**Redis** (keys built here, under ``mt:`` as :mod:`mtfleet.core.keys` builds every other):

* ``mt:tm:<id>`` (hash): the metadata (:class:`TMInfo`'s fields), ``gen`` (how many times the
  base was rewritten), ``log_len``, ``base_bytes``, ``log_bytes``, ``bytes`` (all it takes, as
  counted against the owner's storage quota) and ``deleted`` once deleted;
* ``mt:tm:<id>:base`` (string): every pair as of the last rewrite, ``[[source, target], ...]``
  oldest first, JSON, zlib-compressed, base64 (the store's client decodes responses);
* ``mt:tm:<id>:log`` (list): each change since, ``{"v": version, "pairs": [[s, t], ...]}``;
* ``mt:tms:<owner or '-'>`` (sorted set): the owner's live memories, scored by creation time.

A change (:meth:`TranslationMemoryStore.add_entries`) is one script that checks the memory is
still at the version the change was computed against (another change first: computed again)
and appends to the log, or rewrites the base when the log has grown past
:data:`LOG_MAX_RECORDS` records or the base's size (the pairs are then read in one piece again).
Readers take the hash, base and log in one MULTI, so they never see half a change.

**Indexes** (:meth:`TranslationMemoryStore.index`): a process keeps the indexes it built, at
most :data:`INDEXES_KEPT` and :data:`PAIRS_KEPT` pairs in all (least recently used go first).
A version it holds is served as it is; a version it does not hold is loaded from Redis: only
the log records it has not applied when it holds an older version of the same base, the whole
memory otherwise (a version that is no longer the memory's newest gives the newest: a job
accepted before a correction may see it). A request resolves its memory's current version when
it is accepted (:meth:`TranslationMemoryStore.for_job`), so the request after a correction
sees it.

**Where the work runs**: a store's ``run`` (``run(what, fn, *args)``) calls the heavy steps of
:mod:`mtfleet.core.tm.files` (reading an import, writing an export, working out a correction,
a page of segments): the API passes one that runs them in a document process within the
caller's share; by default they run in the calling thread.

Deleting a memory hides it at once; its pairs are kept for ``retention_s`` (the result TTL)
so that jobs accepted before still finish with it, then expire.
"""

from __future__ import annotations

import json
import random
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from mtfleet.core import keys, scripts
from mtfleet.core.apikeys import Storage
from mtfleet.core.errors import InvalidInput, Unavailable
from mtfleet.core.keys import PREFIX
from mtfleet.core.owned import Kind, OwnedRecords
from mtfleet.core.tm import files
from mtfleet.core.tm.index import TMIndex
from mtfleet.core.tm.model import TMInfo, TMLimits, TMNotFound, UnknownTranslationMemory
from mtfleet.core.tm.text import check_name, check_pair_languages

#: A change is appended to the log until the log holds this many records...
LOG_MAX_RECORDS = 256
#: ... or this many bytes (or the base's size, when larger): then the base is rewritten.
LOG_MIN_BYTES = 1024 * 1024
#: Indexes one process keeps, and the pairs they may hold in all.
INDEXES_KEPT = 16
PAIRS_KEPT = 300_000
#: How long a deleted memory's pairs stay for the jobs accepted before (the API passes
#: MT_RESULT_TTL_S).
DEFAULT_RETENTION_S = 7 * 24 * 3600
MEMORIES = Kind("tm", "translation memories", "MT_TM_MAX_PER_KEY")
_CHANGE_TRIES = 100
_INFO_FIELDS = tuple(TMInfo.model_fields)

#: What runs a heavy step: ``run(what, fn, *args, **kwargs)`` returns ``fn(*args, **kwargs)``,
#: wherever it runs (``what`` names the step for an error: "reading this translation-memory
#: file").
Runner = Callable[..., Any]


def in_process(what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The default :data:`Runner`: the calling thread."""
    return fn(*args, **kwargs)


# --- Redis keys -------------------------------------------------------------------------------


def tm_key(tm_id: str) -> str:
    """Hash: one memory's metadata (see the module's docstring)."""
    return f"{PREFIX}tm:{tm_id}"


def tm_base_key(tm_id: str) -> str:
    """String: the memory's pairs as of its last rewrite (JSON, zlib, base64)."""
    return f"{PREFIX}tm:{tm_id}:base"


def tm_log_key(tm_id: str) -> str:
    """List: the changes since the last rewrite, oldest first (JSON records)."""
    return f"{PREFIX}tm:{tm_id}:log"


def tms_key(owner: str) -> str:
    """Sorted set: the live memory ids of an API key ('' : made with MT_AUTH=off), scored by
    creation time."""
    return f"{PREFIX}tms:{owner or '-'}"


def fleet_id(tm_id: str) -> str:
    """The fleet's form of an id (32 hex digits) from it or DeepL's (a UUID)."""
    return tm_id.replace("-", "").lower()


def visible(info: TMInfo, owner: str) -> bool:
    """A memory is usable only by the key that made it ('' owner: the API runs without keys,
    and every memory is visible)."""
    return not owner or info.owner == owner


# --- the process's indexes --------------------------------------------------------------------

_indexes: OrderedDict[tuple[str, str], TMIndex] = OrderedDict()
_latest: dict[str, TMIndex] = {}
_lock = threading.Lock()
_loading = [threading.Lock() for _ in range(64)]  # one memory is loaded by one thread at once


def _remember(key: tuple[str, str], found: TMIndex) -> None:
    """(under _lock)"""
    _indexes[key] = found
    _indexes.move_to_end(key)
    _latest[found.tm_id] = found  # (only indexes just loaded are remembered: the newest)
    while len(_indexes) > 1:
        distinct = {id(ix): ix for ix in _indexes.values()}
        if len(_indexes) <= INDEXES_KEPT and sum(map(len, distinct.values())) <= PAIRS_KEPT:
            break
        _, gone = _indexes.popitem(last=False)
        if _latest.get(gone.tm_id) is gone and all(ix is not gone for ix in _indexes.values()):
            del _latest[gone.tm_id]


def forget_indexes() -> None:
    """Drop every index this process holds (tests, benchmarks)."""
    with _lock:
        _indexes.clear()
        _latest.clear()


class TranslationMemoryStore:
    """Translation memories on the durable Redis (``MT_REDIS_URL``); ``r`` must decode
    responses."""

    def __init__(
        self, r: redis.Redis, limits: TMLimits | None = None, run: Runner = in_process
    ) -> None:
        self.r = r
        self.limits = limits or TMLimits()
        self.run = run
        self._records = OwnedRecords(r, MEMORIES)
        self._change = scripts.register(r, "tm_change")

    # --- reading --------------------------------------------------------------------------

    @staticmethod
    def _info(raw: Any) -> TMInfo:
        return TMInfo.model_validate({k: raw[k] for k in _INFO_FIELDS if k in raw})

    def get(self, tm_id: str) -> TMInfo | None:
        """A live memory's metadata (None: none, deleted, or not an id at all); the id in the
        fleet's form or DeepL's."""
        tm_id = fleet_id(tm_id)
        raw = self.r.hgetall(tm_key(tm_id)) if keys.is_id(tm_id) else None
        if not raw or raw.get("deleted") == "1":
            return None
        return self._info(raw)

    def visible(self, tm_id: str, owner: str) -> TMInfo:
        """One of ``owner``'s memories (TMNotFound, a 404, otherwise)."""
        info = self.get(tm_id)
        if info is None or not visible(info, owner):
            raise TMNotFound(f"translation memory {tm_id} not found")
        return info

    def list_for(self, owner: str) -> list[TMInfo]:
        """The owner's live memories, oldest first."""
        ids = [str(i) for i in self.r.zrange(tms_key(owner), 0, -1)]
        pipe = self.r.pipeline(transaction=False)
        for tm_id in ids:
            pipe.hgetall(tm_key(tm_id))
        return [self._info(raw) for raw in pipe.execute() if raw and raw.get("deleted") != "1"]

    def for_job(self, tm_id: str, *, owner: str, source: str, target: str) -> TMInfo:
        """The memory a request names, checked: 422 when it is unknown to this key or made
        for another language pair (``source`` and ``target``: fleet codes)."""
        info = self.get(tm_id)
        if info is None or not visible(info, owner):
            raise UnknownTranslationMemory(f"unknown translation memory {tm_id!r}")
        if (info.source_lang, info.target_lang) != (source, target):
            raise InvalidInput(
                f"translation memory {info.id} is for {info.source_lang}->{info.target_lang}; "
                f"this request is {source}->{target}"
            )
        return info

    def _stored(self, tm_id: str) -> tuple[dict[str, str], str, list[str]]:
        """A memory's metadata, base blob and log records, read at once (TMNotFound when its
        data is gone; a deleted memory's is kept for a while)."""
        tm_id = fleet_id(tm_id)
        pipe = self.r.pipeline(transaction=True)
        pipe.hgetall(tm_key(tm_id))
        pipe.get(tm_base_key(tm_id))
        pipe.lrange(tm_log_key(tm_id), 0, -1)
        meta, blob, records = pipe.execute() if keys.is_id(tm_id) else ({}, None, [])
        if not meta or blob is None:
            raise TMNotFound(f"translation memory {tm_id} not found")
        return meta, blob, records

    def export(self, tm_id: str, path: Path) -> None:
        """A live memory as a TMX 1.4 file written at ``path``
        (:func:`mtfleet.core.tm.files.export`)."""
        meta, blob, records = self._stored(tm_id)
        if meta.get("deleted") == "1":
            raise TMNotFound(f"translation memory {tm_id} not found")
        info = self._info(meta)
        what = "writing this translation memory's TMX"
        self.run(what, files.export, blob, records, info.source_lang, info.target_lang, str(path))

    def segments(
        self, tm_id: str, offset: int, size: int, needle: str | None, case_sensitive: bool
    ) -> tuple[list[tuple[str, str]], bool]:
        """A page of a memory's pairs (:func:`mtfleet.core.tm.files.page`)."""
        _, blob, records = self._stored(tm_id)
        what = "reading this translation memory's segments"
        page: tuple[list[tuple[str, str]], bool] = self.run(
            what, files.page, blob, records, offset, size, needle, case_sensitive
        )
        return page

    # --- the index ------------------------------------------------------------------------

    def index(self, tm_id: str, version: str) -> TMIndex:
        """The memory's index at ``version`` when this process holds it, else the memory as
        Redis has it now (see the module's docstring); deleted memories too while their data
        is kept. TMNotFound when it is gone."""
        tm_id = fleet_id(tm_id)
        key = (tm_id, version)
        with _lock:
            found = _indexes.get(key)
            if found is not None:
                _indexes.move_to_end(key)
                return found
        with _loading[hash(tm_id) % len(_loading)]:
            with _lock:
                found = _indexes.get(key)
                latest = _latest.get(tm_id)
            if found is not None:
                return found
            built = self._load(tm_id, latest)
            with _lock:
                _remember((tm_id, built.version), built)
                if built.version != version:
                    _remember(key, built)
        return built

    def _load(self, tm_id: str, latest: TMIndex | None) -> TMIndex:
        if latest is not None:
            pipe = self.r.pipeline(transaction=True)
            pipe.hmget(tm_key(tm_id), ["version", "gen"])
            pipe.lrange(tm_log_key(tm_id), latest.log_pos, -1)
            (version, gen), records = pipe.execute()
            if version is None:
                raise TMNotFound(f"translation memory {tm_id} is gone")
            if int(gen) == latest.gen:
                if version == latest.version:
                    return latest
                changes = [tuple(p) for rec in records for p in json.loads(rec)["pairs"]]
                return latest.with_changes(version, changes, log_pos=latest.log_pos + len(records))
        try:
            meta, blob, records = self._stored(tm_id)
        except TMNotFound:
            raise TMNotFound(
                f"translation memory {tm_id} is gone; it was deleted longer than "
                "MT_RESULT_TTL_S ago"
            ) from None
        return TMIndex.build(
            tm_id,
            meta["version"],
            files.merged(blob, records),
            gen=int(meta["gen"]),
            log_pos=len(records),
        )

    # --- writing --------------------------------------------------------------------------

    def create(
        self,
        owner: str,
        name: str,
        source: str,
        target: str,
        pairs: list[tuple[str, str]],
        *,
        storage: Storage | None = None,
    ) -> TMInfo:
        """A new memory of ``pairs`` (source, target) for ``owner`` (none: an empty memory
        that corrections fill); a later pair replaces an earlier one with the same source."""
        name = check_name(name)
        source, target = check_pair_languages(source, target)
        what = "storing these pairs"
        made = self.run(what, files.prepare_pairs, pairs, source, target, self.limits)
        return self._store_new(owner, name, source, target, made, storage)

    def import_file(
        self,
        owner: str,
        name: str,
        source: str | None,
        target: str | None,
        content: bytes | Path,
        filename: str | None = None,
        *,
        fmt: str | None = None,
        storage: Storage | None = None,
    ) -> TMInfo:
        """A new memory from a TMX, TSV or CSV file (its bytes, or its path: read as it goes;
        ``fmt``, else told by :func:`mtfleet.core.tm.formats.sniff`), the pairs for
        ``source`` -> ``target``; both None: the one pair a TMX file holds (DeepL's import,
        :func:`mtfleet.core.tm.formats.tmx_pair`)."""
        size = content.stat().st_size if isinstance(content, Path) else len(content)
        if size > self.limits.max_import_bytes:
            raise InvalidInput(
                f"the file has {size:,} bytes; an import may have "
                f"{self.limits.max_import_bytes:,} (MT_TM_MAX_IMPORT_BYTES)"
            )
        name = check_name(name)
        if source is not None and target is not None:
            source, target = check_pair_languages(source, target)
        made: files.Prepared = self.run(
            "reading this translation-memory file",
            files.prepare_file,
            str(content) if isinstance(content, Path) else content,
            filename,
            fmt,
            source,
            target,
            self.limits,
        )
        source, target = check_pair_languages(made.source, made.target)
        return self._store_new(owner, name, source, target, made, storage)

    def _store_new(
        self,
        owner: str,
        name: str,
        source: str,
        target: str,
        made: files.Prepared,
        storage: Storage | None,
    ) -> TMInfo:
        now = time.time()
        info = TMInfo(
            id=secrets.token_hex(16),
            name=name,
            source_lang=source,
            target_lang=target,
            owner=owner,
            created_at=now,
            updated_at=now,
            version=made.version,
            entry_count=made.entry_count,
            skipped=made.skipped,
        )
        blob = made.blob
        fields = {
            **{k: str(v) for k, v in info.model_dump().items()},
            "gen": "0",
            "log_len": "0",
            "base_bytes": str(len(blob)),
            "log_bytes": "0",
        }
        size = len(blob) + sum(len(k) + len(v) for k, v in fields.items()) + 64
        fields["bytes"] = str(size)
        self._records.create(
            record=tm_key(info.id),
            body_key=tm_base_key(info.id),
            index=tms_key(owner),
            record_id=info.id,
            body=blob,
            fields=fields,
            size=size,
            created_at=now,
            max_per_owner=self.limits.max_per_owner,
            storage=storage,
        )
        return info

    def add_entries(
        self,
        tm_id: str,
        owner: str,
        pairs: list[tuple[str, str]],
        *,
        storage: Storage | None = None,
    ) -> TMInfo:
        """Add pairs, or replace the target of a pair with the same (normalized) source, in
        one of ``owner``'s memories; a new ``version`` when anything changed. The next request
        that names the memory sees the change."""
        for _ in range(_CHANGE_TRIES):
            try:
                raw, blob, records = self._stored(tm_id)
            except TMNotFound:
                raw = {}
            if not raw or raw.get("deleted") == "1" or not visible(self._info(raw), owner):
                raise TMNotFound(f"translation memory {tm_id} not found")
            info = self._info(raw)
            change: files.Change | None = self.run(
                "correcting this translation memory",
                files.plan_change,
                blob,
                records,
                pairs,
                version=info.version,
                entry_count=info.entry_count,
                log_len=int(raw["log_len"]),
                base_bytes=int(raw["base_bytes"]),
                log_bytes=int(raw["log_bytes"]),
                limits=self.limits,
                log_max_records=LOG_MAX_RECORDS,
                log_min_bytes=LOG_MIN_BYTES,
            )
            if change is None:
                return info
            version, compact, payload = change.version, change.compact, change.payload
            base_bytes, log_bytes = change.base_bytes, change.log_bytes
            now = time.time()
            new = info.model_copy(
                update={"version": version, "entry_count": info.entry_count + change.added,
                        "updated_at": now}
            )  # fmt: skip
            fields = {
                "entry_count": str(new.entry_count),
                "updated_at": str(now),
                "base_bytes": str(base_bytes),
                "log_bytes": str(log_bytes),
            }
            size = base_bytes + log_bytes + sum(len(k) + len(v) for k, v in raw.items()) + 64
            fields["bytes"] = str(size)
            done = self._change(
                keys=[
                    tm_key(info.id),
                    tm_base_key(info.id),
                    tm_log_key(info.id),
                    *(storage.redis_keys() if storage is not None else ("", "")),
                ],
                args=[
                    info.id,
                    info.version,
                    version,
                    "compact" if compact else "append",
                    payload,
                    size,
                    repr(now),
                    storage.limit if storage is not None else -1,
                    *(x for kv in fields.items() for x in kv),
                ],
            )
            if isinstance(done, list):
                assert storage is not None
                raise storage.exceeded(size, int(done[1]))
            if done == 0:
                raise TMNotFound(f"translation memory {tm_id} not found")
            if done == 1:
                return new
            time.sleep(random.random() * 0.002)  # another change came first: try again
        raise Unavailable(
            f"translation memory {tm_id} changed {_CHANGE_TRIES} times while this change was "
            "being made; retry it"
        )

    def delete(
        self,
        tm_id: str,
        owner: str,
        *,
        retention_s: int = DEFAULT_RETENTION_S,
        storage: Storage | None = None,
    ) -> bool:
        """Hide one of ``owner``'s memories now; its pairs expire after ``retention_s`` (jobs
        accepted before may still use it) and its bytes go back to ``storage``. False when
        there was no such live memory of ``owner``'s."""
        info = self.get(tm_id)
        if info is None or not visible(info, owner):
            return False
        return self._records.delete(
            record=tm_key(info.id),
            index=tms_key(info.owner),
            data=[tm_base_key(info.id), tm_log_key(info.id)],
            record_id=info.id,
            retention_s=retention_s,
            storage=storage,
        )

    def delete_owned(self, owner: str, *, retention_s: int = DEFAULT_RETENTION_S) -> int:
        """Delete every memory of ``owner`` (an API key being deleted); how many there were."""
        owned = self.list_for(owner)
        for info in owned:
            self.delete(info.id, owner, retention_s=retention_s)
        self.r.delete(tms_key(owner))
        return len(owned)
