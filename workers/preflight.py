"""What ``mtfleet worker`` checks before its first start: a worker that cannot run at all (its
engine's packages or programs missing, a model folder that is not there, GPU ids the machine
does not have) exits with the reason, instead of restarting forever on the same error."""

from __future__ import annotations

import re
from pathlib import Path

from mtfleet.core.errors import ConfigError
from mtfleet.core.settings import Settings
from mtfleet.workers.engines import create_engine

_NVIDIA_DEVICE = re.compile(r"nvidia\d+")


def visible_gpus(dev: Path = Path("/dev")) -> int:
    """NVIDIA GPUs this machine shows (its ``/dev/nvidiaN`` device nodes; 0: none)."""
    try:
        return sum(1 for p in dev.iterdir() if _NVIDIA_DEVICE.fullmatch(p.name))
    except OSError:
        return 0


def unserved_pairs(settings: Settings, engine_pairs: list[tuple[str, str]]) -> list[str]:
    """MT_PAIRS that the engine cannot translate (nothing when it cannot tell yet)."""
    offered = set(engine_pairs)
    missing = [f"{a}-{b}" for a, b in settings.worker.offered_pairs if (a, b) not in offered]
    if not offered or not missing:
        return []
    return [
        f"MT_PAIRS names {', '.join(missing)}, which engine {settings.worker.engine} does not "
        f"translate here; it translates {len(offered)} pair(s), e.g. "
        + ", ".join(f"{a}-{b}" for a, b in sorted(offered)[:10])
    ]


def problems(settings: Settings, gpus: list[int], dev: Path = Path("/dev")) -> list[str]:
    """Everything that would make each start fail, one line each (empty: go ahead)."""
    try:
        engine = create_engine(settings)
    except ConfigError as exc:
        return [exc.message]
    found = list(engine.preflight())
    found += unserved_pairs(settings, engine.pairs() if not found else [])
    shown = visible_gpus(dev)
    missing = [g for g in gpus if g >= shown]
    if shown and missing:
        found.append(
            f"GPU id(s) {', '.join(map(str, missing))} do not exist: this machine has "
            f"{shown} GPU(s), ids 0-{shown - 1} (nvidia-smi -L lists them)"
        )
    return found
