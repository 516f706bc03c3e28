"""The README's promises are backed by the project's files (its commands are run end to end
by tests/e2e/test_demo.py and by CI, which runs `make test`), and the reference in docs/ keeps
up with the code: the configuration page is generated from the settings, every CLI command is
documented, every link resolves."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from mtfleet.core.settings import COMPONENTS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"
README_MAX_LINES = 170

_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _docs_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md")))


def _gen_config_docs() -> ModuleType:
    path = ROOT / "scripts" / "gen_config_docs.py"
    spec = importlib.util.spec_from_file_location("gen_config_docs", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


def _quick_start_commands() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "Quick start must have exactly one bash block"
    return [line.split("#", 1)[0].strip() for line in blocks[0].splitlines() if line.strip()]


def test_quick_start_is_exactly_make_demo_and_make_test() -> None:
    assert _quick_start_commands() == ["make demo", "make test"]


def test_makefile_has_the_quick_start_targets() -> None:
    makefile = (ROOT / "Makefile").read_text()
    for target in ("demo", "test", "lint", "docs"):
        assert re.search(rf"^{target}:", makefile, re.M), target
    phony = re.search(r"^\.PHONY:(.*)$", makefile, re.M)
    assert phony and "docs" in phony.group(1).split()
    assert re.search(r"^docs:\n\t\$\(PY\) scripts/gen_config_docs\.py", makefile, re.M)


def test_ci_runs_the_readme_test_command() -> None:
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_configuration_page_is_up_to_date() -> None:
    problem = _gen_config_docs().check()
    assert problem is None, problem


def test_every_setting_is_on_the_configuration_page() -> None:
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    names = [n for component in COMPONENTS.values() for n in component.model_fields]
    missing = [f"MT_{n.upper()}" for n in names if f"`MT_{n.upper()}`" not in page]
    assert missing == []


def test_configuration_check_fails_on_a_stale_page(tmp_path: Path) -> None:
    gen = _gen_config_docs()
    stale = tmp_path / "configuration.md"
    stale.write_text(gen.render().replace("`MT_REDIS_URL`", "`MT_REDIS`"), encoding="utf-8")
    assert gen.main(["--check", "--output", str(stale)]) == 1
    assert gen.main(["--output", str(stale)]) == 0
    assert gen.main(["--check", "--output", str(stale)]) == 0


def _cli_commands() -> list[str]:
    from mtfleet.__main__ import app

    def name(c: object) -> str:
        callback = getattr(c, "callback", None)
        return getattr(c, "name", None) or (callback.__name__ if callback else "").replace("_", "-")

    out = [name(c) for c in app.registered_commands]
    for group in app.registered_groups:
        assert group.name and group.typer_instance, group
        out.append(group.name)
        out += [f"{group.name} {name(c)}" for c in group.typer_instance.registered_commands]
    return out


def test_every_cli_command_is_documented() -> None:
    names = _cli_commands()
    assert len(names) >= 10
    assert "glossary create" in names and "keys revoke" in names
    text = README + "\n" + _docs_text()
    assert [n for n in names if f"mtfleet {n}" not in text] == []


def test_readme_is_short() -> None:
    assert len(README.splitlines()) <= README_MAX_LINES


def test_readme_links_to_every_docs_page() -> None:
    linked = {m for m in _LINK.findall(README) if m.startswith("docs/")}
    for link in linked:
        assert (ROOT / link.split("#", 1)[0]).is_file(), link
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md")}
    assert pages - {link.split("#", 1)[0] for link in linked} == set()


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    heads = re.findall(r"^#{1,6} (.+)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


def test_relative_links_in_docs_resolve() -> None:
    broken = []
    for page in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        for link in _LINK.findall(page.read_text(encoding="utf-8")):
            target, _, anchor = link.partition("#")
            if re.match(r"^[a-z]+:", target):
                continue
            path = page.parent / target if target else page
            if not path.exists():
                broken.append(f"{page.name}: {link}")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{page.name}: {link} (no such heading)")
    assert broken == []
