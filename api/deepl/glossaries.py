"""DeepL's v2 glossaries (``/v2/glossaries``: one language pair each), and what DeepL's v3
ones (:mod:`mtfleet.api.deepl.multilingual`) share with them.

A v2 glossary is a fleet glossary (:mod:`mtfleet.api.routes.glossaries` creates and deletes it
for every surface; ``/v1/glossaries`` lists it too). DeepL's entries come as TSV or CSV
(``source,target`` or DeepL's four-column ``source,target,source_lang,target_lang``).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from mtfleet.api.auth import Caller
from mtfleet.api.deepl import languages
from mtfleet.api.deepl.auth import DeepLCaller
from mtfleet.api.deepl.errors import Route
from mtfleet.api.deepl.glossary_ids import from_deepl, to_deepl
from mtfleet.api.deepl.params import fields, parse
from mtfleet.api.deps import Services, ServicesDep
from mtfleet.api.routes import glossaries as fleet
from mtfleet.core.errors import InvalidInput
from mtfleet.core.glossary import Glossary, GlossaryInfo, GlossaryStore
from mtfleet.core.glossary.multilingual import GlossarySets

v2 = APIRouter(prefix="/v2/glossaries", tags=["deepl"], route_class=Route)

TSV = "text/tab-separated-values"


class Dictionary(BaseModel):
    """One language pair's entries, as DeepL sends them."""

    model_config = ConfigDict(extra="ignore")

    source_lang: str = Field(min_length=2, max_length=16)
    target_lang: str = Field(min_length=2, max_length=16)
    entries: str
    entries_format: str = "tsv"


class GlossaryIn(Dictionary):
    name: str = Field(max_length=100)


def entries_of(d: Dictionary) -> list[tuple[str, str]]:
    """A dictionary's entries as (source, target) pairs; InvalidInput naming a bad line."""
    fmt = d.entries_format.lower()
    if fmt == "tsv":
        rows = [line.split("\t") for line in d.entries.splitlines()]
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(d.entries)))
    else:
        raise InvalidInput(f"entries_format {d.entries_format!r}: use 'tsv' or 'csv'")
    pairs = []
    for n, row in enumerate(rows, 1):
        if not any(c.strip() for c in row):
            continue
        if len(row) not in (2, 4):
            raise InvalidInput(
                f"entries line {n}: expected source and target term ({fmt}), got {len(row)} "
                "column(s)"
            )
        pairs.append((row[0], row[1]))
    return pairs


def timestamp(t: float) -> str:
    """A time as DeepL writes it (its client needs the fractional seconds)."""
    when = dt.datetime.fromtimestamp(t, dt.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def tsv(g: Glossary) -> str:
    rows = [*g.entries.items(), *((t, t) for t in g.protected)]
    return "\n".join(f"{s}\t{t}" for s, t in rows)


def new_glossary(services: Services, caller: Caller, name: str, d: Dictionary) -> Glossary:
    return fleet.create(
        services,
        caller,
        name=name,
        source_lang=languages.to_fleet(d.source_lang),
        target_lang=languages.to_fleet(d.target_lang),
        entries=entries_of(d),
    )


# --- v2 ---------------------------------------------------------------------------------------


def info(g: GlossaryInfo) -> dict[str, Any]:
    return {
        "glossary_id": to_deepl(g.id),
        "name": g.name,
        "ready": True,
        "source_lang": languages.glossary_code(g.source_lang),
        "target_lang": languages.glossary_code(g.target_lang),
        "creation_time": timestamp(g.created_at),
        "entry_count": g.entry_count + g.protected_count,
    }


@v2.post("", status_code=201)
async def create_glossary(
    request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    body = parse(GlossaryIn, await fields(request))
    g = await run_in_threadpool(new_glossary, services, caller, body.name, body)
    return JSONResponse(info(g), status_code=201)


@v2.get("")
def list_glossaries(services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    """The caller's glossaries (those that hold a v3 glossary's dictionaries are listed by
    /v3/glossaries)."""
    in_sets = {
        gid for s in GlossarySets(services.store.r).list_for(caller.owner)
        for gid in s.dictionaries.values()
    }  # fmt: skip
    found = GlossaryStore(services.store.r).list_for(caller.owner)
    return JSONResponse({"glossaries": [info(g) for g in found if g.id not in in_sets]})


@v2.get("/{glossary_id}")
def get_glossary(glossary_id: str, services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    return JSONResponse(
        info(fleet.visible_glossary(services, caller.owner, from_deepl(glossary_id)))
    )


@v2.get("/{glossary_id}/entries")
def glossary_entries(
    glossary_id: str, request: Request, services: ServicesDep, caller: DeepLCaller
) -> Response:
    """The entries as TSV (``Accept`` must allow it: 415 otherwise, as on DeepL)."""
    accept = request.headers.get("accept", "*/*")
    if not any(a in accept for a in (TSV, "*/*", "text/*")):
        return JSONResponse({"message": f"only {TSV} is served"}, status_code=415)
    g = fleet.visible_glossary(services, caller.owner, from_deepl(glossary_id))
    return Response(tsv(g), media_type=f"{TSV}; charset=utf-8")


@v2.delete("/{glossary_id}", status_code=204)
def delete_glossary(glossary_id: str, services: ServicesDep, caller: DeepLCaller) -> Response:
    fleet.delete(
        services, caller, fleet.visible_glossary(services, caller.owner, from_deepl(glossary_id))
    )
    return Response(status_code=204)
