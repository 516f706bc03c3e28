"""The ``mtfleet`` command's client commands: submit work and read results, through the API.

Clients:     ``mtfleet translate`` · ``mtfleet submit`` · ``mtfleet status`` · ``mtfleet result``
             ``mtfleet cancel`` · ``mtfleet languages`` · ``mtfleet pools list`` · ``mtfleet eval``
             ``mtfleet glossary create|list|show|delete`` · ``mtfleet tm ...`` (the client
             install, ``pip install mtfleet``, runs them; ``submit`` and ``result --out`` read
             and write files, and need ``mtfleet[formats]``, the document formats' libraries)
Operator:    ``mtfleet api`` · ``worker`` · ``flower`` · ``demo`` · ``keys ...`` · ``pools
             forget`` · ``dead-letters ...`` · ``plan``: defined in :mod:`mtfleet.fleet.cli`,
             never imported here; the one entry point, :mod:`mtfleet.__main__`, mounts them on
             this :data:`app` (:func:`~mtfleet.fleet.cli.mount`).

Client commands take the API's address and key from ``MT_API_URL`` and ``MT_API_KEY`` (or
``--url``, ``--api-key``).
"""

from __future__ import annotations

import contextlib
import csv
import inspect
import io
import json
import os
import queue
import shlex
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from typer.core import TyperCommand, TyperGroup

from mtfleet import formats as documents
from mtfleet.core.errors import InvalidInput
from mtfleet.core.guidance import Guidance
from mtfleet.core.models import ModelType, UseCache
from mtfleet.core.schemas import QualityScore
from mtfleet.formats import sniffing
from mtfleet.formats.text import parse_lines
from mtfleet.producer import batch
from mtfleet.producer.cli_tm import tm_app
from mtfleet.producer.client import (
    APIUnreachable,
    Job,
    JobTimeout,
    MTClient,
    MTClientError,
    RetryPolicy,
)
from mtfleet.producer.extras import require
from mtfleet.producer.naming import Naming, destinations


def _prose(text: str | None) -> str | None:
    """Help ``text`` as prose: each paragraph on one line, for rich to flow to the terminal's
    width (a paragraph that starts with ``\\b`` keeps its lines), and shown as written
    (square brackets are not rich markup)."""
    if not text:
        return text
    return "\n\n".join(
        p if p.startswith("\b") else escape(" ".join(p.split()))
        for p in inspect.cleandoc(text).split("\n\n")
    )


class ProseHelp(TyperGroup):
    """The root command: once typer has built the whole command tree, every command's help
    and every parameter's becomes :func:`_prose` (typer would print a docstring's source line
    breaks, and take ``[default: ...]`` for markup)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        todo: list[Any] = [self]
        while todo:
            command = todo.pop()
            command.help = _prose(command.help)
            for param in command.params:
                if getattr(param, "help", None):
                    param.help = _prose(param.help)
            todo += getattr(command, "commands", {}).values()


app = typer.Typer(
    cls=ProseHelp,
    pretty_exceptions_enable=False,
    add_completion=False,
    no_args_is_help=True,
    help="mtfleet: a self-hosted machine-translation fleet.",
)
# soft_wrap: a line is never cut at the terminal's width (job ids and paths stay whole in logs)
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)

UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--url", envvar="MT_API_URL", help="API base URL [default: http://127.0.0.1:8000]."
    ),
]
KeyOpt = Annotated[
    str | None, typer.Option("--api-key", envvar="MT_API_KEY", help="API key (Bearer).")
]
GlossaryOpt = Annotated[
    str | None, typer.Option("--glossary", help="Glossary id (mtfleet glossary create).")
]
PatternOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--protect-pattern",
        help="A regular expression (RE2) whose matches are never translated: a game's colour "
        "codes ('§[0-9a-fk-or]'), a shop's tokens ('\\[[A-Z_]+\\]'). Repeat for more.",
    ),
]
PoolOpt = Annotated[
    str | None,
    typer.Option("--pool", help="The pool to translate with (default: the fleet's route)."),
]
AdapterOpt = Annotated[
    str | None, typer.Option("--adapter", help="A LoRA adapter the pool serves.")
]
ContextOpt = Annotated[
    str | None,
    typer.Option(
        "--context",
        help="Text that informs the translation (where it appears, what it is about); not "
        "translated. Read by an LLM engine.",
    ),
]
InstructionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--instruction",
        help="An instruction for an LLM engine ('Use British spelling'); repeat for more (up "
        "to 10, 300 characters each).",
    ),
]
StyleOpt = Annotated[
    str | None,
    typer.Option("--style", help="A style rule (DeepL's /v3/style_rules) for an LLM engine."),
]
MemoryOpt = Annotated[
    str | None,
    typer.Option(
        "--memory",
        help="A translation memory (mtfleet tm import): its matches are the translations.",
    ),
]
MemoryThresholdOpt = Annotated[
    int | None,
    typer.Option(
        "--memory-threshold",
        min=0,
        max=100,
        help="The score (0-100) at which a memory's pair is the translation [default: 75].",
    ),
]
ModelTypeOpt = Annotated[
    ModelType | None,
    typer.Option(
        "--model-type",
        help="Translate on a pool marked for it where one serves the pair (mtfleet worker "
        "--model-type), else on the usual one.",
    ),
]
NoTraceOpt = Annotated[
    bool,
    typer.Option(
        "--no-trace",
        help="Nothing of the request outlives its delivery: no phrase-cache write, its texts "
        "and results deleted from the fleet once read (docs/security.md#no-trace-requests).",
    ),
]
QeOpt = Annotated[
    bool,
    typer.Option(
        "--qe",
        help="Score each translation with the pool's quality-estimation model (MetricX: 0 "
        "best, 25 worst; docs/quality.md); those above its threshold are marked for review.",
    ),
]
UseCacheOpt = Annotated[
    UseCache,
    typer.Option(
        "--use-cache",
        help="yes: read and write the phrase cache; no: neither; overwrite: do not read it, "
        "write the fresh translations over it.",
    ),
]
FormalityOpt = Annotated[
    str,
    typer.Option(
        "--formality",
        help="default, more, less (an LLM engine only), prefer_more or prefer_less.",
    ),
]


def _guidance(
    context: str | None, instructions: list[str] | None, formality: str
) -> Guidance | None:
    """--context, --instruction and --formality as the request's guidance (None: none)."""
    try:
        got = Guidance(
            context=context,
            custom_instructions=tuple(instructions or ()),
            formality=formality,
        )
    except ValidationError as exc:
        options = {"context": "--context", "custom_instructions": "--instruction"}
        msg = "; ".join(
            f"{options.get(str(e['loc'][0]), '--' + str(e['loc'][0])) if e['loc'] else ''}: "
            + str(e.get("msg", "")).removeprefix("Value error, ")
            for e in exc.errors()
        )
        raise typer.BadParameter(msg) from None
    return None if got.empty else got


# --- clients ---------------------------------------------------------------------------------
#: The CLI rides out an API restart for a minute before it gives up (and says how to resume).
CLI_RETRY = RetryPolicy(budget_s=60.0)


def _client(url: str | None, api_key: str | None) -> MTClient:
    return MTClient(url, api_key=api_key, retry=CLI_RETRY)


@app.command()
def translate(
    target: Annotated[str, typer.Option("--to", help="Target language code.")],
    texts: Annotated[
        list[str] | None,
        typer.Argument(
            help="Text(s) to translate; none: one per line from standard input.",
            show_default=False,
        ),
    ] = None,
    source: Annotated[
        str, typer.Option("--from", help="Source language code, or auto to detect it.")
    ] = "auto",
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait in all.")] = 60.0,
    glossary: GlossaryOpt = None,
    protect_pattern: PatternOpt = None,
    pool: PoolOpt = None,
    adapter: AdapterOpt = None,
    context: ContextOpt = None,
    instruction: InstructionOpt = None,
    formality: FormalityOpt = "default",
    style: StyleOpt = None,
    memory: MemoryOpt = None,
    memory_threshold: MemoryThresholdOpt = None,
    model_type: ModelTypeOpt = None,
    no_trace: NoTraceOpt = False,
    use_cache: UseCacheOpt = "yes",
    qe: QeOpt = False,
) -> None:
    """Translate text now (interactive lane); one translation per line.

    Without TEXTS, the texts are read from standard input, one per line (cat lines.txt |
    mtfleet translate --to es): one line is printed per line read, in order, an empty one for
    a blank line. A translation that failed prints as <failed> (the exit status is then 1).
    With --from auto (the default) the language detected, and the detector's confidence in
    it, go to standard error. With --qe each translation is followed by a tab and its quality
    score (MetricX: 0 best, 25 worst), and "low quality" above the pool's threshold (--json:
    objects with translation, quality and low_quality).
    """
    guidance = _guidance(context, instruction, formality)
    doc = None
    if not texts:
        if sys.stdin.isatty():
            err_console.print(
                "[red]Missing argument 'TEXTS...'[/red]: give the texts to translate, or pipe "
                "them in on standard input, one per line",
                soft_wrap=True,
            )
            raise typer.Exit(2)
        doc = parse_lines(sys.stdin.read())
        texts = doc.segments
    out: list[str | None] = []
    scores: dict[int, QualityScore] = {}
    if texts:
        with _client(url, api_key) as mt:
            answer = mt.translation(
                texts,
                source=source,
                target=target,
                timeout=timeout,
                glossary_id=glossary,
                protected_patterns=protect_pattern,
                pool=pool,
                adapter=adapter,
                guidance=guidance,
                style_id=style,
                translation_memory_id=memory,
                translation_memory_threshold=memory_threshold,
                model_type=model_type,
                no_trace=no_trace or None,
                use_cache=use_cache if use_cache != "yes" else None,
                quality_estimation=qe or None,
            )
        out = answer.translations
        scores = {q.index: q for q in answer.quality}
        if answer.detected_source_lang is not None:
            err_console.print(
                f"detected {answer.detected_source_lang} (confidence "
                f"{answer.detected_confidence or 0:.2f}, among the languages translated into "
                f"{target}; --from to say it)",
                soft_wrap=True,
                highlight=False,
            )
    if doc is not None:  # a line of output for each line read
        by_line = dict(zip(doc.segment_lines, out, strict=True))
        shown = [by_line.get(n, "") for n in range(len(doc.lines))]
        segment_of = {line: n for n, line in enumerate(doc.segment_lines)}
    else:
        shown = out
        segment_of = {n: n for n in range(len(out))}
    if qe:  # each line's score after a tab; a blank line has none
        scored = [scores.get(segment_of[n]) if n in segment_of else None for n in range(len(shown))]
        if as_json:
            rows = [
                {
                    "translation": t,
                    "quality": q.score if q else None,
                    "low_quality": bool(q and q.low_quality),
                }
                for t, q in zip(shown, scored, strict=True)
            ]
            print(json.dumps(rows, ensure_ascii=False))
        else:
            for t, q in zip(shown, scored, strict=True):
                mark = (
                    ""
                    if q is None
                    else f"\t{q.score:.2f}" + (" low quality" if q.low_quality else "")
                )
                print((t if t is not None else "<failed>") + mark)
        flagged = sum(1 for q in scores.values() if q.low_quality)
        if flagged:
            err_console.print(
                f"{flagged} of {len(out)} translation(s) scored low quality: review them",
                soft_wrap=True,
                highlight=False,
            )
    elif as_json:
        print(json.dumps(shown, ensure_ascii=False))
    else:
        for t in shown:
            print(t if t is not None else "<failed>")
    if any(t is None for t in out):
        raise typer.Exit(1)


class FormatsHelp(TyperCommand):
    """A command whose help names the formats the fleet reads, from their one registry
    (:mod:`mtfleet.formats`): FORMATS_READ, FORMAT_NAMES and FORMATS_REFUSED in its
    text are filled in when the help is shown (loading every format is not worth it for a
    command that only runs). Without ``mtfleet[formats]`` there are none to name: the help
    says what to install, as the command does."""

    def format_help(self, *args: Any, **kwargs: Any) -> None:
        require(self.name or "submit", "formats")
        formats = documents.formats()
        filled = {
            "FORMATS_READ": ", ".join(f"{f.name} ({', '.join(f.extensions)})" for f in formats),
            "FORMAT_NAMES": ", ".join(f.name for f in formats),
            "FORMATS_REFUSED": ", ".join(list(sniffing.KNOWN_UNREAD)[:4]),
        }
        for item in (self, *self.params):
            text = getattr(item, "help", None)
            if text:
                for name, value in filled.items():
                    text = text.replace(name, value)
                setattr(item, "help", text)  # noqa: B010 - a command or a parameter
        super().format_help(*args, **kwargs)


@app.command(cls=FormatsHelp)
def submit(
    files: Annotated[list[Path], typer.Argument(exists=True, dir_okay=False, readable=True)],
    target: Annotated[str, typer.Option("--to", help="Target language code.")],
    source: Annotated[
        str, typer.Option("--from", help="Source language code, or auto to detect it.")
    ] = "auto",
    lane: Annotated[str, typer.Option(help="interactive or bulk.")] = "bulk",
    out: Annotated[
        Path,
        typer.Option("--out", help="Folder for the translated files (and the job manifest)."),
    ] = Path("mtfleet-output"),
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="Document format for every file (FORMAT_NAMES); default: from each file's "
            "extension.",
        ),
    ] = None,
    lines: Annotated[
        bool, typer.Option("--lines", help="One segment per non-blank line, for any file.")
    ] = False,
    naming: Annotated[
        Naming,
        typer.Option(
            "--naming",
            help="ecosystem: each output named as its ecosystem names a translation "
            "(values-es/strings.xml, es.lproj/, app_es.arb, es.po, es.yml; otherwise "
            "NAME.es.EXT); suffix: NAME.es.EXT for every file.",
        ),
    ] = "ecosystem",
    encoding: Annotated[
        str, typer.Option(help="The files' text encoding (e.g. latin-1); output keeps it.")
    ] = "utf-8",
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Follow the jobs an earlier submit of these files to --out made (sending "
            "only what it had not sent) instead of sending them again.",
        ),
    ] = False,
    wait: Annotated[bool, typer.Option(help="Wait, show progress, write results.")] = True,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    glossary: GlossaryOpt = None,
    protect_pattern: PatternOpt = None,
    pool: PoolOpt = None,
    adapter: AdapterOpt = None,
    context: ContextOpt = None,
    instruction: InstructionOpt = None,
    formality: FormalityOpt = "default",
    style: StyleOpt = None,
    memory: MemoryOpt = None,
    memory_threshold: MemoryThresholdOpt = None,
    model_type: ModelTypeOpt = None,
    no_trace: NoTraceOpt = False,
    use_cache: UseCacheOpt = "yes",
    qe: QeOpt = False,
) -> None:
    """Submit files and write the translated files to --out.

    The format comes from each file's extension: FORMATS_READ; a file without one is told by
    its first bytes. The file comes back in its own format, markup and placeholders intact. A
    file of a format the fleet does not read (FORMATS_REFUSED...) is refused, never sent as
    text, and the other files are still sent (the exit status is then 1). A .txt file (or any
    file with --lines) is a list: one segment per non-blank line; one larger than a job may
    carry goes as several jobs, joined again.

    Each output is named as its ecosystem names a translation (Android values-es/strings.xml,
    Apple es.lproj/, Flutter app_es.arb, a gettext template es.po, Rails es.yml, otherwise
    NAME.es.EXT: the table in docs/api.md#output-names) and keeps its path under --out
    relative to the folder the inputs share; an output that would be written over an input
    or another output is refused before anything is sent (exit status 2), naming both.

    The jobs are recorded in --out/.mtfleet-jobs.json as they are made: an interrupted submit
    is picked up with --resume (or mtfleet result ID --out DIR). Job ids go to stdout, one per
    line; everything else to stderr.
    """
    require("submit", "formats")
    opts = batch.SubmitOptions(
        target=target,
        source=source,
        lane=lane,
        fmt=fmt,
        lines=lines,
        encoding=encoding,
        glossary_id=glossary,
        protected_patterns=protect_pattern or None,
        pool=pool,
        adapter=adapter,
        guidance=_guidance(context, instruction, formality),
        style_id=style,
        translation_memory_id=memory,
        translation_memory_threshold=memory_threshold,
        model_type=model_type,
        no_trace=no_trace or None,
        use_cache=use_cache if use_cache != "yes" else None,
        quality_estimation=qe or None,
    )
    manifest = _manifest(out)
    entries: list[batch.FileJobs] = []
    known: dict[str, Job] = {}  # the jobs made now, as their submission answered
    with _client(url, api_key) as mt:
        try:
            limit = mt.limits().max_segments_per_job
            planned, refused = _plan_files(files, opts, naming, out, limit, manifest, resume)
            clashes = batch.clashes((entry for _, _, entry in planned), manifest, out)
            if clashes:
                err_console.print(
                    "[red]nothing sent:[/red] "
                    + "; ".join(escape(c) for c in clashes)
                    + ". Send them to separate --out folders (or see --naming)",
                    soft_wrap=True,
                )
                raise typer.Exit(2)
            for path, data, entry in planned:
                try:
                    made = _send_file(mt, manifest, path, data, entry, out, limit)
                except FileRefused:
                    refused.append(path)
                    continue
                entries.append(entry)
                known.update((job.id, job) for job in made)
            if refused:
                err_console.print(
                    f"[red]{len(refused)} of {len(files)} file(s) not sent:[/red] "
                    + ", ".join(escape(str(p)) for p in refused),
                    soft_wrap=True,
                )
            if not wait or not entries:
                raise typer.Exit(1 if refused else 0)
            ok = _follow(mt, entries, known, manifest, out) and not refused
        except (KeyboardInterrupt, APIUnreachable) as exc:
            if isinstance(exc, APIUnreachable):
                err_console.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
            _recovery_hint(manifest, out, interrupted=isinstance(exc, KeyboardInterrupt))
            raise typer.Exit(130 if isinstance(exc, KeyboardInterrupt) else 1) from None
    raise typer.Exit(0 if ok else 1)


def _manifest(out: Path) -> batch.Manifest:
    try:
        return batch.Manifest.load(out)
    except batch.SourceError as exc:
        err_console.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(1) from None


class FileRefused(Exception):
    """One file of a ``mtfleet submit`` could not be sent (said already); the others are."""


def _plan_files(
    files: list[Path],
    opts: batch.SubmitOptions,
    naming: Naming,
    out: Path,
    limit: int,
    manifest: batch.Manifest,
    resume: bool,
) -> tuple[list[tuple[Path, bytes, batch.FileJobs]], list[Path]]:
    """How each file is sent and where it is written (:mod:`~mtfleet.producer.naming`), with
    what an earlier submit sent reused (--resume); and the files that cannot be sent (their
    format, their bytes), said on stderr."""
    readable: list[tuple[Path, bytes, str | None]] = []
    refused: list[Path] = []

    def refuse(path: Path, exc: batch.SourceError) -> None:
        err_console.print(f"[red]{path}:[/red] {escape(str(exc))}", soft_wrap=True)
        refused.append(path)

    for path in files:
        data = path.read_bytes()
        try:
            readable.append((path, data, batch.sent_as(path, data, opts)))
        except batch.SourceError as exc:
            refuse(path, exc)
    dests = destinations([(p, fmt) for p, _, fmt in readable], opts.target, out, naming)
    planned = []
    for (path, data, fmt), dest in zip(readable, dests, strict=True):
        try:
            entry = batch.plan(path, data, fmt, opts, dest, limit)
        except batch.SourceError as exc:
            refuse(path, exc)
            continue
        if entry.kind == "lines" and not entry.parts:
            err_console.print(f"[yellow]{path}: no text, skipped[/yellow]")
            continue
        earlier = manifest.files.get(entry.source)
        if earlier is not None and earlier.same_request(entry) and earlier.jobs:
            if resume:
                entry = earlier
                err_console.print(f"{path}: resuming {batch.describe(earlier)}")
            elif earlier.written is None:
                err_console.print(
                    f"[yellow]{path}: an earlier submit to {out} made "
                    f"{batch.describe(earlier)}, not written yet; sending again (--resume "
                    "follows those instead)[/yellow]",
                    soft_wrap=True,
                )
        planned.append((path, data, entry))
    return planned, refused


def _send_file(
    mt: MTClient,
    manifest: batch.Manifest,
    path: Path,
    data: bytes,
    entry: batch.FileJobs,
    out: Path,
    limit: int,
) -> list[Job]:
    """Send what of ``entry`` is not sent yet, recording each job in the manifest as it is
    made; :class:`FileRefused` when the API refuses the file (said on stderr)."""
    manifest.files[entry.source] = entry
    manifest.save(out)
    try:
        made = batch.send(mt, entry, data, path, lambda: manifest.save(out))
    except (MTClientError, batch.SourceError) as exc:
        err_console.print(
            f"[red]{path}:[/red] {escape(str(getattr(exc, 'message', exc)))}", soft_wrap=True
        )
        if isinstance(exc, MTClientError) and exc.status in (401, 403, 429):
            raise typer.Exit(1) from None  # every other file would meet the same answer
        raise FileRefused from None
    for job in made:
        kind = "segments" if entry.kind == "lines" else f"{job.document_format} document segments"
        print(job.id, flush=True)
        err_console.print(f"{path}: job {job.id} ({job.progress.total} {kind}, {job.status})")
    if len(entry.parts) > 1 and made:
        err_console.print(
            f"{path}: {sum(entry.parts)} segments, over the {limit} one job may carry: "
            f"sent as {len(entry.parts)} jobs, joined when all are done"
        )
    return made


def _recovery_hint(manifest: batch.Manifest, out: Path, *, interrupted: bool) -> None:
    running = manifest.running()
    if not running:
        return
    what = "interrupted" if interrupted else "stopped following"
    lines = [
        f"{what}; the fleet goes on with {len(running)} job(s), recorded in "
        f"{out / batch.MANIFEST}:",
        *(f"  {src}  job {job}" for src, job in running),
    ]
    resume = [] if "--resume" in sys.argv else ["--resume"]
    again = shlex.join(["mtfleet", *sys.argv[1:], *resume])
    lines += [
        "pick them up with:",
        f"  {again}",
        f"or one at a time: mtfleet result JOB_ID --out {shlex.quote(str(out))}/",
    ]
    err_console.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)


#: Jobs whose event streams `mtfleet submit` follows at once (the others wait their turn; the
#: bar shows their last known progress meanwhile).
FOLLOWED_AT_ONCE = 16


def _follow_jobs(mt: MTClient, job_ids: list[str]) -> queue.Queue[tuple[str, Job | Exception]]:
    """Follow each job's event stream on a thread of its own (at most FOLLOWED_AT_ONCE at a
    time); every event's job, or the error that stopped a follower, arrives on the queue.
    Daemon threads: a Ctrl-C ends the command without waiting for them."""
    updates: queue.Queue[tuple[str, Job | Exception]] = queue.Queue()
    gate = threading.Semaphore(FOLLOWED_AT_ONCE)

    def follow(job_id: str) -> None:
        with gate:
            try:
                for job in mt.events(job_id):
                    updates.put((job_id, job))
            except Exception as exc:  # noqa: BLE001 - handed to the main thread, raised there
                updates.put((job_id, exc))

    for job_id in job_ids:
        threading.Thread(
            target=follow, args=(job_id,), name=f"follow-{job_id}", daemon=True
        ).start()
    return updates


def _follow(
    mt: MTClient,
    entries: list[batch.FileJobs],
    known: dict[str, Job],
    manifest: batch.Manifest,
    out: Path,
) -> bool:
    """Show progress until every file's jobs are final (following their event streams; a job
    not made now, one resumed, read first); write each file as it completes."""
    pending = {e.source: e for e in entries if e.written is None}
    jobs = {j: known.get(j) or mt.get(j) for e in pending.values() for j in e.jobs}
    all_ok = all(e.written in (None, "succeeded") for e in entries)
    for e in entries:
        if e.written is not None:
            err_console.print(f"{e.source}: written before to {e.dest} [{e.written}]")
    updates = _follow_jobs(mt, [j for j, job in jobs.items() if not job.final])
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
    ) as bar:
        task = bar.add_task("translating", total=sum(j.progress.total for j in jobs.values()))
        while True:
            bar.update(
                task, completed=sum(j.progress.done + j.progress.failed for j in jobs.values())
            )
            for key, entry in list(pending.items()):
                if not all(jobs[j].final for j in entry.jobs):
                    continue
                del pending[key]
                written = batch.write(mt, entry)
                entry.written = written.status
                manifest.save(out)
                msg = f"{entry.source} -> {written.describe()}"
                if written.failed or written.status != "succeeded":
                    all_ok = False
                bar.console.print(msg, markup=False, highlight=False)
            if not pending:
                return all_ok
            with contextlib.suppress(queue.Empty):  # a short wait: Ctrl-C stays prompt
                job_id, got = updates.get(timeout=0.5)
                if isinstance(got, Exception):
                    raise got
                jobs[job_id] = got


@app.command()
def status(job_id: str, url: UrlOpt = None, api_key: KeyOpt = None) -> None:
    """Print a job's status and progress as JSON."""
    with _client(url, api_key) as mt:
        job = mt.get(job_id)
    print(job.model_dump_json(indent=2))


@app.command()
def result(
    job_id: str,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    partial: Annotated[
        bool, typer.Option(help="What is done so far, before the job ends.")
    ] = False,
    out_arg: Annotated[
        str | None,
        typer.Option(
            "--out",
            metavar="PATH",
            help="Write the job to this file instead of printing JSON; to an existing folder, "
            "or a path ending in /, as its own file name in it (a document in its format; a "
            "line file submitted to that folder with its line structure).",
        ),
    ] = None,
) -> None:
    """Print a job's result as JSON, or write it as a file with --out."""
    if out_arg is not None:
        require("result --out", "formats")
    with _client(url, api_key) as mt:
        if out_arg is None:
            res = mt.result(job_id, partial=partial)
            print(json.dumps(res.model_dump(mode="json"), ensure_ascii=False, indent=2))
            return
        out = Path(out_arg)
        folder = out.is_dir() or out_arg.endswith(("/", os.sep))
        manifest = _manifest(out) if folder else None
        entry = manifest.entry_for_job(job_id) if manifest is not None else None
        if manifest is None:  # not a folder: the output file itself
            written = batch.standalone(mt, job_id, out, partial=partial, into_folder=False)
        elif entry is None:
            written = batch.standalone(mt, job_id, out, partial=partial)
        else:
            others = [j for j in entry.jobs if j != job_id]
            if not partial and not entry.sent:
                err_console.print(
                    f"[red]{entry.source} was not sent whole: resume its submit "
                    f"(mtfleet submit ... --out {out} --resume)[/red]",
                    soft_wrap=True,
                )
                raise typer.Exit(1)
            if others:
                err_console.print(f"job {job_id} is one of {entry.source}'s {len(entry.jobs)} jobs")
            written = batch.write(mt, entry, partial=partial)
            if written.status in {"succeeded", "partial", "failed", "cancelled"}:
                entry.written = written.status
                manifest.save(out)
    err_console.print(written.describe(), markup=False, highlight=False)
    print(written.dest)


@app.command()
def cancel(
    job_id: str,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    purge: Annotated[
        bool, typer.Option(help="Also delete everything stored for the job (texts, results).")
    ] = False,
    wait: Annotated[
        float,
        typer.Option(help="Seconds to wait for the chunks in flight to finish (0: do not)."),
    ] = 30.0,
) -> None:
    """Cancel a job: no chunk of it starts from now on; chunks in flight finish and are kept
    (the job is cancelling until they have, then cancelled). --purge also deletes it."""
    with _client(url, api_key) as mt:
        job = mt.cancel(job_id, purge=purge)
        if not purge and not job.final and wait > 0:
            in_flight = job.work.in_flight if job.work else 0
            err_console.print(f"cancelling: waiting for {in_flight} chunk(s) in flight to finish")
            job = mt.wait(job_id, timeout=wait)
    print(job.model_dump_json(indent=2))


@app.command()
def languages(url: UrlOpt = None, api_key: KeyOpt = None) -> None:
    """List the language pairs the fleet serves: one line per pair and pool (the pool a job
    that names none goes to is marked routed)."""
    with _client(url, api_key) as mt:
        data = mt.languages()
    for p in data["pairs"]:
        state = "live" if p["live"] else "no live worker"
        routed = "\trouted" if p.get("routed") else ""
        print(
            f"{p['source']}->{p['target']}\t{p['engine']}\t{p['model']}\t{state}"
            f"\t{p.get('pool', '')}{routed}"
        )


@app.command("eval")
def eval_(
    src: Annotated[
        Path,
        typer.Option(
            "--src", exists=True, dir_okay=False, help="Source segments, one per line (UTF-8)."
        ),
    ],
    ref: Annotated[
        Path,
        typer.Option(
            "--ref", exists=True, dir_okay=False, help="Reference translations, line by line."
        ),
    ],
    source: Annotated[str, typer.Option("--from", help="Source language code.")],
    target: Annotated[str, typer.Option("--to", help="Target language code.")],
    pool: PoolOpt = None,
    adapter: AdapterOpt = None,
    lane: Annotated[str, typer.Option(help="interactive or bulk.")] = "bulk",
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the translations.")] = 3600,
    as_json: Annotated[bool, typer.Option("--json", help="Print the scores as JSON.")] = False,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
) -> None:
    """Translate --src through the fleet and score it against --ref: BLEU and chrF
    (sacrebleu). Check a model (quantized, an adapter, another pool) before it serves."""
    require("eval", "eval")
    from mtfleet.producer.evaluate import EvalError, evaluate

    with _client(url, api_key) as mt:
        try:
            report = evaluate(
                mt,
                src,
                ref,
                source=source,
                target=target,
                pool=pool,
                adapter=adapter,
                lane=lane,
                timeout=timeout,
            )
        except (EvalError, UnicodeDecodeError) as exc:
            err_console.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
            raise typer.Exit(2) from None
    if as_json:
        print(json.dumps(report.as_dict(), ensure_ascii=False))
        return
    rows = [
        ("pair", f"{report.source}->{report.target}"),
        ("pool", report.pool or "-"),
        ("adapter", report.adapter or "-"),
        ("segments", f"{report.segments} ({report.failed} failed)"),
        ("BLEU", f"{report.bleu:.2f}"),
        ("chrF", f"{report.chrf:.2f}"),
        ("time", f"{report.seconds:.2f} s"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    err_console.print(
        f"BLEU {report.bleu_signature}\nchrF {report.chrf_signature}",
        markup=False,
        highlight=False,
    )
    if report.failed:
        raise typer.Exit(1)


# --- pools -----------------------------------------------------------------------------------
pools_app = typer.Typer(
    no_args_is_help=True, help="Pools: list them (through the API); forget one (in Redis)."
)
app.add_typer(pools_app, name="pools")


@pools_app.command("list")
def pools_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
) -> None:
    """The fleet's pools: engine, model, pairs, live workers and their lanes, adapters, what
    the pool is marked for (mtfleet worker --model-type)."""
    with _client(url, api_key) as mt:
        data = mt.languages()
    pools = data.get("pools", [])
    if as_json:
        print(json.dumps(pools))
        return
    print("pool\tengine\tmodel\tpairs\tlive workers\tlanes\tadapters\tmodel type")
    for p in pools:
        print(
            f"{p['name']}\t{p['engine']}\t{p['model']}\t{p['pairs']}\t{p['live_workers']}\t"
            f"{','.join(p['lanes']) or '-'}\t{','.join(p['adapters']) or '-'}\t"
            f"{p.get('model_type') or '-'}"
        )


# --- glossaries (client: through the API) ------------------------------------------------------
glossary_app = typer.Typer(
    no_args_is_help=True, help="Glossaries: create, list, show, delete (through the API)."
)
app.add_typer(tm_app, name="tm")
app.add_typer(glossary_app, name="glossary")


def read_terms_file(path: Path) -> str:
    """A .tsv (source<TAB>target) or .csv (source,target; a 'source,target' header is skipped)
    file as TSV text, for the API to check line by line."""
    text = path.read_bytes().decode("utf-8-sig")
    if path.suffix.lower() != ".csv":
        return text
    lines = []
    for n, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if not any(c.strip() for c in row):
            continue
        if n == 1 and [c.strip().lower() for c in row] == ["source", "target"]:
            continue
        if len(row) != 2 or any("\t" in c or "\n" in c for c in row):
            raise InvalidInput(f"{path} line {n}: expected 'source,target'")
        lines.append("\t".join(row))
    return "\n".join(lines)


@glossary_app.command("create")
def glossary_create(
    name: Annotated[str, typer.Option(help="A name for it, e.g. 'shop terms'.")],
    source: Annotated[str, typer.Option("--from", help="Source language code.")],
    target: Annotated[str, typer.Option("--to", help="Target language code.")],
    file: Annotated[
        Path | None,
        typer.Option(
            "--file", exists=True, dir_okay=False, help="Entries: .tsv (source<TAB>target) or .csv."
        ),
    ] = None,
    protect: Annotated[
        list[str] | None,
        typer.Option(help="Terms kept untranslated, comma-separated: 'iPhone,PlayStation'."),
    ] = None,
    protect_pattern: Annotated[
        list[str] | None,
        typer.Option(
            "--protect-pattern",
            help="A regular expression (RE2) whose matches are never translated in the "
            "glossary's jobs. Repeat for more.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the glossary as JSON.")] = False,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
) -> None:
    """Create a glossary; prints its id (use it with --glossary)."""
    protected = [t.strip() for opt in protect or [] for t in opt.split(",") if t.strip()]
    try:
        tsv = read_terms_file(file) if file else None
    except (InvalidInput, UnicodeDecodeError) as exc:
        err_console.print(f"[red]{escape(str(getattr(exc, 'message', exc)))}[/red]")
        raise typer.Exit(2) from None
    with _client(url, api_key) as mt:
        g = mt.create_glossary(
            name,
            source=source,
            target=target,
            entries_tsv=tsv,
            protected=protected,
            protected_patterns=protect_pattern,
        )
    if as_json:
        print(g.model_dump_json(indent=2))
        return
    err_console.print(
        f"created glossary {g.id} ({g.name}, {g.source_lang}->{g.target_lang}): "
        f"{g.entry_count} entries, {g.protected_count} protected terms"
        + (f", {g.pattern_count} protected patterns" if g.pattern_count else "")
    )
    print(g.id)


@glossary_app.command("list")
def glossary_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
) -> None:
    """List this key's glossaries."""
    with _client(url, api_key) as mt:
        found = mt.glossaries()
    if as_json:
        print(json.dumps([g.model_dump(mode="json", exclude_none=True) for g in found]))
        return
    print("id\tname\tpair\tentries\tprotected\tversion\tcreated (UTC)")
    for g in found:
        created = time.strftime("%Y-%m-%d %H:%M", time.gmtime(g.created_at))
        print(
            f"{g.id}\t{g.name}\t{g.source_lang}->{g.target_lang}\t{g.entry_count}\t"
            f"{g.protected_count}\t{g.version}\t{created}"
        )


@glossary_app.command("show")
def glossary_show(
    glossary_id: Annotated[str, typer.Argument(help="The glossary's id.")],
    url: UrlOpt = None,
    api_key: KeyOpt = None,
) -> None:
    """Print a glossary with its entries and protected terms (JSON)."""
    with _client(url, api_key) as mt:
        g = mt.glossary(glossary_id)
    print(json.dumps(g.model_dump(mode="json"), ensure_ascii=False, indent=2))


@glossary_app.command("delete")
def glossary_delete(
    glossary_id: Annotated[str, typer.Argument(help="The glossary's id.")],
    url: UrlOpt = None,
    api_key: KeyOpt = None,
) -> None:
    """Delete a glossary (jobs already accepted still finish with it)."""
    with _client(url, api_key) as mt:
        mt.delete_glossary(glossary_id)
    print(f"deleted glossary {glossary_id}")


#: What a CLI user should do about an API error, by its type (the API's own messages speak
#: HTTP: headers and query parameters).
CLI_HINTS = {
    "unauthorized": "set MT_API_KEY (or pass --api-key) to a key from `mtfleet keys create`",
    "job_not_finished": "wait for it (mtfleet status JOB_ID), or pass --partial for what is done",
}


def main() -> None:
    """Run :data:`app` (with the operator's commands where :mod:`mtfleet.__main__` mounted
    them), an error of the API or of reaching it said in one line (exit status 1)."""
    try:
        app()
    except MTClientError as exc:
        message = exc.message
        hint = CLI_HINTS.get(exc.type)
        if exc.type == "job_not_finished":
            message = message.split("; ask again later")[0]
        elif exc.type == "unauthorized":
            message = message.split(": send Authorization")[0]
        err_console.print(
            f"[red]error {exc.status} ({exc.type}):[/red] {escape(message)}"
            + (f"\n[yellow]{hint}[/yellow]" if hint else ""),
            soft_wrap=True,
        )
        sys.exit(1)
    except APIUnreachable as exc:
        err_console.print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
        sys.exit(1)
    except httpx.HTTPError as exc:
        where = ""
        with contextlib.suppress(RuntimeError):
            where = f" at {exc.request.url}"
        err_console.print(
            f"[red]cannot talk to the API{where}:[/red] {type(exc).__name__}: {escape(str(exc))}",
            soft_wrap=True,
        )
        sys.exit(1)
    except JobTimeout as exc:
        err_console.print(
            f"[yellow]{escape(str(exc))}[/yellow]; fetch it later: mtfleet result {exc.job_id}"
        )
        sys.exit(1)
