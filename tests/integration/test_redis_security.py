"""Redis as production runs it: an ACL user with a password, TLS (``rediss://``) with a CA and a
client certificate, and JSON-only messages.

Each test starts its own ``redis-server`` (ACL users; TLS on a TLS-only port) and a real fleet
on it: a worker process running the cost-model engine and the API app (see ``costfleet``).
Certificates are made here with the ``openssl`` command (a throwaway CA, a server certificate
for 127.0.0.1 and a client certificate).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis
from fastapi.testclient import TestClient
from kombu.exceptions import OperationalError

from mtfleet.api.app import create_app
from mtfleet.core import keys
from mtfleet.core.broker import make_celery
from mtfleet.core.redis_conn import connect
from mtfleet.core.redis_urls import split_tls
from mtfleet.core.settings import Settings
from mtfleet.fleet.localfleet import LocalFleet, free_port, redis_reachable, redis_server_command
from tests.integration.costfleet import COST_ENGINE, COST_POOL, cost_fleet, held
from tests.support import in_process

# ACL users (as docs/security.md advises): the fleet's (every key and channel,
# no @dangerous command), and a cache-only one that may touch only the phrase cache's keys, so
# the cache URL provably carries its own credentials. The default user is off.
FLEET_USER = ["--user", "default", "off", "--user", "mt", "on", ">s3cret-mt"]
FLEET_USER += ["~*", "&*", "+@all", "-@dangerous"]
CACHE_USER = ["--user", "cache", "on", ">s3cret-cache", "~mt:cache:*", "resetchannels"]
CACHE_USER += ["+@all", "-@dangerous"]


def openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        pytest.fail(
            "the openssl command is needed to make test certificates (apt-get install openssl)"
        )
    subprocess.run([exe, *args], cwd=cwd, check=True, capture_output=True)


def make_certs(d: Path) -> dict[str, Path]:
    """A throwaway CA, a server certificate for 127.0.0.1/localhost and a client certificate."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=mtfleet test CA", cwd=d)  # fmt: skip
    (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, ext in (("server", ["-extfile", "server.ext"]), ("client", [])):
        openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN=mtfleet test {name}", cwd=d)  # fmt: skip
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", *ext, cwd=d)  # fmt: skip
    return {n: d / n for n in ("ca.pem", "server.pem", "server.key", "client.pem", "client.key")}


@contextlib.contextmanager
def private_redis(workdir: Path, port: int, url: str, *extra: str) -> Iterator[None]:
    """A redis-server with ``extra`` arguments (ACL users, TLS), reachable at ``url``."""
    cmd = redis_server_command(port, workdir, appendonly=False) + list(extra)
    log = workdir / "redis.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while not redis_reachable(url):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        yield
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def acl_redis(tmp_path: Path) -> Iterator[int]:
    """A redis-server whose default user is off: only ``mt`` and ``cache`` may log in."""
    port = free_port()
    url = f"redis://mt:s3cret-mt@127.0.0.1:{port}/0"
    with private_redis(tmp_path, port, url, *FLEET_USER, *CACHE_USER):
        yield port


def run_job(api: TestClient, texts: list[str], lane: str = "bulk") -> dict:  # type: ignore[type-arg]
    resp = api.post(
        "/v1/jobs", json={"texts": texts, "source_lang": "en", "target_lang": "es", "lane": lane}
    )
    assert resp.status_code in (200, 202), resp.text
    job_id = resp.json()["id"]
    deadline = time.monotonic() + 60
    while True:
        job = api.get(f"/v1/jobs/{job_id}", params={"wait": 2}).json()
        if job["status"] in {"succeeded", "partial", "failed", "cancelled"}:
            result = api.get(f"/v1/jobs/{job_id}/result").json()
            return {**job, **result}
        assert time.monotonic() < deadline, job
        time.sleep(0.1)


# --- ACL user and password -----------------------------------------------------------------------
def test_fleet_runs_as_an_acl_user_with_its_own_cache_user(acl_redis: int) -> None:
    """Job state and broker as user ``mt``, the phrase cache as user ``cache`` (db 1, cache keys
    only): a job completes, and the same texts come back from the cache the second time."""
    port = acl_redis
    url = f"redis://mt:s3cret-mt@127.0.0.1:{port}/0"
    cache_url = f"redis://cache:s3cret-cache@127.0.0.1:{port}/1"
    texts = [f"The blue lamp number {i}." for i in range(40)]
    with cost_fleet(url, {"MT_CACHE_URL": cache_url}) as (_fleet, api):
        first = run_job(api, texts)
        assert first["status"] == "succeeded", first
        assert first["translations"] == [f"<es> {t}" for t in texts]
        cache = redis.Redis.from_url(cache_url, decode_responses=True)
        deadline = time.monotonic() + 10
        while len(list(cache.scan_iter("mt:cache:*"))) < len(texts):  # written by the worker
            assert time.monotonic() < deadline
            time.sleep(0.1)
        again = run_job(api, texts)
        assert again["status"] == "succeeded" and again["cached"] == len(texts), again
        assert again["translations"] == first["translations"]
    # The cache user really is confined: job state is out of its reach.
    with pytest.raises(redis.exceptions.NoPermissionError):
        redis.Redis.from_url(cache_url).get(keys.job("x"))


@pytest.mark.timeout(120)
def test_wrong_password_is_a_503_at_the_api_and_a_clear_line_in_the_worker_log(
    acl_redis: int, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = acl_redis
    wrong = f"redis://mt:not-the-password@127.0.0.1:{port}/0"
    api_settings = Settings(redis_url=wrong, auth="off")
    with TestClient(create_app(in_process(api_settings))) as api:
        resp = api.post(
            "/v1/jobs", json={"texts": ["Hello"], "source_lang": "en", "target_lang": "es"}
        )
        assert resp.status_code == 503, resp.text
        assert resp.headers["Retry-After"]
        # the client gets a plain sentence; the cause goes to the API's log
        assert resp.json()["error"]["message"] == "the job store is unavailable; retry shortly"
        assert "invalid username-password pair" in caplog.text
        assert "not-the-password" not in caplog.text
        assert api.get("/readyz").status_code == 503
        assert api.get("/v1/jobs/0123456789abcdef0123456789abcdef").status_code == 503

    with LocalFleet(redis_url=wrong, env={**COST_ENGINE, "MT_REDIS_URL": wrong}) as fleet:
        worker = fleet.start_worker("--lanes", "bulk")
        deadline = time.monotonic() + 60
        while "invalid username-password pair" not in worker.log_tail(200):
            assert time.monotonic() < deadline, worker.log_tail()
            time.sleep(0.2)
        assert "not-the-password" not in worker.log_tail(200)  # the log masks the password


def test_a_wrong_cache_password_costs_the_cache_only(acl_redis: int) -> None:
    """The phrase cache is an optimisation: wrong credentials for it turn into misses (and a
    warning), jobs still complete."""
    port = acl_redis
    url = f"redis://mt:s3cret-mt@127.0.0.1:{port}/0"
    bad_cache = f"redis://cache:wrong@127.0.0.1:{port}/1"
    with cost_fleet(url, {"MT_CACHE_URL": bad_cache}) as (fleet, api):
        job = run_job(api, ["A red chair.", "A green table."], lane="interactive")
        assert job["status"] == "succeeded", job
        assert job["translations"] == ["<es> A red chair.", "<es> A green table."]
        deadline = time.monotonic() + 10
        while "phrase cache unavailable" not in fleet.procs[-1].log_tail(200):
            assert time.monotonic() < deadline, fleet.procs[-1].log_tail()
            time.sleep(0.2)


# --- TLS -----------------------------------------------------------------------------------------
@pytest.fixture
def tls_redis(tmp_path: Path) -> Iterator[tuple[int, dict[str, Path]]]:
    """A TLS-only redis-server (``--port 0``) that also requires a client certificate, with the
    ACL users above."""
    certs = make_certs(tmp_path)
    port = free_port()
    tls = [
        "--port", "0", "--tls-port", str(port),
        "--tls-cert-file", str(certs["server.pem"]), "--tls-key-file", str(certs["server.key"]),
        "--tls-ca-cert-file", str(certs["ca.pem"]), "--tls-auth-clients", "yes",
    ]  # fmt: skip
    with private_redis(tmp_path, port, tls_url(port, certs), *tls, *FLEET_USER, *CACHE_USER):
        yield port, certs


def tls_url(port: int, certs: dict[str, Path], *, user: str = "mt:s3cret-mt", db: int = 0) -> str:
    return (
        f"rediss://{user}@127.0.0.1:{port}/{db}?ssl_ca_certs={certs['ca.pem']}"
        f"&ssl_certfile={certs['client.pem']}&ssl_keyfile={certs['client.key']}"
    )


def test_redis_server_speaks_tls() -> None:
    exe = shutil.which("redis-server")
    assert exe is not None
    ldd = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
    assert "libssl" in ldd, "this redis-server was built without TLS"


def test_fleet_and_flower_run_over_tls(tls_redis: tuple[int, dict[str, Path]]) -> None:
    """Job state, broker and phrase cache over ``rediss://`` with the test CA and a client
    certificate: a job completes end to end; Flower sees the worker and reads queue lengths
    through its own broker connection."""
    port, certs = tls_redis
    url = tls_url(port, certs)
    cache_url = tls_url(port, certs, user="cache:s3cret-cache", db=1)
    env = {"MT_CACHE_URL": cache_url, "MT_FLOWER_PASSWORD": "tls-test-flower"}
    texts = [f"The secure parcel {i}." for i in range(30)]
    with cost_fleet(url, env) as (fleet, api):
        job = run_job(api, texts)
        assert job["status"] == "succeeded", job
        assert job["translations"] == [f"<es> {t}" for t in texts]
        again = run_job(api, texts[:5], lane="interactive")
        assert again["cached"] == 5, again

        flower = fleet.start_flower()
        auth = ("admin", "tls-test-flower")
        deadline = time.monotonic() + 30
        while not httpx.get(f"{flower}/api/workers", auth=auth, timeout=10).json():
            assert time.monotonic() < deadline, fleet.procs[-1].log_tail()
            time.sleep(0.5)
        queues = httpx.get(f"{flower}/api/queues/length", auth=auth, timeout=10)
        assert queues.status_code == 200, fleet.procs[-1].log_tail()
        # Read over Flower's own TLS connection (a failed one is a 500): the queue Celery's
        # consumer serves, and nothing waiting in it.
        lengths = {q["name"]: q["messages"] for q in queues.json()["active_queues"]}
        assert lengths.get(keys.queue(COST_POOL, "bulk")) == 0, lengths


def test_rediss_verifies_the_server_unless_told_otherwise(
    tls_redis: tuple[int, dict[str, Path]],
) -> None:
    """Without the CA the server's certificate does not verify, for our Redis clients and for
    the Celery broker connection alike (kombu on its own would connect unverified)."""
    port, certs = tls_redis
    client = f"ssl_certfile={certs['client.pem']}&ssl_keyfile={certs['client.key']}"
    no_ca = f"rediss://mt:s3cret-mt@127.0.0.1:{port}/0?{client}"
    with pytest.raises(redis.ConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        connect(no_ca).ping()
    celery = make_celery(Settings(redis_url=no_ca))
    assert celery.conf.broker_use_ssl["ssl_cert_reqs"] is not None
    with (
        pytest.raises(OperationalError, match="CERTIFICATE_VERIFY_FAILED"),
        celery.connection_for_write() as conn,
    ):
        conn.ensure_connection(max_retries=0)
    # Told otherwise (the URL says so), it connects without verifying.
    insecure = f"{no_ca}&ssl_cert_reqs=none"
    assert connect(insecure).ping()
    with make_celery(Settings(redis_url=insecure)).connection_for_write() as conn:
        conn.ensure_connection(max_retries=0)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("rediss://h:6379/0?ssl_ca_certs=/no/such/ca.pem", "no such file"),
        ("rediss://h:6379/0?ssl_cert_reqs=maybe", "ssl_cert_reqs"),
        ("rediss://h:6379/0?ssl_verify=yes", "unknown TLS option"),
        ("redis://h:6379/0?ssl_cert_reqs=required", "need a rediss:// URL"),
        ("rediss://h:6379/0?ssl_keyfile=/etc/hostname", "both ssl_certfile and ssl_keyfile"),
    ],
)
def test_bad_tls_options_fail_at_settings(url: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Settings(redis_url=url)
    with pytest.raises(ValueError, match=problem):
        Settings(cache_url=url)


def test_split_tls_gives_every_client_the_same_verified_options(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("placeholder")
    plain, tls = split_tls(f"rediss://u:p@h:6380/2?ssl_ca_certs={ca}&socket_timeout=3")
    assert plain == "rediss://u:p@h:6380/2?socket_timeout=3"
    assert tls is not None and tls["ssl_ca_certs"] == str(ca)
    assert tls["ssl_check_hostname"] is True
    assert (
        make_celery(Settings(redis_url=f"rediss://h:6380/0?ssl_ca_certs={ca}")).conf[
            "broker_use_ssl"
        ]
        == split_tls(f"rediss://h:6380/0?ssl_ca_certs={ca}")[1]
    )
    assert split_tls("redis://u:p@h:6379/0") == ("redis://u:p@h:6379/0", None)
    assert not make_celery(Settings(redis_url="redis://h:6379/0")).conf["broker_use_ssl"]


# --- JSON only -----------------------------------------------------------------------------------
class PickleBomb:
    """Unpickling this creates ``path`` (any code could run instead)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.path), "w"))


def test_worker_refuses_a_pickled_task_and_keeps_working(redis_server: str, tmp_path: Path) -> None:
    """A pickle-serialized message for our task, on the queue the worker consumes, is refused
    before it is decoded (the file its unpickling would create never appears), is not
    redelivered, and the JSON job sent after it completes."""
    url = redis_server.rsplit("/", 1)[0] + "/6"
    rd = redis.Redis.from_url(url, decode_responses=True)
    rd.flushdb()
    marker = tmp_path / "unpickled"
    with cost_fleet(url, {}) as (fleet, api):
        sender = make_celery(Settings(redis_url=url))
        sender.send_task(
            keys.TRANSLATE_TASK,
            args=[PickleBomb(marker)],
            queue=keys.queue(COST_POOL, "bulk"),
            serializer="pickle",
            argsrepr="(pickled)",
        )
        job = run_job(api, [f"After the pickle {i}." for i in range(10)])
        assert job["status"] == "succeeded", job
        worker = fleet.procs[-1]
        deadline = time.monotonic() + 10
        while "ContentDisallowed" not in worker.log_tail(400):
            assert time.monotonic() < deadline, worker.log_tail()
            time.sleep(0.2)
        assert "pickle" in worker.log_tail(400)
        assert worker.alive()
        assert not marker.exists()
        # Rejected for good: not back on the queue, not held unacknowledged (the last JSON
        # chunk's ack may trail its result by a moment).
        while rd.llen(keys.queue(COST_POOL, "bulk")) or held(rd):
            assert time.monotonic() < deadline, held(rd)
            time.sleep(0.1)
    assert not marker.exists()


def test_no_pickle_in_our_code() -> None:
    """Nothing of ours imports a pickle-based module or names the pickle serializer."""
    root = Path(__file__).resolve().parents[2]
    pattern = re.compile(
        r"^\s*(import|from)\s+(pickle|cPickle|shelve|dill|cloudpickle)\b|[\"']pickle[\"']"
    )
    hits = [
        f"{path.relative_to(root)}:{n}: {line.strip()}"
        for folder in ("core", "formats", "api", "workers", "producer", "bench", "scripts")
        for path in (root / folder).rglob("*.py")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert hits == []
