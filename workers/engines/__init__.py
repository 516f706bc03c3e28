"""Engines behind one small contract (:class:`workers.engines.base.Engine`)."""

from __future__ import annotations

from core.settings import Settings
from workers.engines.base import Engine, EngineLimits, Translation, TranslationRequest


def create_engine(settings: Settings) -> Engine:
    """The engine the settings name (not loaded yet; call ``load()`` in the serving process)."""
    if settings.engine == "apertium":
        from workers.engines.apertium import ApertiumEngine

        return ApertiumEngine(settings)
    if settings.engine == "vllm":
        from workers.engines.vllm_engine import VllmEngine

        return VllmEngine(settings)
    raise ValueError(f"unknown engine {settings.engine!r}")


__all__ = ["Engine", "EngineLimits", "Translation", "TranslationRequest", "create_engine"]
