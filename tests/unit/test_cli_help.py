"""``mtfleet --help`` and every subcommand's help flow to the terminal's width: a docstring's
source line breaks are not kept (a paragraph breaks only where it ends), and help text is shown
as written (square brackets are not taken for markup)."""

from __future__ import annotations

import itertools
import re

import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from mtfleet import formats as documents
from mtfleet.__main__ import app
from mtfleet.formats import sniffing

WIDTH = 200
#: A help line broken before this many characters must end its paragraph.
FLOWED = 100


def command_paths(group: TyperGroup, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    for name, command in group.commands.items():
        if isinstance(command, TyperGroup):
            paths += command_paths(command, (*prefix, name))
        else:
            paths.append((*prefix, name))
    return paths


def early_breaks(text: str) -> list[str]:
    """Lines of ``text`` (help rendered at WIDTH columns) that break before FLOWED characters
    although their paragraph goes on: the next line continues it (in a panel, a row whose
    first columns are blank; outside, a line right below it)."""
    lines = text.splitlines()
    found = []
    for line, after in itertools.pairwise(lines):
        if line.startswith("│") and after.startswith("│"):
            body, next_body = line.strip("│").rstrip(), after.strip("│")
            goes_on = next_body.strip() and len(next_body) - len(next_body.lstrip()) > 6
        elif not line.startswith(("│", "╭", "╰")) and not after.startswith(("│", "╭", "╰")):
            body, goes_on = line.rstrip(), after.strip()
        else:
            continue
        if goes_on and body.strip() and len(body) < FLOWED:
            found.append(line)
    return found


def test_every_help_flows_to_the_terminal_width() -> None:
    runner = CliRunner()
    paths = command_paths(typer.main.get_command(app))  # type: ignore[arg-type]
    assert ("submit",) in paths and ("keys", "create") in paths
    for path in paths:
        shown = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(WIDTH)})
        assert shown.exit_code == 0, shown.output
        assert early_breaks(shown.stdout) == [], f"mtfleet {' '.join(path)} --help:\n{shown.stdout}"
    # the long paragraphs of submit's help are whole lines at this width
    submit = runner.invoke(app, ["submit", "--help"], env={"COLUMNS": str(WIDTH)}).stdout
    assert "without one is told by its first bytes" in submit  # two lines of its source
    translate = runner.invoke(app, ["translate", "--help"], env={"COLUMNS": str(WIDTH)}).stdout
    assert "[default: http://127.0.0.1:8000]" in translate


def submit_help() -> str:
    """``mtfleet submit --help`` as one line of text (the panels' borders and the line breaks
    gone)."""
    shown = CliRunner().invoke(app, ["submit", "--help"], env={"COLUMNS": "400"})
    assert shown.exit_code == 0, shown.output
    return " ".join(shown.stdout.replace("│", " ").split())


def test_submit_help_names_the_formats_of_the_registry_and_refuses_none_of_them() -> None:
    """What `mtfleet submit --help` says it reads is what the fleet reads (the one registry,
    mtfleet.formats), and what it says it refuses is none of that (it said .po and .yml were
    refused: both are read)."""
    text = submit_help()
    listed = re.search(r"from each file's extension: (.*?); a file without one", text)
    assert listed, text
    named = dict(re.findall(r"(\w+) \(([^)]*)\)", listed.group(1)))
    assert named == {f.name: ", ".join(f.extensions) for f in documents.formats()}
    said = re.search(r"the fleet does not read \(([^)]*?)(?:\.\.\.)?\) is refused", text)
    assert said, text
    refused = said.group(1).split(", ")
    assert refused and all(e in sniffing.KNOWN_UNREAD for e in refused)
    assert not set(refused) & set(documents.extensions())
    option = re.search(r"Document format for every file \(([^)]*)\)", text)
    assert option and option.group(1).split(", ") == [f.name for f in documents.formats()]
