"""What routes get injected: the process's services, built once in the app's lifespan."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from api.service import JobService
from core.apikeys import KeyStore
from core.events import CompletionWaiter
from core.registry import Registry
from core.settings import Settings
from core.store import JobStore


@dataclass
class Services:
    settings: Settings
    store: JobStore
    registry: Registry
    jobs: JobService
    waiter: CompletionWaiter
    apikeys: KeyStore = field(init=False)

    def __post_init__(self) -> None:
        self.apikeys = KeyStore(self.store.r, cache_s=self.settings.auth_cache_s)


async def _services(request: Request) -> Services:
    # async: a plain attribute read needs no hop to the thread pool
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(_services)]
