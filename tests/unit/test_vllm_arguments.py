"""What the vLLM engine asks of vLLM and how it names its output, from the settings alone
(workers/engines/vllm_engine.py; vLLM itself is not imported: tests/integration/
test_vllm_settings.py reads the same arguments back from vLLM's config)."""

from __future__ import annotations

import json
from pathlib import Path

from mtfleet.core.settings import EngineSettings, Settings
from mtfleet.workers.engines.vllm_engine import VllmEngine, adapter_problems, engine_kwargs


def lora(path: Path, rank: int) -> str:
    path.mkdir()
    (path / "adapter_config.json").write_text(json.dumps({"r": rank, "peft_type": "LORA"}))
    return str(path)


def test_each_setting_becomes_its_engine_argument(tmp_path: Path) -> None:
    s = Settings(
        engine="vllm",
        model="m",
        quantization="awq_marlin",
        kv_cache_dtype="fp8",
        enable_prefix_caching=True,
        pipeline_parallel_size=2,
        max_seqs=128,
        max_step_tokens=512,
        lora_adapters={"a": lora(tmp_path / "a", 8), "b": lora(tmp_path / "b", 20)},
        vllm_args={"block_size": 32, "cpu_offload_gb": 4},
    )
    kw = engine_kwargs(s.engine)
    assert kw["quantization"] == "awq_marlin" and kw["kv_cache_dtype"] == "fp8"
    assert kw["enable_prefix_caching"] is True and kw["pipeline_parallel_size"] == 2
    assert (kw["max_num_seqs"], kw["max_num_batched_tokens"]) == (128, 512)
    # the largest adapter's rank, rounded up to a size vLLM has slots for
    assert (kw["enable_lora"], kw["max_loras"], kw["max_lora_rank"]) == (True, 2, 32)
    assert (kw["block_size"], kw["cpu_offload_gb"]) == (32, 4)
    assert kw["scheduling_policy"] == "priority"


def test_unset_settings_leave_vllms_defaults() -> None:
    kw = engine_kwargs(EngineSettings(model="m"))
    for name in ("quantization", "kv_cache_dtype", "enable_prefix_caching", "enable_lora"):
        assert name not in kw


def test_what_changes_the_output_changes_the_fingerprint(tmp_path: Path) -> None:
    base = VllmEngine(Settings(engine="vllm", model="m").engine).fingerprint
    for change in (
        {"quantization": "fp8"},
        {"kv_cache_dtype": "fp8_e5m2"},
        {"vllm_args": {"block_size": 32}},
    ):
        assert VllmEngine(Settings(engine="vllm", model="m", **change).engine).fingerprint != base  # type: ignore[arg-type]
    # how the model is spread over GPUs, and prefix caching, do not
    for same in ({"pipeline_parallel_size": 2}, {"tensor_parallel_size": 4}):
        assert VllmEngine(Settings(engine="vllm", model="m", **same).engine).fingerprint == base  # type: ignore[arg-type]
    assert VllmEngine(Settings(enable_prefix_caching=True, model="m").engine).fingerprint == base


def test_each_adapter_has_a_fingerprint_of_its_own(tmp_path: Path) -> None:
    adapters = {"legal": lora(tmp_path / "legal", 8), "shoes": lora(tmp_path / "shoes", 8)}
    engine = VllmEngine(Settings(engine="vllm", model="m", lora_adapters=adapters).engine)
    fps = engine.adapters()
    assert sorted(fps) == ["legal", "shoes"]
    assert len({engine.fingerprint, *fps.values()}) == 3
    assert engine.fingerprint_for(None) == engine.fingerprint
    assert engine.fingerprint_for("legal") == fps["legal"]
    assert engine.fingerprint_for("medical") is None


def test_an_adapter_retrained_in_place_gets_a_new_fingerprint(tmp_path: Path) -> None:
    path = Path(lora(tmp_path / "shoes", 8))
    weights = path / "adapter_model.safetensors"
    weights.write_bytes(b"\x01" * 4096)
    settings = EngineSettings(model="m", lora_adapters={"shoes": str(path)})
    before = VllmEngine(settings).fingerprint_for("shoes")
    # a copy of the same files elsewhere (another host) has the same fingerprint
    (tmp_path / "elsewhere").mkdir()
    copy = Path(lora(tmp_path / "elsewhere" / "shoes", 8))
    (copy / "adapter_model.safetensors").write_bytes(weights.read_bytes())
    moved = EngineSettings(model="m", lora_adapters={"shoes": str(copy)})
    assert VllmEngine(moved).fingerprint_for("shoes") == before
    weights.write_bytes(b"\x02" * 4096)  # retrained: same size, other weights
    assert VllmEngine(settings).fingerprint_for("shoes") != before


def test_an_adapter_folder_without_a_peft_config_is_a_problem(tmp_path: Path) -> None:
    assert adapter_problems({"ok": lora(tmp_path / "ok", 8)}) == []
    (tmp_path / "norank").mkdir()
    (tmp_path / "norank" / "adapter_config.json").write_text("{}")
    problems = adapter_problems({"empty": str(tmp_path), "norank": str(tmp_path / "norank")})
    assert problems == [
        f"MT_LORA_ADAPTERS: empty={tmp_path} has no adapter_config.json (a PEFT LoRA adapter "
        "folder: adapter_config.json and adapter_model.safetensors)",
        f"MT_LORA_ADAPTERS: norank={tmp_path / 'norank'}: adapter_config.json has no r",
    ]
