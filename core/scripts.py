"""The Redis Lua scripts, one ``.lua`` file each in ``core/lua/``.

Each file opens with its keys and arguments. ``lib.lua`` holds the steps several scripts share
(batched ``unpack``, the one way a job is finalised) and is put in front of every script here,
because a Redis script cannot include another. Scripts are registered per client and run by
``EVALSHA`` (redis-py loads them again after a ``SCRIPT FLUSH`` or a restart).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import redis
import redis.asyncio

LUA_DIR = Path(__file__).parent / "lua"


@cache
def source(name: str) -> str:
    """The full text of script ``name`` (``core/lua/<name>.lua`` after ``lib.lua``)."""
    return f"{(LUA_DIR / 'lib.lua').read_text()}\n{(LUA_DIR / f'{name}.lua').read_text()}"


def register(client: redis.Redis | redis.asyncio.Redis, name: str) -> Any:
    """Script ``name`` on ``client`` (a ``Script``, or an ``AsyncScript`` to await)."""
    return client.register_script(source(name))
