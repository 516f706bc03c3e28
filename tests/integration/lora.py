"""A LoRA adapter for the tiny test model, written with PEFT (what a fine-tune would leave
behind): rank 8 on the attention's q and v projections, its B matrices random (PEFT's default
initialisation makes them zero, which would leave the model's output unchanged)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: Run in a subprocess: torch, transformers and PEFT stay out of the test process.
MAKE_ADAPTER = """
import sys
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

torch.manual_seed(0)
model = AutoModelForCausalLM.from_pretrained(sys.argv[1])
peft = get_peft_model(
    model, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"])
)
for name, weight in peft.named_parameters():
    if "lora_B" in name:
        torch.nn.init.normal_(weight, std=1.0)
peft.save_pretrained(sys.argv[2])
"""


def make_adapter(model: str, path: Path) -> Path:
    """Write the adapter for ``model`` to ``path`` (a new folder); returns ``path``."""
    subprocess.run(
        [sys.executable, "-c", MAKE_ADAPTER, model, str(path)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert (path / "adapter_config.json").is_file()
    return path
