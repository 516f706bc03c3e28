"""`mtfleet submit` as people use it on long work: interrupted, resumed, across an API restart,
over the per-job limit, in another encoding; and the CLI's messages saying what to do.

The worker runs the benchmarks' cost-model engine (20 ms steps, output ``<es> text``), so a job
of a thousand lines takes long enough to interrupt and its output is known exactly."""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from mtfleet.fleet.localfleet import LocalFleet
from mtfleet.producer import batch
from tests.e2e.fleet_control import cli, cli_args, cli_env
from tests.integration.costfleet import COST_ENGINE, COST_POOL

pytestmark = pytest.mark.slow

LIMIT = 300  # MT_MAX_SEGMENTS_PER_JOB here: a 700-line file is three jobs
#: A line holding this takes the engine SLOW_S (MTBENCH_SLOW_ON): its chunk is held that long.
SLOW = "kept a while"
SLOW_S = 4


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    # a database of its own: a pool an earlier module's fleet registered (still live for a few
    # heartbeats, and first by name) would otherwise take this fleet's en->es jobs
    redis.Redis.from_url(redis_server).flushdb()
    f = LocalFleet(
        redis_url=redis_server,
        env={
            **COST_ENGINE,
            "MT_REDIS_URL": redis_server,
            "MT_AUTH": "required",
            "MT_MAX_SEGMENTS_PER_JOB": str(LIMIT),
            "MTBENCH_SLOW_ON": f"{SLOW}:{SLOW_S}",
        },
    )
    with f:  # stopped however its start ends: nothing left to serve later modules
        f.start_redis()
        f.start_worker("--lanes", "interactive,bulk")
        f.start_api()
        f.wait_ready(60)
        f.env["MT_API_KEY"] = f.create_api_key("cli-recovery")
        # /metrics is an operator's
        f.env["OPERATOR_KEY"] = f.create_api_key("ops", role="operator")
        f.env["MT_API_URL"] = f.api_url
        yield f


def background_submit(fleet: LocalFleet, cwd: Path, name: str) -> subprocess.Popen[str]:
    """``mtfleet submit NAME --to es --from en --out out`` running, its output piped."""
    return subprocess.Popen(
        cli_args("submit", name, "--to", "es", "--from", "en", "--out", "out"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=cli_env(fleet),
    )


def numbered(n: int, tag: str) -> list[str]:
    return [f"Line {i} of the {tag} catalogue: a warm coat for the winter." for i in range(n)]


def test_a_line_file_over_the_job_limit_goes_as_several_jobs_joined_in_order(
    fleet: LocalFleet, tmp_path: Path
) -> None:
    lines = numbered(700, "split")
    # blank lines and CRLF endings come back exactly where they were
    text = "\r\n".join(lines[:350]) + "\r\n\r\n   \n" + "\n".join(lines[350:]) + "\n"
    (tmp_path / "big.txt").write_text(text, encoding="utf-8", newline="")
    proc = cli(
        fleet, "submit", "big.txt", "--to", "es", "--from", "en", "--out", "out", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    ids = proc.stdout.split()
    assert len(ids) == 3 and all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)  # 300+300+100
    assert f"over the {LIMIT} one job may carry: sent as 3 jobs" in proc.stderr
    out = (tmp_path / "out" / "big.es.txt").read_bytes().decode("utf-8")
    es = [f"<es> {line}" for line in lines]
    assert out == "\r\n".join(es[:350]) + "\r\n\r\n   \n" + "\n".join(es[350:]) + "\n"


def test_ctrl_c_says_how_to_pick_up_and_resume_finishes_without_sending_again(
    fleet: LocalFleet, tmp_path: Path
) -> None:
    lines = numbered(250, "resume")
    (tmp_path / "cat.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    submit = background_submit(fleet, tmp_path, "cat.txt")
    assert submit.stdout is not None
    job_id = submit.stdout.readline().strip()  # printed as soon as the job is made
    submit.send_signal(signal.SIGINT)
    _, err = submit.communicate(timeout=30)
    assert submit.returncode == 130, err
    assert "interrupted; the fleet goes on with 1 job(s)" in err and job_id in err
    again = next(line.strip() for line in err.splitlines() if "--resume" in line)
    assert shlex.split(again)[:2] == ["mtfleet", "submit"]
    # the job was not cancelled: it goes on
    status = httpx.get(
        f"{fleet.api_url}/v1/jobs/{job_id}",
        headers={"Authorization": f"Bearer {fleet.env['MT_API_KEY']}"},
    ).json()["status"]
    assert status in {"queued", "running", "succeeded"}
    # the printed command, as printed, picks it up: nothing is sent again
    resumed = cli(fleet, *shlex.split(again)[1:], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == ""  # no new job id
    assert f"resuming job {job_id}" in resumed.stderr
    written = (tmp_path / "out" / "cat.es.txt").read_text(encoding="utf-8")
    assert written == "".join(f"<es> {line}\n" for line in lines)
    # and any finished job can be written as its file later, from any folder
    single = cli(fleet, "result", job_id, "--out", "out", cwd=tmp_path)
    assert single.returncode == 0 and single.stdout.strip() == "out/cat.es.txt"
    elsewhere = cli(fleet, "result", job_id, "--out", f"{tmp_path / 'other'}/", cwd=tmp_path)
    assert elsewhere.returncode == 0
    assert (tmp_path / "other" / f"{job_id}.es.txt").read_text() == written


def test_an_api_restart_mid_submit_is_ridden_out(fleet: LocalFleet, tmp_path: Path) -> None:
    lines = numbered(600, "restart")
    (tmp_path / "a.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    submit = background_submit(fleet, tmp_path, "a.txt")
    # the first of its two jobs is recorded (the second may be on its way): the API goes away.
    # Not read from stdout: the ids are printed once the file's parts are all made, and a line
    # read there before communicate() can take the next one into a buffer communicate never sees.
    deadline = time.monotonic() + 60
    while not any(e.jobs for e in batch.Manifest.load(tmp_path / "out").files.values()):
        assert submit.poll() is None, submit.communicate()[1]  # it ended: why, on its stderr
        assert time.monotonic() < deadline, "no job recorded in 60 s"
        time.sleep(0.05)
    api = next(p for p in fleet.procs if p.name == "api")
    api.popen.kill()
    api.popen.wait()
    time.sleep(2)
    assert any("api exited" in line for line in fleet.restart_dead())
    out, err = submit.communicate(timeout=240)
    assert submit.returncode == 0, err
    assert len(out.split()) == 2  # each job made once (a retry carries its key)
    written = (tmp_path / "out" / "a.es.txt").read_text(encoding="utf-8")
    assert written == "".join(f"<es> {line}\n" for line in lines)


def test_a_submit_recorded_in_the_manifest_is_resumable_part_by_part(
    fleet: LocalFleet, tmp_path: Path
) -> None:
    """Interrupted between two parts of a split file, the second's answer lost: --resume sends
    only the rest, and the part the fleet had made already is found again, not made twice."""
    lines = numbered(400, "parts")
    src = tmp_path / "p.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    first = cli(
        fleet,
        "submit",
        "p.txt",
        "--to",
        "es",
        "--from",
        "en",
        "--out",
        "out",
        "--no-wait",
        cwd=tmp_path,
    )
    assert first.returncode == 0 and len(first.stdout.split()) == 2
    manifest = batch.Manifest.load(tmp_path / "out")
    entry = manifest.files[str(src.resolve())]
    made = list(entry.jobs)
    entry.jobs = entry.jobs[:1]  # as if Ctrl-C had cut the second part's answer
    manifest.save(tmp_path / "out")
    resumed = cli(
        fleet,
        "submit",
        "p.txt",
        "--to",
        "es",
        "--from",
        "en",
        "--out",
        "out",
        "--resume",
        cwd=tmp_path,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.split() == made[1:]  # only the second part, and the same job
    written = (tmp_path / "out" / "p.es.txt").read_text(encoding="utf-8")
    assert written == "".join(f"<es> {line}\n" for line in lines)


def test_messages_say_what_to_do(fleet: LocalFleet, tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes("Caf\xe9 with milk for the table.\n".encode("latin-1"))
    bad = cli(fleet, "submit", "latin.txt", "--to", "es", "--from", "en", cwd=tmp_path)
    assert bad.returncode == 1 and "--encoding" in bad.stderr and "0xe9" in bad.stderr
    ok = cli(
        fleet,
        "submit",
        "latin.txt",
        "--to",
        "es",
        "--from",
        "en",
        "--encoding",
        "latin-1",
        "--out",
        "o",
        cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    assert (
        tmp_path / "o" / "latin.es.txt"
    ).read_bytes() == "<es> Caf\xe9 with milk for the table.\n".encode("latin-1")

    (tmp_path / "notes.weird").write_text("hello\n")
    unknown = cli(fleet, "submit", "notes.weird", "--to", "es", cwd=tmp_path)
    assert unknown.returncode == 1
    assert "--lines" in unknown.stderr and "--format" in unknown.stderr

    nokey = cli(fleet, "translate", "Red shoes", "--to", "es", cwd=tmp_path, MT_API_KEY="")
    assert nokey.returncode == 1 and "MT_API_KEY" in nokey.stderr and "--api-key" in nokey.stderr
    assert "Authorization" not in nokey.stderr

    # translate, like submit, detects the source language unless --from names it
    auto = cli(fleet, "translate", "The warm coat is in the house.", "--to", "es", cwd=tmp_path)
    assert auto.returncode == 0, auto.stderr
    assert auto.stdout.strip() == "<es> The warm coat is in the house."

    gone = cli(fleet, "languages", "--url", "http://127.0.0.1:9", cwd=tmp_path)
    assert (
        gone.returncode == 1 and "http://127.0.0.1:9" in gone.stderr and "MT_API_URL" in gone.stderr
    )

    # lines four times as long: seconds of the cost model's work, more than a loaded machine
    # takes to start the two commands below (a day when it took longer saw the job finished)
    slow = [" ".join([line] * 4) for line in numbered(LIMIT, "slow")]
    (tmp_path / "slow.txt").write_text("\n".join(slow) + "\n")
    job = cli(fleet, "submit", "slow.txt", "--to", "es", "--from", "en", "--no-wait", cwd=tmp_path)
    job_id = job.stdout.strip()
    running = cli(fleet, "result", job_id, cwd=tmp_path)  # seconds of work: still running
    assert running.returncode == 1
    assert "--partial" in running.stderr and "?partial" not in running.stderr
    # cancel waits for the chunks in flight, then the job is final
    cancelled = cli(fleet, "cancel", job_id, cwd=tmp_path)
    assert cancelled.returncode == 0, cancelled.stderr
    assert '"status": "cancelled"' in cancelled.stdout


def test_work_in_progress_is_visible_in_the_status_and_the_metrics(
    fleet: LocalFleet, tmp_path: Path
) -> None:
    """Where a job's chunks are, and how long the oldest has been held, so "stuck" shows. One
    line is slow to translate, so its chunk is held long enough to be seen whatever the
    machine's speed (the rest of a 300-line job takes the engine well under a second)."""
    lines = numbered(LIMIT, "visible")
    lines[LIMIT // 2] = f"A coat {SLOW} in the window."
    (tmp_path / "w.txt").write_text("\n".join(lines) + "\n")
    job_id = cli(
        fleet, "submit", "w.txt", "--to", "es", "--from", "en", "--no-wait", cwd=tmp_path
    ).stdout.strip()
    deadline = time.monotonic() + 60
    while True:
        status = cli(fleet, "status", job_id, cwd=tmp_path)
        job = json.loads(status.stdout)
        work = job["work"]
        if work and work["in_flight"] and work["oldest_in_flight_s"] > 0.2:
            break
        assert job["status"] in {"queued", "running"} and time.monotonic() < deadline, job
        time.sleep(0.1)
    assert work["queued"] + work["in_flight"] >= 1
    ops = {"Authorization": f"Bearer {fleet.env['OPERATOR_KEY']}"}
    metrics = httpx.get(f"{fleet.api_url}/metrics", headers=ops, timeout=10).text
    held = float(
        re.search(
            rf'^mt_chunks_held\{{lane="bulk",pool="{COST_POOL}"\}} (\S+)$', metrics, re.M
        ).group(1)
    )
    age = float(
        re.search(
            rf'^mt_oldest_held_chunk_seconds\{{lane="bulk",pool="{COST_POOL}"\}} (\S+)$',
            metrics,
            re.M,
        ).group(1)
    )
    assert held >= 1 and age > 0
    done = cli(fleet, "cancel", job_id, cwd=tmp_path)
    assert json.loads(done.stdout)["work"] is None  # final: nothing held any more


def test_over_the_job_limit_the_answer_says_what_to_do(fleet: LocalFleet, tmp_path: Path) -> None:
    """A line file is split by the CLI; a document cannot be, and a raw request over the limit
    names where the limit is published."""
    doc = tmp_path / "long.md"
    doc.write_text("\n\n".join(f"Paragraph {i} is short." for i in range(LIMIT + 100)) + "\n")
    proc = cli(fleet, "submit", "long.md", "--to", "es", "--from", "en", cwd=tmp_path)
    assert proc.returncode == 1
    assert f"the document has {LIMIT + 100} sentences; one job may carry {LIMIT}" in proc.stderr
    resp = httpx.post(
        f"{fleet.api_url}/v1/jobs",
        headers={"Authorization": f"Bearer {fleet.env['MT_API_KEY']}"},
        json={"texts": numbered(LIMIT + 1, "raw"), "source_lang": "en", "target_lang": "es"},
    )
    assert resp.status_code == 422 and "GET /v1/limits" in resp.json()["error"]["message"]
