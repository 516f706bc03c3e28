"""A client that follows the docs never fails on its own rate (issue 39, item 1): a fleet whose
keys get the default rate (MT_KEY_RATE=10 requests a second; the suite otherwise sets 1000),
and a key made without a rate, as the demo makes it. `mtfleet submit` of 12 files, the same
sent with --no-wait and picked up with --resume, and the SDK's examples in docs/api.md as
printed: each answered 429 with Retry-After along the way, each waits it out and finishes."""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mtfleet.fleet.localfleet import LocalFleet
from tests.e2e.fleet_control import apertium_fleet, cli, cli_args, cli_env
from tests.e2e.test_docs_examples import examples

pytestmark = pytest.mark.slow

FILES = 12


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    env = {"MT_AUTH": "required", "MT_KEY_RATE": "10"}  # the default rate, as shipped
    with apertium_fleet(redis_server, env) as f:
        f.env["MT_API_KEY"] = f.create_api_key("default-rate")  # no rate: the default
        yield f


def twelve_files(folder: Path) -> list[str]:
    folder.mkdir()
    names = []
    for i in range(FILES):
        name = f"catalogue{i}.txt"
        (folder / name).write_text(f"The red shirt number {i} is in the house.\nAdd to cart\n")
        names.append(name)
    return names


def assert_written(out: Path) -> None:
    for i in range(FILES):
        text = (out / f"catalogue{i}.es.txt").read_text(encoding="utf-8")
        assert text.count("\n") == 2 and "camisa" in text, text


def test_submit_of_twelve_files_at_the_default_rate_writes_them_all(
    fleet: LocalFleet, tmp_path: Path
) -> None:
    names = twelve_files(tmp_path / "src")
    proc = cli(
        fleet, "submit", *names, "--from", "en", "--to", "es", "--out", "../out",
        cwd=tmp_path / "src",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.split()) == FILES
    assert_written(tmp_path / "out")


def test_resume_of_twelve_jobs_at_the_default_rate_writes_them_all(
    fleet: LocalFleet, tmp_path: Path
) -> None:
    names = twelve_files(tmp_path / "src")
    args = ("submit", *names, "--from", "en", "--to", "es", "--out", "../out")
    sent = cli(fleet, *args, "--no-wait", cwd=tmp_path / "src")
    assert sent.returncode == 0, sent.stderr
    assert len(sent.stdout.split()) == FILES
    resumed = cli(fleet, *args, "--resume", cwd=tmp_path / "src")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == ""  # nothing sent again
    assert_written(tmp_path / "out")


PIPED = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
SDK_EXAMPLES = [e for e in examples() if e.page == "docs/api.md" and e.lang == "python"]


def test_the_sdk_section_has_its_examples() -> None:
    assert len(SDK_EXAMPLES) >= 2


def test_the_sdk_examples_run_as_printed_at_the_default_rate(
    fleet: LocalFleet, tmp_path: Path
) -> None:
    """Every example at once, beside a `mtfleet submit` of 12 files, all with the one key (one
    user's scripts and the team's submit): each meets the others' requests in the key's rate
    and waits its turn."""
    names = twelve_files(tmp_path / "src")
    submit = ("submit", *names, "--from", "en", "--to", "es", "--out", "../out")
    runs = [(shlex.join(submit), cli_args(*submit), tmp_path / "src")] + [
        (example.id, [sys.executable, "-c", example.code], tmp_path) for example in SDK_EXAMPLES
    ]
    procs = [
        (what, subprocess.Popen(args, cwd=cwd, env=cli_env(fleet), **PIPED))
        for what, args, cwd in runs
    ]
    failed = []
    for what, proc in procs:
        out, err = proc.communicate(timeout=300)
        if proc.returncode != 0:
            failed.append(f"{what}\n{out}\n{err}")
    assert not failed, "\n\n".join(failed)
    assert_written(tmp_path / "out")
