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
from tests.e2e.fleet_control import apertium_fleet, cli, cli_args, cli_env, jobs_made

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


def android_strings(*texts: str) -> str:
    body = "".join(f'  <string name="s{i}">{t}</string>\n' for i, t in enumerate(texts))
    return f'<?xml version="1.0" encoding="utf-8"?>\n<resources>\n{body}</resources>\n'


def test_two_same_named_files_of_two_folders_are_both_written(
    fleet: LocalFleet, tmp_path: Path
) -> None:
    """Issue 39 item 2: modA's strings.xml was lost under modB's (one strings.es.xml, exit 0)."""
    for module, text in (("modA", EN[0]), ("modB", EN[1])):
        (tmp_path / module / "values").mkdir(parents=True)
        (tmp_path / module / "values" / "strings.xml").write_text(android_strings(text))
    args = ("submit", "modA/values/strings.xml", "modB/values/strings.xml", "--to", "es",
            "--from", "en", "--out", "out")  # fmt: skip
    sent = cli(fleet, *args, cwd=tmp_path)
    assert sent.returncode == 0, sent.stderr
    a = (tmp_path / "out/modA/values-es/strings.xml").read_text(encoding="utf-8")
    b = (tmp_path / "out/modB/values-es/strings.xml").read_text(encoding="utf-8")
    assert ES[0] in a and ES[1] not in a
    assert ES[1] in b and ES[0] not in b
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        ".mtfleet-jobs.json", "modA", "modB"
    ]  # fmt: skip
    # --resume finds them where they were written
    again = cli(fleet, *args, "--resume", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "written before to" in again.stderr and "modA/values-es/strings.xml" in again.stderr


def test_outputs_that_would_overwrite_each_other_are_refused_before_anything_is_sent(
    fleet: LocalFleet, tmp_path: Path
) -> None:
    po = tmp_path / "po"
    po.mkdir()
    for name in ("messages.pot", "errors.pot"):  # a gettext template's translation is es.po
        (po / name).write_text(f'msgid ""\nmsgstr ""\n\nmsgid "{EN[0]}"\nmsgstr ""\n')
    before = jobs_made(fleet)
    proc = cli(fleet, "submit", "po/messages.pot", "po/errors.pot", "--to", "es", "--out", "out",
               cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and jobs_made(fleet) == before  # nothing sent
    said = " ".join(proc.stderr.split())
    assert "messages.pot" in said and "errors.pot" in said and "es.po" in said
    assert not (tmp_path / "out" / "es.po").exists()
    # --naming suffix: each its own name
    named = cli(fleet, "submit", "po/messages.pot", "po/errors.pot", "--to", "es", "--from", "en",
                "--out", "out", "--naming", "suffix", cwd=tmp_path)  # fmt: skip
    assert named.returncode == 0, named.stderr
    assert {p.name for p in (tmp_path / "out").glob("*.po")} == {"messages.es.po", "errors.es.po"}
