"""Engines are found by name in one table (core/settings/engine.py ENGINES) or as a plugin's
``module:Class`` (workers/engines/__init__.py); a shipped engine whose module is missing is an
error naming it, as ``mtfleet worker`` reports it before it starts anything."""

from __future__ import annotations

import pytest

from mtfleet.core.settings import ENGINES, Settings
from mtfleet.workers.engines import engine_class
from mtfleet.workers.engines.base import Engine
from mtfleet.workers.preflight import problems


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_each_shipped_engine_is_the_class_of_its_name(name: str) -> None:
    cls = engine_class(name)
    assert issubclass(cls, Engine) and cls.name == name


def test_a_shipped_engine_whose_module_is_missing_is_an_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(ENGINES, "gone", "mtfleet.workers.engines.gone:GoneEngine")
    assert problems(Settings(engine="gone"), []) == [
        "engine 'gone' (mtfleet.workers.engines.gone:GoneEngine) cannot be imported: "
        "No module named 'mtfleet.workers.engines.gone'"
    ]


def test_a_plugin_that_is_no_engine_is_refused() -> None:
    assert problems(Settings(engine="mtfleet.core.settings:Settings"), []) == [
        "engine plugin 'mtfleet.core.settings:Settings' is not an Engine subclass"
    ]
