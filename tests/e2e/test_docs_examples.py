"""Every example in the README and docs/ runs as printed, against a real fleet.

Each ```bash, ```sh and ```python block is extracted and run, in page order, in a folder of its
page that starts empty (the files an example uses, page.html or catalogue.txt, are made by the
example itself or one above it: a reader has no others), from a new shell that has only what
`make demo` tells a user to paste: its virtualenv activated, MT_API_URL, MT_API_KEY and
MT_REDIS_URL exported. The fleet requires API keys, like a real one;
curl runs with --fail-with-body (a .curlrc), so an HTTP error fails the example. A block that
cannot run here (it needs GPUs or Docker, or it is the set-up itself) says so on the line above
it: ``<!-- example: not run (why) -->``.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mtfleet.fleet.demo import paste_line
from mtfleet.fleet.localfleet import LocalFleet
from tests.conftest import ROOT
from tests.e2e.fleet_control import apertium_fleet

pytestmark = pytest.mark.slow

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = {"bash", "sh", "python"}
FENCE = re.compile(r"^```(\w*)\s*$")
NOT_RUN = re.compile(r"^<!-- example: not run \((.+)\) -->$")


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    lang: str
    code: str
    not_run: str | None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def examples() -> list[Example]:
    found = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            m = FENCE.match(lines[i])
            if not m:
                i += 1
                continue
            start, lang = i, m.group(1)
            i += 1
            body = []
            while i < len(lines) and lines[i] != "```":
                body.append(lines[i])
                i += 1
            i += 1
            if lang not in RUNNABLE:
                continue
            above = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
            skip = NOT_RUN.match(above.strip())
            found.append(
                Example(
                    str(page.relative_to(ROOT)),
                    start + 1,
                    lang,
                    "\n".join(body) + "\n",
                    skip.group(1) if skip else None,
                )
            )
    return found


ALL = examples()
RUN = [e for e in ALL if e.not_run is None]


def test_the_docs_have_examples_and_say_why_any_is_not_run() -> None:
    assert len(RUN) >= 10, [e.id for e in RUN]
    assert {e.page for e in RUN} >= {"README.md", "docs/api.md", "docs/documents.md"}
    for e in ALL:
        assert e.not_run is None or len(e.not_run) > 10, e.id  # a reason, not a shrug


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    env = {
        "MT_AUTH": "required",
        "MT_WEBHOOK_ALLOW_PRIVATE": "true",  # docs/webhooks.md's receiver is on 127.0.0.1
    }
    with apertium_fleet(redis_server, env) as f:
        f.env["MT_API_KEY"] = f.create_api_key("docs-examples")
        yield f


class Folders:
    """A folder per page, outside the clone, holding only what a user starts with (curl's
    settings the harness adds, and a folder named ``mtfleet``, as the clone's parent has): the
    files a page's examples use are made by the examples themselves, in the page's order. An
    example run alone (``-k``) first runs the ones above it on its page."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ran: set[str] = set()

    def of(self, page: str) -> Path:
        d = self.root / page.replace("/", "_")
        if not d.exists():
            d.mkdir()
            (d / "curl").mkdir()
            (d / "curl" / ".curlrc").write_text("fail-with-body\nshow-error\n")
            (d / "mtfleet").mkdir()  # the clone, seen from its parent folder
            (d / "mtfleet" / "README.md").write_text("# mtfleet\n")
        return d


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Folders:
    return Folders(tmp_path_factory.mktemp("examples"))


#: A new login shell's PATH on stock Debian: no virtualenv, no pyenv, no `python` (only python3).
NEW_SHELL_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@pytest.mark.parametrize("example", RUN, ids=[e.id for e in RUN])
def test_example_runs_as_printed(example: Example, fleet: LocalFleet, folders: Folders) -> None:
    """From a new shell that has only what `mtfleet demo` tells a user to paste (its
    :func:`~mtfleet.fleet.demo.paste_line`: the virtualenv and the fleet's address and key),
    in a folder outside the clone that holds a folder named ``mtfleet``, as the clone's parent
    does (it once shadowed the package: ``from mtfleet import MTClient`` failed there), and no
    file the page's examples do not make."""
    for above in RUN:
        if above.page == example.page and above.line < example.line and above.id not in folders.ran:
            _run(above, fleet, folders)
    _run(example, fleet, folders)


def _run(example: Example, fleet: LocalFleet, folders: Folders) -> None:
    folders.ran.add(example.id)
    folder = folders.of(example.page)
    line = paste_line(fleet.api_url, fleet.env["MT_API_KEY"], fleet.env["MT_REDIS_URL"])
    env = {
        "HOME": str(folder),
        "PATH": NEW_SHELL_PATH,
        "LANG": "C.UTF-8",
        "CURL_HOME": str(folder / "curl"),  # the harness's: curl fails on an HTTP error
        "COLUMNS": "200",
    }
    if example.lang == "python":
        script, stdin = f"{line} && exec python3 -", example.code
    else:
        script, stdin = f"{line}\n{example.code}", None
    cmd = ["bash", "-e", "-o", "pipefail", "-c", script]
    proc = subprocess.run(
        cmd, cwd=folder, env=env, input=stdin, capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, f"{example.id}\n{example.code}\n{proc.stdout}\n{proc.stderr}"
