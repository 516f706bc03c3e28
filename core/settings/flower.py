"""Flower: the operator's worker pages."""

from __future__ import annotations

from pydantic import Field, SecretStr

from mtfleet.core.settings.base import (
    Component,
)


class FlowerSettings(Component):
    """Flower: the operator's worker pages."""

    flower_host: str = Field("127.0.0.1", description="Flower bind address.")
    flower_port: int = Field(5555, ge=1, le=65535, description="Flower port.")
    flower_user: str = Field("admin", min_length=1, description="Flower basic-auth user.")
    flower_password: SecretStr = Field(
        SecretStr("change-me"), description="Flower basic-auth password."
    )
