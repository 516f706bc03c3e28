"""Every mtfleet process's settings, by component (env prefix ``MT_``), composed as vLLM
composes ``VllmConfig``.

Each component is a class of its own module here (:class:`RedisSettings`,
:class:`WorkerSettings`, :class:`EngineSettings`...) that reads only its own ``MT_*`` variables;
:class:`Settings` holds one of each (``settings.worker.lanes``, ``settings.engine.model``) and
checks what spans two. A part of the fleet is handed the components it uses (an engine its
:class:`EngineSettings`, the webhook deliverer its :class:`WebhookSettings`, the releaser the
worker's and the backlog's), not the whole: only the processes' roots
(:func:`mtfleet.api.app.build_services`, :class:`mtfleet.workers.runtime.WorkerRuntime`) and
what composes most of them (the API's job service, a worker's chunk processor) hold it.

Read once per process with :func:`get_settings`; a bad value raises before any model loads or
any socket opens. docs/configuration.md lists every variable, one table per component; ``make
docs`` writes it from :data:`COMPONENTS` and a test fails when it is out of date.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from mtfleet.core.settings.api import ApiSettings
from mtfleet.core.settings.backlog import BacklogSettings
from mtfleet.core.settings.base import Component, default_pool, parse_pair, route_pattern
from mtfleet.core.settings.documents import DocumentSettings
from mtfleet.core.settings.engine import ENGINES, VLLM_OWNED_ARGS, EngineSettings
from mtfleet.core.settings.flower import FlowerSettings
from mtfleet.core.settings.glossaries import GlossarySettings
from mtfleet.core.settings.jobs import JobSettings
from mtfleet.core.settings.keys import KeySettings
from mtfleet.core.settings.quality import QualitySettings
from mtfleet.core.settings.redis import RedisSettings
from mtfleet.core.settings.scheduler import SchedulerSettings
from mtfleet.core.settings.webhooks import WebhookSettings
from mtfleet.core.settings.worker import (
    CHUNK_BUDGET_SHARE,
    ENGINE_DEADLINE_SHARE,
    WorkerSettings,
)

__all__ = [
    "CHUNK_BUDGET_SHARE",
    "COMPONENTS",
    "ENGINES",
    "ENGINE_DEADLINE_SHARE",
    "VLLM_OWNED_ARGS",
    "ApiSettings",
    "BacklogSettings",
    "Component",
    "DocumentSettings",
    "EngineSettings",
    "FlowerSettings",
    "GlossarySettings",
    "JobSettings",
    "KeySettings",
    "QualitySettings",
    "RedisSettings",
    "SchedulerSettings",
    "Settings",
    "WebhookSettings",
    "WorkerSettings",
    "default_pool",
    "get_settings",
    "parse_pair",
    "route_pattern",
]


class Settings(BaseModel):
    """One process's settings: a component each, and the checks that span two.

    ``Settings(lanes=["bulk"], engine="vllm")`` takes settings by their ``MT_`` names (lower
    case, without the prefix), each given to the component that owns it (both of these to
    ``settings.worker``: ``MT_ENGINE`` names the engine a worker runs, ``settings.engine`` is
    that engine's own settings); the rest come from the environment. An unknown name is a
    TypeError, not silently dropped.
    """

    model_config = ConfigDict(frozen=True)

    redis: RedisSettings
    api: ApiSettings
    jobs: JobSettings
    backlog: BacklogSettings
    keys: KeySettings
    documents: DocumentSettings
    glossaries: GlossarySettings
    webhooks: WebhookSettings
    worker: WorkerSettings
    scheduler: SchedulerSettings
    engine: EngineSettings
    quality: QualitySettings
    flower: FlowerSettings

    def __init__(self, **values: Any) -> None:
        unknown = sorted(set(values) - set(_OWNER))
        if unknown:
            raise TypeError(f"unknown settings: {', '.join(unknown)}")
        own: dict[str, dict[str, Any]] = {name: {} for name in COMPONENTS}
        for field, value in values.items():
            own[_OWNER[field]][field] = value
        super().__init__(**{name: cls(**own[name]) for name, cls in COMPONENTS.items()})

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.worker.engine == "openai" and not self.engine.openai_base_url:
            raise ValueError(
                "engine openai needs MT_OPENAI_BASE_URL (the server's API, e.g. "
                "http://127.0.0.1:8000/v1)"
            )
        return self


#: The components, by their attribute on :class:`Settings`, in the order the configuration
#: page lists them (the order of its fields).
COMPONENTS: dict[str, type[Component]] = {
    name: field.annotation  # type: ignore[misc]
    for name, field in Settings.model_fields.items()
}


def _owners() -> dict[str, str]:
    """Each setting's component; a setting in two components is a mistake caught at import."""
    owner: dict[str, str] = {}
    for name, cls in COMPONENTS.items():
        for field in cls.model_fields:
            if field in owner:
                raise TypeError(f"setting {field} is in both {owner[field]} and {name}")
            owner[field] = name
    return owner


_OWNER = _owners()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read from the environment once."""
    return Settings()
