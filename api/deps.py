"""What routes get injected: the process's services, built once in the app's lifespan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from api.service import JobService
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


def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(_services)]
