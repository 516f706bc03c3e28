"""DeepL's translation-memory jobs (an import: created, its file uploaded, read; an export:
created, its file downloaded) as records on the durable Redis, so that any API process answers
a job's status, upload and download. The work itself is the store's
(:meth:`mtfleet.core.tm.store.TranslationMemoryStore.import_file` and ``export``): a job only
says where it stands.

**Redis**: ``mt:tmjob:<id>`` (hash), kept :data:`JOB_TTL_S` after it is made: ``owner`` (the
API key that made it), ``operation`` (``import``/``export``), ``status`` (DeepL's:
``awaiting_input``, ``processing``, ``completed``, ``failed``), ``token`` (what its upload or
download URL carries: that URL's only credential, as a pre-signed URL's; the job's status
gives an export's URL again),
the import's declared ``file_name``, ``content_type``, ``content_length`` and ``display_name``,
the export's ``tm_id``, an import's outcome (``tm_id``, ``skipped``, or ``error``), times.

An import is claimed by the first upload (a resent one finds it claimed); one still
``processing`` :data:`STALE_S` after its claim was stopped with its API process and reads as
failed. An import never uploaded reads ``expired`` past :data:`UPLOAD_S`.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any

import redis

from mtfleet.core import keys
from mtfleet.core.keys import PREFIX

#: How long a job's record (and so its upload or download URL) is kept.
JOB_TTL_S = 24 * 3600
#: How long an import's upload URL takes its file.
UPLOAD_S = 3600
#: An import still reading its file this long after its upload was stopped with its process.
STALE_S = 900


def job_key(job_id: str) -> str:
    """Hash: one DeepL translation-memory job (see the module's docstring)."""
    return f"{PREFIX}tmjob:{job_id}"


@dataclass(frozen=True)
class TMJob:
    """A job as its record says, its status as of now (a stale or never-uploaded import
    read as DeepL says it)."""

    id: str
    owner: str
    operation: str
    status: str
    created_at: float
    updated_at: float
    file_name: str = ""
    content_type: str = ""
    content_length: int = 0
    display_name: str = ""
    tm_id: str = ""
    skipped: int = 0
    error: str = ""
    token: str = ""

    @property
    def expires_at(self) -> float:
        """When an import's upload URL, or an export's download URL, stops working."""
        if self.operation == "import" and self.status == "awaiting_input":
            return self.created_at + UPLOAD_S
        return self.created_at + JOB_TTL_S


class TMJobs:
    """DeepL's translation-memory jobs on the durable Redis (``r`` decodes responses)."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r

    def _new(self, owner: str, fields: dict[str, str]) -> TMJob:
        job_id = secrets.token_hex(16)
        token = secrets.token_urlsafe(32)
        now = repr(time.time())
        record: dict[Any, Any] = {
            **fields,
            "owner": owner,
            "token": token,
            "created_at": now,
            "updated_at": now,
        }
        pipe = self.r.pipeline(transaction=True)
        pipe.hset(job_key(job_id), mapping=record)
        pipe.expire(job_key(job_id), JOB_TTL_S)
        pipe.execute()
        job = self.get(job_id)
        assert job is not None
        return job

    def new_import(
        self, owner: str, file_name: str, content_length: int, content_type: str, name: str
    ) -> TMJob:
        """An import waiting for its file (its ``token`` is its upload URL's)."""
        return self._new(
            owner,
            {
                "operation": "import",
                "status": "awaiting_input",
                "file_name": file_name,
                "content_length": str(content_length),
                "content_type": content_type,
                "display_name": name,
            },
        )

    def new_export(self, owner: str, tm_id: str) -> TMJob:
        """An export of the memory ``tm_id``, ready to download (its ``token`` is its download
        URL's; the download writes the memory as it is then)."""
        return self._new(owner, {"operation": "export", "status": "completed", "tm_id": tm_id})

    def get(self, job_id: str) -> TMJob | None:
        """A job (None: none, expired, or not an id); its id in the fleet's form or a UUID."""
        job_id = job_id.replace("-", "").lower()
        found: Any = self.r.hgetall(job_key(job_id)) if keys.is_id(job_id) else None
        if not found:
            return None
        raw = {str(k): str(v) for k, v in found.items()}
        now = time.time()
        status = raw["status"]
        error = raw.get("error", "")
        created = float(raw["created_at"])
        updated = float(raw["updated_at"])
        if status == "awaiting_input" and now > created + UPLOAD_S:
            status = "expired"
        elif status == "processing" and now > updated + STALE_S:
            status = "failed"
            error = "the import stopped with the API process reading it; import the file again"
        return TMJob(
            id=job_id,
            owner=raw["owner"],
            operation=raw["operation"],
            status=status,
            created_at=created,
            updated_at=updated,
            file_name=raw.get("file_name", ""),
            content_type=raw.get("content_type", ""),
            content_length=int(raw.get("content_length") or 0),
            display_name=raw.get("display_name", ""),
            tm_id=raw.get("tm_id", ""),
            skipped=int(raw.get("skipped") or 0),
            error=error,
            token=raw.get("token", ""),
        )

    def with_token(self, job_id: str, token: str) -> TMJob | None:
        """The job whose URL carries ``token`` (None for any other token)."""
        job = self.get(job_id)
        if job is None:
            return None
        return job if hmac.compare_digest(job.token.encode(), token.encode()) else None

    def claim(self, job_id: str) -> bool:
        """Mark an import ``processing`` for the upload that comes first (False: another
        upload already did)."""
        key = job_key(job_id)
        if not self.r.hsetnx(key, "claimed", "1"):
            return False
        self.r.hset(key, mapping={"status": "processing", "updated_at": repr(time.time())})
        return True

    def finish(self, job_id: str, *, tm_id: str = "", skipped: int = 0, error: str = "") -> None:
        """An import's outcome: the memory it made, or why it failed."""
        fields: dict[Any, Any] = {"updated_at": repr(time.time())}
        if error:
            fields.update(status="failed", error=error)
        else:
            fields.update(status="completed", tm_id=tm_id, skipped=str(skipped))
        pipe = self.r.pipeline(transaction=True)
        pipe.hset(job_key(job_id), mapping=fields)
        pipe.expire(job_key(job_id), JOB_TTL_S)
        pipe.execute()
