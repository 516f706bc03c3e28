"""The deployment files: docker-compose.yml validates and keeps the structure mtfleet relies on.

The YAML checks run everywhere (PyYAML resolves the anchors and ``<<`` merges the same way
docker-compose does); the ``docker-compose config`` check runs where docker-compose is installed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
REDIS_SERVICES = ("redis", "redis-cache")
FLOWER_PASSWORD = "test-only-password"
REDIS_PASSWORD = "0123456789abcdef"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(data, dict) and isinstance(data.get("services"), dict)
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def _workers(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in services.items() if name.startswith("worker")}


def _argv(svc: dict[str, Any]) -> list[str]:
    cmd = svc.get("command", [])
    return [str(a) for a in cmd] if isinstance(cmd, list) else str(cmd).split()


def _env(svc: dict[str, Any]) -> dict[str, str]:
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def _flag(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _interpolated_default(value: str) -> str:
    """``${VAR:-default}`` -> ``default`` (what compose yields when VAR is unset)."""
    return re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", value)


def _gpu_devices(svc: dict[str, Any]) -> list[dict[str, Any]]:
    reservations = svc.get("deploy", {}).get("resources", {}).get("reservations", {})
    return list(reservations.get("devices") or [])


# --- docker-compose itself -------------------------------------------------------------------


def compose_config(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``docker-compose config`` of the file with ``env`` (skips where it is not installed)."""
    exe = shutil.which("docker-compose")
    if exe is None:
        pytest.skip("docker-compose is not installed (Debian: apt-get install docker-compose)")
    return subprocess.run(
        [exe, "-f", str(COMPOSE), "config"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_docker_compose_config_validates() -> None:
    env = {**os.environ, "MT_FLOWER_PASSWORD": FLOWER_PASSWORD, "MT_REDIS_PASSWORD": REDIS_PASSWORD}
    proc = compose_config(env)
    assert proc.returncode == 0, proc.stderr
    rendered = yaml.safe_load(proc.stdout)
    assert rendered["services"]["flower"]["environment"]["MT_FLOWER_PASSWORD"] == FLOWER_PASSWORD
    # every Redis requires the password, and every client's URL carries it
    for name in REDIS_SERVICES:
        assert _flag(_argv(rendered["services"][name]), "--requirepass") == REDIS_PASSWORD
    for name, svc in rendered["services"].items():
        for var, url in _env(svc).items():
            if var in ("MT_REDIS_URL", "MT_CACHE_URL"):
                assert url.startswith(f"redis://:{REDIS_PASSWORD}@"), (name, var)


def test_docker_compose_requires_a_redis_password() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MT_REDIS_PASSWORD"}
    env["MT_FLOWER_PASSWORD"] = FLOWER_PASSWORD
    proc = compose_config(env)
    assert proc.returncode != 0
    assert "MT_REDIS_PASSWORD" in proc.stderr


def test_workers_have_an_engine_health_check(services: dict[str, dict[str, Any]]) -> None:
    for name, svc in _workers(services).items():
        probe = " ".join(svc["healthcheck"]["test"])
        assert "9100/metrics" in probe and "mt_worker_engine_healthy 1.0" in probe, name
        assert _env(svc)["MT_WORKER_METRICS_PORT"] == "9100", name


def test_prometheus_scrapes_the_api_and_every_worker(services: dict[str, dict[str, Any]]) -> None:
    config = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    jobs = config["scrape_configs"]
    targets = {t for job in jobs for sc in job.get("static_configs", []) for t in sc["targets"]}
    # a scaled service (every replica) is found by DNS: its name answers each container's address
    targets |= {
        f"{n}:{sd['port']}"
        for job in jobs
        for sd in job.get("dns_sd_configs", [])
        for n in sd["names"]
    }
    assert "api:9100" in targets  # the API's metrics port (its public /metrics wants a key)
    assert "api:8000" not in targets
    assert {f"{name}:9100" for name in _workers(services)} <= targets
    assert "openai-worker:9100" in targets  # the openai profile's thin workers
    assert services["prometheus"]["profiles"] == ["monitoring"]
    assert services["prometheus"]["ports"] == ["127.0.0.1:9090:9090"]


def test_the_apis_metrics_port_is_for_the_compose_network_only(
    services: dict[str, dict[str, Any]],
) -> None:
    api = services["api"]
    env = _env(api)
    assert env["MT_API_METRICS_PORT"] == "9100"
    assert env["MT_API_METRICS_HOST"] == "0.0.0.0"  # Prometheus is another container
    assert [str(p) for p in api.get("expose", [])] == ["9100"]
    published = [str(p) for p in api.get("ports", [])]
    assert published == ["8000:8000"]  # the public API only, never the metrics port
    assert _flag(_argv(api), "--workers") in (None, "1")  # one process: one metrics port


def test_docker_compose_requires_flower_password() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MT_FLOWER_PASSWORD"}
    env["MT_REDIS_PASSWORD"] = REDIS_PASSWORD
    proc = compose_config(env)
    assert proc.returncode != 0
    assert "MT_FLOWER_PASSWORD" in proc.stderr


# --- structure -------------------------------------------------------------------------------


def test_expected_services_exist(services: dict[str, dict[str, Any]]) -> None:
    for name in ("redis", "redis-cache", "api", "flower"):
        assert name in services, name
    assert len(_workers(services)) >= 1


def test_redis_is_durable_and_never_evicts(services: dict[str, dict[str, Any]]) -> None:
    argv = _argv(services["redis"])
    assert _flag(argv, "--appendonly") == "yes"
    assert _flag(argv, "--appendfsync") in {"everysec", "always"}
    assert _flag(argv, "--maxmemory-policy") == "noeviction"
    assert any(
        str(v).endswith(":/data") or ":/data:" in str(v)
        for v in services["redis"].get("volumes", [])
    ), "job state needs a volume"


def test_redis_cache_is_bounded_lru(services: dict[str, dict[str, Any]]) -> None:
    argv = _argv(services["redis-cache"])
    assert _flag(argv, "--maxmemory-policy") == "allkeys-lru"
    assert _flag(argv, "--maxmemory") not in (None, "0")
    assert _flag(argv, "--appendonly") in (None, "no")


def test_every_redis_service_has_a_healthcheck(services: dict[str, dict[str, Any]]) -> None:
    for name in REDIS_SERVICES:
        test = services[name].get("healthcheck", {}).get("test")
        assert test, f"{name} has no healthcheck"
        assert "redis-cli" in " ".join(test if isinstance(test, list) else [test]), name


def test_app_services_wait_for_healthy_redis(services: dict[str, dict[str, Any]]) -> None:
    dependants = ["api", "flower", *_workers(services)]
    for name in dependants:
        deps = services[name].get("depends_on")
        assert isinstance(deps, dict), f"{name}: depends_on must use the long form with conditions"
        assert deps.get("redis", {}).get("condition") == "service_healthy", name
    assert services["api"]["depends_on"]["redis-cache"]["condition"] == "service_healthy"


def test_api_points_at_both_redis_roles(services: dict[str, dict[str, Any]]) -> None:
    env = _env(services["api"])
    assert re.fullmatch(r"redis://:\$\{MT_REDIS_PASSWORD[^}]*\}@redis:6379/0", env["MT_REDIS_URL"])
    assert env["MT_CACHE_URL"] == "redis://:${MT_REDIS_PASSWORD}@redis-cache:6379/0"
    assert services["api"].get("healthcheck", {}).get("test")


def test_workers_reserve_distinct_gpus_matching_tp(services: dict[str, dict[str, Any]]) -> None:
    workers = _workers(services)
    assert len(workers) >= 2
    seen: dict[str, str] = {}
    for name, svc in workers.items():
        devices = _gpu_devices(svc)
        assert len(devices) == 1, f"{name}: reserve exactly one nvidia device entry"
        dev = devices[0]
        assert dev.get("driver") == "nvidia", name
        assert "gpu" in dev.get("capabilities", []), name
        ids = [str(i) for i in dev.get("device_ids") or []]
        assert ids, f"{name}: device_ids must be explicit (not count: all)"
        assert "count" not in dev, f"{name}: use device_ids, not count"
        assert len(set(ids)) == len(ids), f"{name}: duplicate device_ids {ids}"
        for gpu in ids:
            assert gpu not in seen, f"GPU {gpu} reserved by both {seen[gpu]} and {name}"
            seen[gpu] = name

        argv = _argv(svc)
        env = _env(svc)
        assert argv[:2] == ["mtfleet", "worker"], name
        assert (_flag(argv, "--engine") or env.get("MT_ENGINE")) == "vllm", name
        tp_flag, tp_env = _flag(argv, "--tp"), env.get("MT_TENSOR_PARALLEL_SIZE")
        assert tp_flag is not None or tp_env is not None, f"{name}: no tensor-parallel size"
        for tp in (tp_flag, tp_env):
            if tp is not None:
                assert int(tp) == len(ids), f"{name}: tp {tp} but {len(ids)} GPUs reserved"
        # Inside the container the reserved GPUs are renumbered 0..N-1.
        gpus = _flag(argv, "--gpus")
        assert gpus is not None, f"{name}: pass --gpus"
        assert [int(g) for g in gpus.split(",")] == list(range(len(ids))), name


def test_workers_keep_model_cache_and_shutdown_time(services: dict[str, dict[str, Any]]) -> None:
    for name, svc in _workers(services).items():
        env = _env(svc)
        assert _interpolated_default(env["MT_MODEL"]) == "tencent/Hunyuan-MT-7B", name
        assert env["MT_REDIS_URL"] == _env(services["api"])["MT_REDIS_URL"], name
        assert env["MT_CACHE_URL"] == _env(services["api"])["MT_CACHE_URL"], name
        hf_home = env.get("HF_HOME")
        assert hf_home and any(str(v).split(":")[1] == hf_home for v in svc.get("volumes", []))
        assert svc.get("ipc") == "host" or svc.get("shm_size"), f"{name}: vLLM needs shm"
        assert svc.get("restart") == "unless-stopped", name
        grace = str(svc.get("stop_grace_period", "10s"))
        m = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", grace)
        assert m, grace
        assert int(m.group(1) or 0) * 60 + int(m.group(2) or 0) >= 60, f"{name}: {grace}"


def test_flower_is_loopback_only_with_required_password(
    services: dict[str, dict[str, Any]],
) -> None:
    flower = services["flower"]
    ports = [str(p) for p in flower.get("ports", [])]
    assert ports, "flower publishes no port"
    for port in ports:
        assert port.startswith("127.0.0.1:"), f"flower port {port} not bound to loopback"
    env = _env(flower)
    assert env["MT_FLOWER_HOST"] == "0.0.0.0"
    assert env["MT_FLOWER_PASSWORD"].startswith("${MT_FLOWER_PASSWORD:?")
    assert "MT_FLOWER_USER" in env
    assert _argv(flower)[:2] == ["mtfleet", "flower"]


def test_nothing_configures_pickle(compose: dict[str, Any]) -> None:
    for name, svc in compose["services"].items():
        for key, value in _env(svc).items():
            assert "pickle" not in f"{key}={value}".lower(), f"{name}: {key}={value}"
        assert "pickle" not in " ".join(_argv(svc)).lower(), name
    assert "pickle" not in COMPOSE.read_text(encoding="utf-8").lower()


def test_build_targets_exist_in_dockerfile(services: dict[str, dict[str, Any]]) -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    stages = set(re.findall(r"(?im)^FROM\s+\S+\s+AS\s+(\S+)\s*$", text))
    for name, svc in services.items():
        build = svc.get("build")
        if isinstance(build, dict) and "target" in build:
            assert build["target"] in stages, f"{name}: no stage {build['target']!r}"
    assert {"api", "worker"} <= stages
    users = re.findall(r"(?im)^USER\s+(\S+)", text)
    assert users and all(not u.startswith(("root", "0")) for u in users)
    assert re.search(r"(?im)^HEALTHCHECK .*", text) and "/healthz" in text


def test_the_openai_profile_runs_thin_workers_in_front_of_a_server(
    services: dict[str, dict[str, Any]],
) -> None:
    svc = services["openai-worker"]
    assert svc["profiles"] == ["openai"]
    assert svc["build"]["target"] == "api"  # no torch, no vLLM: the API image suffices
    assert not _gpu_devices(svc)
    argv, env = _argv(svc), _env(svc)
    assert argv[:2] == ["mtfleet", "worker"] and _flag(argv, "--engine") == "openai"
    # defaults only: the file still interpolates for those who never use the profile
    assert _interpolated_default(env["MT_OPENAI_BASE_URL"]).endswith("/v1")
    assert env["MT_REDIS_URL"] == _env(services["api"])["MT_REDIS_URL"]
    assert "mt_worker_engine_healthy 1.0" in " ".join(svc["healthcheck"]["test"])
    assert set(svc["depends_on"]) == set(REDIS_SERVICES)
