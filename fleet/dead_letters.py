"""``mtfleet dead-letters list | retry | purge``: the operator's hands on the dead-letter list,
straight in Redis (``MT_REDIS_URL``), as ``mtfleet keys`` is (core/deadletters.py says what a
retry and a purge do)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from mtfleet.producer.extras import require

if TYPE_CHECKING:
    from mtfleet.core.deadletters import DeadLetter, DeadLetters

dead_letters_app = typer.Typer(
    no_args_is_help=True,
    help="The dead-letter list (chunks that exhausted their deliveries): list, retry or purge "
    "its entries (in Redis, MT_REDIS_URL).",
)
err_console = Console(stderr=True, soft_wrap=True)

JobArg = Annotated[
    str | None, typer.Argument(help="The job whose entries to act on (all of them: --all).")
]
ChunkOpt = Annotated[int | None, typer.Option("--chunk", min=0, help="Only this chunk of the job.")]
AllOpt = Annotated[bool, typer.Option("--all", help="Every entry on the list.")]

#: What a retry that did not send its chunk says, by its outcome.
NOT_RETRIED = {
    "gone": "its job expired or was purged; purge the entry",
    "no_message": "its chunk's message is not kept (listed by an older version, or not a "
    "chunk); purge the entry",
    "cancelling": "its job is being cancelled",
    "cancelled": "its job was cancelled",
    "failed": "its job failed as a whole (see its error)",
}


def _dead_letters() -> DeadLetters:
    require("dead-letters", "server")
    from mtfleet.core.deadletters import DeadLetters
    from mtfleet.core.redis_conn import connect
    from mtfleet.core.settings import get_settings

    get_settings.cache_clear()
    try:
        s = get_settings()
    except ValidationError as exc:
        err_console.print(f"[red]invalid settings:[/red]\n{escape(str(exc))}")
        raise typer.Exit(2) from None
    return DeadLetters(
        connect(s.redis.redis_url),
        max_entries=s.worker.dead_letter_max,
        ttl_s=s.worker.dead_letter_ttl_s,
    )


def _chosen(
    dl: DeadLetters, job_id: str | None, chunk: int | None, every: bool
) -> list[DeadLetter]:
    """The entries a retry or purge acts on; exits 2 on a wrong choice, 1 when none matches."""
    if every == (job_id is not None) or (chunk is not None and job_id is None):
        err_console.print("[red]name a job id (and --chunk N), or --all[/red]")
        raise typer.Exit(2)
    entries = dl.entries(job_id, chunk)
    if not entries:
        what = (
            "on the list"
            if every
            else f"for job {job_id}" + (f" chunk {chunk}" if chunk is not None else "")
        )
        err_console.print(f"[yellow]no dead letter {escape(what)}[/yellow]")
        raise typer.Exit(1)
    return entries


def _name(e: DeadLetter) -> str:
    if e.job_id is None:
        return "a message that is not a chunk"
    return f"job {e.job_id} chunk {e.chunk if e.chunk is not None else '-'}"


@dead_letters_app.command("list")
def dead_letters_list(
    job_id: Annotated[str | None, typer.Argument(help="Only this job's entries.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The entries, newest first: when, job, chunk, lane and why."""
    dl = _dead_letters()
    entries = dl.entries(job_id)
    if as_json:
        print(json.dumps([e.public() for e in entries]))
        return
    err_console.print(
        f"{len(entries)} dead letter(s)"
        + (f" of job {job_id}" if job_id else "")
        + f"; kept at most {dl.max_entries} (MT_DEAD_LETTER_MAX), each for "
        f"{dl.ttl_s}s (MT_DEAD_LETTER_TTL_S)"
    )
    if not entries:
        return
    print("at (UTC)\tjob\tchunk\tlane\treason")
    for e in entries:
        at = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(e.at)) if e.at is not None else "-"
        chunk = str(e.chunk) if e.chunk is not None else "-"
        print(f"{at}\t{e.job_id or '-'}\t{chunk}\t{e.lane or '-'}\t{e.reason}")


@dead_letters_app.command("retry")
def dead_letters_retry(
    job_id: JobArg = None, chunk: ChunkOpt = None, every: AllOpt = False
) -> None:
    """Send dead-lettered chunks again: each goes back to the front of its API key's backlog
    with its delivery count reset, its dead-lettered segments pending again (a job that had
    ended runs again). Exits 1 if any could not be retried."""
    dl = _dead_letters()
    missed = 0
    for e in _chosen(dl, job_id, chunk, every):
        done = dl.retry(e)
        if done.outcome == "requeued":
            print(f"{_name(e)}: sent again; {done.segments} segment(s) pending again")
        elif done.outcome == "done":
            print(f"{_name(e)}: nothing left to do (its segments have results); entry removed")
        else:
            missed += 1
            why = NOT_RETRIED.get(done.outcome, done.outcome)
            err_console.print(f"[yellow]{escape(_name(e))}: not retried: {escape(why)}[/yellow]")
    raise typer.Exit(1 if missed else 0)


@dead_letters_app.command("purge")
def dead_letters_purge(
    job_id: JobArg = None, chunk: ChunkOpt = None, every: AllOpt = False
) -> None:
    """Remove entries (and the chunk messages kept for them) for good."""
    dl = _dead_letters()
    n = dl.purge(_chosen(dl, job_id, chunk, every))
    print(f"purged {n} dead letter(s)")
