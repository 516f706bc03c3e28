"""How our modules import each other: no cycles, one namespace, the layering the design asks for.

Every ``import`` statement counts, wherever it is (module level, inside a function, under
``TYPE_CHECKING``): a cycle hidden in a function is still two modules that need each other.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("core", "formats", "api", "workers", "producer", "fleet")


def modules() -> dict[str, Path]:
    """Every module of ours by its installed name (``mtfleet.core.store``...)."""
    found = {
        "mtfleet": ROOT / "mtfleet" / "__init__.py",
        "mtfleet.__main__": ROOT / "mtfleet" / "__main__.py",
    }
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = ["mtfleet", *path.relative_to(ROOT).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imports_of(path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ours that ``path`` imports (``from a import b`` is module ``a.b`` when
    that is a module, else ``a``)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if sub in known:
                    out.add(sub)
                elif node.module in known:
                    out.add(node.module)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(path, known) - {name} for name, path in known.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_read_from_the_sources() -> None:
    g = graph()
    assert "mtfleet.workers.runtime" in g["mtfleet.workers.celery_app"]
    assert "mtfleet.core.store" in g["mtfleet.api.service"]
    assert len(g) > 60


def test_no_import_cycles_in_our_packages() -> None:
    assert cycles(graph()) == []


def test_a_cycle_would_be_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_import_of_ours_goes_through_the_mtfleet_namespace() -> None:
    """Installed, only ``mtfleet`` exists: ``import core`` would work in the source tree only."""
    bad = []
    for pkg in (*PACKAGES, "tests", "bench", "scripts"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                bad += [f"{path}: {n}" for n in names if n.split(".")[0] in PACKAGES]
    assert bad == []


def test_the_api_core_and_formats_never_import_workers_and_core_imports_only_core() -> None:
    """``core`` may read inline markup with the formats' pieces (the TM and the glossary use
    :mod:`mtfleet.formats.base`'s tags), nothing above them."""
    g = graph()
    for name, deps in g.items():
        if name.startswith(("mtfleet.api", "mtfleet.core", "mtfleet.formats")):
            assert not {d for d in deps if d.startswith("mtfleet.workers")}, name
        if name.startswith("mtfleet.core"):
            assert all(d.startswith(("mtfleet.core", "mtfleet.formats")) for d in deps), (
                name,
                deps,
            )


def test_the_formats_import_only_themselves_and_the_error_tree() -> None:
    """The filters read and write files and nothing of the fleet (no Redis, no store, no
    settings): their one import from ``core`` is :mod:`mtfleet.core.errors`, a leaf, so a
    refused document is the error table's 422 like any other refusal."""
    g = graph()
    assert g["mtfleet.core.errors"] == set()
    formats = {name: deps for name, deps in g.items() if name.startswith("mtfleet.formats")}
    assert len(formats) > 25
    for name, deps in formats.items():
        outside = {d for d in deps if not d.startswith("mtfleet.formats")}
        assert outside <= {"mtfleet.core.errors"}, (name, outside)


def test_the_client_cli_never_imports_the_operator_cli() -> None:
    """``producer`` (the SDK, the client commands) imports nothing of ``fleet``; the one entry
    point, ``mtfleet.__main__``, puts the two together, and nothing of ours imports it."""
    g = graph()
    for name, deps in g.items():
        if name.startswith("mtfleet.producer"):
            assert not {d for d in deps if d.startswith("mtfleet.fleet")}, (name, deps)
        assert "mtfleet.__main__" not in deps, name
    assert {"mtfleet.producer.cli", "mtfleet.fleet.cli"} <= g["mtfleet.__main__"]


#: Packages of the extras ([server], [flower], [eval], [formats], the engines'): `pip install
#: mtfleet` leaves them out (tests/integration/test_packaging.py installs it so, slowly).
EXTRAS_ONLY = ("redis", "celery", "fastapi", "uvicorn", "lingua", "numpy", "rapidfuzz",
               "pydantic_settings", "flower", "sacrebleu", "torch", "vllm",
               "lxml", "babel", "ruamel", "polib", "srt", "weblate_language_data")  # fmt: skip


def loaded_by(module: str, names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` a fresh interpreter has imported once it has imported ``module``."""
    code = f"import sys, {module}; print(*[m for m in sys.argv[1:] if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", code, *names],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_the_sdk_and_the_cli_load_nothing_of_the_extras() -> None:
    """The client install runs ``mtfleet`` (the operator's commands mounted too): loading it,
    here where every extra is installed, imports none of their packages."""
    assert loaded_by("mtfleet.__main__", EXTRAS_ONLY) == []


def test_the_worker_launcher_starts_its_workers_without_celery_or_redis() -> None:
    """``mtfleet worker`` plans and starts its Celery workers (each a process of its own, which
    imports Celery) and only supervises them: up to the start it imports neither Celery nor
    redis-py (0.2 of its 0.7 CPU-seconds, measured 2026-12-07; the settings check a Redis URL
    with core/redis_urls.py). The launcher runs here to the point it starts the workers."""
    code = (
        "import sys\n"
        "from mtfleet.workers import supervisor\n"
        "def started(self, **_):\n"
        "    print('STARTING', *self.commands)\n"
        "    print('LOADED', *[m for m in ('celery', 'kombu', 'redis') if m in sys.modules])\n"
        "    return 0\n"
        "supervisor.Supervisor.run = started\n"
        "from mtfleet.__main__ import main\n"
        "sys.argv = ['mtfleet', 'worker', '--engine', 'apertium', '--lanes', 'interactive,bulk']\n"
        "main()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
    assert out.returncode == 0, out.stderr
    assert lines.get("STARTING") == "cpu-interactive cpu-bulk", out.stdout
    assert "LOADED" not in lines, out.stdout


def test_a_celery_worker_loads_no_numpy_or_file_format_until_a_memory_needs_them() -> None:
    """A Celery worker's module reads translation memories (their index needs numpy, their
    import files lxml and the formats) only when a request names one: loading it imports none
    of those (0.2 of its 0.85 CPU-seconds, measured 2026-12-07; each worker of the suite and of
    a fleet's restarts pays its start)."""
    heavy = ("numpy", "lxml.etree", "mtfleet.core.tm.formats")
    assert loaded_by("mtfleet.workers.celery_app", heavy) == []
