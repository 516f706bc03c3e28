"""``GET /v1/ops``: the operations panel's data (:mod:`mtfleet.api.ops`), for operator keys."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from mtfleet.api.auth import operator
from mtfleet.api.deps import ServicesDep
from mtfleet.api.errors import documented
from mtfleet.api.fleet import DEAD_LETTERS_SHOWN, read_fleet
from mtfleet.api.ops import OpsPublic, summary

router = APIRouter(prefix="/v1", tags=["operations"])


@router.get(
    "/ops",
    response_model=OpsPublic,
    dependencies=[Depends(operator)],
    responses=documented(401, 403, 429),
)
def ops(services: ServicesDep) -> OpsPublic:
    """The fleet now: per pool and lane, chunks queued and in flight and the oldest's age;
    throughput, interactive and bulk job latency (p50/p95 over the last minute), the phrase
    cache's hit ratio, every live worker (engine, model, GPUs, pull window, busy share, last
    heartbeat, GPU memory and utilisation) and the newest dead letters with their reasons.
    Needs an operator key (``mtfleet keys create --role operator``): 403 for any other."""
    return summary(read_fleet(services.store.r, dead_letters=DEAD_LETTERS_SHOWN))
