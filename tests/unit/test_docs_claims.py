"""What the docs claim that can be checked against the code itself (issue 39, item 10): every
route a page names is served and every route it calls not served is not; every "status `type`"
it gives is the status the error table gives that type on ``/v1``; a line that lists the
document formats lists them all. The examples themselves run in tests/e2e/test_docs_examples.py.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from fastapi.routing import APIRoute

from mtfleet import formats as documents
from mtfleet.api import errors
from mtfleet.core.errors import MTError
from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
METHODS = "GET|POST|PUT|PATCH|DELETE"
#: `GET /v1/jobs/{id}`, `GET/PATCH/DELETE /v3/style_rules/{id}`, `GET /v1/glossaries[/{id}]`
ROUTE = re.compile(rf"`((?:{METHODS})(?:/(?:{METHODS}))*) (/[^`\s]*)`")
#: the routes of an OpenAI-compatible inference server, which docs/engines.md names (the
#: `openai` engine calls them); not the fleet's
NOT_OURS = {"/v1/models", "/v1/chat/completions", "/v1/completions"}
NOT_SERVED_HEADING = re.compile(r"^#+ Not served", re.I)
#: a page whose routes are written relative to its surface's prefix
PREFIX = {"libretranslate.md": "/libretranslate"}


def _claims(text: str, prefix: str = "") -> list[tuple[str, str]]:
    """(method, path) for each route named in ``text``: optional parts both ways, no query."""
    found = []
    for methods, path in ROUTE.findall(text):
        path = prefix + re.sub(r"\[\?[^\]]*\]|\?.*$", "", path)  # a query, optional or not
        variants = {re.sub(r"\[([^\]]*)\]", r"\1", path), re.sub(r"\[[^\]]*\]", "", path)}
        found += [(m, p) for m in methods.split("/") for p in sorted(variants)]
    return found


#: a path alone, in a "Not served" section: served by no method
BARE = re.compile(r"(?<![A-Z] )`(/[^`\s]*)`")


def _unserved(text: str, prefix: str = "") -> list[tuple[str, str]]:
    bare = [
        (m, prefix + p.replace("*", "x")) for p in BARE.findall(text) for m in METHODS.split("|")
    ]
    return _claims(text, prefix) + bare


def _sections(page: Path) -> tuple[str, str]:
    """The page's text outside and inside its "Not served" sections."""
    served: list[str] = []
    not_served: list[str] = []
    into = served
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            into = not_served if NOT_SERVED_HEADING.match(line) else served
        into.append(line)
    return "\n".join(served), "\n".join(not_served)


@cache
def _routes() -> list[tuple[frozenset[str], re.Pattern[str]]]:
    from mtfleet.api.app import create_app

    return [
        (frozenset(r.methods), re.compile(re.sub(r"\{[^}]+\}", "[^/]+", r.path)))
        for r in create_app().routes
        if isinstance(r, APIRoute)
    ]


def _served(method: str, path: str) -> bool:
    concrete = re.sub(r"\{[^}]+\}", "0123456789abcdef0123456789abcdef", path)
    return any(method in ms and rx.fullmatch(concrete) for ms, rx in _routes())


SERVED = sorted(
    {
        (page.relative_to(ROOT).as_posix(), m, p)
        for page in PAGES
        for m, p in _claims(_sections(page)[0], PREFIX.get(page.name, ""))
        if p not in NOT_OURS
    }
)
NOT_SERVED = sorted(
    {
        (page.relative_to(ROOT).as_posix(), m, p)
        for page in PAGES
        for m, p in _unserved(_sections(page)[1], PREFIX.get(page.name, ""))
    }
)


def test_the_docs_name_routes_both_ways() -> None:
    assert len(SERVED) > 50
    assert any(page == "docs/deepl.md" for page, _, _ in NOT_SERVED)


@pytest.mark.parametrize(("page", "method", "path"), SERVED)
def test_each_route_the_docs_name_is_served(page: str, method: str, path: str) -> None:
    assert _served(method, path), f"{page} names {method} {path}, which the API does not serve"


@pytest.mark.parametrize(("page", "method", "path"), NOT_SERVED)
def test_each_route_the_docs_call_not_served_is_not(page: str, method: str, path: str) -> None:
    assert not _served(method, path), f"{page} says {method} {path} is not served; it is"


def _error_classes() -> dict[str, type[MTError]]:
    import mtfleet.api.app  # noqa: F401 - every module that defines an error class

    found: dict[str, type[MTError]] = {}
    todo: list[type[MTError]] = [MTError]
    while todo:
        cls = todo.pop()
        found.setdefault(cls.code, cls)
        todo += cls.__subclasses__()
    return found


#: "422 `invalid_input`", "**429** `overloaded`"
STATUS_CLAIM = re.compile(r"\b([1-5]\d\d)\*{0,2} `([a-z_]+)`")
#: the pages about /v1 (the drop-in pages give their own surfaces' statuses)
V1_PAGES = [p for p in PAGES if p.name not in {"deepl.md", "libretranslate.md"}]
STATUS_CLAIMS = sorted(
    {
        (page.relative_to(ROOT).as_posix(), int(status), type_)
        for page in V1_PAGES
        for status, type_ in STATUS_CLAIM.findall(page.read_text(encoding="utf-8"))
    }
)


def test_the_docs_give_statuses() -> None:
    assert len(STATUS_CLAIMS) >= 15


@pytest.mark.parametrize(("page", "status", "type_"), STATUS_CLAIMS)
def test_each_status_the_docs_give_is_the_apis(page: str, status: int, type_: str) -> None:
    """The error table's status for the class of that type, or the type FastAPI's own errors
    of that status have; a type the table does not list is the class's own status (422 for an
    ``invalid_document``, which is an ``InvalidInput``)."""
    http = {code for code, t in errors.HTTP_TYPES.items() if t == type_}
    cls = _error_classes().get(type_)
    table = {errors.status_for(cls.__new__(cls), "v1")} if cls is not None else set()
    known = http | table | _extra_statuses(type_)
    assert known, f"{page}: no error of type {type_!r}"
    assert status in known, f"{page} says {status} `{type_}`; the API answers {sorted(known)}"


def _extra_statuses(type_: str) -> set[int]:
    """Types answered outside the error tree: the request guard's."""
    return {"request_timeout": {408}}.get(type_, set())


@cache
def _name_pattern(fmt: documents.DocumentFormat) -> re.Pattern[str]:
    """A format's name or any of its extensions, as a word of its own."""
    names = "|".join(re.escape(n) for n in [fmt.name, *(e.lstrip(".") for e in fmt.extensions)])
    return re.compile(rf"(?<![\w-])(?:{names})(?![\w-])", re.I)


def _mentions(line: str, fmt: documents.DocumentFormat) -> bool:
    # (one compiled pattern per format: LISTS runs this on every line of the docs in every
    # test process's collection, 90,000 calls; a search per name took 0.35-0.5 CPU-s of each)
    return _name_pattern(fmt).search(line) is not None


LISTS = [
    (page.relative_to(ROOT).as_posix(), n, line)
    for page in PAGES
    for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
    if sum(_mentions(line, f) for f in documents.formats()) >= 6
]


def test_the_readme_and_the_deepl_page_list_the_formats() -> None:
    assert {page for page, _, _ in LISTS} >= {"README.md", "docs/deepl.md"}


@pytest.mark.parametrize(("page", "n", "line"), LISTS, ids=[f"{p}:{n}" for p, n, _ in LISTS])
def test_a_line_that_lists_formats_lists_them_all(page: str, n: int, line: str) -> None:
    missing = [f.name for f in documents.formats() if not _mentions(line, f)]
    assert not missing, f"{page}:{n} lists the formats without {missing}"


def test_the_formats_table_has_every_format_and_only_those() -> None:
    text = (ROOT / "docs" / "documents.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \(", text, re.M)
    assert sorted(rows) == sorted(f.name for f in documents.formats())
