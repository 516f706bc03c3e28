"""mtfleet: a self-hosted machine-translation fleet for asynchronous jobs.

Installed, everything lives under this one package: ``mtfleet.core`` (settings, models, the job
store), ``mtfleet.formats`` (the document formats), ``mtfleet.api`` (the HTTP API),
``mtfleet.workers`` (Celery workers and engines), ``mtfleet.producer`` (the SDK and the
``mtfleet`` CLI) and ``mtfleet.fleet`` (the operator's commands, a local fleet, the GPU planner).
In the source tree those are the top-level folders ``core/``, ``formats/``, ``api/``,
``workers/``, ``producer/`` and ``fleet/``, mapped to these names by
pyproject.toml's ``[tool.setuptools.package-dir]`` (for the editable install, the wheel and
scripts/typecheck.py alike); this folder holds only this file and ``__main__.py``, the
``mtfleet`` command's one entry point.

The SDK is importable from the top::

    from mtfleet import MTClient
    with MTClient("http://127.0.0.1:8000", api_key="mt_...") as mt:
        mt.translate(["Red shoes"], source="en", target="es")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mtfleet.producer.client import AsyncMTClient, JobTimeout, MTClient, MTClientError

__all__ = ["AsyncMTClient", "JobTimeout", "MTClient", "MTClientError"]


def __getattr__(name: str) -> Any:
    # Lazy: a worker or the API importing mtfleet.* does not pay for the SDK (httpx).
    if name in __all__:
        from mtfleet.producer import client

        return getattr(client, name)
    raise AttributeError(f"module 'mtfleet' has no attribute {name!r}")
