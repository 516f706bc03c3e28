"""The DeepL API v2 surface: DeepL's clients, unchanged, pointed at the API's own port
(``deepl.Translator(key, server_url="http://HOST:8000")``) with an mtfleet API key.

Every route is a thin adapter over the submission path (:mod:`mtfleet.api.dropin`,
:class:`mtfleet.api.service.JobService`) and the glossary store; its errors are DeepL's
(:mod:`mtfleet.api.deepl.errors`). What each DeepL parameter does here: docs/deepl.md.
"""

from __future__ import annotations

from fastapi import APIRouter

from mtfleet.api.deepl import (
    account,
    documents,
    glossaries,
    multilingual,
    quality,
    style_rules,
    translate,
    translation_memories,
    write,
)
from mtfleet.api.deepl.errors import SURFACE

router = APIRouter()
for part in (
    translate.router,
    documents.router,
    account.router,
    account.v3,
    glossaries.v2,
    multilingual.router,
    style_rules.router,
    translation_memories.router,
    write.router,
    quality.router,
):
    router.include_router(part)

__all__ = ["SURFACE", "router"]
