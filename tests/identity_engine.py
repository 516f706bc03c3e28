"""An engine that gives every segment back as it was sent: a worker started with
``--engine tests.identity_engine:IdentityEngine`` shows what the fleet's document path does to
a file around the translation itself (nothing, for a monolingual format; the target's fields
filled, for a catalogue). Loaded through the engine plugin path (``module:Class``), as an
operator's own engine would be."""

from __future__ import annotations

from collections.abc import Sequence

from mtfleet.core.settings import EngineSettings
from mtfleet.workers.engines.base import Engine, EngineLimits, TranslationRequest

#: English into the languages whose plural rules differ most (and Spanish, the usual target).
TARGETS = ("es", "ru", "ar", "ja", "pl", "de")


class IdentityEngine(Engine):
    name = "identity"
    parallel_lanes = True
    lane_processes = True

    def __init__(self, settings: EngineSettings) -> None:
        self.settings = settings

    def load(self) -> None:
        pass

    @property
    def model(self) -> str:
        return "identity"

    @property
    def fingerprint(self) -> str:
        return "identity-1"

    @property
    def limits(self) -> EngineLimits:
        return EngineLimits(max_sequences=1024, max_batch_tokens=1 << 20, max_input_tokens=1 << 16)

    def pairs(self) -> list[tuple[str, str]]:
        return [("en", t) for t in TARGETS]

    def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
        return [r.text for r in requests]
