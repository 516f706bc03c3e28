"""What a DeepL request says: its parameters from wherever the client put them, checked.

DeepL takes a JSON object, form fields (``application/x-www-form-urlencoded`` with repeated
``text=`` fields, or multipart), and, deprecated but still sent by old clients, the query
string; the official Python client even sends ``type=target`` as a form body on a GET. Tag
lists come as JSON arrays or comma-separated strings. :func:`fields` reads them all (the body
wins over the query); the models check them and say what a bad one is (400).
"""

from __future__ import annotations

import json
from typing import Any, Literal, TypeVar

from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mtfleet.core.errors import InvalidInput, TooLarge
from mtfleet.core.models import ModelType
from mtfleet.core.schemas import MAX_GLOSSARIES

#: Parameters that may repeat (form) or be arrays (JSON).
LISTS = frozenset(
    {"text", "ignore_tags", "splitting_tags", "non_splitting_tags", "glossary_ids",
     "custom_instructions"}
)  # fmt: skip
#: DeepL's limit on the texts of one request.
MAX_TEXTS = 50

M = TypeVar("M", bound=BaseModel)


async def fields(request: Request) -> dict[str, Any]:
    """The request's parameters: query string, then a JSON object or form body over it."""
    out: dict[str, Any] = {}
    _merge(out, request.query_params.multi_items())
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "application/json" or ctype.endswith("+json"):
        raw = await request.body()
        if raw.strip():
            try:
                body = json.loads(raw)
            except ValueError as exc:
                raise InvalidInput(f"the request body is not valid JSON: {exc}") from exc
            if not isinstance(body, dict):
                raise InvalidInput("the request body must be a JSON object")
            out.update(body)
    elif ctype in ("application/x-www-form-urlencoded", "multipart/form-data"):
        form = await request.form()
        _merge(out, form.multi_items(), replace=True)
    return out


def _merge(out: dict[str, Any], items: list[tuple[str, Any]], *, replace: bool = False) -> None:
    seen: set[str] = set()
    for key, value in items:
        if key in LISTS:
            if replace and key not in seen:
                out[key] = []
            out.setdefault(key, []).append(value)
        else:
            out[key] = value
        seen.add(key)


def parse(model: type[M], values: dict[str, Any]) -> M:
    """``values`` checked by ``model``; InvalidInput naming each bad parameter."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err.get("loc", ()))
            msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
            problems.append(f"parameter '{loc}': {msg}" if loc else msg)
        raise InvalidInput("; ".join(problems)) from exc


def _tag_list(value: Any) -> list[str]:
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    return [t.strip().lower() for item in items for t in str(item).split(",") if t.strip()]


class TranslateIn(BaseModel):
    """``POST /v2/translate``; unknown parameters are ignored, as DeepL does."""

    model_config = ConfigDict(extra="ignore")

    text: list[str] = Field(min_length=1)
    target_lang: str = Field(min_length=2, max_length=16)
    source_lang: str | None = Field(None, max_length=16)
    split_sentences: Literal["0", "1", "nonewlines"] | None = None
    preserve_formatting: bool = False
    tag_handling: Literal["xml", "html"] | None = None
    tag_handling_version: Literal["v1", "v2"] | None = None
    outline_detection: bool = True
    non_splitting_tags: list[str] = Field(default_factory=list)
    splitting_tags: list[str] = Field(default_factory=list)
    ignore_tags: list[str] = Field(default_factory=list)
    formality: Literal["default", "more", "less", "prefer_more", "prefer_less"] | None = None
    glossary_id: str | None = Field(None, max_length=64)
    glossary_ids: list[str] | None = None
    context: str | None = None
    model_type: ModelType | None = None
    show_billed_characters: bool = True
    custom_instructions: list[str] | None = None
    style_id: str | None = None
    translation_memory_id: str | None = None
    translation_memory_threshold: int | None = None

    @field_validator("text", mode="before")
    @classmethod
    def _texts(cls, v: Any) -> Any:
        texts = [v] if isinstance(v, str) else v
        if isinstance(texts, list) and len(texts) > MAX_TEXTS:
            raise TooLarge(f"{len(texts)} texts in one request; DeepL's limit is {MAX_TEXTS}")
        return texts

    @field_validator("split_sentences", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        return str(v).lower() if isinstance(v, int | str) and not isinstance(v, bool) else v

    @field_validator("non_splitting_tags", "splitting_tags", "ignore_tags", mode="before")
    @classmethod
    def _tags(cls, v: Any) -> list[str]:
        return _tag_list(v)

    @field_validator("glossary_ids", mode="before")
    @classmethod
    def _glossary_ids(cls, v: Any) -> Any:
        return None if v is None else [g for g in _tag_list(v)]

    @field_validator("source_lang", "glossary_id", "context", "style_id", mode="before")
    @classmethod
    def _blank(cls, v: Any) -> Any:
        return None if v == "" else v


class DocumentUpload(BaseModel):
    """``POST /v2/document``'s form fields (the file apart)."""

    model_config = ConfigDict(extra="ignore")

    target_lang: str = Field(min_length=2, max_length=16)
    source_lang: str | None = Field(None, max_length=16)
    formality: Literal["default", "more", "less", "prefer_more", "prefer_less"] | None = None
    # mtfleet's (DeepL's document API has none): routed as /v2/translate's is
    model_type: ModelType | None = None
    glossary_id: str | None = Field(None, max_length=64)
    glossary_ids: list[str] | None = None
    output_format: str | None = Field(None, max_length=16)
    style_id: str | None = None
    translation_memory_id: str | None = None
    translation_memory_threshold: int | None = None
    # mtfleet's extension (DeepL has none): the job's final state is POSTed there, signed
    # (docs/webhooks.md); checked like /v1's callback_url
    callback_url: str | None = Field(None, max_length=2048)

    @field_validator("glossary_ids", mode="before")
    @classmethod
    def _glossary_ids(cls, v: Any) -> Any:
        return None if v is None else _tag_list(v)

    @field_validator(
        "source_lang", "glossary_id", "output_format", "style_id", "callback_url", mode="before"
    )
    @classmethod
    def _blank(cls, v: Any) -> Any:
        return None if v == "" else v


def guidance(req: TranslateIn | DocumentUpload) -> dict[str, Any]:
    """The request's ``context``, ``custom_instructions``, ``formality``, ``style_id`` and
    translation memory as the job's fields (:mod:`mtfleet.core.guidance`: a pool whose engine
    cannot follow instructions refuses the instructions, a style rule and a ``more``/``less``
    formality, 400; a memory's matches are served whatever the engine)."""
    out: dict[str, Any] = {}
    if getattr(req, "context", None):
        out["context"] = req.context  # type: ignore[union-attr]
    if getattr(req, "custom_instructions", None):
        out["custom_instructions"] = req.custom_instructions  # type: ignore[union-attr]
    if req.formality:
        out["formality"] = req.formality
    if req.style_id:
        out["style_id"] = req.style_id
    if req.translation_memory_id:
        out["translation_memory_id"] = req.translation_memory_id
    if req.translation_memory_threshold is not None:
        out["translation_memory_threshold"] = req.translation_memory_threshold
    return out


def glossaries(glossary_id: str | None, glossary_ids: list[str] | None) -> list[str]:
    """The glossaries a request names, in order: ``glossary_id``, or up to five
    ``glossary_ids`` (the first listed wins a term; DeepL's limit and its client's wording);
    both at once is refused, as DeepL's client does."""
    if glossary_id and glossary_ids:
        raise InvalidInput("glossary_ids cannot be used together with glossary_id")
    ids = [glossary_id] if glossary_id else list(glossary_ids or [])
    if len(ids) > MAX_GLOSSARIES:
        raise InvalidInput(
            f"glossary_ids must not contain more than {MAX_GLOSSARIES} glossary IDs "
            f"(it names {len(ids)})"
        )
    return ids


#: The last ``page`` a list may be asked for. DeepL sets none; every list here is shorter than
#: this many pages at any page size (a key keeps at most a few hundred style rules or memories),
#: and past it the offset would be more than a store can take (a 503, not the caller's 400).
MAX_PAGE = 10_000


def int_param(value: str | None, name: str, default: int, low: int, high: int) -> int:
    """A query or form parameter read as an integer within ``low``..``high`` (400 otherwise:
    every integer a client sends is bounded)."""
    if value is None or value == "":
        return default
    try:
        n = int(value)
    except ValueError:
        raise InvalidInput(f"parameter '{name}' must be an integer") from None
    if not low <= n <= high:
        raise InvalidInput(f"parameter '{name}' must be {low}-{high}")
    return n


def bool_param(value: str | None, name: str) -> bool:
    """A query or form parameter read as DeepL's booleans (true/false, 1/0; absent: false)."""
    if value is None or value.lower() in ("", "false", "0"):
        return False
    if value.lower() in ("true", "1"):
        return True
    raise InvalidInput(f"parameter '{name}' must be true or false")
