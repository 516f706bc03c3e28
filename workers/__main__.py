"""One Celery worker of the fleet, as ``mtfleet worker`` starts one per GPU group
(:func:`mtfleet.workers.gpus.worker_command`)::

    python -m mtfleet.workers --queues mt.hunyuan.interactive,mt.hunyuan.bulk \\
        --concurrency 8 --hostname gpu0@%h --loglevel INFO

It is the worker that ``celery -A mtfleet.workers.celery_app worker --pool threads
--without-gossip --without-mingle -E`` starts (Celery's own :meth:`celery.Celery.Worker`, which
that command builds from its options; that command still works, docs/operations.md), without
Celery's command line: before it parses anything, that loads every installed
``celery.commands`` plugin, and Flower's (in the server's install) imports Flower's web app and
tornado, 0.21-0.25 of the ~1 CPU-second each worker process takes to start (measured
2026-12-07), paid again on every restart.
"""

from __future__ import annotations

import argparse
import sys

from celery.utils.log import mlevel
from celery.utils.nodenames import default_nodename, host_format


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m mtfleet.workers",
        description="One Celery worker of mtfleet (what `mtfleet worker` starts per GPU group).",
    )
    parser.add_argument("--queues", required=True, help="The queues it consumes, comma-separated.")
    parser.add_argument("--concurrency", type=int, required=True, help="Its task threads.")
    parser.add_argument("--hostname", required=True, help="Its node name (%%h: this host).")
    parser.add_argument("--loglevel", default="INFO", help="DEBUG, INFO, WARNING or ERROR.")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    # imported after the options are read: the app reads its settings (and a bad one exits)
    from mtfleet.workers.celery_app import app

    worker = app.Worker(
        hostname=host_format(default_nodename(args.hostname)),
        concurrency=args.concurrency,
        queues=args.queues.split(","),
        loglevel=mlevel(args.loglevel),
        without_gossip=True,
        without_mingle=True,
        task_events=True,  # what Flower shows
    )
    worker.start()
    return int(worker.exitcode or 0)


if __name__ == "__main__":
    sys.exit(main())
