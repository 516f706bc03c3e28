"""mypy over mtfleet and the benchmarks, each file named by the module it is imported as.

The top-level folders (``api/``, ``core/``, ``fleet/``, ``formats/``, ``producer/``,
``workers/``) are the subpackages ``mtfleet.api``... by pyproject.toml's
``[tool.setuptools.package-dir]``: the editable install's finder and the wheel map them so, and
mypy's own file discovery cannot (it names a file by its folders, ``api.service``, and finds no
``mtfleet.api`` to check an import of it against). So this script reads the same table, names
every file for mypy itself (``api/service.py`` is ``mtfleet.api.service``), and runs mypy's
build on them with the ``[tool.mypy]`` options; errors name the files where they are.

    python scripts/typecheck.py        # what `make lint` runs; exit status 1 on errors
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from mypy import build
from mypy.errors import CompileError
from mypy.main import process_options
from mypy.modulefinder import BuildSource

ROOT = Path(__file__).resolve().parents[1]
#: Checked beside the package, as its own top-level package.
ALSO = ("bench",)


def package_dirs(root: Path = ROOT) -> dict[str, Path]:
    """pyproject's package -> folder table (the packages setuptools installs)."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    table = config["tool"]["setuptools"]["package-dir"]
    return {package: root / folder for package, folder in table.items()}


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every Python file of the package and of :data:`ALSO`, by its module name."""
    found: dict[str, Path] = {}
    roots = {**package_dirs(root), **{name: root / name for name in ALSO}}
    for package, folder in roots.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            name = ".".join([package, *(p for p in parts if p != "__init__")])
            found.setdefault(name, path)
    return found


def main() -> int:
    sources = [BuildSource(str(path), name) for name, path in modules().items()]
    _, options = process_options(
        ["--config-file", str(ROOT / "pyproject.toml")], require_targets=False
    )
    try:
        result = build.build(sources, options, stdout=sys.stdout, stderr=sys.stderr)
    except CompileError as exc:
        print("\n".join(exc.messages))
        return 1
    for line in result.errors:
        print(line)
    if result.errors:
        files = {line.split(":", 1)[0] for line in result.errors if ": error:" in line}
        print(f"Found errors in {len(files)} file(s) ({len(sources)} source files)")
        return 1
    print(f"Success: no issues found in {len(sources)} source files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
