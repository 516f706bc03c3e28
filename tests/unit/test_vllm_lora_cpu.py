"""The plugin that keeps base-model tokens free of LoRA adapters on vLLM's CPU ops, on the ops
of the installed vLLM: the check finds what they do to a no-adapter (``-1``) row, and the
wrapped ops leave such rows exactly as they were while adapted rows get the same delta."""

from __future__ import annotations

from types import ModuleType

import pytest

from mtfleet.workers.engines.vllm_lora_cpu import leaves_base_rows_alone, skipping_base_rows

pytestmark = pytest.mark.vllm


# torch and vLLM imported by the tests that use them, not at collection: every xdist worker
# collects every file, and these two imports cost each ~6 CPU-seconds
@pytest.fixture(scope="module")
def torch() -> ModuleType:
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def lora_ops() -> ModuleType:
    return pytest.importorskip("vllm.lora.ops.torch_ops.lora_ops")


def test_the_check_tells_an_op_that_touches_base_rows_from_one_that_does_not(
    lora_ops: ModuleType,
) -> None:
    # vLLM 0.32's CPU op gathers index -1 as the last adapter (vllm-project/vllm#48421)
    assert leaves_base_rows_alone(skipping_base_rows(lora_ops.bgmv_expand))
    assert not leaves_base_rows_alone(lambda i, w, out, idx, add: out.add_(1.0))


@pytest.mark.parametrize("add_inputs", [True, False])
def test_wrapped_expand_leaves_base_rows_and_applies_adapters(
    add_inputs: bool, torch: ModuleType, lora_ops: ModuleType
) -> None:
    torch.manual_seed(0)
    inputs = torch.randn(4, 8)
    weights = torch.randn(2, 1, 6, 8)  # two adapters
    indices = torch.tensor([0, -1, 1, -1])
    before = torch.randn(4, 6)
    out = before.clone()
    skipping_base_rows(lora_ops.bgmv_expand)(inputs, weights, out, indices, add_inputs)
    assert torch.equal(out[1], before[1]) and torch.equal(out[3], before[3])
    for row, adapter in ((0, 0), (2, 1)):
        delta = weights[adapter, 0] @ inputs[row]
        want = before[row] + delta if add_inputs else delta
        assert torch.allclose(out[row], want, atol=1e-5)


def test_wrapped_shrink_leaves_base_rows(torch: ModuleType, lora_ops: ModuleType) -> None:
    inputs = torch.randn(3, 8)
    weights = torch.randn(1, 1, 4, 8)
    out = torch.zeros(3, 4)
    skipping_base_rows(lora_ops.bgmv_shrink)(inputs, weights, out, torch.tensor([-1, 0, -1]), 0.5)
    assert torch.count_nonzero(out[0]) == 0 and torch.count_nonzero(out[2]) == 0
    assert torch.allclose(out[1], 0.5 * (weights[0, 0] @ inputs[1]), atol=1e-5)
