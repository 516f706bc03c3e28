"""What every settings component shares: the ``MT_`` environment and the parsers of its values.

A component (:class:`Component` subclass, one module each in this package) reads only its own
``MT_*`` variables; :class:`mtfleet.core.settings.Settings` composes them for a process.
"""

from __future__ import annotations

import json
import re

from pydantic_settings import BaseSettings, SettingsConfigDict


class Component(BaseSettings):
    """One component's settings, read from ``MT_<FIELD>`` environment variables (keyword
    arguments override them); every other ``MT_*`` variable belongs to another component."""

    model_config = SettingsConfigDict(env_prefix="MT_", env_file=None, extra="ignore")


def default_pool(engine: str) -> str:
    """The pool a worker joins when ``MT_POOL`` is not set: its engine's name (a plugin
    ``module:Class``: the class name, lowercased)."""
    name = engine.rpartition(":")[2].lower()
    return re.sub(r"[^a-z0-9_-]", "-", name)[:32] or "default"


def parse_mapping(v: object, what: str) -> object:
    """``a=b,c=d`` or a JSON object -> dict (anything else is left to pydantic)."""
    if not isinstance(v, str):
        return v
    text = v.strip()
    if text.startswith("{"):
        return json.loads(text)
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"{what}: expected name=value items separated by commas, got {part!r}")
        out[key.strip()] = value.strip()
    return out


def parse_pair(text: str) -> tuple[str, str]:
    """``"en-es"`` -> ("en", "es"), both codes normalised (ValueError for an unknown one)."""
    from mtfleet.core import languages
    from mtfleet.core.errors import UnsupportedLanguage

    src, sep, tgt = text.strip().partition("-")
    if not sep:
        src, sep, tgt = text.strip().partition(":")
    if not sep or not src or not tgt:
        raise ValueError(f"{text!r} is not a language pair like en-es")
    try:
        return languages.normalize(src), languages.normalize(tgt)
    except UnsupportedLanguage as exc:
        raise ValueError(f"{text!r}: {exc.message}") from None


def route_pattern(text: str) -> str:
    """A route's pattern, normalised: ``*``, ``src-*``, ``*-tgt`` or ``src-tgt`` (ValueError
    otherwise). ``-`` separates the two sides; ``zh-Hant`` is written ``zh_Hant`` or with
    ``:`` (``en:zh-Hant``)."""
    from mtfleet.core import languages
    from mtfleet.core.errors import UnsupportedLanguage

    text = text.strip()
    if text == "*":
        return "*"
    sep = ":" if ":" in text else "-"
    src, found, tgt = text.partition(sep)
    if not found or not src or not tgt:
        raise ValueError(f"route {text!r}: use *, src-*, *-tgt or src-tgt (e.g. en-zh)")
    try:
        sides = [s if s == "*" else languages.normalize(s.replace("_", "-")) for s in (src, tgt)]
    except UnsupportedLanguage as exc:
        raise ValueError(f"route {text!r}: {exc.message}") from None
    return f"{sides[0]}:{sides[1]}"
