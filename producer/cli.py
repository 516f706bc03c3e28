"""The ``mtfleet`` command: run the components, submit work, read results.

Components:  ``mtfleet api`` · ``mtfleet worker`` · ``mtfleet flower`` · ``mtfleet demo``
Clients:     ``mtfleet translate`` · ``mtfleet submit`` · ``mtfleet status`` · ``mtfleet result``
             ``mtfleet cancel`` · ``mtfleet languages``
             ``mtfleet glossary create|list|show|delete``
Operator:    ``mtfleet keys create|list|revoke`` (API keys, straight in Redis)

Settings come from ``MT_*`` environment variables (docs/configuration.md); command-line options
override them for the process they start.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated

import httpx
import redis
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mtfleet.core import documents
from mtfleet.core.apikeys import KeyStore
from mtfleet.core.documents import DocumentError
from mtfleet.core.errors import InvalidInput
from mtfleet.producer.client import DEFAULT_URL, Job, JobTimeout, MTClient, MTClientError
from mtfleet.producer.lines import LineDocument, parse_lines

app = typer.Typer(
    pretty_exceptions_enable=False,
    add_completion=False,
    no_args_is_help=True,
    help="mtfleet: a self-hosted machine-translation fleet.",
)
console = Console()
err_console = Console(stderr=True)

UrlOpt = Annotated[str, typer.Option("--url", envvar="MT_API_URL", help="API base URL.")]
KeyOpt = Annotated[
    str | None, typer.Option("--api-key", envvar="MT_API_KEY", help="API key (Bearer).")
]
GlossaryOpt = Annotated[
    str | None, typer.Option("--glossary", help="Glossary id (mtfleet glossary create).")
]


def _settings_or_exit(overrides: dict[str, str]) -> None:
    """Validate settings (with overrides) before starting anything: a bad value exits 2."""
    os.environ.update(overrides)
    from mtfleet.core.settings import Settings, get_settings

    get_settings.cache_clear()
    try:
        Settings()
    except ValidationError as exc:
        err_console.print(f"[red]invalid settings:[/red]\n{exc}")
        raise typer.Exit(2) from None


# --- components ------------------------------------------------------------------------------
@app.command()
def api(
    host: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8000,
    workers: Annotated[int, typer.Option(help="Uvicorn worker processes.")] = 1,
    log_level: Annotated[str, typer.Option()] = "info",
) -> None:
    """Serve the HTTP API (uvicorn)."""
    import uvicorn

    _settings_or_exit({})
    uvicorn.run(
        "mtfleet.api.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        access_log=False,
        timeout_keep_alive=30,
        http="mtfleet.api.guard:HeaderTimeoutProtocol",  # a deadline on request headers
    )


@app.command()
def worker(
    engine: Annotated[
        str | None, typer.Option(help="vllm, apertium or a plugin module:Class (MT_ENGINE).")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name or path (MT_MODEL).")] = None,
    gpus: Annotated[str | None, typer.Option(help="GPU ids, e.g. 0,1,2,3 or 0-7.")] = None,
    tp: Annotated[int, typer.Option("--tp", help="GPUs per engine (tensor parallel).")] = 1,
    lanes: Annotated[str | None, typer.Option(help="interactive,bulk (MT_LANES).")] = None,
    concurrency: Annotated[
        int | None, typer.Option(help="Most chunks a worker holds (MT_WORKER_CONCURRENCY).")
    ] = None,
    loglevel: Annotated[str, typer.Option()] = "INFO",
) -> None:
    """Start one Celery worker per GPU group (one CPU worker without --gpus); restart on death."""
    from mtfleet.core.errors import ConfigError
    from mtfleet.workers.gpus import gpu_groups, parse_gpus
    from mtfleet.workers.supervisor import run_workers

    overrides = {
        k: v
        for k, v in {
            "MT_ENGINE": engine,
            "MT_MODEL": model,
            "MT_LANES": lanes,
            "MT_WORKER_CONCURRENCY": str(concurrency) if concurrency else None,
        }.items()
        if v is not None
    }
    _settings_or_exit(overrides)
    from mtfleet.core.settings import get_settings

    settings = get_settings()
    try:
        groups = gpu_groups(parse_gpus(gpus), tp)
    except ConfigError as exc:
        err_console.print(f"[red]{exc.message}[/red]")
        raise typer.Exit(2) from None
    err_console.print(
        f"starting {len(groups)} worker(s): {', '.join(g.name for g in groups)} "
        f"engine={settings.engine} lanes={','.join(settings.lanes)}"
    )
    code = run_workers(
        gpus=gpus,
        tp=tp,
        lanes=list(settings.lanes),
        concurrency=settings.worker_concurrency,
        loglevel=loglevel,
        env_overrides=overrides,
        interactive_prefetch=settings.interactive_prefetch,
    )
    raise typer.Exit(code)


@app.command()
def flower(
    host: Annotated[str | None, typer.Option(help="Bind address (MT_FLOWER_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (MT_FLOWER_PORT).")] = None,
) -> None:
    """Run Flower on the broker with basic auth (credentials from MT_FLOWER_USER/PASSWORD)."""
    _settings_or_exit({})
    from mtfleet.core.errors import ConfigError
    from mtfleet.core.settings import get_settings
    from mtfleet.workers.flower import check_flower_auth, run_flower

    s = get_settings()
    address = host or s.flower_host
    try:
        warning = check_flower_auth(address, s.flower_user, s.flower_password.get_secret_value())
    except ConfigError as exc:
        err_console.print(f"[red]{exc.message}[/red]", soft_wrap=True)
        raise typer.Exit(2) from None
    if warning:
        err_console.print(f"[bold red]WARNING: {warning}[/bold red]", soft_wrap=True)
    raise typer.Exit(run_flower(s, address, port or s.flower_port))


@app.command()
def demo(
    keep_running: Annotated[bool, typer.Option(help="Leave the fleet running afterwards.")] = False,
    bulk_lines: Annotated[int, typer.Option(help="Lines in the bulk job.")] = 300,
) -> None:
    """Start Redis (if needed), the API, an Apertium worker and Flower; translate en->es."""
    from mtfleet.producer.demo import run_demo

    raise typer.Exit(run_demo(keep_running=keep_running, bulk_lines=bulk_lines))


# --- clients ---------------------------------------------------------------------------------
def _client(url: str, api_key: str | None) -> MTClient:
    return MTClient(url, api_key=api_key)


@app.command()
def translate(
    texts: Annotated[list[str], typer.Argument(help="Text(s) to translate.")],
    source: Annotated[str, typer.Option("--from", help="Source language code.")],
    target: Annotated[str, typer.Option("--to", help="Target language code.")],
    url: UrlOpt = DEFAULT_URL,
    api_key: KeyOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait in all.")] = 60.0,
    glossary: GlossaryOpt = None,
) -> None:
    """Translate text now (interactive lane); one translation per line."""
    with _client(url, api_key) as mt:
        out = mt.translate(
            texts, source=source, target=target, timeout=timeout, glossary_id=glossary
        )
    if as_json:
        print(json.dumps(out, ensure_ascii=False))
    else:
        for t in out:
            print(t if t is not None else "<failed>")
    if any(t is None for t in out):
        raise typer.Exit(1)


@app.command()
def submit(
    files: Annotated[list[Path], typer.Argument(exists=True, dir_okay=False, readable=True)],
    target: Annotated[str, typer.Option("--to", help="Target language code.")],
    source: Annotated[
        str, typer.Option("--from", help="Source language code, or auto to detect it.")
    ] = "auto",
    lane: Annotated[str, typer.Option(help="interactive or bulk.")] = "bulk",
    out: Annotated[Path, typer.Option("--out", help="Folder for translated files.")] = Path(
        "mtfleet-output"
    ),
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="Document format for every file (text, markdown, html, json, srt, xliff, "
            "docx); default: from each file's extension.",
        ),
    ] = None,
    lines: Annotated[
        bool, typer.Option("--lines", help="One segment per non-blank line, for any file.")
    ] = False,
    wait: Annotated[bool, typer.Option(help="Wait, show progress, write results.")] = True,
    url: UrlOpt = DEFAULT_URL,
    api_key: KeyOpt = None,
    glossary: GlossaryOpt = None,
) -> None:
    """Submit files, one job each, and write the translated files to --out.

    The format comes from the extension (.md, .html, .json, .srt, .xlf/.xliff, .docx...): the
    file comes back in its own format, markup and placeholders intact. A .txt file (or any file
    with --lines) is a list: one segment per non-blank line.
    """
    docs: dict[Path, LineDocument | None] = {}
    jobs: dict[Path, Job] = {}
    with _client(url, api_key) as mt:
        for path in files:
            as_lines = lines or (fmt is None and path.suffix.lower() == ".txt")
            try:
                if as_lines:
                    doc = parse_lines(path.read_bytes().decode("utf-8"))
                    if not doc.segments:
                        err_console.print(f"[yellow]{path}: no text, skipped[/yellow]")
                        continue
                    job = mt.submit(
                        doc.segments,
                        source=source,
                        target=target,
                        lane=lane,
                        glossary_id=glossary,
                    )
                    docs[path] = doc
                else:
                    name = fmt or documents.for_filename(path.name).name
                    job = mt.submit_document(
                        path.read_bytes(),
                        format=name,
                        source=source,
                        target=target,
                        lane=lane,
                        filename=path.name,
                        glossary_id=glossary,
                    )
                    docs[path] = None
            except (MTClientError, DocumentError) as exc:
                err_console.print(f"[red]{path}:[/red] {exc.message}")
                raise typer.Exit(1) from None
            except UnicodeDecodeError:
                err_console.print(f"[red]{path}:[/red] not UTF-8 text (use a document format)")
                raise typer.Exit(1) from None
            jobs[path] = job
            kind = "segments" if as_lines else f"{job.document_format} document segments"
            print(f"{path}: job {job.id} ({job.progress.total} {kind}, {job.status})", flush=True)
        if not wait or not jobs:
            return
        ok = _follow(mt, jobs, docs, out, target)
    raise typer.Exit(0 if ok else 1)


def _follow(
    mt: MTClient,
    jobs: dict[Path, Job],
    docs: dict[Path, LineDocument | None],
    out: Path,
    target: str,
) -> bool:
    total = sum(j.progress.total for j in jobs.values())
    pending = dict(jobs)
    all_ok = True
    out.mkdir(parents=True, exist_ok=True)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
    ) as bar:
        task = bar.add_task("translating", total=total)
        done_counts = {p: 0 for p in jobs}
        while pending:
            for path, job in list(pending.items()):
                job = mt.get(job.id, wait=1.0 if len(pending) == 1 else 0.2)
                done_counts[path] = job.progress.done + job.progress.failed
                bar.update(task, completed=sum(done_counts.values()))
                if job.final:
                    del pending[path]
                    result = mt.result(job.id, partial=True)
                    dest = out / f"{path.stem}.{target}{path.suffix}"
                    line_doc = docs[path]
                    if line_doc is not None:
                        dest.write_bytes(line_doc.render(result.translations).encode("utf-8"))
                    elif result.document is not None:
                        dest.write_bytes(result.document.data())
                    msg = f"{path} -> {dest} [{job.status}]"
                    if result.errors:
                        all_ok = False
                        msg += f" ({len(result.errors)} segment(s) failed; source kept there)"
                    if result.document is not None and result.document.warnings:
                        msg += f" ({len(result.document.warnings)} markup repair(s))"
                    if job.status.value != "succeeded":
                        all_ok = False
                    bar.console.print(msg)
            if pending:
                time.sleep(0.05)
    return all_ok


@app.command()
def status(job_id: str, url: UrlOpt = DEFAULT_URL, api_key: KeyOpt = None) -> None:
    """Print a job's status and progress as JSON."""
    with _client(url, api_key) as mt:
        job = mt.get(job_id)
    print(job.model_dump_json(indent=2))


@app.command()
def result(
    job_id: str,
    url: UrlOpt = DEFAULT_URL,
    api_key: KeyOpt = None,
    partial: Annotated[bool, typer.Option(help="Print what is done so far.")] = False,
) -> None:
    """Print a job's result as JSON."""
    with _client(url, api_key) as mt:
        res = mt.result(job_id, partial=partial)
    print(json.dumps(res.model_dump(mode="json"), ensure_ascii=False, indent=2))


@app.command()
def cancel(
    job_id: str,
    url: UrlOpt = DEFAULT_URL,
    api_key: KeyOpt = None,
    purge: Annotated[
        bool, typer.Option(help="Also delete everything stored for the job (texts, results).")
    ] = False,
) -> None:
    """Cancel a job (chunks not started are skipped); --purge also deletes it."""
    with _client(url, api_key) as mt:
        job = mt.cancel(job_id, purge=purge)
    print(job.model_dump_json(indent=2))


@app.command()
def languages(url: UrlOpt = DEFAULT_URL, api_key: KeyOpt = None) -> None:
    """List the language pairs the fleet serves."""
    with _client(url, api_key) as mt:
        data = mt.languages()
    for p in data["pairs"]:
        state = "live" if p["live"] else "no live worker"
        print(f"{p['source']}->{p['target']}\t{p['engine']}\t{p['model']}\t{state}")


# --- glossaries (client: through the API) ------------------------------------------------------
glossary_app = typer.Typer(
    no_args_is_help=True, help="Glossaries: create, list, show, delete (through the API)."
)
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
    as_json: Annotated[bool, typer.Option("--json", help="Print the glossary as JSON.")] = False,
    url: UrlOpt = DEFAULT_URL,
    api_key: KeyOpt = None,
) -> None:
    """Create a glossary; prints its id (use it with --glossary)."""
    protected = [t.strip() for opt in protect or [] for t in opt.split(",") if t.strip()]
    try:
        tsv = read_terms_file(file) if file else None
    except (InvalidInput, UnicodeDecodeError) as exc:
        err_console.print(f"[red]{getattr(exc, 'message', exc)}[/red]")
        raise typer.Exit(2) from None
    with _client(url, api_key) as mt:
        g = mt.create_glossary(
            name, source=source, target=target, entries_tsv=tsv, protected=protected
        )
    if as_json:
        print(g.model_dump_json(indent=2))
        return
    err_console.print(
        f"created glossary {g.id} ({g.name}, {g.source_lang}->{g.target_lang}): "
        f"{g.entry_count} entries, {g.protected_count} protected terms"
    )
    print(g.id)


@glossary_app.command("list")
def glossary_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    url: UrlOpt = DEFAULT_URL,
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
    url: UrlOpt = DEFAULT_URL,
    api_key: KeyOpt = None,
) -> None:
    """Print a glossary with its entries and protected terms (JSON)."""
    with _client(url, api_key) as mt:
        g = mt.glossary(glossary_id)
    print(json.dumps(g.model_dump(mode="json"), ensure_ascii=False, indent=2))


@glossary_app.command("delete")
def glossary_delete(
    glossary_id: Annotated[str, typer.Argument(help="The glossary's id.")],
    url: UrlOpt = DEFAULT_URL,
    api_key: KeyOpt = None,
) -> None:
    """Delete a glossary (jobs already accepted still finish with it)."""
    with _client(url, api_key) as mt:
        mt.delete_glossary(glossary_id)
    print(f"deleted glossary {glossary_id}")


# --- API keys (operator: straight to Redis) ---------------------------------------------------
keys_app = typer.Typer(
    no_args_is_help=True,
    help="API keys: create, list, revoke (talks to the Redis at MT_REDIS_URL directly).",
)
app.add_typer(keys_app, name="keys")


def _key_store() -> KeyStore:
    _settings_or_exit({})
    from mtfleet.core.redis_conn import connect
    from mtfleet.core.settings import get_settings

    return KeyStore(connect(get_settings().redis_url), cache_s=0)


@keys_app.command("create")
def keys_create(
    name: Annotated[str, typer.Option(help="Who the key is for, e.g. shop1.")],
    chars_per_day: Annotated[
        int | None,
        typer.Option(min=1, help="Characters of text per UTC day (default: no limit)."),
    ] = None,
    rate: Annotated[
        float | None, typer.Option(help="Requests per second (default: no limit).")
    ] = None,
    storage_mb: Annotated[
        int | None,
        typer.Option(min=1, help="MiB the key may keep in Redis (default: MT_KEY_STORAGE_MB)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Create an API key; its token is printed once (only its hash is stored)."""
    try:
        key, token = _key_store().create(
            name, chars_per_day=chars_per_day, rate=rate, storage_mb=storage_mb
        )
    except InvalidInput as exc:
        err_console.print(f"[red]{exc.message}[/red]")
        raise typer.Exit(2) from None
    if as_json:
        print(json.dumps({**key.model_dump(mode="json"), "token": token}))
        return
    err_console.print(
        f"created key {key.id} ({key.name}); the token below is shown only this once:"
    )
    print(token)


@keys_app.command("list")
def keys_list(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List API keys (never their tokens) with today's characters."""
    store = _key_store()
    found = store.list_keys()
    used = store.used_today(k.id for k in found)
    stored = {k.id: store.storage(k, 0).used() for k in found}
    rows = [
        {**k.model_dump(mode="json"), "chars_today": used[k.id], "stored_bytes": stored[k.id]}
        for k in found
    ]
    if as_json:
        print(json.dumps(rows))
        return
    print("id\tname\tcreated (UTC)\tchars today/per day\trate/s\tstored MiB\tstate")
    for k in found:
        created = time.strftime("%Y-%m-%d %H:%M", time.gmtime(k.created_at))
        per_day = k.chars_per_day if k.chars_per_day is not None else "-"
        rate = f"{k.rate:g}" if k.rate is not None else "-"
        state = "revoked" if k.revoked else "active"
        mib = f"{stored[k.id] / 1024 / 1024:.1f}"
        print(f"{k.id}\t{k.name}\t{created}\t{used[k.id]}/{per_day}\t{rate}\t{mib}\t{state}")


@keys_app.command("revoke")
def keys_revoke(key_id: Annotated[str, typer.Argument(help="The key's id (keys list).")]) -> None:
    """Revoke a key: API processes refuse it within MT_AUTH_CACHE_S seconds."""
    key = _key_store().revoke(key_id)
    if key is None:
        err_console.print(f"[red]no API key {key_id!r}[/red]")
        raise typer.Exit(1)
    print(f"revoked key {key.id} ({key.name})")


def main() -> None:
    try:
        app()
    except MTClientError as exc:
        err_console.print(f"[red]error {exc.status} ({exc.type}):[/red] {exc.message}")
        sys.exit(1)
    except redis.RedisError as exc:
        err_console.print(f"[red]cannot talk to Redis:[/red] {type(exc).__name__}: {exc}")
        sys.exit(1)
    except httpx.HTTPError as exc:
        err_console.print(f"[red]cannot talk to the API:[/red] {type(exc).__name__}: {exc}")
        sys.exit(1)
    except JobTimeout as exc:
        err_console.print(f"[yellow]{exc}[/yellow]; fetch it later: mtfleet result {exc.job_id}")
        sys.exit(1)


if __name__ == "__main__":
    main()
