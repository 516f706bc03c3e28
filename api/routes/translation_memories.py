"""/v1/translation_memories: create (pairs, or a TMX/TSV/CSV file), list, read, export as TMX,
add or correct pairs, delete (:mod:`mtfleet.core.tm`).

Same API keys as jobs: a memory belongs to the key that made it, and another key's memory
answers exactly as a missing one (404). A request names one with ``translation_memory_id``.
``POST /v1/translation_memories`` takes a multipart upload (``file``, ``name``,
``source_lang``, ``target_lang``, optional ``format``) or a JSON body (:class:`TMCreate`:
``entries``, or the ``file`` as text or base64).

**Each key's share**: an import, an export, a correction (and DeepL's page of segments) holds
one of its key's ``MT_TM_WORK_PER_KEY`` from before its body is parsed to its answer (past them,
429 with Retry-After), and its heavy step runs in a document process
(:meth:`mtfleet.api.parsing.DocumentPool.run`, within the key's share of them): an upload is
spooled to a file there reads as it goes, an export written to a file streamed back. One key's
flood of imports is that key's problem; another key's requests find the API as they would.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import StreamingResponse
from pydantic import ValidationError
from starlette.datastructures import UploadFile

from mtfleet.api.auth import Caller, CallerDep
from mtfleet.api.deps import Services, ServicesDep
from mtfleet.api.errors import documented
from mtfleet.core.apikeys import Storage
from mtfleet.core.errors import InvalidInput
from mtfleet.core.tm import TMInfo, TMLimits, TMNotFound, TranslationMemoryStore
from mtfleet.core.tm.formats import FORMATS
from mtfleet.core.tm.schemas import TMCreate, TMEntriesAdd, TMFile, TMList, TMPublic

router = APIRouter(prefix="/v1/translation_memories", tags=["translation memories"])

ERRORS = documented(401, 404, 422, 429, 503)
TMX_MEDIA = "application/x-tmx+xml"
_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")
#: Bytes of an upload copied at once to the file a document process reads (and of an
#: export streamed at once).
COPY_CHUNK = 1024 * 1024
Body = TypeVar("Body", TMCreate, TMEntriesAdd)


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema with its ``$defs`` put in place (an operation's own schema cannot
    refer to components FastAPI does not know)."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return walk(defs[ref.rsplit("/", 1)[1]])
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out: dict[str, Any] = walk(schema)
    return out


_CREATE_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": _inline(TMCreate.model_json_schema())},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file", "name", "source_lang", "target_lang"],
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        "name": {"type": "string", "maxLength": 100},
                        "source_lang": {"type": "string", "minLength": 2, "maxLength": 16},
                        "target_lang": {"type": "string", "minLength": 2, "maxLength": 16},
                        "format": {"type": "string", "enum": list(FORMATS)},
                    },
                }
            },
        },
    }
}


def store(services: Services, owner: str) -> TranslationMemoryStore:
    """The memories, their heavy steps run in a document process within ``owner``'s share."""
    pool = services.jobs.documents

    def run(what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return pool.run("tm", owner, what, fn, *args, **kwargs)

    return TranslationMemoryStore(
        services.store.r, TMLimits.from_settings(services.settings.glossaries), run
    )


def storage(services: Services, caller: Caller) -> Storage | None:
    """The caller's storage quota (None without auth)."""
    if caller.key is None:
        return None
    return services.apikeys.storage(caller.key, services.settings.keys.key_storage_mb)


def _file_bytes(f: TMFile) -> bytes:
    if f.encoding == "text":
        return f.content.encode("utf-8", "surrogatepass")
    try:
        return base64.b64decode(f.content, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput("file.content is not valid base64") from None


def create(services: Services, caller: Caller, body: TMCreate) -> TMInfo:
    """Store the memory a JSON body describes (the one way /v1 and the SDK create one)."""
    tms = store(services, caller.owner)
    if body.file is not None:
        return tms.import_file(
            caller.owner,
            body.name,
            body.source_lang,
            body.target_lang,
            _file_bytes(body.file),
            body.file.filename,
            fmt=body.file.format,
            storage=storage(services, caller),
        )
    return tms.create(
        caller.owner,
        body.name,
        body.source_lang,
        body.target_lang,
        [(e.source, e.target) for e in body.entries or []],
        storage=storage(services, caller),
    )


def _json(model: type[Body], content: bytes) -> Body:
    """A JSON body read by the route itself (inside the key's share), refused as FastAPI
    refuses one it reads (422 naming each field)."""
    try:
        return model.model_validate_json(content)
    except ValidationError as exc:
        raise RequestValidationError(exc.errors()) from None


def _form_text(form: Any, name: str, *, required: bool = True) -> str | None:
    value = form.get(name)
    if value is None:
        if required:
            raise InvalidInput(f"the form has no {name!r} field")
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name!r} must be a form field, not a file")
    return value


async def _upload(services: Services, caller: Caller, request: Request) -> TMInfo:
    async with request.form(max_files=1, max_fields=16) as form:
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise InvalidInput("the form has no 'file' part (the TMX, TSV or CSV file)")
        name = _form_text(form, "name")
        source = _form_text(form, "source_lang")
        target = _form_text(form, "target_lang")
        fmt = _form_text(form, "format", required=False) or None
        if fmt is not None and fmt.lower() not in FORMATS:
            raise InvalidInput(f"format {fmt!r}: use one of {', '.join(FORMATS)}")
        assert name is not None and source is not None and target is not None
        return await run_in_threadpool(
            _import_upload, services, caller, upload, name, source, target, fmt
        )


def _import_upload(
    services: Services,
    caller: Caller,
    upload: UploadFile,
    name: str,
    source: str,
    target: str,
    fmt: str | None,
) -> TMInfo:
    """The upload (spooled by the form) copied to a file a document process reads."""
    with tempfile.NamedTemporaryFile(prefix="mtfleet-tm-", suffix=".upload") as copy:
        shutil.copyfileobj(upload.file, copy, COPY_CHUNK)
        copy.flush()
        return store(services, caller.owner).import_file(
            caller.owner,
            name,
            source,
            target,
            Path(copy.name),
            upload.filename,
            fmt=fmt,
            storage=storage(services, caller),
        )


@router.post(
    "",
    status_code=201,
    response_model=TMPublic,
    responses={**ERRORS, **documented(400, 413, 415)},
    openapi_extra=_CREATE_BODY,
)
async def create_translation_memory(
    request: Request, services: ServicesDep, caller: CallerDep, response: Response
) -> TMPublic:
    """Create a translation memory for one language pair: upload a TMX 1.4, TSV or CSV file
    (multipart: ``file``, ``name``, ``source_lang``, ``target_lang``), or send JSON with
    ``entries`` (or the ``file`` as text or base64). A TMX holding several languages gives the
    pair asked for."""
    with services.memory_work.hold(caller.owner):  # before the body is parsed
        if request.headers.get("content-type", "").lower().startswith("multipart/form-data"):
            info = await _upload(services, caller, request)
        else:
            body = _json(TMCreate, await request.body())
            info = await run_in_threadpool(create, services, caller, body)
    response.headers["Location"] = f"/v1/translation_memories/{info.id}"
    return TMPublic.of(info)


@router.get("", response_model=TMList, responses=ERRORS)
def list_translation_memories(services: ServicesDep, caller: CallerDep) -> TMList:
    """The caller's translation memories, oldest first, without their pairs."""
    memories = store(services, caller.owner).list_for(caller.owner)
    return TMList(translation_memories=[TMPublic.of(i) for i in memories])


@router.get("/{tm_id}", response_model=TMPublic, responses=ERRORS)
def get_translation_memory(tm_id: str, services: ServicesDep, caller: CallerDep) -> TMPublic:
    """One translation memory (its pairs: ``/export``)."""
    return TMPublic.of(store(services, caller.owner).visible(tm_id, caller.owner))


@router.get(
    "/{tm_id}/export",
    response_class=Response,
    responses={**ERRORS, 200: {"content": {TMX_MEDIA: {}}, "description": "A TMX 1.4 file."}},
)
def export_translation_memory(
    tm_id: str, services: ServicesDep, caller: CallerDep
) -> StreamingResponse:
    """The memory's pairs as a TMX 1.4 file (the fleet's inline tags and the placeholders as
    TMX inline codes), written by a document process and streamed from its file."""
    return export_response(services, caller.owner, tm_id)


def export_response(services: Services, owner: str, tm_id: str) -> StreamingResponse:
    """One of ``owner``'s memories as a TMX download (/v1's export, DeepL's export download):
    written within the key's share of memory work, in a document process."""
    tms = store(services, owner)
    with services.memory_work.hold(owner):
        info = tms.visible(tm_id, owner)
        exported = _exported(tms, info.id)
    name = _FILENAME.sub("_", info.name).strip("._") or info.id
    return StreamingResponse(
        _chunks(exported),
        media_type=TMX_MEDIA,
        headers={"Content-Disposition": f'attachment; filename="{name}.tmx"'},
    )


def _exported(tms: TranslationMemoryStore, tm_id: str) -> IO[bytes]:
    """The memory's TMX, open for reading; its file is already unlinked (nothing is left on
    disk whether or not the response is read to its end)."""
    fd, path = tempfile.mkstemp(prefix="mtfleet-tm-", suffix=".tmx")
    try:
        tms.export(tm_id, Path(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    finally:
        os.unlink(path)


def _chunks(file: IO[bytes]) -> Iterator[bytes]:
    with file:
        while chunk := file.read(COPY_CHUNK):
            yield chunk


@router.post(
    "/{tm_id}/entries",
    response_model=TMPublic,
    responses=ERRORS,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": _inline(TMEntriesAdd.model_json_schema())}},
        }
    },
)
async def add_translation_memory_entries(
    tm_id: str, request: Request, services: ServicesDep, caller: CallerDep
) -> TMPublic:
    """Add pairs, or correct the target of the pairs with the same source: the memory gets a
    new ``version``, and the next request that names it sees the change."""
    with services.memory_work.hold(caller.owner):  # before the body is parsed
        body = _json(TMEntriesAdd, await request.body())
        info = await run_in_threadpool(
            store(services, caller.owner).add_entries,
            tm_id,
            caller.owner,
            [(e.source, e.target) for e in body.entries],
            storage=storage(services, caller),
        )
    return TMPublic.of(info)


@router.delete("/{tm_id}", status_code=204, responses=ERRORS)
def delete_translation_memory(tm_id: str, services: ServicesDep, caller: CallerDep) -> Response:
    """Delete a translation memory: new requests can no longer name it; jobs accepted before
    still finish with it (its pairs are kept for MT_RESULT_TTL_S, then expire)."""
    delete(services, caller, tm_id)
    return Response(status_code=204)


def delete(services: Services, caller: Caller, tm_id: str) -> None:
    """Delete one of the caller's memories (TMNotFound when it has none of that id)."""
    if not store(services, caller.owner).delete(
        tm_id,
        caller.owner,
        retention_s=services.settings.jobs.result_ttl_s,
        storage=storage(services, caller),
    ):
        raise TMNotFound(f"translation memory {tm_id} not found")
