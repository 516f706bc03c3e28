"""Files as jobs, recoverable: what ``mtfleet submit`` and ``mtfleet result --out`` do.

Every submission is written down before anything waits on it, in the output folder's
*manifest* (``DIR/.mtfleet-jobs.json``): each file with its digest, how it was sent and the
jobs it became, in order. So a submit that stops early (Ctrl-C, a closed terminal, the API gone
for longer than the client's retries) loses nothing: the jobs run on in the fleet,
``mtfleet submit ... --resume`` follows them instead of sending the files again (and sends only
the parts not sent yet), and ``mtfleet result JOB --out DIR`` writes a finished job as its file.

A line file with more segments than one job may carry (``GET /v1/limits``) goes as several
jobs, joined in order when all are final; a document always goes as one job.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from mtfleet import formats as documents
from mtfleet.core.guidance import Guidance
from mtfleet.core.models import ModelType, UseCache
from mtfleet.core.schemas import JobResultPublic
from mtfleet.formats import sniffing
from mtfleet.formats.text import LineDocument, parse_lines
from mtfleet.producer.client import Job, MTClient
from mtfleet.producer.naming import named

MANIFEST = ".mtfleet-jobs.json"


class FileJobs(BaseModel):
    """One submitted file and the jobs it became."""

    source: str = Field(description="The file's absolute path when it was submitted.")
    sha256: str
    kind: Literal["lines", "document"]
    format: str | None = None  # a document's format
    encoding: str = "utf-8"
    source_lang: str
    target_lang: str
    lane: str
    glossary_id: str | None = None
    pool: str | None = None
    adapter: str | None = None
    guidance: Guidance | None = None  # context, instructions, formality (an LLM pool)
    style_id: str | None = None
    translation_memory_id: str | None = None
    translation_memory_threshold: int | None = None
    model_type: ModelType | None = None
    protected_patterns: list[str] | None = None
    no_trace: bool | None = None
    use_cache: UseCache | None = None
    quality_estimation: bool | None = None
    parts: list[int] = Field(description="Segments per job, in order (one entry: one job).")
    jobs: list[str] = Field(default_factory=list, description="The jobs sent so far, in order.")
    dest: str
    written: str | None = Field(None, description="The status the file was written with.")
    nonce: str = Field(
        default_factory=lambda: uuid.uuid4().hex,
        description="Names this submission in its jobs' Idempotency-Keys: a part whose answer "
        "was lost (Ctrl-C mid-request) is found again by --resume, not made twice.",
    )

    def idempotency_key(self, part: int) -> str:
        return f"mtfleet-cli-{self.nonce}-{part}"

    @property
    def sent(self) -> bool:
        return len(self.jobs) == len(self.parts)

    def same_request(self, other: FileJobs) -> bool:
        fields = ("sha256", "kind", "format", "encoding", "source_lang", "target_lang", "lane")
        more = ("glossary_id", "pool", "adapter", "guidance", *_REFS)
        return all(getattr(self, f) == getattr(other, f) for f in (*fields, *more))


class Manifest(BaseModel):
    version: int = 1
    files: dict[str, FileJobs] = Field(default_factory=dict)

    @classmethod
    def load(cls, out: Path) -> Manifest:
        path = out / MANIFEST
        if not path.exists():
            return cls()
        try:
            return cls.model_validate_json(path.read_bytes())
        except ValueError:
            raise SourceError(
                f"{path} is not a manifest this mtfleet can read: move it away, or use "
                "another --out"
            ) from None

    def save(self, out: Path) -> None:
        """Atomically (a reader never sees half a manifest)."""
        out.mkdir(parents=True, exist_ok=True)
        tmp = out / f"{MANIFEST}.tmp"
        tmp.write_text(self.model_dump_json(indent=1), encoding="utf-8")
        os.replace(tmp, out / MANIFEST)

    def entry_for_job(self, job_id: str) -> FileJobs | None:
        return next((e for e in self.files.values() if job_id in e.jobs), None)

    def running(self) -> list[tuple[str, str]]:
        """(file, job id) of every job not yet written to its file."""
        return [(e.source, j) for e in self.files.values() if e.written is None for j in e.jobs]


class SourceError(Exception):
    """A file that cannot be sent as it is (the message says what to do)."""


@dataclass(frozen=True)
class SubmitOptions:
    target: str
    source: str = "auto"
    lane: str = "bulk"
    fmt: str | None = None
    lines: bool = False
    encoding: str = "utf-8"
    glossary_id: str | None = None
    pool: str | None = None
    adapter: str | None = None
    guidance: Guidance | None = None
    style_id: str | None = None
    translation_memory_id: str | None = None
    translation_memory_threshold: int | None = None
    model_type: ModelType | None = None
    protected_patterns: list[str] | None = None
    no_trace: bool | None = None
    use_cache: UseCache | None = None
    quality_estimation: bool | None = None


#: What a request names besides its text and guidance (a style rule, a translation memory, the
#: pool marking it asks for, the patterns it protects).
_REFS = (
    "style_id",
    "translation_memory_id",
    "translation_memory_threshold",
    "model_type",
    "protected_patterns",
    "no_trace",
    "use_cache",
    "quality_estimation",
)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def decode(data: bytes, encoding: str, path: Path) -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"not {encoding} text: byte 0x{data[exc.start]:02x} at offset {exc.start}. If it "
            "is in another encoding, say which with --encoding (e.g. --encoding latin-1) or "
            f"convert it first (iconv -f latin1 -t utf-8 {path.name})"
        ) from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r}") from None


def sent_as(path: Path, data: bytes, opts: SubmitOptions) -> str | None:
    """The document format ``path`` is sent as (its extension's, or --format's), or None: as
    lines (``.txt``, or --lines)."""
    if opts.lines or (opts.fmt is None and path.suffix.lower() == ".txt"):
        return None
    try:
        return documents.for_upload(data, path.name, opts.fmt).name
    except documents.DocumentError as exc:
        raise SourceError(exc.message + _advice(path, data, exc)) from None


def plan(
    path: Path, data: bytes, fmt: str | None, opts: SubmitOptions, dest: Path, limit: int
) -> FileJobs:
    """How ``path`` is sent: as lines (``fmt`` None; split by ``limit``) or as one document
    in the format ``fmt``, its translation written to ``dest``."""
    common = {
        "source": str(path.resolve()),
        "sha256": _digest(data),
        "encoding": opts.encoding,
        "source_lang": opts.source,
        "target_lang": opts.target,
        "lane": opts.lane,
        "glossary_id": opts.glossary_id,
        "pool": opts.pool,
        "adapter": opts.adapter,
        "guidance": opts.guidance,
        **{name: getattr(opts, name) for name in _REFS},
        "dest": str(dest),
    }
    if fmt is None:
        n = len(parse_lines(decode(data, opts.encoding, path)).segments)
        parts = [min(limit, n - start) for start in range(0, n, limit)]
        return FileJobs(kind="lines", parts=parts, **common)
    return FileJobs(kind="document", format=fmt, parts=[1], **common)


def clashes(entries: Iterable[FileJobs], manifest: Manifest, out: Path) -> list[str]:
    """Every file of ``entries`` whose output would overwrite an input, another's output, or
    a file an earlier submit to ``out`` wrote from another file: a sentence naming both."""
    entries = list(entries)
    inputs = {e.source for e in entries}
    earlier = {
        _resolved(e.dest): e.source for e in manifest.files.values() if e.source not in inputs
    }
    found: list[str] = []
    taken: dict[str, str] = {}  # an output -> the file it is written from
    for e in entries:
        dest = _resolved(e.dest)
        if dest in inputs:
            found.append(f"{e.source} would be written over the input {dest}")
        elif dest in taken:
            found.append(f"{taken[dest]} and {e.source} would both be written to {e.dest}")
        elif dest in earlier:
            found.append(
                f"{e.source} would be written over {e.dest}, which an earlier submit to {out} "
                f"wrote from {earlier[dest]}"
            )
        taken[dest] = e.source
    return found


def _resolved(path: str) -> str:
    return str(Path(path).resolve())


def _advice(path: Path, data: bytes, exc: documents.DocumentError) -> str:
    """What to do with a file refused for its format: an unknown extension on what reads as
    plain text may go as lines; nothing more is advised for a file recognised as a format the
    fleet does not read (the refusal says what to do with it) or as a localization format
    (sent as lines, its keys and msgids would be translated)."""
    if exc.details.get("kind") or sniffing.extension(path.name) in sniffing.KNOWN_UNREAD:
        return ""
    try:
        plain = sniffing.sniff(data, documents.extensions()) == "text"
    except documents.DocumentError:
        plain = False
    lines = (
        "If it is plain text, send it with --lines (one segment per line); if " if plain else "If "
    )
    return (
        f". {lines}it is one of those formats under another name, say which with --format "
        "(--format html, --format markdown, ...)"
    )


def send(
    mt: MTClient,
    entry: FileJobs,
    data: bytes,
    path: Path,
    saved: Callable[[], None],
) -> list[Job]:
    """Send the parts of ``entry`` not sent yet; ``saved`` is called after each job is
    recorded in it, so an interruption between two parts loses neither."""
    made: list[Job] = []
    if entry.kind == "document":
        if not entry.jobs:
            fmt = entry.format or "text"
            # the file's bytes as they are (each format reads its own encoding: a UTF-16
            # .strings, a Latin-1 .properties); text decoded here only when --encoding says so
            content: bytes | str = (
                data if entry.encoding == "utf-8" else decode(data, entry.encoding, path)
            )
            job = mt.submit_document(
                content,
                format=fmt,
                source=entry.source_lang,
                target=entry.target_lang,
                lane=entry.lane,
                filename=path.name,
                glossary_id=entry.glossary_id,
                pool=entry.pool,
                adapter=entry.adapter,
                guidance=entry.guidance,
                **{name: getattr(entry, name) for name in _REFS},
                idempotency_key=entry.idempotency_key(0),
            )
            entry.jobs.append(job.id)
            saved()
            made.append(job)
        return made
    segments = parse_lines(decode(data, entry.encoding, path)).segments
    start = sum(entry.parts[: len(entry.jobs)])
    for size in entry.parts[len(entry.jobs) :]:
        job = mt.submit(
            segments[start : start + size],
            source=entry.source_lang,
            target=entry.target_lang,
            lane=entry.lane,
            glossary_id=entry.glossary_id,
            pool=entry.pool,
            adapter=entry.adapter,
            guidance=entry.guidance,
            **{name: getattr(entry, name) for name in _REFS},
            idempotency_key=entry.idempotency_key(len(entry.jobs)),
        )
        entry.jobs.append(job.id)
        saved()
        made.append(job)
        start += size
    return made


@dataclass
class Written:
    dest: Path
    status: str
    failed: int
    repairs: int
    note: str = ""

    def describe(self) -> str:
        """``DEST [status]`` and what the operator should know about it."""
        msg = f"{self.dest} [{self.status}]"
        if self.failed:
            msg += f" ({self.failed} segment(s) failed)"
        if self.repairs:
            msg += f" ({self.repairs} markup repair(s))"
        if self.note:
            msg += f" ({self.note})"
        return msg


def combined_status(statuses: Iterable[str]) -> str:
    """One status for a file sent as several jobs."""
    found = set(statuses)
    for unsettled in ("queued", "running", "cancelling"):
        if unsettled in found:
            return unsettled
    if len(found) == 1:
        return found.pop()
    return "cancelled" if "cancelled" in found else "partial"


def write(mt: MTClient, entry: FileJobs, *, partial: bool = False) -> Written:
    """Write ``entry``'s file from its jobs' results (all final, or what is done with
    ``partial``): a document in its own format, a line file with its line structure (from
    the source file, when it is still there unchanged)."""
    results: list[JobResultPublic] = [mt.result(j, partial=partial) for j in entry.jobs]
    dest = Path(entry.dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    status = combined_status(r.status.value for r in results)
    failed = sum(len(r.errors) for r in results)
    if entry.kind == "document":
        doc = results[0].document
        if doc is None:
            raise SourceError(f"job {entry.jobs[0]} has no document")
        dest.write_bytes(doc.data())
        return Written(dest, status, failed, len(doc.warnings))
    translations = [t for r in results for t in r.translations]
    layout = _layout(entry)
    if layout is None:
        # the source file is gone or changed: one line per segment, failed ones empty
        dest.write_text("".join((t or "") + "\n" for t in translations), encoding="utf-8")
        return Written(dest, status, failed, 0, "source file changed or gone: one line per segment")
    text = layout.render(translations)
    try:
        dest.write_bytes(text.encode(entry.encoding))
        note = ""
    except UnicodeEncodeError:
        dest.write_bytes(text.encode("utf-8"))
        note = f"written as UTF-8: the translation has characters {entry.encoding} lacks"
    return Written(dest, status, failed, 0, note)


def _layout(entry: FileJobs) -> LineDocument | None:
    try:
        data = Path(entry.source).read_bytes()
    except OSError:
        return None
    if _digest(data) != entry.sha256:
        return None
    return parse_lines(data.decode(entry.encoding))


def standalone(
    mt: MTClient, job_id: str, out: Path, *, partial: bool, into_folder: bool = True
) -> Written:
    """``mtfleet result JOB --out PATH`` for a job no manifest there knows: a document job as
    its file, a text job one line per text. ``out`` is the folder the file goes in, by the
    job's own name (the name the document was sent with, as :func:`named` names its
    translation), or with ``into_folder=False`` the file itself."""
    job = mt.get(job_id)
    res = mt.result(job_id, partial=partial)
    (out if into_folder else out.parent).mkdir(parents=True, exist_ok=True)
    if res.document is not None:
        fmt = documents.for_name(res.document.format)
        name = Path(res.document.filename or job_id)
        if not name.suffix:
            name = name.with_name(name.name + fmt.extensions[0])
        own = named(name, fmt.name, job.target_lang).name
        dest = out / own if into_folder else out
        dest.write_bytes(res.document.data())
        return Written(dest, res.status.value, len(res.errors), len(res.document.warnings))
    dest = out / f"{job_id}.{job.target_lang}.txt" if into_folder else out
    dest.write_text("".join((t or "") + "\n" for t in res.translations), encoding="utf-8")
    return Written(dest, res.status.value, len(res.errors), 0, "one line per text")


def describe(entry: FileJobs) -> str:
    jobs = ", ".join(entry.jobs)
    return f"job{'s' if len(entry.jobs) > 1 else ''} {jobs}"
