"""``mtfleet demo``: the whole path a job takes, on this machine, in about a minute.

Starts a private ``redis-server`` (or uses the Redis given with ``--redis-url``), the API on
port 8000 and Flower on 5555 (other free ports when those are taken), one Apertium worker, and
makes an API key; prints the ``export`` lines that point the CLI, curl and the SDK at it. Then:
e-commerce strings on the interactive lane (``/v1/translate``), the same strings again (from
the phrase cache), a few hundred catalogue lines as one bulk job, and an HTML product page as a
document job (language detected, brand names protected by a glossary).

Everything it started stops, and everything it made (key, jobs, glossary, the private Redis's
files) is deleted, when it ends, on Ctrl-C, SIGTERM or SIGHUP alike; stopped so, it exits 0.
With ``--keep-running`` it stays up until then, and a process of it that dies is reported and
started again.
"""

from __future__ import annotations

import itertools
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType

from rich.console import Console
from rich.table import Table

from mtfleet.fleet.localfleet import LocalFleet, preferred_port, redis_reachable
from mtfleet.producer.client import MTClient, MTClientError

console = Console()

API_PORT = 8000  # the README's
FLOWER_PORT = 5555  # Flower's own default
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(BaseException):
    """SIGTERM or SIGHUP arrived: unwind like Ctrl-C does, so everything started is stopped.
    A BaseException, so no ``except Exception`` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _stop(signum: int, _frame: FrameType | None) -> None:
    raise Stopped(signum)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`Stopped` in the main thread while the block runs."""
    old = {sig: signal.signal(sig, _stop) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


@contextmanager
def signals_ignored() -> Iterator[None]:
    """While the fleet is being stopped, a second signal must not cut the stop short."""
    sigs = (*STOP_SIGNALS, signal.SIGINT)
    old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in sigs}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


ECOMMERCE = [
    "Add to cart",
    "Free shipping on orders over $50",
    "Only 3 left in stock - order soon.",
    "Men's waterproof hiking boots, brown leather",
    "Your order has been shipped and will arrive on Monday.",
    "Customers who bought this item also bought",
    "Proceed to checkout",
    "The package contains two cotton shirts and a wool sweater.",
]

PRODUCT_PAGE = """<h1>Red running shoes</h1>
<p>The <b>red shoes</b> are very light. Order before <a href="https://shop.example.com/r7">the
weekend</a> and get free shipping on orders over $50.</p>
<p>Works with your iphone and your PlayStation. Code SKU-12345, weight 250 g.</p>
<img src="shoe.png" alt="A red shoe on the table">
"""

_ADJ = ["red", "blue", "light", "warm", "small", "large", "green", "black", "new", "old"]
_NOUN = ["shirt", "table", "lamp", "chair", "bag", "coat", "watch", "book", "garden", "window"]
_FRAME = [
    "The {a} {n} is in the house.",
    "We sell a {a} {n} for the kitchen.",
    "This {n} is very {a} and cheap.",
    "My sister bought a {a} {n} yesterday.",
]


def catalogue_lines(n: int) -> list[str]:
    """Deterministic catalogue sentences (no two alike for n <= 400)."""
    combos = itertools.product(_FRAME, _ADJ, _NOUN)
    return [f.format(a=a, n=noun) for f, a, noun in itertools.islice(combos, n)]


def paste_line(api_url: str, api_key: str, redis_url: str) -> str:
    """The line that points a new shell at the demo's fleet: it puts the ``mtfleet`` command
    and the SDK on the path when the demo runs from a virtualenv (``make demo``'s: a new shell
    has neither), and exports where the fleet is and its key."""
    export = f"export MT_API_URL={api_url} MT_API_KEY={api_key} MT_REDIS_URL={redis_url}"
    activate = Path(sys.prefix) / "bin" / "activate"
    if sys.prefix != sys.base_prefix and activate.is_file():
        return f". {shlex.quote(str(activate))} && {export}"
    return export


def run_demo(*, keep_running: bool, bulk_lines: int, redis_url: str | None = None) -> int:
    if redis_url and not redis_reachable(redis_url):
        console.print(
            f"[red]no Redis answers at {redis_url}[/red] (leave out --redis-url to "
            "run the demo on a private redis-server)"
        )
        return 2
    fleet = LocalFleet(redis_url=redis_url)
    fleet.env.setdefault("MT_FLOWER_PASSWORD", "demo")
    # a playground on this machine: webhooks to a receiver on it (docs/webhooks.md) arrive
    fleet.env.setdefault("MT_WEBHOOK_ALLOW_PRIVATE", "true")
    code = 1
    with stop_on_signals():
        try:
            code = _run(fleet, keep_running=keep_running, bulk_lines=bulk_lines)
        # A stop the user asked for (Ctrl-C, SIGTERM, SIGHUP) is no failure: once everything
        # is stopped and deleted the demo exits 0 (so `make demo` reports no error either).
        except Stopped as sig:
            console.print(f"\n{sig}: stopping everything the demo started")
            code = 0
        except KeyboardInterrupt:
            console.print("\ninterrupted: stopping everything the demo started")
            code = 0
        except (RuntimeError, MTClientError) as exc:
            console.print(f"[red]the demo failed:[/red] {exc}", markup=False)
            code = 1
        finally:
            with signals_ignored():
                private = fleet.private_redis
                fleet.stop()
                if code == 1:
                    console.print(f"logs kept in {fleet.workdir}")
                elif private:
                    shutil.rmtree(fleet.workdir, ignore_errors=True)
    return code


def _run(fleet: LocalFleet, *, keep_running: bool, bulk_lines: int) -> int:
    t_start = time.monotonic()
    url = fleet.start_redis()
    if fleet.private_redis:
        console.print(
            f"[bold]Redis[/bold]   {url}  (private to this demo, removed at the end; "
            "--redis-url to use another)"
        )
    else:
        console.print(
            f"[bold]Redis[/bold]   {url}  (yours: the demo's keys, jobs and glossary "
            "are deleted at the end)"
        )
    fleet.start_worker("--engine", "apertium", "--lanes", "interactive,bulk")
    api_url = fleet.start_api(preferred_port(API_PORT))
    console.print(f"[bold]API[/bold]     {api_url}  (OpenAPI: {api_url}/docs)")
    flower_url = fleet.start_flower(preferred_port(FLOWER_PORT))
    console.print(
        f"[bold]Flower[/bold]  {flower_url}  (user admin, password "
        f"{fleet.env['MT_FLOWER_PASSWORD']!r})"
    )
    fleet.wait_ready(120)
    # Every /v1 request needs an API key (unless MT_AUTH=off): the demo makes its own,
    # as an operator would with `mtfleet keys create`, and deletes it when it stops.
    api_key = fleet.create_api_key("demo")
    console.print(f"[bold]API key[/bold] {api_key}  (made for this demo, deleted at the end)")
    console.print(f"fleet ready in {time.monotonic() - t_start:.1f}s; logs in {fleet.workdir}")
    until = "while the demo runs" if keep_running else "until the demo ends (--keep-running)"
    console.print(f"\nTo use this fleet from another shell {until}, paste:")
    console.print(
        f"  {paste_line(api_url, api_key, url)}\n", markup=False, highlight=False, soft_wrap=True
    )
    made: list[str] = []  # jobs to purge at the end
    with MTClient(api_url, api_key=api_key) as mt:
        try:
            ok = _translate(mt, made, bulk_lines)
        finally:
            for job_id in made:
                with suppress(MTClientError):
                    mt.cancel(job_id, purge=True)
        console.print(f"\nFlower (workers, every chunk as a task): {flower_url}")
        if keep_running:
            console.print(
                "[bold]--keep-running:[/bold] the fleet stays up; Ctrl-C (or SIGTERM) stops it."
            )
            while True:
                for line in fleet.restart_dead():
                    console.print(f"[yellow]{line}[/yellow]", highlight=False)
                time.sleep(1.0)
    return 0 if ok else 1


def _translate(mt: MTClient, made: list[str], bulk_lines: int) -> bool:
    t0 = time.perf_counter()
    first = mt.translation(ECOMMERCE, source="en", target="es")
    t_first = time.perf_counter() - t0
    if first.id:
        made.append(first.id)
    t0 = time.perf_counter()
    again = mt.translation(ECOMMERCE, source="en", target="es")
    t_cached = time.perf_counter() - t0
    table = Table(title="interactive lane: POST /v1/translate (en -> es)")
    table.add_column("English")
    table.add_column("Spanish (Apertium)")
    for src, tgt in zip(ECOMMERCE, first.translations, strict=True):
        table.add_row(src, tgt or "[red]failed[/red]")
    console.print(table)
    how = (
        "translated by the worker"
        if first.cached == 0
        else f"{first.cached} of them already in the phrase cache"
    )
    console.print(
        f"{len(ECOMMERCE)} strings: {t_first * 1000:.0f} ms the first time ({how}); "
        f"{t_cached * 1000:.0f} ms again, {again.cached} from the phrase cache "
        f"(identical: {first.translations == again.translations})\n"
    )

    lines = catalogue_lines(bulk_lines)
    t0 = time.perf_counter()
    job = mt.submit(lines, source="en", target="es", lane="bulk")
    made.append(job.id)
    done = mt.wait(job.id, timeout=300)
    t_bulk = time.perf_counter() - t0
    res = mt.result(job.id, partial=True)
    table = Table(title=f"bulk lane: job {job.id} ({len(lines)} lines), first 8")
    table.add_column("#", justify="right")
    table.add_column("English")
    table.add_column("Spanish (Apertium)")
    for i, (src, tgt) in enumerate(zip(lines[:8], res.translations[:8], strict=True)):
        table.add_row(str(i), src, tgt or "[red]failed[/red]")
    console.print(table)
    ok = sum(t is not None for t in res.translations)
    console.print(
        f"bulk job {done.status.value}: {ok}/{len(lines)} lines in "
        f"{t_bulk:.2f}s ({len(lines) / t_bulk:.0f} segments/s end to end; "
        f"{done.cached} answered from the phrase cache at submission)"
    )
    # a document: the same file back, translated, markup and brand names intact
    brands = mt.create_glossary(
        "demo brands", source="en", target="es", protected=["iPhone", "PlayStation"]
    )
    try:
        t0 = time.perf_counter()
        doc_job = mt.submit_document(
            PRODUCT_PAGE, format="html", target="es", glossary_id=brands.id
        )
        made.append(doc_job.id)
        mt.wait(doc_job.id, timeout=120)
        page = mt.document(doc_job.id).decode()
        t_doc = time.perf_counter() - t0
    finally:
        mt.delete_glossary(brands.id)
    console.print(
        f"\n[bold]document job[/bold] (html, source language detected: "
        f"{doc_job.detected_source_lang}; glossary protects iPhone, PlayStation; "
        f"{t_doc:.2f}s)"
    )
    console.print(PRODUCT_PAGE.strip(), markup=False, highlight=False)
    console.print("[bold]->[/bold]")
    console.print(page.strip(), markup=False, highlight=False)
    return done.status.value == "succeeded" and all(first.translations)
