"""`mtfleet demo` (what `make demo` runs): real Spanish, a private Redis by default, the lines that
point a shell at it, and nothing left behind however it is stopped."""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil
import pytest
import redis

from mtfleet.core.apikeys import KeyStore
from mtfleet.fleet.localfleet import START_S

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "mtfleet", "demo"]


def demo_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MT_REDIS_URL"}
    # the demo as a user runs it: API keys required, lingua's models and the document
    # processes loaded before the API serves (tests/conftest.py turns both off for the suite).
    # Its bulk work runs at the worker's own priority, as in the rest of the suite: at the
    # lowest, on two cores the suite keeps busy, a demo's bulk worker was not up in the demo's
    # 120 s, twice in one run (test_idle_cgroup.py and test_launcher_processes.py test that
    # priority, and the idle cgroups' removal).
    for name in ("MT_AUTH", "MT_PRELOAD"):
        env.pop(name, None)
    return {**env, "MT_HEARTBEAT_S": "1", "COLUMNS": "200", **extra}


def kill_tree(pid: int) -> None:
    """Kill a demo and every process it started: a demo left running on a test's Redis would
    serve the queues of the tests after it (as happened when a demo outlived its test)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()


def run_demo(*args: str, timeout: float, **popen: object) -> subprocess.CompletedProcess[str]:
    """``mtfleet demo`` to its end, its output captured; past ``timeout`` it is killed with
    everything it started, and the test fails."""
    with subprocess.Popen(
        [*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
    ) as demo:
        try:
            out, err = demo.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(demo.pid)
            raise
    return subprocess.CompletedProcess(demo.args, demo.returncode, out, err)


def processes_in(workdir: str) -> dict[int, str]:
    """pid -> command line of every process whose working directory is ``workdir`` (every
    process the demo starts runs there, Celery's children too)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") in (workdir, f"{workdir} (deleted)"):
                found[int(entry.name)] = (
                    (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                )
        except OSError:
            continue
    return found


def still_running(procs: dict[int, str], within_s: float) -> dict[int, str]:
    """Those of ``procs`` still there after ``within_s`` (a killed process's children are
    reaped by init a moment after it)."""
    deadline = time.monotonic() + within_s
    while True:
        left = {p: c for p, c in procs.items() if Path(f"/proc/{p}").exists()}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def workdir_of(out: str) -> str:
    m = re.search(r"logs in (\S+)", out)
    assert m, out
    return m.group(1)


def test_demo_runs_on_a_private_redis_and_leaves_nothing(tmp_path: Path) -> None:
    proc = run_demo("--bulk-lines", "80", timeout=600, env=demo_env(), cwd=tmp_path)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert re.search(r"Redis\s+redis://127\.0\.0\.1:\d+/0\s+\(private to this demo", out)
    assert "bulk job succeeded: 80/80 lines" in out
    assert "La camisa roja es en la casa." in out  # Apertium's en->es, side by side
    # a fresh Redis: the first request really was translated, the second came from the cache
    assert "the first time (translated by the worker)" in out
    assert re.search(r"again, 8 from the phrase cache \(identical: True\)", out)
    exports = re.search(r"export MT_API_URL=(\S+) MT_API_KEY=(mt_\S+) MT_REDIS_URL=(\S+)", out)
    assert exports, out
    # a new shell has neither the virtualenv nor its mtfleet: the line activates it first
    assert f". {Path(sys.prefix) / 'bin' / 'activate'} && export MT_API_URL=" in out
    workdir = workdir_of(out)
    assert not Path(workdir).exists()  # the private Redis's files and the logs are gone
    assert still_running(processes_in(workdir), within_s=10) == {}
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{exports.group(1)}/healthz", timeout=2)


def test_demo_on_a_given_redis_deletes_what_it_made(redis_server: str) -> None:
    client = redis.Redis.from_url(redis_server, decode_responses=True)
    client.flushall()
    proc = run_demo("--bulk-lines", "40", "--redis-url", redis_server, timeout=600, env=demo_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{redis_server}  (yours" in proc.stdout
    # its jobs (and their phrase-cache entries), glossary and key are deleted; no worker is live
    assert list(client.scan_iter("mt:job:*")) == []
    # a deleted glossary's terms stay a while for jobs already accepted, then expire
    assert all(client.ttl(k) > 0 for k in client.scan_iter("mt:glossary*"))
    # its jobs' phrases are gone; what is left is each purged job's mark (no text), which
    # expires (core/cache.py: a chunk still in flight writes nothing after the purge)
    left = list(client.scan_iter("mt:cache:*"))
    assert all(k.startswith("mt:cache:purged:") and client.ttl(k) > 0 for k in left), left
    assert KeyStore(client, cache_s=0).list_keys() == []
    assert all(client.get(f"mt:worker:{w}") is None for w in client.smembers("mt:workers"))


def test_demo_refuses_a_redis_that_does_not_answer() -> None:
    proc = run_demo("--redis-url", "redis://127.0.0.1:1/0", timeout=60, env=demo_env())
    assert proc.returncode == 2 and "no Redis answers at redis://127.0.0.1:1/0" in proc.stdout


class Lines:
    """A process's stdout, line by line, with a deadline on each wait."""

    def __init__(self, stream: object) -> None:
        self.seen: list[str] = []
        self.q: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.q.put(line)

    def until(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.q.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            self.seen.append(line)
            m = re.search(pattern, line)
            if m:
                return m
        raise AssertionError(f"no {pattern!r} in:\n{''.join(self.seen)}")


@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name
)
def test_a_kept_running_demo_stops_everything_on_a_signal(
    redis_server: str, sig: signal.Signals
) -> None:
    client = redis.Redis.from_url(redis_server, decode_responses=True)
    client.flushall()
    demo = subprocess.Popen(
        [*CLI, "--bulk-lines", "20", "--keep-running", "--redis-url", redis_server],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=demo_env(),
    )
    try:
        out = Lines(demo.stdout)
        # (the demo's own deadlines: 120 s for each of its API, Flower and workers)
        workdir = out.until(r"logs in (\S+)", 400).group(1)
        exported = out.until(r"export MT_API_URL=(\S+) MT_API_KEY=(\S+)", 10)
        api_url, api_key = exported.group(1), exported.group(2)
        out.until(r"--keep-running:", 300)
        if sig is signal.SIGINT:
            # a playground: a webhook receiver on this machine (docs/webhooks.md) is accepted
            job = httpx.post(
                f"{api_url}/v1/jobs",
                json={"texts": ["Red shoes"], "source_lang": "en", "target_lang": "es",
                      "callback_url": "http://127.0.0.1:9/hooks/mtfleet"},
                headers={"Authorization": f"Bearer {api_key}"},
                timeout=30,
            )  # fmt: skip
            assert job.status_code in (200, 202), job.text
            httpx.delete(
                f"{api_url}/v1/jobs/{job.json()['id']}",
                params={"purge": "true"},
                headers={"Authorization": f"Bearer {api_key}"},
                timeout=30,
            )  # its webhook event with it
        started = processes_in(workdir)
        names = " ".join(started.values())
        assert " api " in names and " worker " in names and " flower " in names
        assert "celery" in names or len(started) >= 4, started  # the launcher's Celery worker
        assert len(KeyStore(client, cache_s=0).list_keys()) == 1
        if sig is signal.SIGTERM:
            # a process of the demo that dies is reported and started again
            api_pid = next(p for p, cmd in started.items() if " api " in cmd)
            os.kill(api_pid, signal.SIGKILL)
            out.until(r"api exited \(code -9\); restarted as pid \d+", 30)
            # (a restarted API gets what a starting one gets)
            deadline = time.monotonic() + START_S
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{api_url}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
            else:
                raise AssertionError("the restarted API never answered")
            started |= processes_in(workdir)
        demo.send_signal(sig)
        # a stop asked for, and done: no error (`make demo` then prints none either)
        # (LocalFleet.stop gives each of its processes 20 s, one after the other, before it
        # kills it; a bulk worker at the lowest priority on a busy machine takes some of that)
        assert demo.wait(timeout=120) == 0
        out.until("stopping everything the demo started", 5)
    finally:
        if demo.poll() is None:
            # a failed test must not leave the demo's fleet consuming the session's queues
            kill_tree(demo.pid)
            for pid in processes_in(workdir) if "workdir" in locals() else {}:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    left = still_running(started, within_s=10)
    assert left == {}, left
    assert processes_in(workdir) == {}
    assert KeyStore(client, cache_s=0).list_keys() == []  # its key is gone with it
