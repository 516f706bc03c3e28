"""``mtfleet demo``: the whole path a job takes, on this machine, in about a minute.

Uses the Redis at ``MT_REDIS_URL`` if it answers (else a private ``redis-server``), starts the
API, one Apertium worker and Flower, makes an API key, then: e-commerce strings on the
interactive lane (``/v1/translate``), the same strings again (answered from the phrase cache),
a few hundred catalogue lines as one bulk job, and an HTML product page as a document job
(language detected, brand names protected by a glossary). Everything it started (the key too) is
stopped or deleted unless ``--keep-running``.
"""

from __future__ import annotations

import itertools
import os
import time

from rich.console import Console
from rich.table import Table

from mtfleet.producer.client import MTClient
from mtfleet.producer.localfleet import LocalFleet

console = Console()

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


def run_demo(*, keep_running: bool, bulk_lines: int) -> int:
    fleet = LocalFleet(redis_url=os.environ.get("MT_REDIS_URL", "redis://127.0.0.1:6379/0"))
    fleet.env.setdefault("MT_FLOWER_PASSWORD", os.environ.get("MT_FLOWER_PASSWORD", "demo"))
    t_start = time.monotonic()
    try:
        url = fleet.start_redis()
        console.print(f"[bold]Redis[/bold]   {url}")
        fleet.start_worker("--engine", "apertium", "--lanes", "interactive,bulk")
        api_url = fleet.start_api()
        console.print(f"[bold]API[/bold]     {api_url}  (OpenAPI: {api_url}/docs)")
        flower_url = fleet.start_flower()
        console.print(
            f"[bold]Flower[/bold]  {flower_url}  (user admin, password "
            f"{fleet.env['MT_FLOWER_PASSWORD']!r})"
        )
        fleet.wait_ready(120)
        # Every /v1 request needs an API key (unless MT_AUTH=off): the demo makes its own,
        # as an operator would with `mtfleet keys create`, and deletes it when it stops.
        api_key = fleet.create_api_key("demo")
        console.print(f"[bold]API key[/bold] {api_key}  (made for this demo, deleted at the end)")
        console.print(
            f"fleet ready in {time.monotonic() - t_start:.1f}s; logs in {fleet.workdir}\n"
        )

        with MTClient(api_url, api_key=api_key) as mt:
            t0 = time.perf_counter()
            first = mt.translate(ECOMMERCE, source="en", target="es")
            t_first = time.perf_counter() - t0
            t0 = time.perf_counter()
            again = mt.translate(ECOMMERCE, source="en", target="es")
            t_cached = time.perf_counter() - t0
            table = Table(title="interactive lane: POST /v1/translate (en -> es)")
            table.add_column("English")
            table.add_column("Spanish (Apertium)")
            for src, tgt in zip(ECOMMERCE, first, strict=True):
                table.add_row(src, tgt or "[red]failed[/red]")
            console.print(table)
            console.print(
                f"{len(ECOMMERCE)} strings: {t_first * 1000:.0f} ms (first request; "
                f"a later demo run finds them cached); {t_cached * 1000:.0f} ms again "
                f"from the phrase cache (identical: {first == again})\n"
            )

            lines = catalogue_lines(bulk_lines)
            t0 = time.perf_counter()
            job = mt.submit(lines, source="en", target="es", lane="bulk")
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
            t0 = time.perf_counter()
            doc_job = mt.submit_document(
                PRODUCT_PAGE, format="html", target="es", glossary_id=brands.id
            )
            mt.wait(doc_job.id, timeout=120)
            page = mt.document(doc_job.id).decode()
            t_doc = time.perf_counter() - t0
            mt.delete_glossary(brands.id)
            console.print(
                f"\n[bold]document job[/bold] (html, source language detected: "
                f"{doc_job.detected_source_lang}; glossary protects iPhone, PlayStation; "
                f"{t_doc:.2f}s)"
            )
            console.print(PRODUCT_PAGE.strip(), markup=False, highlight=False)
            console.print("[bold]->[/bold]")
            console.print(page.strip(), markup=False, highlight=False)
        console.print(f"\nFlower (workers, every chunk as a task): {flower_url}")
        if keep_running:
            console.print("[bold]--keep-running:[/bold] the fleet stays up; press Ctrl-C to stop.")
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
        return 0 if done.status.value == "succeeded" and all(first) else 1
    finally:
        fleet.stop()
