"""Engines behind one small contract (:class:`workers.engines.base.Engine`)."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from mtfleet.core.errors import ConfigError
from mtfleet.core.settings import Settings
from mtfleet.workers.engines.base import Engine, EngineLimits, Translation, TranslationRequest


def create_engine(settings: Settings) -> Engine:
    """The engine the settings name (not loaded yet; call ``load()`` in the serving process)."""
    if settings.engine == "apertium":
        from mtfleet.workers.engines.apertium import ApertiumEngine

        return ApertiumEngine(settings)
    if settings.engine == "vllm":
        from mtfleet.workers.engines.vllm_engine import VllmEngine

        return VllmEngine(settings)
    if settings.engine == "openai":
        from mtfleet.workers.engines.openai_engine import OpenAIEngine

        return OpenAIEngine(settings)
    if settings.engine == "transformers":
        from mtfleet.workers.engines.transformers_engine import TransformersEngine

        return TransformersEngine(settings)
    module_name, _, class_name = settings.engine.partition(":")
    if not class_name:
        raise ConfigError(f"unknown engine {settings.engine!r}")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"engine plugin {settings.engine!r} cannot be imported: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, Engine)):
        raise ConfigError(f"engine plugin {settings.engine!r} is not an Engine subclass")
    factory: Callable[[Settings], Engine] = cls
    return factory(settings)


__all__ = ["Engine", "EngineLimits", "Translation", "TranslationRequest", "create_engine"]
