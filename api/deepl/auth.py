"""Who calls the DeepL surface: an mtfleet API key sent as DeepL's clients send theirs,
``Authorization: DeepL-Auth-Key <key>`` (``Bearer`` is taken too). A missing or bad key is 403
(:mod:`mtfleet.api.deepl.errors`); the request guard has already refused most of them before
the body was read."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from mtfleet.api.auth import Caller, caller_for

SCHEMES = ("deepl-auth-key", "bearer")


async def deepl_caller(request: Request) -> Caller:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return await caller_for(
        request,
        token.strip() if scheme.lower() in SCHEMES else None,
        "an API key is required: send Authorization: DeepL-Auth-Key <key>",
    )


DeepLCaller = Annotated[Caller, Depends(deepl_caller)]
