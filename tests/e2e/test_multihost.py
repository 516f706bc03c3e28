"""Three hosts on one machine (:mod:`tests.e2e.netns`): Redis and the API on ``h1``, a worker
on ``h2`` and on ``h3``, each host with its own network namespace, address and host name. The
fleet reaches Redis and the API over the bridge only, as it would across a network.

* Jobs spread over both worker hosts and complete; the rate with two worker hosts is printed
  beside one (the cost-model engine: a simulated GPU per host, so two hosts really have twice
  the engine even on this machine's two cores).
* ``h3``'s link is cut mid-job (its packets dropped, no reset) and brought back later: the
  chunks it held are back on the queue once its heartbeat expires (docs/reliability.md: three
  beats, then the reconciler's next tick) and ``h2`` translates them; the job succeeds with
  every segment once and the right result, and ``h3`` rejoins and works again.

Needs root (``ip netns``); ``make test`` runs it (CI runs as root).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import redis

from mtfleet.core import keys
from mtfleet.core.registry import Registry
from mtfleet.workers.reconciler import chunk_ids
from tests.e2e.netns import Network, netns_usable
from tests.integration.costfleet import COST_ENGINE

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(netns_usable() is not None, reason=str(netns_usable())),
]

PASSWORD = "multi-host-s3cret"
HEARTBEAT_S = 1
ENV = {
    **COST_ENGINE,  # the cost-model engine at cpu-small figures (20 ms steps), 1 s heartbeats
    "MTBENCH_MAX_NUM_SEQS": "64",
    "MT_CHUNK_SIZE": "32",
    "MT_HEARTBEAT_S": str(HEARTBEAT_S),
    "MT_RESTORE_INTERVAL_S": "1",
    "MT_RECONCILE_INTERVAL_S": "1",
    "MT_VISIBILITY_TIMEOUT_S": "30",
    "MT_WORKER_METRICS_PORT": "9100",
    "MT_AUTH": "off",
}
#: docs/reliability.md: a lost worker's chunks are back once its heartbeat has expired (three
#: missed beats) and the reconciler has ticked (one beat); the rest is this machine's noise.
RESCUE_BOUND_S = 4 * HEARTBEAT_S + 6


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "mtfleet", *args]


def wait_for(ok: Callable[[], bool], timeout: float, what: str) -> float:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if ok():
                return time.time()
        except (httpx.HTTPError, redis.RedisError):
            pass
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f}s"
        time.sleep(0.05)


@dataclass
class Fleet:
    net: Network
    logs: Path
    env: dict[str, str]
    api: httpx.Client
    r: redis.Redis

    def start_worker(self, host: str) -> None:
        self.net.hosts[host].spawn(
            cli("worker", "--lanes", "interactive,bulk"), self.env, self.logs / f"{host}.log"
        )

    def live_hosts(self) -> dict[str, str]:
        """Host -> instance of every live worker."""
        return {w.host: w.instance for w in Registry(self.r).live_workers()}

    def segments_done_on(self, host: str) -> float:
        """``mt_worker_segments_total`` of the worker on ``host``, over the network."""
        text = httpx.get(f"http://{self.net.hosts[host].address}:9100/metrics", timeout=5).text
        return sum(
            float(v) for v in re.findall(r"^mt_worker_segments_total\{[^}]*\} (\S+)$", text, re.M)
        )

    def submit(self, texts: list[str], job_size: int = 200) -> list[str]:
        ids = []
        for i in range(0, len(texts), job_size):
            body = {"texts": texts[i : i + job_size], "source_lang": "en", "target_lang": "es",
                    "lane": "bulk"}  # fmt: skip
            resp = self.api.post("/v1/jobs", json=body)
            assert resp.status_code == 202, resp.text
            ids.append(resp.json()["id"])
        return ids

    def wait_done(self, ids: list[str], texts: list[str], timeout: float = 120) -> float:
        """Until every job is final; each must have succeeded with every segment once."""
        final = {"succeeded", "partial", "failed", "cancelled"}
        done_at = wait_for(
            lambda: all(self.api.get(f"/v1/jobs/{j}").json()["status"] in final for j in ids),
            timeout,
            "jobs final",
        )
        got: list[str] = []
        for job_id in ids:
            job = self.api.get(f"/v1/jobs/{job_id}").json()
            assert job["status"] == "succeeded", job
            total = job["progress"]["total"]
            assert job["progress"] == {"done": total, "failed": 0, "total": total}
            got += self.api.get(f"/v1/jobs/{job_id}/result").json()["translations"]
        assert got == [f"<es> {t}" for t in texts]
        return done_at


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    logs = tmp_path_factory.mktemp("multihost")
    net = Network()
    try:
        net.create(["h1", "h2", "h3"])
        h1 = net.hosts["h1"]
        url = f"redis://:{PASSWORD}@{h1.address}:6379/0"
        env = {**os.environ, **ENV, "MT_REDIS_URL": url}
        h1.spawn(["redis-server", "--bind", h1.address, "--port", "6379", "--requirepass",
                  PASSWORD, "--save", "", "--appendonly", "no", "--dir", str(logs)],
                 env, logs / "redis.log")  # fmt: skip
        h1.spawn(cli("api", "--host", h1.address, "--port", "8000"), env, logs / "api.log")
        r = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5)
        api = httpx.Client(base_url=f"http://{h1.address}:8000", timeout=30)
        wait_for(lambda: api.get("/healthz").status_code == 200, 60, "the API on h1")
        fleet = Fleet(net, logs, env, api, r)
        fleet.start_worker("h2")
        wait_for(lambda: api.get("/readyz").status_code == 200, 90, "the worker on h2")
        yield fleet
        api.close()
    except BaseException as exc:
        tails = [f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in
                 sorted(logs.glob("*.log"))]  # fmt: skip
        exc.add_note("\n".join(tails))
        raise
    finally:
        net.destroy()
        assert net.leftovers() == []


def rate(fleet: Fleet, tag: str, n: int) -> tuple[float, list[str]]:
    texts = [f"{tag} catalogue line {i} about shoes" for i in range(n)]
    start = time.time()
    ids = fleet.submit(texts)
    return n / (fleet.wait_done(ids, texts) - start), texts


def test_jobs_spread_over_both_worker_hosts(fleet: Fleet) -> None:
    one_host, _ = rate(fleet, "one", 1600)
    fleet.start_worker("h3")
    wait_for(lambda: set(fleet.live_hosts()) == {"h2", "h3"}, 90, "the worker on h3")
    workers = Registry(fleet.r).live_workers()
    assert sorted(w.name for w in workers) == ["cpu@h2", "cpu@h3"]  # one name per host
    before = {h: fleet.segments_done_on(h) for h in ("h2", "h3")}
    two_hosts, texts = rate(fleet, "two", 1600)
    share = {h: fleet.segments_done_on(h) - before[h] for h in ("h2", "h3")}
    assert sum(share.values()) >= len(texts)
    assert min(share.values()) >= 0.25 * len(texts), share  # both hosts did real work
    print(
        f"\nthroughput (cost-model engine, 1,600 segments): one worker host {one_host:.0f} "
        f"seg/s, two worker hosts {two_hosts:.0f} seg/s ({two_hosts / one_host:.2f}x); "
        f"segments per host {share}"
    )


def test_a_cut_link_loses_nothing_and_duplicates_nothing(fleet: Fleet) -> None:
    wait_for(lambda: set(fleet.live_hosts()) == {"h2", "h3"}, 90, "both workers")
    instance = fleet.live_hosts()["h3"]
    texts = [f"cut catalogue line {i} about coats" for i in range(3000)]
    start = time.time()
    ids = fleet.submit(texts, job_size=1000)

    def h3_holds() -> set[tuple[str, int]]:
        return chunk_ids([str(v) for v in fleet.r.hvals(keys.unacked(instance))])

    wait_for(lambda: len(h3_holds()) >= 2, 30, "h3 holding chunks")
    held = h3_holds()
    t_cut = time.time()
    fleet.net.cut("h3")
    t_back = wait_for(lambda: not h3_holds(), 60, "h3's chunks back on the queue")

    def redone() -> bool:
        return not any(fleet.r.hexists(keys.job_chunks(j), str(c)) for j, c in held)

    t_redone = wait_for(redone, 60, "h3's chunks translated on h2")
    time.sleep(max(0.0, t_cut + 8 - time.time()))  # a cut of 8 s
    t_restored = time.time()
    fleet.net.restore("h3")
    t_done = fleet.wait_done(ids, texts, timeout=180)  # every segment once, the right result
    t_rejoined = wait_for(lambda: "h3" in fleet.live_hosts(), 90, "h3 back in the registry")
    assert t_back - t_cut <= RESCUE_BOUND_S, t_back - t_cut
    # h3 works again: its share of a new job
    before = fleet.segments_done_on("h3")
    rate(fleet, "after", 1200)
    assert fleet.segments_done_on("h3") > before
    print(f"\nlink cut timeline (seconds from the cut; {len(held)} chunks held by h3)")
    for t, what in sorted(
        [
            (start, "3,000-segment job submitted"),
            (t_cut, "h3's link down"),
            (t_back, "h3's chunks back on the queue (its heartbeat expired)"),
            (t_redone, "h3's chunks translated on h2"),
            (t_restored, "h3's link up"),
            (t_done, "job succeeded: every segment once"),
            (t_rejoined, "h3 back in the registry"),
        ]
    ):
        print(f"  {t - t_cut:+7.2f} s  {what}")
