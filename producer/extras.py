"""Which of mtfleet's extras a command needs, and a one-line refusal where one is missing.

``pip install mtfleet`` is the client (the SDK, the CLI's client commands); running a fleet, or
scoring one, or reading files (``mtfleet submit``: the document formats) takes an extra
(``[server]``, ``[flower]``, ``[eval]``, ``[formats]``: pyproject.toml). A command
that needs one checks it first, against the installed distribution's own metadata (the extra's
requirements as pyproject.toml lists them, one source), so a base install answers
``mtfleet worker`` with the line to run instead of a traceback from deep in an import.
"""

from __future__ import annotations

import re
from importlib import metadata

import typer
from rich.console import Console

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
_INNER = re.compile(r"\[([^\]]*)\]")  # mtfleet[formats]: the extras one requirement names


def missing(*extras: str) -> list[str]:
    """The distributions the ``extras`` require that are not installed (none where mtfleet
    itself is not installed as a distribution: then nothing can be told). An extra that names
    another of mtfleet's (``[server]`` brings ``mtfleet[formats]``) requires that one's too."""
    try:
        requirements = metadata.requires("mtfleet") or []
    except metadata.PackageNotFoundError:
        return []
    found = []
    for requirement in requirements:
        extra = _EXTRA.search(requirement)
        name = _NAME.match(requirement)
        if extra is None or name is None or extra.group(1) not in extras:
            continue
        if name.group() == "mtfleet":
            inner = _INNER.search(requirement)
            found += missing(*(inner.group(1).replace(" ", "").split(",") if inner else ()))
            continue
        try:
            metadata.distribution(name.group())
        except metadata.PackageNotFoundError:
            found.append(name.group())
    return list(dict.fromkeys(found))


def require(command: str, *extras: str) -> None:
    """Exit 2 with one line (what to install) unless every distribution ``extras`` require is
    installed."""
    absent = missing(*extras)
    if absent:
        spec = f"mtfleet[{','.join(extras)}]"
        named = ", ".join(absent[:3]) + (f" and {len(absent) - 3} more" if len(absent) > 3 else "")
        Console(stderr=True, soft_wrap=True).print(
            f"mtfleet {command} needs {spec} (not installed: {named}): pip install '{spec}'",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(2)
