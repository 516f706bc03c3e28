"""workers/engines/apertium.py: stream-format escaping, null-flush commands, mode discovery."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from mtfleet.workers.engines.apertium import discover_modes, escape, null_flush_command, unescape

RESERVED = "\\[]^$/@<>{}"


@pytest.mark.parametrize("ch", list(RESERVED))
def test_reserved_character_is_escaped(ch: str) -> None:
    stream = escape(f"a{ch}b")
    assert f"\\{ch}" in stream
    assert unescape(stream) == f"a{ch}b"


@pytest.mark.parametrize(
    "text",
    [
        "plain text",
        "a\\b[c]d^e$f/g@h<i>j{k}l",
        RESERVED,
        RESERVED * 3,
        "line one\nline two\n",
        "\n",
        "\n\n[x]\n",
        "ends with backslash\\",
        "x.[]",
        ".",
        "[]",
        "  spaced  ",
        "ñandú — 中文 😀",
        "~ a~b ~",
        "",
    ],
)
def test_escape_round_trip(text: str) -> None:
    assert unescape(escape(text)) == text


def test_newline_becomes_superblank() -> None:
    assert "[\n]" in escape("a\nb")


def test_tilde_is_kept_in_a_superblank() -> None:
    # as apertium-destxt does: the post-generator drops a bare ~ (its mark)
    assert escape("Use ~ for home") == "Use [~] for home.[]"
    assert unescape(escape("~~")) == "~~"


def test_nul_never_reaches_the_stream() -> None:
    # NUL separates segments in null-flush mode.
    assert "\0" not in escape("a\0b")


def test_unescape_removes_flush_tail() -> None:
    assert unescape("hola.[]") == "hola"


MODE = (
    "lt-proc '/usr/share/apertium/x/eng-spa.automorf.bin' "
    "| apertium-tagger -g $2 '/x/eng-spa.prob' "
    "| apertium-pretransfer"
    "| apertium-transfer -b '/x/a b.t1x' '/x/t1x.bin' "
    "| lt-proc $1 '/y/eng-spa.autogen.bin' "
    "| lt-proc -p '/y/eng-spa.autopgen.bin'\n"
)


def test_null_flush_command(tmp_path: Path) -> None:
    mode = tmp_path / "eng-spa.mode"
    mode.write_text(MODE)
    cmd = null_flush_command(mode)
    stages = [shlex.split(s) for s in cmd.split(" | ")]
    assert stages == [
        ["lt-proc", "-z", "/usr/share/apertium/x/eng-spa.automorf.bin"],
        ["apertium-tagger", "-z", "-g", "/x/eng-spa.prob"],
        ["apertium-pretransfer", "-z"],
        ["apertium-transfer", "-z", "-b", "/x/a b.t1x", "/x/t1x.bin"],
        ["lt-proc", "-z", "-n", "/y/eng-spa.autogen.bin"],
        ["lt-proc", "-z", "-p", "/y/eng-spa.autopgen.bin"],
    ]
    assert "$1" not in cmd and "$2" not in cmd


def test_null_flush_command_on_installed_mode() -> None:
    mode = Path("/usr/share/apertium/modes/eng-spa.mode")
    if not mode.is_file():
        pytest.skip("apertium-eng-spa is not installed")
    stages = [shlex.split(s) for s in null_flush_command(mode).split(" | ")]
    assert len(stages) == mode.read_text().count("|") + 1
    assert all(words[1] == "-z" for words in stages)


def test_discover_modes(tmp_path: Path) -> None:
    for name in ("eng-spa", "spa-eng", "spa-eng_US", "xxx-yyy", "eng-spa-debug"):
        (tmp_path / f"{name}.mode").write_text("lt-proc '/x'\n")
    (tmp_path / "README").write_text("not a mode")
    found = discover_modes([tmp_path])
    assert found == {
        ("en", "es"): tmp_path / "eng-spa.mode",
        ("es", "en"): tmp_path / "spa-eng.mode",
    }


def test_discover_modes_first_directory_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (first / "eng-cat.mode").write_text("x")
    (second / "eng-cat.mode").write_text("y")
    (second / "cat-eng.mode").write_text("z")
    found = discover_modes([tmp_path / "missing", first, second])
    assert found == {("en", "ca"): first / "eng-cat.mode", ("ca", "en"): second / "cat-eng.mode"}


def test_discover_modes_nothing_installed(tmp_path: Path) -> None:
    assert discover_modes([tmp_path / "missing", tmp_path]) == {}
