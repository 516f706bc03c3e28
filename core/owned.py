"""Records an API key owns and pays storage for (glossaries, translation memories): created
and deleted the one way, each in one script (``owned_create.lua``, ``owned_delete.lua``).

A record is a hash (its metadata), a body (its terms, its pairs) and a member of its owner's
index, a sorted set by creation time; its bytes are reserved on the owner's storage quota
(:class:`~mtfleet.core.apikeys.Storage`) under ``<kind>:<id>`` until it is deleted. Creating
refuses an owner at its limit of records (422 naming the setting) or past its quota (413 from
the quota) and writes nothing then; deleting hides the record at once (gone from the index,
``deleted`` in its hash) and keeps its data for ``retention_s``, so jobs accepted with it still
finish.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import redis

from mtfleet.core import scripts
from mtfleet.core.apikeys import Storage
from mtfleet.core.errors import InvalidInput


@dataclass(frozen=True)
class Kind:
    """What the records are: their storage member prefix, their name in a refusal, and the
    setting that limits how many a key keeps."""

    member: str  # "g", "tm": the storage quota's member is "<member>:<id>"
    plural: str  # "glossaries"
    setting: str  # "MT_GLOSSARY_MAX_PER_KEY"


class OwnedRecords:
    def __init__(self, r: redis.Redis, kind: Kind) -> None:
        self.kind = kind
        self._create = scripts.register(r, "owned_create")
        self._delete = scripts.register(r, "owned_delete")

    def create(
        self,
        *,
        record: str,
        body_key: str,
        index: str,
        record_id: str,
        body: str,
        fields: Mapping[str, str],
        size: int,
        created_at: float,
        max_per_owner: int,
        storage: Storage | None,
    ) -> None:
        """Write the record (hash ``record`` with ``fields``, ``body`` at ``body_key``, and
        ``record_id`` in the owner's ``index``) and reserve its ``size`` bytes, or nothing."""
        ok = self._create(
            keys=[
                record,
                body_key,
                index,
                *(storage.redis_keys() if storage is not None else ("", "")),
            ],
            args=[
                max_per_owner,
                repr(created_at),
                record_id,
                body,
                size,
                storage.limit if storage is not None else -1,
                f"{self.kind.member}:{record_id}",
                *(x for kv in fields.items() for x in kv),
            ],
        )
        if isinstance(ok, list):
            assert storage is not None
            raise storage.exceeded(size, int(ok[1]))
        if not ok:
            raise InvalidInput(
                f"this key has {max_per_owner} {self.kind.plural}, the most it may keep "
                f"({self.kind.setting}); delete one first"
            )

    def delete(
        self,
        *,
        record: str,
        index: str,
        data: Sequence[str],
        record_id: str,
        retention_s: int,
        storage: Storage | None,
    ) -> bool:
        """Hide the record now; its hash and ``data`` keys expire after ``retention_s`` and its
        bytes go back to ``storage``. False when there was no such live record."""
        return bool(
            self._delete(
                keys=[
                    record,
                    index,
                    *(storage.redis_keys() if storage is not None else ("", "")),
                    *data,
                ],
                args=[record_id, retention_s, f"{self.kind.member}:{record_id}"],
            )
        )
