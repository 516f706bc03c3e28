"""What routes get injected: the process's services, built once in the app's lifespan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from mtfleet.api.guard import AuthFailures
from mtfleet.api.results import Results
from mtfleet.api.service import JobService
from mtfleet.api.shares import KeyShares
from mtfleet.core.apikeys import KeyStore
from mtfleet.core.events import CompletionWaiter
from mtfleet.core.outbox import WebhookOutbox
from mtfleet.core.registry import Registry
from mtfleet.core.settings import Settings
from mtfleet.core.store import JobStore


@dataclass
class Services:
    settings: Settings
    store: JobStore
    registry: Registry
    apikeys: KeyStore
    jobs: JobService
    results: Results
    waiter: CompletionWaiter
    outbox: WebhookOutbox
    waits: KeyShares  # each key's event streams and ?wait= requests (api/shares.py)
    auth_failures: AuthFailures  # bad keys per client address (api/guard.py)
    memory_work: KeyShares  # each key's translation-memory imports, exports... (api/routes)


async def _services(request: Request) -> Services:
    # async: a plain attribute read needs no hop to the thread pool
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(_services)]
