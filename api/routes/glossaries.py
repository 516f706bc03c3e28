"""/v1/glossaries: create, list, read and delete glossaries (:mod:`core.glossary`).

Same API keys as jobs: a glossary belongs to the key that made it, and another key's glossary
answers exactly as a missing one (404). A job names one with ``glossary_id``.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, Response

from mtfleet.api.auth import Caller, CallerDep
from mtfleet.api.deps import Services, ServicesDep
from mtfleet.api.errors import documented
from mtfleet.core.apikeys import Storage
from mtfleet.core.glossary import (
    Glossary,
    GlossaryInfo,
    GlossaryNotFound,
    GlossaryStore,
    parse_tsv,
    validate,
    visible,
)
from mtfleet.core.schemas import (
    GlossaryCreate,
    GlossaryDetail,
    GlossaryList,
    GlossaryPublic,
)

router = APIRouter(prefix="/v1/glossaries", tags=["glossaries"])

ERRORS = documented(401, 404, 422, 429, 503)


def public(g: GlossaryInfo) -> GlossaryPublic:
    return GlossaryPublic(**g.model_dump(include=set(GlossaryPublic.model_fields)))


def detail(g: Glossary) -> GlossaryDetail:
    return GlossaryDetail(**g.model_dump(include=set(GlossaryDetail.model_fields)))


def _store(services: Services) -> GlossaryStore:
    return GlossaryStore(services.store.r)


def _storage(services: Services, caller: Caller) -> Storage | None:
    """The caller's storage quota (None without auth)."""
    if caller.key is None:
        return None
    return services.apikeys.storage(caller.key, services.settings.keys.key_storage_mb)


@router.post("", status_code=201, response_model=GlossaryDetail, responses=ERRORS)
def create_glossary(
    body: GlossaryCreate, services: ServicesDep, caller: CallerDep, response: Response
) -> GlossaryDetail:
    """Create a glossary for one language pair (entries, protected terms and/or protected
    patterns). Glossaries do not change: to change one, create another and delete the old
    one."""
    pairs = list(body.entries.items())
    if body.entries_tsv:
        pairs += parse_tsv(body.entries_tsv)
    g = create(
        services,
        caller,
        name=body.name,
        source_lang=body.source_lang,
        target_lang=body.target_lang,
        entries=pairs,
        protected=body.protected,
        protected_patterns=body.protected_patterns,
    )
    response.headers["Location"] = f"/v1/glossaries/{g.id}"
    return detail(g)


def create(
    services: Services,
    caller: Caller,
    *,
    name: str,
    source_lang: str,
    target_lang: str,
    entries: Sequence[tuple[str, str]],
    protected: Sequence[str] = (),
    protected_patterns: Sequence[str] = (),
) -> Glossary:
    """Validate and store a glossary of the caller's, within its limits (the one way every
    surface creates one)."""
    s = services.settings
    draft = validate(
        name=name,
        source_lang=source_lang,
        target_lang=target_lang,
        entries=entries,
        protected=protected,
        protected_patterns=protected_patterns,
        max_terms=s.glossaries.glossary_max_terms,
        max_term_chars=s.glossaries.glossary_max_term_chars,
    )
    return _store(services).create(
        draft,
        owner=caller.owner,
        max_per_owner=s.glossaries.glossary_max_per_key,
        storage=_storage(services, caller),
    )


@router.get("", response_model=GlossaryList, responses=ERRORS)
def list_glossaries(services: ServicesDep, caller: CallerDep) -> GlossaryList:
    """The caller's glossaries, oldest first, without their terms."""
    return GlossaryList(glossaries=[public(g) for g in _store(services).list_for(caller.owner)])


def visible_glossary(services: Services, owner: str, glossary_id: str) -> Glossary:
    """One of ``owner``'s glossaries, with its terms (GlossaryNotFound otherwise)."""
    g = _store(services).get_full(glossary_id)
    if g is None or not visible(g, owner):
        raise GlossaryNotFound(f"glossary {glossary_id} not found")
    return g


@router.get("/{glossary_id}", response_model=GlossaryDetail, responses=ERRORS)
def get_glossary(glossary_id: str, services: ServicesDep, caller: CallerDep) -> GlossaryDetail:
    """One glossary with its entries and protected terms."""
    return detail(visible_glossary(services, caller.owner, glossary_id))


@router.delete("/{glossary_id}", status_code=204, responses=ERRORS)
def delete_glossary(glossary_id: str, services: ServicesDep, caller: CallerDep) -> Response:
    """Delete a glossary: new jobs can no longer name it; jobs accepted before still finish
    with it (its terms are kept for MT_RESULT_TTL_S, then expire)."""
    delete(services, caller, visible_glossary(services, caller.owner, glossary_id))
    return Response(status_code=204)


def delete(services: Services, caller: Caller, g: GlossaryInfo) -> None:
    """Delete one of the caller's glossaries (jobs accepted before finish with it)."""
    if not _store(services).delete(
        g.id,
        owner=g.owner,
        retention_s=services.settings.jobs.result_ttl_s,
        storage=_storage(services, caller),
    ):
        raise GlossaryNotFound(f"glossary {g.id} not found")
