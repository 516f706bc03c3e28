"""What an API key may call: its route families (``mtfleet keys create --scope``), as DeepL's
scoped keys. A key made without a scope (and every key made before scopes) may call every
family; a scoped key calling a route of another family is answered 403 (``Forbidden``) in its
surface's words (DeepL's clients raise ``AuthorizationException``), with a sentence naming the
family and the key's scopes.

Every route's family is in one table, :data:`ROUTES` (path prefix -> families), for every
surface: ``/v1``, DeepL's, LibreTranslate's and Crowdin's. The request guard checks a key
whose surface sends it in the headers before a byte of the body is read, and every surface's
authentication (:func:`mtfleet.api.auth.caller_for`, LibreTranslate's and Crowdin's keys too)
checks it again with :func:`check`. A path the table does not name is any key's (the app
answers 404); a unit test makes sure every route the app registers has its entry.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

from mtfleet.core.errors import Forbidden, InvalidInput

#: The route families a key may be limited to.
Family = Literal[
    "translate", "documents", "glossaries", "translation_memories", "style_rules", "write", "usage"
]
FAMILIES: tuple[Family, ...] = get_args(Family)
#: A route any valid key may call, whatever its scopes: what the fleet serves (languages,
#: limits), health, the pages and the docs; ``/v1/ops`` and ``/metrics`` go by the key's role.
OPEN: tuple[Family, ...] = ()

#: Each path prefix's families (matched segment by segment, the longest prefix first): a
#: scoped key may call a path when it has one of them.
ROUTES: dict[str, tuple[Family, ...]] = {
    # mtfleet's own /v1
    "/v1/translate": ("translate",),
    # a job is texts or a document (POST /v1/jobs: its body says which, checked by the route)
    "/v1/jobs": ("translate", "documents"),
    "/v1/documents": ("documents",),
    "/v1/glossaries": ("glossaries",),
    "/v1/translation_memories": ("translation_memories",),
    "/v1/languages": OPEN,
    "/v1/limits": OPEN,
    "/v1/ops": OPEN,
    # DeepL's
    "/v2/translate": ("translate",),
    "/v2/document": ("documents",),
    "/v2/glossaries": ("glossaries",),
    "/v3/glossaries": ("glossaries",),
    "/v2/glossary-language-pairs": OPEN,
    "/v3/translation_memories": ("translation_memories",),
    "/deepl-files/translation_memories": ("translation_memories",),
    "/v3/style_rules": ("style_rules",),
    # DeepL's quality evaluations (its alpha's path: /v1, though DeepL's surface)
    "/v1/quality-evaluations": ("translate",),
    "/v2/write": ("write",),
    "/v2/usage": ("usage",),
    "/v2/languages": OPEN,
    "/v3/languages": OPEN,
    # LibreTranslate's
    "/libretranslate/translate": ("translate",),
    "/libretranslate/detect": ("translate",),
    "/libretranslate/suggest": ("translate",),
    "/libretranslate/translate_file": ("documents",),
    "/libretranslate/download_file": ("documents",),
    "/libretranslate/languages": OPEN,
    "/libretranslate/frontend": OPEN,
    "/libretranslate/health": OPEN,
    # Crowdin's Custom MT (its manifest installs a translator)
    "/crowdin": ("translate",),
    # health, metrics, pages and docs
    "/healthz": OPEN,
    "/readyz": OPEN,
    "/metrics": OPEN,
    "/": OPEN,
    "/ops": OPEN,
    "/static": OPEN,
    "/docs": OPEN,
    "/openapi.json": OPEN,
}
_LONGEST_FIRST = sorted(ROUTES, key=len, reverse=True)


def families_of(path: str) -> tuple[Family, ...] | None:
    """The families of the route at ``path`` (``OPEN``: any key's), or None when the table
    names no prefix of it."""
    for prefix in _LONGEST_FIRST:
        if path == prefix or (prefix != "/" and path.startswith(prefix + "/")):
            return ROUTES[prefix]
    return None


def check(scopes: tuple[Family, ...] | None, path: str) -> None:
    """Raises :class:`Forbidden` when a key of ``scopes`` (None: every family) may not call
    ``path``."""
    if scopes is None:
        return
    require(scopes, families_of(path) or OPEN, path)


def require(scopes: tuple[Family, ...] | None, families: Iterable[Family], where: str) -> None:
    """Raises :class:`Forbidden` unless a key of ``scopes`` has one of ``families`` (none:
    any key may), naming them, ``where`` the request went and the key's scopes."""
    needed = tuple(families)
    if scopes is None or not needed or any(f in scopes for f in needed):
        return
    has = ", ".join(scopes) if scopes else "none"
    raise Forbidden(
        f"this API key may not use {' or '.join(needed)} ({where}): its scopes are {has}; "
        f"an operator can allow it with mtfleet keys set-scope"
    )


def parse_scopes(text: str | Iterable[str] | None) -> tuple[Family, ...] | None:
    """A ``--scope`` value (``translate,documents``; ``all`` or nothing: every family) as a
    key's scopes, in :data:`FAMILIES`' order; :class:`InvalidInput` for an unknown family."""
    if text is None:
        return None
    names = text.split(",") if isinstance(text, str) else list(text)
    wanted = {n.strip().lower() for n in names if n.strip()}
    if not wanted or wanted == {"all"}:
        return None
    unknown = sorted(wanted - set(FAMILIES))
    if unknown:
        raise InvalidInput(
            f"unknown scope {', '.join(unknown)}: a key's scopes are some of "
            f"{', '.join(FAMILIES)} (or all)"
        )
    return tuple(f for f in FAMILIES if f in wanted)


def stored_scopes(raw: str | None) -> tuple[Family, ...] | None:
    """A key's scopes as its hash keeps them (a comma-separated list; missing or empty: every
    family, as keys made before scopes); a name no longer a family is dropped."""
    if not raw:
        return None
    return tuple(f for f in FAMILIES if f in raw.split(","))
