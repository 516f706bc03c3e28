"""DeepL's multilingual glossaries (``/v3/glossaries``, the ones the current client uses):
several dictionaries, one per language pair, under one id.

Each dictionary is a fleet glossary (made as a v2 one is: :func:`glossaries.new_glossary`); the
multilingual glossary maps pairs to them (:mod:`mtfleet.core.glossary.multilingual`). Changing a
dictionary stores a new glossary and deletes the old one (jobs already accepted finish with it).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from mtfleet.api.auth import Caller
from mtfleet.api.deepl import languages
from mtfleet.api.deepl.auth import DeepLCaller
from mtfleet.api.deepl.errors import Route
from mtfleet.api.deepl.glossaries import Dictionary, entries_of, new_glossary, timestamp, tsv
from mtfleet.api.deepl.glossary_ids import from_deepl, to_deepl, visible_set
from mtfleet.api.deepl.params import fields, parse
from mtfleet.api.deps import Services, ServicesDep
from mtfleet.api.routes import glossaries as fleet
from mtfleet.core.errors import InvalidInput
from mtfleet.core.glossary import Glossary, GlossaryInfo, GlossaryNotFound, GlossaryStore
from mtfleet.core.glossary.multilingual import GlossarySet, GlossarySets

router = APIRouter(prefix="/v3/glossaries", tags=["deepl"], route_class=Route)


class GlossarySetIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(max_length=100)
    dictionaries: list[Dictionary] = Field(min_length=1)


class GlossarySetPatch(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(None, max_length=100)
    dictionaries: list[Dictionary] = Field(default_factory=list)


def _set(services: Services, caller: Caller, set_id: str) -> GlossarySet:
    found = visible_set(services, caller, set_id)
    if found is None:
        raise GlossaryNotFound(f"glossary {set_id} not found")
    return found


def _dictionary_info(g: GlossaryInfo) -> dict[str, Any]:
    return {
        "source_lang": languages.glossary_code(g.source_lang),
        "target_lang": languages.glossary_code(g.target_lang),
        "entry_count": g.entry_count + g.protected_count,
    }


def set_info(services: Services, found: GlossarySet) -> dict[str, Any]:
    store = GlossaryStore(services.store.r)
    dictionaries = []
    for gid in found.dictionaries.values():
        g = store.get(gid)
        if g is not None:
            dictionaries.append(_dictionary_info(g))
    return {
        "glossary_id": to_deepl(found.id),
        "name": found.name,
        "creation_time": timestamp(found.created_at),
        "dictionaries": dictionaries,
    }


def _replace(
    services: Services, caller: Caller, found: GlossarySet, d: Dictionary, *, merge: bool
) -> Glossary:
    """Store ``d`` as the set's dictionary for its pair (merged into the old entries, or
    instead of them) and delete the glossary it replaces."""
    source, target = languages.to_fleet(d.source_lang), languages.to_fleet(d.target_lang)
    old_id = found.dictionaries.get((source, target))
    old = GlossaryStore(services.store.r).get_full(old_id) if old_id else None
    entries = entries_of(d)
    if merge and old is not None:
        given = {s for s, _ in entries}
        entries = [(s, t) for s, t in old.entries.items() if s not in given] + entries
    g = fleet.create(
        services, caller, name=found.name, source_lang=source, target_lang=target, entries=entries
    )
    GlossarySets(services.store.r).put(found.id, source, target, g.id)
    if old is not None:
        fleet.delete(services, caller, old)
    return g


@router.post("", status_code=201)
async def create_set(request: Request, services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    body = parse(GlossarySetIn, await fields(request))

    pairs = [
        (languages.to_fleet(d.source_lang), languages.to_fleet(d.target_lang))
        for d in body.dictionaries
    ]
    if len(set(pairs)) < len(pairs):
        raise InvalidInput("a glossary has one dictionary per language pair; a pair is repeated")

    def create() -> dict[str, Any]:
        made: list[Glossary] = []
        try:
            for d in body.dictionaries:
                made.append(new_glossary(services, caller, body.name, d))
        except BaseException:
            for g in made:
                fleet.delete(services, caller, g)
            raise
        set_id = GlossarySets(services.store.r).create(
            owner=caller.owner,
            name=body.name,
            dictionaries={(g.source_lang, g.target_lang): g.id for g in made},
        )
        return set_info(services, _set(services, caller, set_id))

    return JSONResponse(await run_in_threadpool(create), status_code=201)


@router.get("")
def list_sets(services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    found = GlossarySets(services.store.r).list_for(caller.owner)
    return JSONResponse({"glossaries": [set_info(services, s) for s in found]})


@router.get("/{glossary_id}")
def get_set(glossary_id: str, services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    return JSONResponse(set_info(services, _set(services, caller, glossary_id)))


@router.patch("/{glossary_id}")
async def update_set(
    glossary_id: str, request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    """Rename, and/or merge entries into dictionaries (a new pair adds a dictionary)."""
    body = parse(GlossarySetPatch, await fields(request))

    def update() -> dict[str, Any]:
        found = _set(services, caller, glossary_id)
        if body.name is not None:
            if not body.name.strip():
                raise InvalidInput("a glossary name is 1-100 printable characters")
            GlossarySets(services.store.r).rename(found.id, body.name.strip())
            found.name = body.name.strip()
        for d in body.dictionaries:
            _replace(services, caller, found, d, merge=True)
        return set_info(services, _set(services, caller, glossary_id))

    return JSONResponse(await run_in_threadpool(update))


@router.put("/{glossary_id}/dictionaries")
async def replace_dictionary(
    glossary_id: str, request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    body = parse(Dictionary, await fields(request))

    def replace() -> dict[str, Any]:
        found = _set(services, caller, glossary_id)
        return _dictionary_info(_replace(services, caller, found, body, merge=False))

    return JSONResponse(await run_in_threadpool(replace))


def _pair(services: Services, caller: Caller, glossary_id: str, request: Request) -> Glossary:
    """The set's dictionary named by the query's ``source_lang`` and ``target_lang``."""
    found = _set(services, caller, glossary_id)
    source, target = (
        request.query_params.get("source_lang"),
        request.query_params.get("target_lang"),
    )
    if not source or not target:
        raise InvalidInput("parameters 'source_lang' and 'target_lang' are required")
    gid = found.dictionaries.get((languages.to_fleet(source), languages.to_fleet(target)))
    g = GlossaryStore(services.store.r).get_full(gid) if gid else None
    if g is None:
        raise GlossaryNotFound(f"glossary {glossary_id} has no dictionary {source} -> {target}")
    return g


@router.get("/{glossary_id}/entries")
def set_entries(
    glossary_id: str, request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    g = _pair(services, caller, glossary_id, request)
    return JSONResponse(
        {
            "dictionaries": [
                {
                    "source_lang": languages.glossary_code(g.source_lang),
                    "target_lang": languages.glossary_code(g.target_lang),
                    "entries": tsv(g),
                    "entries_format": "tsv",
                }
            ]
        }
    )


@router.delete("/{glossary_id}", status_code=204)
def delete_set(glossary_id: str, services: ServicesDep, caller: DeepLCaller) -> Response:
    found = _set(services, caller, glossary_id)
    store = GlossaryStore(services.store.r)
    for gid in found.dictionaries.values():
        g = store.get(gid)
        if g is not None:
            fleet.delete(services, caller, g)
    GlossarySets(services.store.r).delete(found.id, found.owner)
    return Response(status_code=204)


@router.delete("/{glossary_id}/dictionaries", status_code=204)
def delete_dictionary(
    glossary_id: str, request: Request, services: ServicesDep, caller: DeepLCaller
) -> Response:
    g = _pair(services, caller, glossary_id, request)
    GlossarySets(services.store.r).remove(from_deepl(glossary_id), g.source_lang, g.target_lang)
    fleet.delete(services, caller, g)
    return Response(status_code=204)
