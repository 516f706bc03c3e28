"""The ``mtfleet`` command, the one entry point (``python -m mtfleet`` runs it too): the client's
commands (:mod:`mtfleet.producer.cli`: translate, submit, result... through the API) and the
operator's (:mod:`mtfleet.fleet.cli`: api, worker, keys... mounted beside them here), so the
client CLI never imports the operator's. Each operator command says which extra it needs where
it is not installed (:mod:`mtfleet.producer.extras`); loading them imports nothing of it.
"""

from __future__ import annotations

import sys

from rich.markup import escape

from mtfleet.fleet.cli import mount
from mtfleet.producer import cli

mount(cli.app, cli.pools_app)
#: The whole ``mtfleet`` command (the client's app, the operator's commands mounted on it).
app = cli.app


def main() -> None:
    try:
        cli.main()
    except Exception as exc:
        # An operator command's error (they talk to Redis): redis is a [server] package, imported
        # only where it is installed and one of those commands ran, so looked up, not imported.
        redis = sys.modules.get("redis")
        if redis is None or not isinstance(exc, redis.RedisError):
            raise
        cli.err_console.print(
            f"[red]cannot talk to Redis:[/red] {type(exc).__name__}: {escape(str(exc))}"
        )
        sys.exit(1)


if __name__ == "__main__":
    main()
