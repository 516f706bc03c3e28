"""Where the CLI reads and writes, as a user types it: ``mtfleet result JOB --out`` a file or a
folder, ``mtfleet translate`` reading its texts from a pipe. One Apertium fleet (real
translations, no model to load) for the file."""

from __future__ import annotations

import os
import pty
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mtfleet.fleet.localfleet import LocalFleet
from tests.e2e.fleet_control import apertium_fleet, cli, cli_args, cli_env

pytestmark = pytest.mark.slow

EN = ["Red shoes", "The blue shirt is in the house."]
ES = ["Zapatos rojos", "La camisa azul es en la casa."]


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    with apertium_fleet(redis_server) as f:
        yield f


def test_result_out_is_the_file_unless_it_names_a_folder(fleet: LocalFleet, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("\n".join(EN) + "\n")
    sent = cli(
        fleet, "submit", "notes.txt", "--to", "es", "--from", "en", "--out", "translated/",
        cwd=tmp_path,
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    job_id = sent.stdout.strip()
    # submit --out is always a folder (slash or not): the file keeps its own name in it
    assert (tmp_path / "translated" / "notes.es.txt").read_text() == "\n".join(ES) + "\n"

    # a path that is not a folder and has no trailing slash is the output file itself
    as_file = cli(fleet, "result", job_id, "--out", "r.txt", cwd=tmp_path)
    assert as_file.returncode == 0, as_file.stderr
    assert (tmp_path / "r.txt").is_file(), sorted(p.name for p in tmp_path.iterdir())
    assert (tmp_path / "r.txt").read_text() == "\n".join(ES) + "\n"
    assert as_file.stdout.strip() == "r.txt" and "r.txt [succeeded]" in as_file.stderr
    again = cli(fleet, "result", job_id, "--out", "sub/r2.txt", cwd=tmp_path)  # folders made
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "sub" / "r2.txt").read_text() == "\n".join(ES) + "\n"

    # a trailing slash, or a folder that exists, is a folder: the job's own file name in it
    slash = cli(fleet, "result", job_id, "--out", "new/", cwd=tmp_path)
    assert slash.returncode == 0, slash.stderr
    assert (tmp_path / "new" / f"{job_id}.es.txt").read_text() == "\n".join(ES) + "\n"
    (tmp_path / "there").mkdir()
    existing = cli(fleet, "result", job_id, "--out", "there", cwd=tmp_path)
    assert existing.returncode == 0 and (tmp_path / "there" / f"{job_id}.es.txt").is_file()
    # the folder submit wrote to (its manifest knows the job): the file as submitted
    known = cli(fleet, "result", job_id, "--out", "translated", cwd=tmp_path)
    assert known.returncode == 0 and known.stdout.strip() == "translated/notes.es.txt"


def test_translate_reads_lines_from_standard_input(fleet: LocalFleet, tmp_path: Path) -> None:
    piped = subprocess.run(
        cli_args("translate", "--to", "es", "--from", "en"),
        input=f"{EN[0]}\n\n   \n{EN[1]}\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(fleet),
        cwd=tmp_path,
    )
    assert piped.returncode == 0, piped.stderr
    # one line out per line in, in order; an empty line for a blank one
    assert piped.stdout == f"{ES[0]}\n\n\n{ES[1]}\n"
    as_json = subprocess.run(
        cli_args("translate", "--to", "es", "--from", "en", "--json"),
        input=f"{EN[0]}\n\n{EN[1]}",
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(fleet),
    )
    assert as_json.returncode == 0, as_json.stderr
    assert as_json.stdout.strip() == f'["{ES[0]}", "", "{ES[1]}"]'
    # texts on the command line win over standard input
    args = subprocess.run(
        cli_args("translate", "--to", "es", "--from", "en", EN[0]),
        input="not this\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(fleet),
    )
    assert args.returncode == 0 and args.stdout == f"{ES[0]}\n"
    shown = cli(fleet, "translate", "--help")
    assert "standard input" in shown.stdout


def test_translate_without_texts_at_a_terminal_says_what_it_needs(fleet: LocalFleet) -> None:
    """Standard input a terminal (nothing piped): no waiting for typed lines, an error."""
    main, tty = pty.openpty()
    try:
        proc = subprocess.run(
            cli_args("translate", "--to", "es"),
            stdin=tty,
            capture_output=True,
            text=True,
            timeout=60,
            env=cli_env(fleet),
        )
    finally:
        os.close(tty)
        os.close(main)
    assert proc.returncode == 2
    assert "Missing argument" in proc.stderr and "standard input" in proc.stderr
