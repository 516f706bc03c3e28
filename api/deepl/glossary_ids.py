"""Glossary ids on the DeepL surface: DeepL's are UUIDs, the fleet's 32 hex digits (the same
number; DeepL's form is shown, either is taken), and a request's ``glossary_id`` (or each of its
``glossary_ids``) may name a multilingual glossary (v3), whose dictionary for the request's
language pair is the glossary a job applies."""

from __future__ import annotations

from mtfleet.api.auth import Caller
from mtfleet.api.deps import Services
from mtfleet.core.errors import InvalidInput
from mtfleet.core.glossary.multilingual import GlossarySet, GlossarySets


def to_deepl(glossary_id: str) -> str:
    """The UUID form of a fleet id."""
    h = glossary_id
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}" if len(h) == 32 else h


def from_deepl(glossary_id: str) -> str:
    """The fleet id of a DeepL-form (or fleet-form) id."""
    return glossary_id.replace("-", "").lower()


def visible_set(services: Services, caller: Caller, glossary_id: str) -> GlossarySet | None:
    """The caller's multilingual glossary of that id, if it is one."""
    found = GlossarySets(services.store.r).get(from_deepl(glossary_id))
    if found is None or (caller.owner and found.owner != caller.owner):
        return None
    return found


def for_pair(
    services: Services, caller: Caller, glossary_ids: list[str], source: str | None, target: str
) -> tuple[str, ...]:
    """The fleet glossaries a request's ``glossary_id``/``glossary_ids`` stand for on
    ``source`` -> ``target``, in order (a multilingual one: its dictionary for the pair, read
    now, so the next request after an update applies the update; a glossary that is not the
    caller's is refused by the submission path: 404)."""
    if not glossary_ids:
        return ()
    if source is None:
        raise InvalidInput("source_lang is required when a glossary is used")
    out = []
    for glossary_id in glossary_ids:
        found = visible_set(services, caller, glossary_id)
        if found is None:
            out.append(from_deepl(glossary_id))
            continue
        gid = found.dictionaries.get((source, target))
        if gid is None:
            raise InvalidInput(f"glossary {glossary_id} has no dictionary for {source} -> {target}")
        out.append(gid)
    return tuple(dict.fromkeys(out))
