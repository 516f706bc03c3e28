"""DeepL's style rules (``/v3/style_rules``), as its official client (``deepl`` >= 1.29) calls
them: ``get_all_style_rules``, ``create_style_rule``, ``get_style_rule``,
``update_style_rule_name``, ``update_style_rule_configured_rules``, ``delete_style_rule`` and
the custom-instruction calls. The rules live in :mod:`mtfleet.core.style_rules`; a request
names one with ``style_id``.

A rule belongs to the API key that made it: another key's rule answers exactly as a missing one
(404). Statuses as DeepL's: 201 for a rule or an instruction created, 204 for one deleted, 400
for a bad parameter (DeepL's body, ``{"message": ...}``), 404 for an unknown id. A rule's
``version`` on the wire is its revision (an integer, one more at every change, as DeepL's);
``GET /v3/style_rules`` pages as DeepL does (``page`` from 0, ``page_size`` 1-25, default 10)
and shows ``configured_rules`` and ``custom_instructions`` with ``detailed=true``; a single rule
and every changed one always show them.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from mtfleet.api.deepl.auth import DeepLCaller
from mtfleet.api.deepl.errors import Route
from mtfleet.api.deepl.glossaries import timestamp
from mtfleet.api.deepl.params import MAX_PAGE, bool_param, fields, int_param, parse
from mtfleet.api.deps import Services, ServicesDep
from mtfleet.core.errors import InvalidInput
from mtfleet.core.style_rules import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    StyleRule,
    StyleRuleStore,
)

router = APIRouter(prefix="/v3/style_rules", tags=["deepl"], route_class=Route)


class StyleRuleIn(BaseModel):
    """``POST /v3/style_rules`` (checked further by the store)."""

    model_config = ConfigDict(extra="ignore")

    name: Any = None
    language: Any = None
    configured_rules: Any = None
    custom_instructions: list[Any] | None = None


class NameIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: Any = None


class InstructionIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    label: Any = None
    prompt: Any = None
    source_language: Any = None


def _store(services: Services) -> StyleRuleStore:
    return StyleRuleStore(services.store.r)


def info(rule: StyleRule, *, detailed: bool = True) -> dict[str, Any]:
    """A rule as DeepL's ``StyleRuleList`` (its client's ``StyleRuleInfo.from_json``)."""
    out: dict[str, Any] = {
        "style_id": rule.style_id,
        "name": rule.name,
        "creation_time": timestamp(rule.created_at),
        "updated_time": timestamp(rule.updated_at),
        "language": rule.language,
        "version": rule.revision,
    }
    if detailed:
        out["configured_rules"] = rule.configured_rules
        out["custom_instructions"] = [ci.wire() for ci in rule.custom_instructions]
    return out


async def _json_object(request: Request) -> dict[str, Any]:
    """The body as a JSON object (what ``update_style_rule_configured_rules`` sends)."""
    raw = await request.body()
    try:
        body = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        raise InvalidInput(f"the request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise InvalidInput("the request body must be a JSON object of configured rules")
    return body


@router.get("")
def list_style_rules(request: Request, services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    q = request.query_params
    page = int_param(q.get("page"), "page", 0, 0, MAX_PAGE)
    size = int_param(q.get("page_size"), "page_size", DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE)
    detailed = bool_param(q.get("detailed"), "detailed")
    found = _store(services).list_for(caller.owner, page, size)
    return JSONResponse({"style_rules": [info(rule, detailed=detailed) for rule in found]})


@router.post("", status_code=201)
async def create_style_rule(
    request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    body = parse(StyleRuleIn, await fields(request))
    rule = await run_in_threadpool(
        lambda: _store(services).create(
            owner=caller.owner,
            name=body.name,
            language=body.language,
            configured_rules=body.configured_rules,
            custom_instructions=body.custom_instructions,
        )
    )
    return JSONResponse(info(rule), status_code=201)


@router.get("/{style_id}")
def get_style_rule(style_id: str, services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    return JSONResponse(info(_store(services).get(style_id, owner=caller.owner)))


@router.patch("/{style_id}")
async def update_style_rule_name(
    style_id: str, request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    body = parse(NameIn, await fields(request))
    if body.name is None:
        raise InvalidInput("parameter 'name' is required")
    rule = await run_in_threadpool(
        lambda: _store(services).update_name(style_id, body.name, owner=caller.owner)
    )
    return JSONResponse(info(rule))


@router.put("/{style_id}/configured_rules")
async def update_configured_rules(
    style_id: str, request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    rules = await _json_object(request)
    rule = await run_in_threadpool(
        lambda: _store(services).update_configured_rules(style_id, rules, owner=caller.owner)
    )
    return JSONResponse(info(rule))


@router.delete("/{style_id}", status_code=204)
def delete_style_rule(style_id: str, services: ServicesDep, caller: DeepLCaller) -> Response:
    _store(services).delete(style_id, owner=caller.owner)
    return Response(status_code=204)


@router.post("/{style_id}/custom_instructions", status_code=201)
async def create_custom_instruction(
    style_id: str, request: Request, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    body = parse(InstructionIn, await fields(request))
    made = await run_in_threadpool(
        lambda: _store(services).create_custom_instruction(
            style_id,
            owner=caller.owner,
            label=body.label,
            prompt=body.prompt,
            source_language=body.source_language,
        )
    )
    return JSONResponse(made.wire(), status_code=201)


@router.get("/{style_id}/custom_instructions/{instruction_id}")
def get_custom_instruction(
    style_id: str, instruction_id: str, services: ServicesDep, caller: DeepLCaller
) -> JSONResponse:
    found = _store(services).get_custom_instruction(style_id, instruction_id, owner=caller.owner)
    return JSONResponse(found.wire())


@router.put("/{style_id}/custom_instructions/{instruction_id}")
async def update_custom_instruction(
    style_id: str,
    instruction_id: str,
    request: Request,
    services: ServicesDep,
    caller: DeepLCaller,
) -> JSONResponse:
    body = parse(InstructionIn, await fields(request))
    changed = await run_in_threadpool(
        lambda: _store(services).update_custom_instruction(
            style_id,
            instruction_id,
            owner=caller.owner,
            label=body.label,
            prompt=body.prompt,
            source_language=body.source_language,
        )
    )
    return JSONResponse(changed.wire())


@router.delete("/{style_id}/custom_instructions/{instruction_id}", status_code=204)
def delete_custom_instruction(
    style_id: str, instruction_id: str, services: ServicesDep, caller: DeepLCaller
) -> Response:
    _store(services).delete_custom_instruction(style_id, instruction_id, owner=caller.owner)
    return Response(status_code=204)
