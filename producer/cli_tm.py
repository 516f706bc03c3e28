"""``mtfleet tm``: translation memories through the API (import, list, show, export, add,
delete), as ``mtfleet glossary`` does glossaries. ``producer/cli.py`` adds :data:`tm_app`
under the name ``tm``; its error handling (an API error, an API out of reach) covers these
commands too."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from mtfleet.producer.calls import MTClientError, RetryPolicy
from mtfleet.producer.client import MTClient

tm_app = typer.Typer(
    no_args_is_help=True,
    help="Translation memories: import (TMX, TSV, CSV), list, show, export, add, delete "
    "(through the API).",
)
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
IdArg = Annotated[str, typer.Argument(help="The translation memory's id.")]
#: As the rest of the CLI: an API restart is ridden out for a minute.
CLI_RETRY = RetryPolicy(budget_s=60.0)


def _client(url: str | None, api_key: str | None) -> MTClient:
    return MTClient(url, api_key=api_key, retry=CLI_RETRY)


@tm_app.command("import")
def tm_import(
    file: Annotated[
        Path,
        typer.Argument(
            exists=True, dir_okay=False, help="A TMX 1.4 file, or TSV/CSV (source, target)."
        ),
    ],
    source: Annotated[str, typer.Option("--from", help="Source language code.")],
    target: Annotated[str, typer.Option("--to", help="Target language code.")],
    name: Annotated[
        str | None, typer.Option(help="A name for it [default: the file's name].")
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option("--format", help="tmx, tsv or csv [default: told by the extension]."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the memory as JSON.")] = False,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
) -> None:
    """Import a file as a new translation memory for one language pair; prints its id (a TMX
    with several languages gives the pair asked for)."""
    content = file.read_bytes()
    with _client(url, api_key) as mt:
        try:
            tm = mt.import_translation_memory(
                content,
                name=name or file.stem,
                source=source,
                target=target,
                filename=file.name,
                fmt=fmt,
            )
        except MTClientError as exc:
            if exc.status != 413:
                raise
            err_console.print(
                f"[red]{file} ({len(content):,} bytes) is larger than the API takes in one "
                "request:[/red] raise MT_MAX_REQUEST_BYTES on the API (a memory holds up to "
                "MT_TM_MAX_PAIRS pairs, an import file up to MT_TM_MAX_IMPORT_BYTES)"
            )
            raise typer.Exit(1) from None
    if as_json:
        print(tm.model_dump_json(indent=2))
        return
    skipped = f", {tm.skipped} units skipped (a language missing)" if tm.skipped else ""
    err_console.print(
        f"imported translation memory {tm.id} ({tm.name}, {tm.source_lang}->{tm.target_lang}): "
        f"{tm.entry_count} pairs{skipped}"
    )
    print(tm.id)


@tm_app.command("list")
def tm_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
) -> None:
    """List this key's translation memories."""
    with _client(url, api_key) as mt:
        found = mt.translation_memories()
    if as_json:
        print(json.dumps([tm.model_dump(mode="json") for tm in found]))
        return
    print("id\tname\tpair\tpairs\tversion\tupdated (UTC)")
    for tm in found:
        updated = time.strftime("%Y-%m-%d %H:%M", time.gmtime(tm.updated_at))
        print(
            f"{tm.id}\t{tm.name}\t{tm.source_lang}->{tm.target_lang}\t{tm.entry_count}\t"
            f"{tm.version}\t{updated}"
        )


@tm_app.command("show")
def tm_show(tm_id: IdArg, url: UrlOpt = None, api_key: KeyOpt = None) -> None:
    """Print a translation memory (JSON; its pairs: mtfleet tm export)."""
    with _client(url, api_key) as mt:
        tm = mt.translation_memory(tm_id)
    print(json.dumps(tm.model_dump(mode="json"), ensure_ascii=False, indent=2))


@tm_app.command("export")
def tm_export(
    tm_id: IdArg,
    out: Annotated[
        Path | None,
        typer.Option("--out", dir_okay=False, help="Write the TMX here [default: stdout]."),
    ] = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
) -> None:
    """Export a translation memory as a TMX 1.4 file."""
    with _client(url, api_key) as mt:
        tmx = mt.export_translation_memory(tm_id)
    if out is None:
        sys.stdout.buffer.write(tmx)
        sys.stdout.buffer.flush()
        return
    out.write_bytes(tmx)
    err_console.print(f"wrote {out} ({len(tmx):,} bytes)")


@tm_app.command("add")
def tm_add(
    tm_id: IdArg,
    source: Annotated[list[str], typer.Option("--source", help="A source text (repeatable).")],
    target: Annotated[
        list[str], typer.Option("--target", help="Its translation (one per --source).")
    ],
    url: UrlOpt = None,
    api_key: KeyOpt = None,
) -> None:
    """Add pairs, or correct the translation of a source already there: the next request that
    names the memory uses them."""
    if len(source) != len(target):
        err_console.print(
            f"[red]{len(source)} --source and {len(target)} --target: give one --target per "
            "--source[/red]"
        )
        raise typer.Exit(2)
    with _client(url, api_key) as mt:
        tm = mt.add_translation_memory_entries(tm_id, list(zip(source, target, strict=True)))
    err_console.print(f"translation memory {tm.id}: {tm.entry_count} pairs, version {tm.version}")
    print(tm.version)


@tm_app.command("delete")
def tm_delete(tm_id: IdArg, url: UrlOpt = None, api_key: KeyOpt = None) -> None:
    """Delete a translation memory (jobs already accepted still finish with it)."""
    with _client(url, api_key) as mt:
        mt.delete_translation_memory(tm_id)
    print(f"deleted translation memory {tm_id}")
