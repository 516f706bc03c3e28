"""The engine: its model, how it is loaded and sampled (vLLM, transformers, an OpenAI-compatible
server).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode

from mtfleet.core.models import PoolModelType
from mtfleet.core.settings.base import (
    Component,
    parse_mapping,
)

_PLUGIN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
#: The engines mtfleet ships, by name: the class each is (``mtfleet.workers.engines``'s
#: ``create_engine`` imports it). Adding one is its module and one line here; anything else is
#: a plugin, named ``module:Class``.
ENGINES = {
    "vllm": "mtfleet.workers.engines.vllm_engine:VllmEngine",
    "openai": "mtfleet.workers.engines.openai_engine:OpenAIEngine",
    "transformers": "mtfleet.workers.engines.transformers_engine:TransformersEngine",
    "apertium": "mtfleet.workers.engines.apertium:ApertiumEngine",
}

#: Settings the vLLM engine sets from a first-class MT_* setting: not through MT_VLLM_ARGS.
VLLM_OWNED_ARGS = {
    "model": "MT_MODEL",
    "tensor_parallel_size": "MT_TENSOR_PARALLEL_SIZE (mtfleet worker --tp)",
    "pipeline_parallel_size": "MT_PIPELINE_PARALLEL_SIZE (mtfleet worker --pp)",
    "dtype": "MT_DTYPE",
    "seed": "MT_SEED",
    "trust_remote_code": "MT_TRUST_REMOTE_CODE",
    "gpu_memory_utilization": "MT_GPU_MEMORY_UTILIZATION",
    "enforce_eager": "MT_ENFORCE_EAGER",
    "max_model_len": "MT_MAX_MODEL_LEN",
    "max_num_batched_tokens": "MT_MAX_STEP_TOKENS",
    "max_num_seqs": "MT_MAX_SEQS",
    "quantization": "MT_QUANTIZATION",
    "kv_cache_dtype": "MT_KV_CACHE_DTYPE",
    "enable_prefix_caching": "MT_ENABLE_PREFIX_CACHING",
    "enable_lora": "MT_LORA_ADAPTERS",
    "max_loras": "MT_LORA_ADAPTERS",
    "max_lora_rank": "MT_LORA_ADAPTERS",
    "scheduling_policy": "(always priority: interactive work first)",
}


class EngineSettings(Component):
    """The engine: its model, how it is loaded and sampled (vLLM, transformers, an OpenAI-compatible
    server).
    """

    model: str = Field(
        "tencent/Hunyuan-MT-7B",
        description="Model name or local path (vllm, transformers engines); openai engine: the "
        "model's name at the server (as its /v1/models lists it).",
    )
    model_type: PoolModelType | None = Field(
        None,
        description="What a worker's pool is marked for (mtfleet worker --model-type): "
        "latency_optimized or quality_optimized. A request's model_type goes to a pool marked "
        "for it among those serving its pair, and to the usual pool (MT_ROUTES) where none is. "
        "Default: unmarked.",
    )
    prompt_style: Literal["auto", "hunyuan", "chat"] = Field(
        "auto",
        description="auto: Hunyuan-MT templates when the model name says hunyuan-mt, else the "
        "model's chat template.",
    )
    glossary_in_prompt: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Where an LLM engine gets a glossary's terms: auto, in the prompt for a model "
        "with a terminology template (Hunyuan-MT), as inline tags the worker replaces for every "
        "other; on, in the prompt for every LLM; off, inline tags everywhere. Either way the "
        "output is checked for the target terms.",
    )
    document_context_tokens: int = Field(
        256,
        ge=0,
        le=4096,
        description="About how many tokens of the neighbouring sentences of the same unit (a "
        "paragraph, a cell) go into an LLM's prompt with each sentence of a document, as "
        "context it does not translate, so pronouns and terms follow their neighbours; 0 "
        "turns it off. Estimated at 4 UTF-8 bytes a token (the API has no tokenizer).",
    )
    bulk_priority: Literal["lowest", "normal"] = Field(
        "lowest",
        description="CPU priority of a host's bulk work (a bulk-only worker process, an "
        "Apertium bulk pipeline). lowest: SCHED_IDLE, nice 19 and an idle cgroup where the "
        "host allows one, so bulk only gets the CPU nothing else wants. normal: bulk competes "
        "as any process, for a host whose other load must not starve it (a bulk process "
        "starved for minutes boots, heartbeats and answers that late); interactive work still "
        "goes first in the scheduler and in a worker process of its own.",
    )
    tensor_parallel_size: int = Field(
        1, ge=1, le=64, description="GPUs per pipeline stage of an engine (vllm; --tp)."
    )
    pipeline_parallel_size: int = Field(
        1,
        ge=1,
        le=64,
        description="Pipeline stages of an engine (vllm; --pp): a worker gets tensor x pipeline "
        "GPUs. For a model that does not fit one GPU's memory even with tensor parallelism, or "
        "GPUs without a fast link between them.",
    )
    quantization: str | None = Field(
        None,
        description="vLLM quantization method (awq, awq_marlin, gptq, gptq_marlin, fp8, "
        "bitsandbytes, compressed-tensors, ...; checked against the installed vLLM at start-up). "
        "Unset: what the model's config says (a pre-quantized AWQ/GPTQ/FP8 checkpoint is "
        "detected by vLLM itself); fp8 quantizes bf16 weights when they load.",
    )
    kv_cache_dtype: str = Field(
        "auto",
        description="vLLM KV-cache dtype (auto: the model's; fp8, fp8_e4m3, fp8_e5m2: half the "
        "cache memory, so twice the sequences at once; checked against the installed vLLM).",
    )
    enable_prefix_caching: bool | None = Field(
        None,
        description="vLLM automatic prefix caching: every request of a pair starts with the "
        "same prompt template, whose KV is then computed once and shared. Unset: vLLM's "
        "default (on in vLLM's V1 engine).",
    )
    lora_adapters: Annotated[dict[str, str], NoDecode] = Field(
        default_factory=dict,
        description="LoRA adapters a vLLM worker serves beside its base model, name=path "
        "(comma-separated, or a JSON object). A job names one (adapter) and is translated "
        "with it; each adapter has its own phrase-cache fingerprint.",
    )
    vllm_args: Annotated[dict[str, Any], NoDecode] = Field(
        default_factory=dict,
        description="Any other vLLM engine argument, as a JSON object ("
        '{"block_size": 32, "cpu_offload_gb": 4}); names vLLM\'s EngineArgs does not have are '
        "refused at start-up with the list of valid ones; arguments that have an MT_* setting "
        "must be set there.",
    )
    dtype: str = Field(
        "auto",
        description="Weights' dtype (auto, bfloat16, float16, float32): vllm, transformers "
        "(auto: float32 on the CPU, bfloat16 on GPUs that have it, else float16).",
    )
    max_model_len: int | None = Field(None, gt=0, description="vLLM max_model_len override.")
    max_step_tokens: int | None = Field(
        None,
        ge=16,
        description="Tokens one engine step may carry (vLLM max_num_batched_tokens; prefill "
        "is chunked to fit). A step lasts about max(weight read, tokens x compute per token): "
        "near the knee where the two meet (interactive slowdown x weight read / compute per "
        "token, about 260 for a 7B model in bf16 on an H200) bulk loses no throughput and an "
        "interactive request's steps are at most that much slower. Unset: the engine's own "
        "default (vLLM's is thousands: prefill-heavy steps of 100 ms and more). transformers "
        "engine: padded tokens x beams of one generate call (unset: 8192).",
    )
    max_seqs: int | None = Field(
        None,
        ge=1,
        description="Sequences an engine runs at once (vLLM max_num_seqs). Keep it at most "
        "three quarters of MT_MAX_STEP_TOKENS, so a step always has room to start a new "
        "request (interactive ones first). Unset: the engine's own default. transformers "
        "engine: segments in one generate call (unset: 64).",
    )
    gpu_memory_utilization: float = Field(0.90, gt=0, le=1, description="vLLM memory share.")
    enforce_eager: bool = Field(
        False, description="Skip CUDA graphs / torch.compile (faster start, slower decode)."
    )
    trust_remote_code: bool = Field(False, description="Allow model repos to run their code.")
    seed: int = Field(0, description="Sampling seed (vllm).")
    temperature: float = Field(0.7, ge=0, le=2, description="Sampling temperature (0 = greedy).")
    top_p: float = Field(0.6, gt=0, le=1, description="Nucleus sampling.")
    top_k: int = Field(20, ge=-1, description="Top-k sampling (-1 = off).")
    repetition_penalty: float = Field(1.05, gt=0, description="Repetition penalty.")
    max_tokens_ratio: float = Field(
        3.0, gt=0, description="max_tokens = source tokens x ratio + slack, capped by the model."
    )
    max_tokens_slack: int = Field(16, ge=0, description="Added to the derived max_tokens.")
    openai_base_url: str | None = Field(
        None,
        description="openai engine: the server's OpenAI API base URL, /v1 included (vLLM's "
        "server, TGI, SGLang, llama.cpp), e.g. http://127.0.0.1:8000/v1.",
    )
    openai_api_key: SecretStr | None = Field(
        None, description="openai engine: the server's API key (sent as a Bearer token)."
    )
    openai_concurrency: int = Field(
        64,
        ge=1,
        le=4096,
        description="openai engine: requests open at the server at once; the worker holds the "
        "rest, interactive first. Keep it at most what the server runs at once (vLLM "
        "--max-num-seqs, SGLang --max-running-requests, TGI --max-concurrent-requests, "
        "llama.cpp --parallel), so no request waits in the server's queue behind bulk work.",
    )
    openai_timeout_s: float = Field(
        120.0,
        gt=0,
        description="openai engine: seconds one request may wait for its answer (the worker's "
        "engine deadline usually ends a slow request sooner).",
    )
    openai_retries: int = Field(
        4,
        ge=0,
        le=20,
        description="openai engine: retries of a request the server answered 429 or 5xx, or "
        "that could not reach it, with exponential backoff (0.5 s doubling, at most 8 s; a "
        "Retry-After up to 30 s is followed). Still failing: the server is down (the chunk goes "
        "back to the queue and the worker reports itself unhealthy); a 500 fails the segment.",
    )
    openai_wait_s: float = Field(
        300.0,
        ge=0,
        description="openai engine: seconds a worker's engine (re)start waits for the server to "
        "answer GET /v1/models (a server still loading its model, or restarting) before it "
        "gives up.",
    )
    openai_tokenizer: str | None = Field(
        None,
        description="openai engine: the served model's tokenizer (local folder or Hugging Face "
        "id) for exact token counts, context checks and max_tokens computed as the vllm engine "
        "does. Unset: MT_MODEL, or the model root the server reports, when either is a local "
        "folder; otherwise word-based estimates.",
    )
    device: str = Field(
        "auto",
        pattern=r"^(auto|cpu|cuda(:\d+)?)$",
        description="transformers engine: cuda:N, cpu, or auto (cuda:0 when a GPU is visible, "
        "else cpu). Each worker of mtfleet worker --gpus sees its own GPUs, numbered from 0.",
    )
    num_beams: int | None = Field(
        None,
        ge=1,
        le=16,
        description="transformers engine: beams of encoder-decoder models (OPUS-MT, NLLB, "
        "M2M100, MADLAD). Unset: the model's generation config (OPUS-MT's: 4 to 6).",
    )

    @field_validator("openai_base_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is not None:
            if not v.startswith(("http://", "https://")):
                raise ValueError("must be an http:// or https:// URL (its /v1 included)")
            v = v.rstrip("/")
        return v

    @field_validator("lora_adapters", mode="before")
    @classmethod
    def _parse_adapters(cls, v: object) -> object:
        v = parse_mapping(v, "MT_LORA_ADAPTERS")
        if isinstance(v, dict):
            for name in v:
                if not re.fullmatch(r"[A-Za-z0-9][\w.-]{0,63}", str(name)):
                    raise ValueError(
                        f"adapter name {name!r}: 1-64 letters, digits, '.', '-' or '_'"
                    )
        return v

    @field_validator("vllm_args", mode="before")
    @classmethod
    def _parse_vllm_args(cls, v: object) -> object:
        if isinstance(v, str):
            v = json.loads(v) if v.strip() else {}
            if not isinstance(v, dict):
                raise ValueError('MT_VLLM_ARGS must be a JSON object, e.g. {"block_size": 32}')
        if isinstance(v, dict):
            owned = sorted(k for k in v if k in VLLM_OWNED_ARGS)
            if owned:
                raise ValueError(
                    "MT_VLLM_ARGS sets "
                    + ", ".join(f"{k} (use {VLLM_OWNED_ARGS[k]})" for k in owned)
                )
        return v

    @model_validator(mode="after")
    def _check(self) -> EngineSettings:
        if self.max_seqs and self.max_step_tokens and self.max_seqs > self.max_step_tokens:
            raise ValueError(
                f"max_seqs ({self.max_seqs}) must not exceed max_step_tokens "
                f"({self.max_step_tokens}): every running sequence takes a token of each step"
            )
        return self
