"""Engines behind one small contract (:class:`workers.engines.base.Engine`), found by name in
one table (:data:`mtfleet.core.settings.ENGINES`) or, for a plugin, by ``module:Class``."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from mtfleet.core.errors import ConfigError
from mtfleet.core.settings import ENGINES, EngineSettings, Settings
from mtfleet.workers.engines.base import Engine, EngineLimits, Translation, TranslationRequest


def engine_class(name: str) -> type[Engine]:
    """The class an engine name stands for: a shipped engine's from :data:`ENGINES`, else a
    plugin's ``module:Class``. A shipped engine whose module is gone is an error naming it,
    as a plugin that does not import is: never an engine silently left out."""
    target = ENGINES.get(name, name)
    what = f"engine {name!r} ({target})" if name in ENGINES else f"engine plugin {name!r}"
    module_name, _, class_name = target.partition(":")
    if not class_name:
        raise ConfigError(f"unknown engine {name!r}")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{what} cannot be imported: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, Engine)):
        raise ConfigError(f"{what} is not an Engine subclass")
    return cls


def create_engine(settings: Settings) -> Engine:
    """The engine the worker's settings name (``MT_ENGINE``), built with the engine's own
    settings (:class:`EngineSettings`; not loaded yet: call ``load()`` in the serving process)."""
    factory: Callable[[EngineSettings], Engine] = engine_class(settings.worker.engine)
    return factory(settings.engine)


__all__ = [
    "Engine",
    "EngineLimits",
    "Translation",
    "TranslationRequest",
    "create_engine",
    "engine_class",
]
