"""What both drop-in surfaces (DeepL v2: :mod:`mtfleet.api.deepl`; LibreTranslate:
:mod:`mtfleet.api.libretranslate`) do over the one submission path, :class:`JobService`.

Their clients wait for a translation in the request that asks for it, and send the same request
again, without an Idempotency-Key, when it took too long or came back 429 or 5xx (DeepL's
client: after 10 s, up to six times). So:

* :func:`translate` cuts a request's texts into segments (sentences; markup as inline tags:
  :mod:`mtfleet.formats.fragments`), answers from the phrase cache when it holds every
  one, else makes **one** job of them all under a *retry key* (:func:`retry_key`: the caller's
  key and a digest of the request), waits for it up to the surface's deadline, and puts the
  texts back together. The same request sent again within ``MT_DROPIN_RETRY_WINDOW_S`` joins
  that job (the service's Idempotency-Key path): a resend never doubles the work nor the
  charge. A job that failed is not joined again: its retry key is released, so the next resend
  tries afresh.
* :func:`submit_document` makes a document job the same way (the file's digest in the retry
  key) and grants the secret that reads it (:meth:`JobStore.grant_access`: DeepL's
  ``document_key``, LibreTranslate's download link).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis
from fastapi.concurrency import run_in_threadpool
from pydantic import ValidationError

from mtfleet.api import detection
from mtfleet.api.auth import Caller
from mtfleet.api.deps import Services
from mtfleet.core.errors import (
    EngineError,
    InvalidInput,
    JobNotFound,
    StillTranslating,
    Unavailable,
)
from mtfleet.core.models import JobStatus, Lane, ModelType, PoolModelType
from mtfleet.core.schemas import DocumentIn, JobCreate, JobResultPublic
from mtfleet.core.store import JobRecord
from mtfleet.formats.base import DocumentFormat
from mtfleet.formats.fragments import Cutting


@dataclass(frozen=True)
class TextsRequest:
    """A drop-in translation request in fleet terms."""

    texts: list[str]
    source: str | None  # a fleet language code; None: detect it
    target: str
    cutting: Cutting
    # the glossaries applied, in order (the first listed wins a term: core/glossary/store.py)
    glossary_ids: tuple[str, ...] = ()
    # context, custom instructions, formality, as the surface names them (JobCreate's fields)
    guidance: Mapping[str, Any] | None = None
    model_type: ModelType | None = None  # the pool marking asked for (api/routing.py)


@dataclass(frozen=True)
class Translated:
    text: str
    source: str | None  # the language it was translated from (None: nothing to translate)
    chars: int  # the characters it was billed (its segments')
    # what translated it, when the request gave a model_type (None: nothing was translated)
    model_type_used: PoolModelType | None = None


def retry_key(surface: str, request: Mapping[str, Any], job: JobCreate) -> str:
    """The Idempotency-Key of a drop-in request: the surface and a digest of the request's
    canonical fields and of the job it makes (so a request that now makes another job, say
    after its glossary changed, never meets the earlier one's key; the service scopes the key
    to the caller's API key)."""
    h = hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode())
    h.update(json.dumps(job.model_dump(mode="json"), sort_keys=True).encode())
    return f"{surface}-retry:{h.hexdigest()}"


def job_request(**fields: Any) -> JobCreate:
    """A JobCreate built here (not parsed by FastAPI): refusals are InvalidInput (400/422 on
    every surface), worded as the route's would be."""
    try:
        return JobCreate(**fields)
    except ValidationError as exc:
        msg = "; ".join(str(e.get("msg", "")).removeprefix("Value error, ") for e in exc.errors())
        raise InvalidInput(msg) from exc


async def translate(
    services: Services,
    caller: Caller,
    req: TextsRequest,
    *,
    surface: str,
    request: Mapping[str, Any],
    wait_s: float,
) -> list[Translated]:
    """Each text translated (its markup restored), in order; ``request``: the canonical fields
    the retry key is derived from."""
    lang = req.source or "en"  # how sentences are cut while the language is not known yet
    pool = services.jobs.documents
    segments = await run_in_threadpool(
        pool.cut_fragments, req.texts, lang, req.cutting, caller.owner
    )
    flat = [s for segs in segments for s in segs]
    if not flat:
        return [Translated(t, req.source, 0) for t in req.texts]
    job_req = job_request(
        texts=flat,
        source_lang=req.source or detection.AUTO,
        target_lang=req.target,
        lane=Lane.interactive,
        glossary_ids=list(req.glossary_ids),
        model_type=req.model_type,
        **(req.guidance or {}),
    )
    key = retry_key(surface, request, job_req)
    done, job, used = await _translations(services, caller, job_req, key, wait_s)
    per_text: list[list[str | None]] = []
    k = 0
    for segs in segments:
        per_text.append(list(done[k : k + len(segs)]))
        k += len(segs)
    texts = await run_in_threadpool(
        pool.render_fragments, req.texts, lang, req.cutting, per_text, caller.owner
    )
    out = []
    k = 0
    for text, segs in zip(texts, segments, strict=True):
        source = req.source
        if job is not None and segs:
            langs = job.segment_langs
            source = (langs[k] if langs else None) or job.detected_source_lang or job.source_lang
        out.append(Translated(text, source, sum(map(len, segs)), used))
        k += len(segs)
    return out


async def _translations(
    services: Services, caller: Caller, req: JobCreate, key: str, wait_s: float
) -> tuple[list[str | None], JobRecord | None, PoolModelType | None]:
    """The segments' translations: from the phrase cache (no job), or from the job made (or
    joined) for them; and the route's ``model_type_used``."""
    jobs = services.jobs
    found = None
    # a resend (a client retrying after a 429) joins its job, charged once, even once the
    # phrase cache holds the translation its job made
    resent = await jobs.resent(key, caller.owner)
    if not detection.is_auto(req.source_lang) and not resent:
        found = await jobs.answer_from_cache(req, owner=caller.owner, key=caller.key)
        if found.translations is not None:
            return list(found.translations), None, found.model_type_used
    submitted = await jobs.submit(
        req,
        owner=caller.owner,
        key=caller.key,
        idempotency_key=key,
        found=found,
        idempotency_ttl_s=services.settings.api.dropin_retry_window_s,
    )
    known = submitted.cached if submitted.created else None
    job, result = await services.results.settled(submitted.job, wait_s, known)
    if result is None:
        p = job.progress
        raise StillTranslating(
            f"still translating ({p.done + p.failed} of {p.total} sentences done after "
            f"{wait_s:g} s); send the same request again to get the translation (it joins "
            "the work already running)",
            retry_after=1,
        )
    if job.status is not JobStatus.succeeded or result.errors:
        await run_in_threadpool(_release, services, caller, key, job.id)
        raise _failure(job, result)
    return result.translations, job, job.model_type_used


def _release(services: Services, caller: Caller, key: str, job_id: str) -> None:
    """Forget a failed job's retry key (when it still names that job), so the next resend
    makes a new job instead of joining the failure."""
    redis_key = services.jobs.idempotency_redis_key(key, caller.owner)
    with contextlib.suppress(redis.RedisError):
        value = services.store.r.get(redis_key)
        if value is not None and str(value).startswith(f"{job_id} "):
            services.store.r.delete(redis_key)


def _failure(job: JobRecord, result: JobResultPublic) -> Exception:
    """What a failed (or partly failed) job answers: a text too long for the model is the
    caller's (InvalidInput), a store or broker that failed is Unavailable, anything else is
    the engine's (EngineError)."""
    if result.errors:
        first = result.errors[0]
        kind, message = first.type, f"sentence {first.index}: {first.message}"
    elif job.error:
        kind, message = str(job.error.get("type", "")), str(job.error.get("message", ""))
    else:
        kind, message = job.status.value, f"the job was {job.status.value}"
    if kind == "segment_too_long":
        return InvalidInput(f"a text is too long for the model ({message}); split it")
    if kind == "unavailable":
        return Unavailable(message)
    return EngineError(f"the translation failed ({kind}: {message})")


async def submit_document(
    services: Services,
    caller: Caller,
    *,
    content: bytes,
    filename: str | None,
    fmt: DocumentFormat,
    source: str | None,
    target: str,
    glossary_ids: Sequence[str] = (),
    surface: str,
    request: Mapping[str, Any],
    callback_url: str | None = None,
    guidance: Mapping[str, Any] | None = None,
    model_type: ModelType | None = None,
) -> tuple[JobRecord, str]:
    """A document job for an uploaded file of format ``fmt`` (what
    :func:`mtfleet.formats.for_upload` says it is), and the secret that reads it.
    ``request``: the canonical fields of the upload besides the file (the file is in the job,
    and so in the retry key)."""
    req = job_request(
        document=DocumentIn(
            format=fmt.name,
            content=base64.b64encode(content).decode(),
            encoding="base64",
            filename=(filename or "")[:255] or None,
        ),
        source_lang=source or detection.AUTO,
        target_lang=target,
        glossary_ids=list(glossary_ids),
        callback_url=callback_url,
        model_type=model_type,
        **(guidance or {}),
    )
    key = retry_key(surface, request, req)
    submitted = await services.jobs.submit(
        req,
        owner=caller.owner,
        key=caller.key,
        idempotency_key=key,
        idempotency_ttl_s=services.settings.api.dropin_retry_window_s,
    )
    job = submitted.job
    token = await run_in_threadpool(services.store.grant_access, job.id, submitted.chars)
    return job, token


async def document_job(
    services: Services, job_id: str, token: str, caller: Caller | None = None
) -> tuple[JobRecord, int]:
    """A document job and the characters it billed, when ``token`` is its secret (and
    ``caller``, when given, may see it); JobNotFound otherwise, the same words whatever was
    wrong."""

    def read() -> tuple[JobRecord, int]:
        missing = JobNotFound(f"document {job_id} not found (or not with this key)")
        chars = services.store.access(job_id.lower(), token)
        if chars is None:
            raise missing
        try:
            job = services.store.get(job_id.lower())
        except JobNotFound:
            raise missing from None
        if caller is not None and not caller.may_see(job):
            raise missing
        return job, chars

    return await run_in_threadpool(read)
