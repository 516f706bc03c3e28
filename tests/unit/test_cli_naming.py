"""Where `mtfleet submit` writes (issue 39, item 2): each row of docs/api.md's "Output names"
table, as `submit` computes it (the format its extension says, then the name and path under
--out); two same-named files of two folders keep their folders; and an output that would be
written over an input, another output or an earlier submit's file is a clash naming both."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtfleet.producer import batch
from mtfleet.producer.naming import Naming, destinations
from tests.conftest import ROOT

OUT = Path("out")


def table() -> list[tuple[str, str, str]]:
    """(input, output --to es, output --to pt-BR) of each row of the table."""
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    section = text.split("### Output names", 1)[1].split("\n#", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1].startswith("`"):
            rows.append((cells[1].strip("`"), cells[2].strip("`"), cells[3].strip("`")))
    return rows


ROWS = table()


def where(paths: list[str], target: str, naming: Naming = "ecosystem") -> list[Path]:
    """Where `submit --to TARGET --out out` writes ``paths`` (files named so: their format is
    their extension's, a .txt a line file), relative to the current folder."""
    opts = batch.SubmitOptions(target=target)
    files = [(Path(p), batch.sent_as(Path(p), b"", opts)) for p in paths]
    return destinations(files, target, OUT, naming)


def test_the_table_has_a_row_for_each_convention() -> None:
    assert len(ROWS) >= 10
    assert {Path(i).suffix for i, _, _ in ROWS} >= {
        ".xml", ".strings", ".stringsdict", ".arb", ".pot", ".po", ".yml", ".txt", ".html"
    }  # fmt: skip


@pytest.mark.parametrize(("source", "es", "pt_br"), ROWS, ids=[r[0] for r in ROWS])
def test_each_row_of_the_table_is_where_submit_writes(source: str, es: str, pt_br: str) -> None:
    assert where([source], "es") == [OUT / es]
    assert where([source], "pt-BR") == [OUT / pt_br]


@pytest.mark.parametrize(("source", "es", "pt_br"), ROWS, ids=[r[0] for r in ROWS])
def test_naming_suffix_names_every_file_name_dot_target(source: str, es: str, pt_br: str) -> None:
    stem, ext = Path(source).stem, Path(source).suffix
    assert where([source], "es", "suffix") == [OUT / f"{stem}.es{'.po' if ext == '.pot' else ext}"]


def test_two_same_named_files_keep_their_folders() -> None:
    got = where(["modA/values/strings.xml", "modB/values/strings.xml"], "es")
    assert got == [OUT / "modA/values-es/strings.xml", OUT / "modB/values-es/strings.xml"]
    got = where(["a/notes.txt", "b/c/notes.txt", "a/page.html"], "es")
    assert got == [OUT / "a/notes.es.txt", OUT / "b/c/notes.es.txt", OUT / "a/page.es.html"]
    # files of one folder: flat under --out, as before
    assert where(["shop/shoes.txt", "shop/bags.txt"], "es") == [
        OUT / "shoes.es.txt",
        OUT / "bags.es.txt",
    ]


def planned(path: Path, dest: Path) -> batch.FileJobs:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('msgid ""\nmsgstr ""\n')
    opts = batch.SubmitOptions(target="es")
    return batch.plan(path, path.read_bytes(), "po", opts, dest, limit=100)


def test_an_output_over_another_or_over_an_input_is_a_clash_naming_both(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # two templates of one folder are both es.po
    a, b = tmp_path / "po/messages.pot", tmp_path / "po/errors.pot"
    dests = destinations([(a, "po"), (b, "po")], "es", out, "ecosystem")
    assert dests[0] == dests[1] == out / "es.po"
    found = batch.clashes([planned(a, dests[0]), planned(b, dests[1])], batch.Manifest(), out)
    assert len(found) == 1 and str(a) in found[0] and str(b) in found[0]
    # --to en of en.po, written beside it: over the input itself
    en = tmp_path / "po/en.po"
    (dest,) = destinations([(en, "po")], "en", tmp_path / "po", "ecosystem")
    assert dest == en
    found = batch.clashes([planned(en, dest)], batch.Manifest(), tmp_path / "po")
    assert found == [f"{en} would be written over the input {en}"]
    # an earlier submit to the same folder wrote es.po from another file
    manifest = batch.Manifest(files={str(a): planned(a, out / "es.po")})
    found = batch.clashes([planned(b, out / "es.po")], manifest, out)
    assert len(found) == 1 and str(a) in found[0] and str(b) in found[0]
    # the same file again is no clash: its own earlier output is written anew
    assert batch.clashes([planned(a, out / "es.po")], manifest, out) == []
