"""The README's promises are backed by the project's files (its commands are run end to end
by tests/e2e/test_demo.py and by CI, which runs `make test`)."""

from __future__ import annotations

import re
from pathlib import Path

from mtfleet.core.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _quick_start_commands() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "Quick start has no bash block"
    return [line.split("#", 1)[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_quick_start_is_exactly_make_demo_and_make_test() -> None:
    assert _quick_start_commands() == ["make demo", "make test"]


def test_makefile_has_the_quick_start_targets() -> None:
    makefile = (ROOT / "Makefile").read_text()
    for target in ("demo", "test", "lint"):
        assert re.search(rf"^{target}:", makefile, re.M), target


def test_ci_runs_the_readme_test_command() -> None:
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_every_setting_is_documented() -> None:
    table = README.split("## Configuration", 1)[1]
    missing = [f"MT_{n.upper()}" for n in Settings.model_fields if f"`MT_{n.upper()}`" not in table]
    assert missing == []


def test_every_cli_command_is_in_the_readme() -> None:
    from mtfleet.producer.cli import app

    names = [c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands]
    assert len(names) >= 10
    assert [n for n in names if f"mtfleet {n}" not in README] == []
