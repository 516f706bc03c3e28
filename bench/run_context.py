"""What every scenario gets: the run's options, a progress log and a memo shared by scenarios."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Context:
    quick: bool = False
    seed: int = 0
    log: Callable[[str], None] = print
    memo: dict[str, Any] = field(default_factory=dict)  # measurements shared by scenarios

    def n(self, full: int, quick: int) -> int:
        """A size (count or seconds) for a full run, or for ``--quick``."""
        return quick if self.quick else full
