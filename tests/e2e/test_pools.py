"""A fleet of two pools, driven as a user drives it (separate API, worker and Flower processes;
the CLI, the SDK and HTTP), with real translations from Apertium on both:

* pool ``apertium-es`` serves en<->es (``--pairs en-es,es-en``);
* pool ``apertium-ca`` serves en<->ca and, as well, en->es (``--pairs en-ca,ca-en,en-es``);
* ``MT_ROUTES=en-es=apertium-es``: a job for en->es goes to apertium-es unless it names its
  pool (without the route it would go to apertium-ca, the first by name).

Mixed jobs each land on their pool and come back right; a pool whose worker is killed keeps
taking jobs (they wait in its queues) while the other pool's jobs go on untouched, and they are
served when a worker of the pool comes back. ``mtfleet eval`` scores the en->es pool against
human references (tests/fixtures/eval)."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from mtfleet.core import keys
from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.producer.client import MTClient
from tests.e2e.fleet_control import cli, kill_worker
from tests.integration.test_faults import celery_children, signal_all

FLOWER_AUTH = ("admin", "pools-secret")
EVAL = Path(__file__).resolve().parents[1] / "fixtures" / "eval"
ES_ARGS = ("--engine", "apertium", "--pool", "apertium-es", "--pairs", "en-es,es-en")
CA_ARGS = ("--engine", "apertium", "--pool", "apertium-ca", "--pairs", "en-ca,ca-en,en-es")

SHIRT = "The red shirt is in the house."
SHIRT_ES = "La camisa roja es en la casa."  # Apertium's (a human would write "está")
SHIRT_CA = "La camisa vermella és en la casa."


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    redis.Redis.from_url(redis_server).flushall()
    f = LocalFleet(
        redis_url=redis_server,
        env={
            "MT_REDIS_URL": redis_server,
            "MT_HEARTBEAT_S": "1",
            "MT_RECONCILE_INTERVAL_S": "1",
            "MT_FLOWER_PASSWORD": FLOWER_AUTH[1],
            "MT_ROUTES": "en-es=apertium-es",
            "MT_CHUNK_SIZE": "16",
            # one worker process per pool (a CPU engine's default is one per lane: its pool
            # would count two live workers; tests/integration/test_launcher_processes.py)
            "MT_PROCESS_PER_LANE": "false",
        },
    )
    with f:  # stopped however its start ends: nothing left to serve later modules
        f.start_redis()
        f.start_worker(*ES_ARGS, "--concurrency", "2", name="worker-es")
        f.start_worker(*CA_ARGS, "--concurrency", "2", name="worker-ca")
        f.start_api()
        f.wait_ready(90, pool="apertium-es")
        f.wait_ready(90, pool="apertium-ca")
        yield f


def test_each_pool_registers_its_pairs_and_the_route_picks_one(fleet: LocalFleet) -> None:
    listed = cli(fleet, "pools", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    pools = {p["name"]: p for p in json.loads(listed.stdout)}
    assert set(pools) == {"apertium-es", "apertium-ca"}
    assert (pools["apertium-es"]["pairs"], pools["apertium-ca"]["pairs"]) == (2, 3)
    assert all(p["live_workers"] == 1 and p["engine"] == "apertium" for p in pools.values())
    langs = cli(fleet, "languages")
    assert langs.returncode == 0, langs.stderr
    lines = set(langs.stdout.splitlines())
    assert "en->es\tapertium\tapertium\tlive\tapertium-es\trouted" in lines
    assert "en->es\tapertium\tapertium\tlive\tapertium-ca" in lines
    assert "en->ca\tapertium\tapertium\tlive\tapertium-ca\trouted" in lines
    ready = httpx.get(f"{fleet.api_url}/readyz").json()
    assert set(ready["pools"]) == {"apertium-es", "apertium-ca"}
    # the workers of two pools on one host have names of their own
    names = {w for lanes in ready["pools"].values() for ws in lanes.values() for w in ws}
    assert {n.split("@")[0] for n in names} == {"apertium-es-cpu", "apertium-ca-cpu"}


def test_mixed_jobs_each_land_on_their_pool(fleet: LocalFleet) -> None:
    texts = [SHIRT, "I have two black cats."]
    plan = [
        ("en", "es", None, "apertium-es", SHIRT_ES),
        ("en", "ca", None, "apertium-ca", SHIRT_CA),
        ("en", "es", "apertium-ca", "apertium-ca", SHIRT_ES),  # named: not the route's
        ("es", "en", None, "apertium-es", None),
        ("en", "es", None, "apertium-es", SHIRT_ES),
        ("en", "ca", None, "apertium-ca", SHIRT_CA),
    ]
    with MTClient(fleet.api_url) as mt:
        jobs = [
            mt.submit(
                [f"{t} ({n})" for t in texts] if src == "en" else ["La casa es roja."],
                source=src,
                target=tgt,
                pool=pool,
                lane="bulk" if n % 2 else "interactive",
            )
            for n, (src, tgt, pool, _, _) in enumerate(plan)
        ]
        for job, (src, tgt, _, expected_pool, first) in zip(jobs, plan, strict=True):
            assert job.pool == expected_pool, (src, tgt, job)
            done = mt.wait(job.id, timeout=60)
            assert done.status == "succeeded" and done.pool == expected_pool
            out = mt.result(job.id).translations
            if first is not None:
                assert out[0] is not None and out[0].startswith(first[:-1]), out
            else:
                assert out == ["The house is red."], out
    # each pool's chunks went through its own queues, and the metrics say so per pool
    metrics = httpx.get(f"{fleet.api_url}/metrics").text
    assert 'mt_api_jobs_total{lane="bulk",pool="apertium-ca"} ' in metrics
    assert 'mt_api_jobs_total{lane="interactive",pool="apertium-es"} ' in metrics
    for pool in ("apertium-es", "apertium-ca"):
        assert f'mt_queue_depth{{lane="bulk",pool="{pool}"}} 0.0' in metrics
        assert f'mt_live_workers{{pool="{pool}"}} 1.0' in metrics


def test_a_job_naming_a_pool_that_cannot_serve_it_is_refused(fleet: LocalFleet) -> None:
    def post(body: dict[str, object]) -> dict[str, str]:
        resp = httpx.post(
            f"{fleet.api_url}/v1/jobs", json={"texts": ["Red shoes"], "source_lang": "en", **body}
        )
        assert resp.status_code == 422, resp.text
        return resp.json()["error"]  # type: ignore[no-any-return]

    err = post({"target_lang": "es", "pool": "hunyuan"})
    assert err["type"] == "unknown_pool"
    assert err["message"] == "the fleet has no pool 'hunyuan'; pools: apertium-ca, apertium-es"
    err = post({"target_lang": "ca", "pool": "apertium-es"})
    assert err["message"] == "pool 'apertium-es' does not serve en->ca; it serves: en->es, es->en"
    err = post({"target_lang": "fr"})
    assert err["type"] == "unsupported_language"
    assert err["message"] == ("no pool serves en->fr; served pairs: ca->en, en->ca, en->es, es->en")
    assert post({"target_lang": "es", "pool": "Not A Pool"})["type"] == "invalid_input"
    proc = cli(fleet, "translate", "Red shoes", "--from", "en", "--to", "ca", "--pool", "x")
    assert proc.returncode == 1 and "error 422 (unknown_pool)" in proc.stderr


def test_flower_lists_every_pools_queues(fleet: LocalFleet) -> None:
    url = fleet.flower_url or fleet.start_flower()
    deadline = time.monotonic() + 60
    while not httpx.get(f"{url}/api/workers", auth=FLOWER_AUTH, timeout=10).json():
        assert time.monotonic() < deadline, fleet.procs[-1].log_tail()
        time.sleep(0.5)
    resp = httpx.get(f"{url}/api/queues/length", auth=FLOWER_AUTH, timeout=10)
    assert resp.status_code == 200, resp.text
    names = {q["name"] for q in resp.json()["active_queues"]}
    assert {
        "mt.apertium-es.interactive",
        "mt.apertium-es.bulk",
        "mt.apertium-ca.interactive",
        "mt.apertium-ca.bulk",
    } <= names


def test_mtfleet_eval_scores_a_pool_against_references(fleet: LocalFleet, tmp_path: Path) -> None:
    src, ref = EVAL / "en.txt", EVAL / "es.txt"
    table = cli(fleet, "eval", "--src", str(src), "--ref", str(ref), "--from", "en", "--to", "es")
    assert table.returncode == 0, table.stderr
    rows = dict(line.split(None, 1) for line in table.stdout.splitlines())
    assert rows["pair"] == "en->es" and rows["pool"] == "apertium-es"
    assert rows["segments"] == "12 (0 failed)"
    assert "tok:13a" in table.stderr and "nc:6" in table.stderr  # sacrebleu's signatures

    def scores(reference: Path, *extra: str) -> dict[str, object]:
        proc = cli(
            fleet, "eval", "--src", str(src), "--ref", str(reference), "--from", "en", "--to",
            "es", "--json", *extra,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)  # type: ignore[no-any-return]

    good = scores(ref, "--pool", "apertium-ca")
    assert good["pool"] == "apertium-ca" and good["segments"] == 12 and good["failed"] == 0
    assert float(rows["BLEU"]) == good["bleu"] and float(rows["chrF"]) == good["chrf"]
    # Apertium's Spanish against a human's: far from perfect, far from nothing
    assert 20 < good["bleu"] < 90 and 50 < good["chrf"] < 95  # type: ignore[operator]
    # the same references, each against another sentence: the scores collapse
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("\n".join(reversed(ref.read_text(encoding="utf-8").splitlines())) + "\n")
    bad = scores(wrong)
    assert bad["bleu"] < good["bleu"] / 4 and bad["chrf"] < good["chrf"] / 2  # type: ignore[operator]

    short = tmp_path / "short.txt"
    short.write_text("Una línea.\n", encoding="utf-8")
    proc = cli(fleet, "eval", "--src", str(src), "--ref", str(short), "--from", "en", "--to", "es")
    assert proc.returncode == 2
    assert "has 12 lines and" in proc.stderr and "has 1: the files must be aligned" in proc.stderr


def test_a_pool_without_a_live_worker_queues_while_the_other_goes_on(
    fleet: LocalFleet, redis_server: str
) -> None:
    rd = redis.Redis.from_url(redis_server, decode_responses=True)
    ca = next(p for p in fleet.procs if p.name == "worker-ca")
    lines = [f"{SHIRT} Line {i}." for i in range(80)]
    with MTClient(fleet.api_url) as mt:
        # a Catalan job in the pool's queue when its worker is killed: stopped first, so its
        # chunks wait (one may sit in the stopped worker's socket, lost with it)
        kids = celery_children(ca)
        signal_all(kids, signal.SIGSTOP)
        held = mt.submit(lines, source="en", target="ca", lane="bulk")
        kill_worker(ca)
        deadline = time.monotonic() + 30
        while httpx.get(f"{fleet.api_url}/readyz?pool=apertium-ca").status_code != 503:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        # still accepted: 202, queued in its pool's queue, served when a worker comes back
        waiting = mt.submit(lines[:5], source="en", target="ca", lane="interactive")
        assert waiting.status == "queued" and waiting.pool == "apertium-ca"
        assert rd.llen(keys.queue("apertium-ca", "interactive")) >= 1
        # the other pool's jobs go on untouched, the fleet stays ready
        for n in range(3):
            job = mt.submit([f"{SHIRT} Job {n}."] * 3, source="en", target="es")
            assert mt.wait(job.id, timeout=60).status == "succeeded"
            assert mt.result(job.id).translations[0].startswith(SHIRT_ES[:-1])  # type: ignore[union-attr]
        assert httpx.get(f"{fleet.api_url}/readyz").status_code == 200
        pairs = httpx.get(f"{fleet.api_url}/v1/languages").json()["pairs"]
        en_ca = next(p for p in pairs if (p["source"], p["target"]) == ("en", "ca"))
        assert en_ca["live"] is False
        assert not mt.get(held.id).final and not mt.get(waiting.id).final

        fleet.start_worker(*CA_ARGS, "--concurrency", "2", name="worker-ca-again")
        for job in (held, waiting):
            done = mt.wait(job.id, timeout=120)
            assert done.status == "succeeded", done
            out = mt.result(job.id).translations
            assert all(t is not None and t.startswith(SHIRT_CA[:-1]) for t in out), out
        assert rd.hlen(keys.job_results(held.id)) == len(lines)  # each segment written once
