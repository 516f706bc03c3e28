"""core/settings/: defaults, the MT_ environment prefix, and values refused at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from mtfleet.core.settings import (
    COMPONENTS,
    EngineSettings,
    Settings,
    WebhookSettings,
    WorkerSettings,
)
from mtfleet.workers.engines import create_engine

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees only the MT_ variables it sets itself."""
    for name in list(os.environ):
        if name.startswith("MT_"):
            monkeypatch.delenv(name)


def test_defaults() -> None:
    s = Settings()
    assert s.redis.redis_url == "redis://127.0.0.1:6379/0"
    assert s.redis.cache_url is None
    assert s.worker.engine == "apertium"
    assert s.engine.model == "tencent/Hunyuan-MT-7B"
    assert s.engine.prompt_style == "auto"
    assert s.engine.tensor_parallel_size == 1
    assert s.worker.lanes == ["interactive", "bulk"]
    assert s.backlog.chunk_size == 128
    # Hunyuan-MT's recommended sampling.
    e = s.engine
    assert (e.top_k, e.top_p, e.temperature, e.repetition_penalty) == (20, 0.6, 0.7, 1.05)


def test_each_component_reads_only_its_own_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """A component built alone reads its MT_* names and no other component's: the engine
    never sees the worker's lanes, the webhooks never see the engine's model."""
    monkeypatch.setenv("MT_LANES", "bulk")
    monkeypatch.setenv("MT_MODEL", "org/model")
    monkeypatch.setenv("MT_WEBHOOK_POLL_S", "0.25")
    engine, worker, webhooks = EngineSettings(), WorkerSettings(), WebhookSettings()
    assert (engine.model, worker.lanes, webhooks.webhook_poll_s) == ("org/model", ["bulk"], 0.25)
    assert not hasattr(engine, "lanes") and not hasattr(webhooks, "model")
    # composed, each variable lands in the one component that owns it
    s = Settings()
    assert (s.engine.model, s.worker.lanes, s.webhooks.webhook_poll_s) == (
        "org/model",
        ["bulk"],
        0.25,
    )


def test_every_setting_belongs_to_one_component_and_keeps_its_mt_name() -> None:
    """A keyword of Settings is the MT_ name without its prefix, given to its component; a
    name no component owns is refused, not silently dropped."""
    names = [n for cls in COMPONENTS.values() for n in cls.model_fields]
    assert len(names) == len(set(names))
    s = Settings(max_deliveries=9, sse_max_s=5, qe_threshold=2.5, engine="vllm", model="m")
    assert (s.worker.max_deliveries, s.webhooks.sse_max_s, s.quality.qe_threshold) == (9, 5, 2.5)
    assert (s.worker.engine, s.engine.model) == ("vllm", "m")
    with pytest.raises(TypeError, match="unknown settings: max_delivery"):
        Settings(max_delivery=9)


def test_an_engine_is_built_with_its_own_settings_only() -> None:
    """MT_ENGINE (the worker's) picks the class; the class gets the EngineSettings alone."""
    engine = create_engine(Settings(engine="apertium", model="unused"))
    assert isinstance(engine.settings, EngineSettings)  # type: ignore[attr-defined]
    assert engine.settings.model == "unused"  # type: ignore[attr-defined]


def test_reads_mt_prefixed_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MT_REDIS_URL", "redis://redis:6380/2")
    monkeypatch.setenv("MT_ENGINE", "vllm")
    monkeypatch.setenv("MT_TENSOR_PARALLEL_SIZE", "2")
    monkeypatch.setenv("MT_CHUNK_SIZE", "16")
    monkeypatch.setenv("MT_TOP_P", "0.9")
    s = Settings()
    assert s.redis.redis_url == "redis://redis:6380/2"
    assert s.worker.engine == "vllm"
    assert s.engine.tensor_parallel_size == 2
    assert s.backlog.chunk_size == 16
    assert s.engine.top_p == 0.9


def test_unprefixed_names_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHUNK_SIZE", "7")
    assert Settings().backlog.chunk_size == 128


@pytest.mark.parametrize(
    ("raw", "lanes"),
    [
        ("interactive", ["interactive"]),
        ("bulk", ["bulk"]),
        ("interactive,bulk", ["interactive", "bulk"]),
        (" bulk , interactive ", ["bulk", "interactive"]),
    ],
)
def test_lanes_parse_from_comma_list(
    monkeypatch: pytest.MonkeyPatch, raw: str, lanes: list[str]
) -> None:
    monkeypatch.setenv("MT_LANES", raw)
    assert Settings().worker.lanes == lanes


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MT_REDIS_URL", "http://x"),
        ("MT_CACHE_URL", "http://x"),
        ("MT_TENSOR_PARALLEL_SIZE", "0"),
        ("MT_CHUNK_SIZE", "0"),
        ("MT_TOP_P", "1.5"),
        ("MT_ENGINE", "foo"),
        ("MT_LANES", "fast"),
        ("MT_LANES", "interactive,fast"),
        ("MT_LANES", ","),
        ("MT_TRUSTED_PROXIES", "*"),
        ("MT_TRUSTED_PROXIES", "proxy.example.com"),
    ],
)
def test_bad_values_are_refused(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        Settings()


def test_cache_url_defaults_to_redis_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MT_REDIS_URL", "redis://state:6379/0")
    assert Settings().redis.effective_cache_url == "redis://state:6379/0"


def test_cache_url_can_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MT_REDIS_URL", "redis://state:6379/0")
    monkeypatch.setenv("MT_CACHE_URL", "redis://cache:6379/0")
    s = Settings()
    assert s.redis.effective_cache_url == "redis://cache:6379/0"
    assert s.redis.redis_url == "redis://state:6379/0"


def test_cli_refuses_bad_setting_before_starting_anything() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MT_")}
    env["MT_TENSOR_PARALLEL_SIZE"] = "0"
    proc = subprocess.run(
        [sys.executable, "-m", "mtfleet", "worker"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=15,
    )
    assert proc.returncode == 2, proc.stderr
    assert "invalid settings" in proc.stderr
    assert "tensor_parallel_size" in proc.stderr
    assert "starting" not in proc.stderr


def test_trusted_proxies_are_addresses_or_networks(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().keys.trusted_proxies == []  # default: X-Forwarded-For from anyone is ignored
    monkeypatch.setenv("MT_TRUSTED_PROXIES", " 127.0.0.1, 10.0.0.0/8,::1 ")
    assert Settings().keys.trusted_proxies == ["127.0.0.1/32", "10.0.0.0/8", "::1/128"]


def test_api_refuses_a_trusted_proxy_that_is_not_an_address() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MT_")}
    proc = subprocess.run(
        [sys.executable, "-m", "mtfleet", "api", "--trusted-proxies", "*"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=15,
    )
    assert proc.returncode == 2, proc.stderr
    assert "invalid settings" in proc.stderr and "trusted proxy '*'" in proc.stderr


def test_lanes_parse_from_json_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MT_LANES", '["bulk"]')
    assert Settings().worker.lanes == ["bulk"]


def test_running_sequences_cannot_exceed_the_step_budget() -> None:
    assert Settings(max_step_tokens=256, max_seqs=192).engine.max_seqs == 192
    with pytest.raises(ValidationError, match="must not exceed max_step_tokens"):
        Settings(max_step_tokens=128, max_seqs=256)


def test_an_engine_deadline_floor_the_visibility_timeout_cannot_hold_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A chunk holds its lease for half the visibility timeout and one engine call for a
    quarter: a floor set above that could never be given to a call (every call would be cut
    short and its chunk sent back until dead-lettered), so it is said at start-up."""
    monkeypatch.setenv("MT_VISIBILITY_TIMEOUT_S", "60")
    monkeypatch.setenv("MT_ENGINE_DEADLINE_FLOOR_S", "20")
    with pytest.raises(ValidationError) as err:
        Settings()
    message = str(err.value)
    assert "MT_ENGINE_DEADLINE_FLOOR_S=20" in message and "MT_VISIBILITY_TIMEOUT_S=60" in message
    assert "at least 80" in message  # what would hold it
    monkeypatch.setenv("MT_ENGINE_DEADLINE_FLOOR_S", "15")
    assert Settings().worker.engine_deadline_floor_s == 15  # a quarter exactly fits
    monkeypatch.delenv("MT_ENGINE_DEADLINE_FLOOR_S")
    assert Settings().worker.engine_deadline_floor_s == 30  # the default is capped, not refused
