"""docs/architecture.md stays true: every module, class, function and constant it names as
`mtfleet.…` exists, every Lua script and file it names is there, and the README links it."""

from __future__ import annotations

import importlib
import re

import pytest

from tests.conftest import ROOT

PAGE = (ROOT / "docs" / "architecture.md").read_text()
NAMES = sorted(set(re.findall(r"`(mtfleet(?:\.\w+)+)`", PAGE)))
SCRIPTS = sorted(set(re.findall(r"`(\w+\.lua)`", PAGE)))
FILES = sorted(set(re.findall(r"`((?:docs|tests|core|formats|scripts)/[\w./]+\.\w+)`", PAGE)))


def resolve(name: str) -> object:
    """The object ``name`` names: the longest importable module prefix, then attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            found = getattr(found, attr)
        return found
    raise ModuleNotFoundError(name)


def test_the_page_names_things() -> None:
    assert len(NAMES) > 80 and len(SCRIPTS) > 15


@pytest.mark.parametrize("name", NAMES)
def test_each_name_on_the_page_exists(name: str) -> None:
    resolve(name)


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_lua_script_on_the_page_exists(script: str) -> None:
    assert (ROOT / "core" / "lua" / script).is_file()


@pytest.mark.parametrize("path", FILES)
def test_each_file_on_the_page_exists(path: str) -> None:
    assert (ROOT / path).exists()


def test_every_lua_script_is_on_the_page() -> None:
    every = {p.name for p in (ROOT / "core" / "lua").glob("*.lua")} - {"lib.lua"}
    assert every <= set(SCRIPTS), sorted(every - set(SCRIPTS))


def test_the_readme_links_it() -> None:
    assert "(docs/architecture.md)" in (ROOT / "README.md").read_text()
