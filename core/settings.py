"""One validated settings object for every mtfleet process (env prefix ``MT_``).

Read once per process with :func:`get_settings`; a bad value raises before any model loads or
any socket opens. docs/configuration.md lists every field; ``make docs`` writes it from this
class and a test fails when it is out of date.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from mtfleet.core.models import PoolModelType

_PLUGIN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
#: Share of MT_VISIBILITY_TIMEOUT_S a chunk may hold its broker lease (its time budget,
#: workers/chunk.py), and share one engine call may take (the deadlines' ceiling: half the
#: budget, so a segment past its deadline fails alone before its chunk's budget runs out).
CHUNK_BUDGET_SHARE = 0.5
ENGINE_DEADLINE_SHARE = CHUNK_BUDGET_SHARE / 2
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


def default_pool(engine: str) -> str:
    """The pool a worker joins when ``MT_POOL`` is not set: its engine's name (a plugin
    ``module:Class``: the class name, lowercased)."""
    name = engine.rpartition(":")[2].lower()
    return re.sub(r"[^a-z0-9_-]", "-", name)[:32] or "default"


def _mapping(v: object, what: str) -> object:
    """``a=b,c=d`` or a JSON object -> dict (anything else is left to pydantic)."""
    if not isinstance(v, str):
        return v
    text = v.strip()
    if text.startswith("{"):
        return json.loads(text)
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"{what}: expected name=value items separated by commas, got {part!r}")
        out[key.strip()] = value.strip()
    return out


def parse_pair(text: str) -> tuple[str, str]:
    """``"en-es"`` -> ("en", "es"), both codes normalised (ValueError for an unknown one)."""
    from mtfleet.core import languages
    from mtfleet.core.errors import UnsupportedLanguage

    src, sep, tgt = text.strip().partition("-")
    if not sep:
        src, sep, tgt = text.strip().partition(":")
    if not sep or not src or not tgt:
        raise ValueError(f"{text!r} is not a language pair like en-es")
    try:
        return languages.normalize(src), languages.normalize(tgt)
    except UnsupportedLanguage as exc:
        raise ValueError(f"{text!r}: {exc.message}") from None


def route_pattern(text: str) -> str:
    """A route's pattern, normalised: ``*``, ``src-*``, ``*-tgt`` or ``src-tgt`` (ValueError
    otherwise). ``-`` separates the two sides; ``zh-Hant`` is written ``zh_Hant`` or with
    ``:`` (``en:zh-Hant``)."""
    from mtfleet.core import languages
    from mtfleet.core.errors import UnsupportedLanguage

    text = text.strip()
    if text == "*":
        return "*"
    sep = ":" if ":" in text else "-"
    src, found, tgt = text.partition(sep)
    if not found or not src or not tgt:
        raise ValueError(f"route {text!r}: use *, src-*, *-tgt or src-tgt (e.g. en-zh)")
    try:
        sides = [s if s == "*" else languages.normalize(s.replace("_", "-")) for s in (src, tgt)]
    except UnsupportedLanguage as exc:
        raise ValueError(f"route {text!r}: {exc.message}") from None
    return f"{sides[0]}:{sides[1]}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MT_", env_file=None, extra="ignore")

    # --- Redis -------------------------------------------------------------------------------
    redis_url: str = Field(
        "redis://127.0.0.1:6379/0",
        description="Job state and Celery broker (durable: AOF, noeviction). With Redis "
        "Sentinel: sentinel://[USER:PASSWORD@]HOST:26379,HOST2:26379/0?master=NAME (add "
        "sentinel_password=... when the Sentinels require one; sentinels:// for TLS, with the "
        "ssl_* options of rediss://).",
    )
    cache_url: str | None = Field(
        None, description="Phrase cache (may be an allkeys-lru instance). Default: MT_REDIS_URL."
    )

    redis_min_replicas: int = Field(
        0,
        ge=0,
        le=16,
        description="Replicas that must hold a new job before the API accepts it: the job is "
        "written, then WAIT-ed for (Redis WAIT); a job fewer replicas confirm within "
        "MT_REDIS_REPLICA_TIMEOUT_MS is refused with 503 not_replicated. With Sentinel, 1 "
        "means a failover to a replica cannot lose an accepted job (docs/reliability.md). 0: "
        "no wait (asynchronous replication).",
    )
    redis_replica_timeout_ms: int = Field(
        1000,
        ge=1,
        le=60_000,
        description="Milliseconds the API waits for MT_REDIS_MIN_REPLICAS to confirm a new job.",
    )

    # --- Redis TLS / remote control ----------------------------------------------------------
    # TLS options live in a rediss:// (or sentinels://) URL's query (ssl_ca_certs, ssl_certfile,
    # ssl_keyfile, ssl_cert_reqs, ssl_check_hostname), Sentinel ones in a sentinel:// URL's:
    # checked here, applied by core.redis_conn.
    worker_remote_control: bool = Field(
        True,
        description="Workers answer Celery remote control (ping, inspect: Flower's worker "
        "pages); false turns the pidbox off.",
    )

    @field_validator("redis_url", "cache_url")
    @classmethod
    def _redis_tls(cls, v: str | None) -> str | None:
        if v is not None:
            from mtfleet.core.redis_conn import check_url

            check_url(v)  # raises ValueError on a bad TLS or Sentinel option
        return v

    # --- engine ------------------------------------------------------------------------------
    engine: str = Field(
        "apertium",
        description="Engine a worker runs: vllm, openai (an OpenAI-compatible server), "
        "transformers, apertium, or a plugin as module:Class (a workers.engines.Engine subclass "
        "built with the settings). docs/engines.md says which for which model and machine.",
    )
    model: str = Field(
        "tencent/Hunyuan-MT-7B",
        description="Model name or local path (vllm, transformers engines); openai engine: the "
        "model's name at the server (as its /v1/models lists it).",
    )
    pool: str | None = Field(
        None,
        description="The pool a worker joins (mtfleet worker --pool): it consumes that pool's "
        "queues, and the API routes a pair to a pool that serves it (MT_ROUTES). Lowercase "
        "letters, digits, - and _. Default: the engine's name (vllm, apertium; a plugin's class "
        "name, lowercased).",
    )
    model_type: PoolModelType | None = Field(
        None,
        description="What a worker's pool is marked for (mtfleet worker --model-type): "
        "latency_optimized or quality_optimized. A request's model_type goes to a pool marked "
        "for it among those serving its pair, and to the usual pool (MT_ROUTES) where none is. "
        "Default: unmarked.",
    )
    pairs: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Language pairs a worker offers, comma-separated (en-es,es-en); a pair its "
        "engine cannot translate is refused at start-up. Default: every pair the engine "
        "translates.",
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
    engine_deadline_factor: float = Field(
        10.0,
        ge=1,
        description="An engine call may take this many times what the engine should need (the "
        "cost model's estimate for batch engines, the measured seconds per token for streaming "
        "ones) before it is interrupted or aborted and its segment fails alone.",
    )
    engine_deadline_floor_s: float = Field(
        30.0,
        gt=0,
        description="Shortest engine deadline, whatever the estimate. At most a quarter of "
        "MT_VISIBILITY_TIMEOUT_S (a chunk's own budget is half of it): a larger value is "
        "refused at start-up, and the default is capped there.",
    )

    # --- OpenAI-compatible server engine (openai) -------------------------------------------
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

    # --- transformers engine -----------------------------------------------------------------
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

    # --- worker ------------------------------------------------------------------------------
    lanes: Annotated[list[Literal["interactive", "bulk"]], NoDecode] = Field(
        default_factory=lambda: ["interactive", "bulk"],  # type: ignore[arg-type]
        description="Lanes a worker consumes.",
    )
    worker_concurrency: int = Field(
        32,
        ge=1,
        le=512,
        description="Most chunks a worker holds at once (threads); the adaptive pull window "
        "stays at or below it.",
    )
    interactive_prefetch: int = Field(
        4,
        ge=0,
        le=64,
        description="Interactive chunks a worker serving both lanes takes beside its bulk "
        "window, on their own consumer and threads (0: both lanes share the window).",
    )
    interactive_slowdown: float = Field(
        1.3,
        ge=1.0,
        description="How much slower per generated token interactive requests may run in a "
        "streaming engine (vLLM) under bulk load; bulk in flight is cut to hold it.",
    )
    pull_ahead_s: float = Field(
        2.0, gt=0, description="Seconds of measured throughput a worker pulls ahead."
    )
    interactive_latency_s: float = Field(
        0.5,
        gt=0,
        description="Interactive latency target: a batch-engine call is sized to last at most "
        "half of it.",
    )
    heartbeat_s: float = Field(5.0, gt=0, description="Worker registry heartbeat period.")
    max_deliveries: int = Field(
        5, ge=1, description="Deliveries of one chunk before it goes to the dead-letter list."
    )
    dead_letter_max: int = Field(
        10_000,
        ge=1,
        description="Entries the dead-letter list keeps at most (the newest; `mtfleet "
        "dead-letters` lists, retries and purges them).",
    )
    dead_letter_ttl_s: int = Field(
        7 * 24 * 3600,
        ge=60,
        description="Seconds a dead-letter entry is kept after it was listed. A chunk can be "
        "retried only while its job is kept (MT_RESULT_TTL_S), so longer than that only "
        "keeps its reason.",
    )
    visibility_timeout_s: int = Field(
        3600, ge=10, description="Seconds before an unacked chunk is redelivered (broker)."
    )
    restore_interval_s: int = Field(
        10,
        ge=1,
        description="Seconds between a worker's sweeps of its own chunks whose visibility "
        "timeout passed (a live worker that held a chunk too long). A dead worker's chunks do "
        "not wait for the timeout: they are back once its heartbeat expires.",
    )
    reconcile_interval_s: int = Field(
        30,
        ge=1,
        description="Seconds between sweeps for chunks the broker lost (in neither a queue "
        "nor a worker); one is re-sent after missing for max(2 x this, 5 s).",
    )
    worker_metrics_port: int | None = Field(
        None, ge=1, le=65535, description="Serve worker Prometheus metrics on this port."
    )

    # --- jobs and API ------------------------------------------------------------------------
    chunk_size: int = Field(
        128,
        ge=1,
        le=1024,
        description="Distinct texts per broker message. Each message costs the fleet about "
        "2.5 ms of CPU (publish, receive, task events, acks, three Redis scripts: measured with "
        "make bench), so larger chunks cost less per segment; a chunk that kills its worker "
        "every time is dead-lettered whole, so smaller ones lose less to a poison segment.",
    )
    process_per_lane: bool | Literal["auto"] = Field(
        "auto",
        description="mtfleet worker: run each lane in a Celery worker process of its own, the "
        "bulk one at the lowest CPU priority, so the interactive lane's Python never waits "
        "behind the bulk lane's (its own GIL, the CPU first). auto: on for a worker without "
        "--gpus serving both lanes whose engine can run once per lane on one host (apertium; a "
        "plugin whose class sets lane_processes), off otherwise. true is refused with --gpus, "
        "where each process would load the model again.",
    )
    interactive_max_segments: int = Field(
        50,
        ge=1,
        description="Jobs up to this many segments default to the interactive lane, and the "
        "most one interactive job may carry: a larger one runs on the bulk lane whatever lane "
        "it asks for (POST /v1/jobs, /v1/translate, /v1/documents and the drop-ins alike).",
    )
    routes: Annotated[dict[str, str], NoDecode] = Field(
        default_factory=dict,
        description="Which pool a pair goes to where several serve it, pattern=pool "
        "(comma-separated, or a JSON object): en-zh=hunyuan,en-*=nllb,*=apertium. The most "
        "specific pattern whose pool serves the pair wins (src-tgt, then src-*, then *-tgt, then "
        "*); without one, a pool with a live worker, then the first by name. A job that names "
        "its pool skips this.",
    )
    max_queue_interactive: int = Field(
        2_000,
        ge=1,
        description="Chunks waiting in the interactive queue at which new interactive work "
        "gets 429 + Retry-After (backpressure; cached answers still pass).",
    )
    max_queue_bulk: int = Field(
        200_000,
        ge=1,
        description="Chunks waiting in the bulk queue at which new bulk work gets 429 + "
        "Retry-After.",
    )
    max_segments_per_job: int = Field(10_000, ge=1, description="Segments one job may carry.")
    max_segment_chars: int = Field(5_000, ge=1, description="Characters one segment may carry.")
    max_request_bytes: int = Field(
        8 * 1024 * 1024, ge=1024, description="Largest request body the API reads."
    )
    release_ahead: int = Field(
        32,
        ge=1,
        le=100_000,
        description="Chunks a pool lane's broker queue holds at most; the rest wait in the "
        "fleet's backlog, where API keys take turns (docs/reliability.md, fair shares). Enough "
        "to keep every worker's pull window fed between releases; more only delays a new "
        "key's turn.",
    )
    release_interval_s: float = Field(
        0.25,
        gt=0,
        le=60,
        description="Seconds between a worker's releases from the backlog when no chunk ends "
        "(one runs after every chunk anyway).",
    )
    document_deadline_s: float = Field(
        20.0,
        gt=0,
        le=600,
        description="Seconds reading or rendering one document may take (in a worker process of "
        "the API, stopped at the deadline: 422 document_too_complex).",
    )
    document_memory_mb: int = Field(
        1024,
        ge=128,
        description="Memory one document's reading or rendering may use, in MiB (422 "
        "document_too_complex past it).",
    )
    document_workers: int = Field(
        2, ge=1, le=64, description="Processes per API process that read and render documents."
    )
    preload: bool = Field(
        True,
        description="Load the language detector's models and start the document processes "
        "before the API serves (the first auto-detected request and the first document wait "
        "for neither). false: on first use (a smaller, faster-starting API that never detects "
        "a language nor reads a document).",
    )
    document_workers_per_key: int | None = Field(
        None,
        ge=1,
        le=64,
        description="Documents one API key may have read or rendered at once per API process "
        "(running or waiting for a process); four times as many more of its calls wait for "
        "them (files uploaded together), the next are 429, so one tenant's uploads never queue "
        "another's. Default: half of MT_DOCUMENT_WORKERS, at least 1.",
    )
    body_timeout_s: float = Field(
        60.0,
        gt=0,
        le=3600,
        description="Seconds a client has to send a request's whole body (408 past it).",
    )
    header_timeout_s: float = Field(
        10.0,
        gt=0,
        le=600,
        description="Seconds a client has to send a request's headers once it starts one (or "
        "once it connects); the connection is closed past it.",
    )
    result_ttl_s: int = Field(
        7 * 24 * 3600, ge=60, description="Seconds job state and results are kept."
    )
    cache_ttl_s: int = Field(30 * 24 * 3600, ge=60, description="Phrase-cache entry lifetime.")
    cache_scope: Literal["key", "shared"] = Field(
        "key",
        description="key: each API key has its own phrase-cache entries (no tenant learns what "
        "another translated); shared: keys share entries (more hits, and a fast answer tells a "
        "key that somebody translated exactly that text before). MT_AUTH=off: always shared.",
    )
    idempotency_ttl_s: int = Field(24 * 3600, ge=60, description="Idempotency-Key lifetime.")
    translate_timeout_s: float = Field(
        10.0, gt=0, le=300, description="/v1/translate waits this long before answering 202."
    )
    api_metrics_port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="Also serve the API's Prometheus metrics on this port, without a key, for "
        "scrapers on a private network (the API's own /metrics wants an operator key when "
        "MT_AUTH=required). One API process per port: mtfleet api --workers N>1 refuses it.",
    )
    api_metrics_host: str = Field(
        "127.0.0.1",
        min_length=1,
        description="Address MT_API_METRICS_PORT listens on. Loopback by default, so that "
        "setting the port alone never opens the fleet's internals to every network the host is "
        "on; 0.0.0.0 in a container whose scraper is another container or pod (the metrics "
        "port unpublished).",
    )

    # --- drop-in surfaces (DeepL v2, LibreTranslate) -------------------------------------------
    deepl_wait_s: float = Field(
        8.0,
        gt=0,
        le=60,
        description="Seconds POST /v2/translate waits for its job before answering 429 with "
        "Retry-After. The official DeepL clients give an attempt 10 s, then send the same "
        "request again, which joins the same job: keep this under 10.",
    )
    deepl_status_wait_s: float = Field(
        2.0,
        ge=0,
        le=8,
        description="Seconds a DeepL document status check waits for a document expected to be "
        "done by then (the official client sleeps 5 s between checks: a small document is "
        "done at its first). 0: answer at once.",
    )
    libretranslate_wait_s: float = Field(
        60.0,
        gt=0,
        le=600,
        description="Seconds LibreTranslate's /translate and /translate_file wait for their job "
        "(LibreTranslate answers synchronously). Past it /translate is 503 (the same request "
        "sent again joins the job) and /translate_file answers with its download link, which "
        "waits as long again.",
    )
    crowdin_wait_s: float = Field(
        60.0,
        gt=0,
        le=600,
        description="Seconds Crowdin's Custom MT route (POST /crowdin/translate) waits for its "
        "job (Crowdin waits for the translations in the request it sends). Past it the answer "
        "is 503 with Retry-After; the same request sent again joins the job.",
    )
    dropin_retry_window_s: int = Field(
        600,
        ge=10,
        le=7 * 24 * 3600,
        description="Seconds an identical DeepL, LibreTranslate or Crowdin request (the same API "
        "key and the same body) joins the job the first one made instead of making another: "
        "those clients resend a request after a timeout, a 429 or a 5xx without an "
        "Idempotency-Key.",
    )

    # --- webhooks and event streams ----------------------------------------------------------
    webhook_retry_for_s: int = Field(
        3 * 24 * 3600,
        ge=60,
        description="Seconds a job's webhook is retried after the job became final (at least 24 h "
        "in production: 86400); then it is given up (state failed).",
    )
    webhook_backoff_first_s: float = Field(
        5.0,
        gt=0,
        description="Webhook retries back off with full jitter: the n-th waits a random time up "
        "to this x 2^(n-1) seconds, capped by MT_WEBHOOK_BACKOFF_MAX_S (a longer Retry-After "
        "is honoured).",
    )
    webhook_backoff_max_s: float = Field(
        3600.0, gt=0, description="The longest wait between two attempts of a webhook."
    )
    webhook_timeout_s: float = Field(
        15.0,
        gt=0,
        le=120,
        description="Seconds one webhook attempt may take (connect, send, answer); past it the "
        "attempt failed and is retried.",
    )
    webhook_concurrency: int = Field(
        16, ge=1, le=1024, description="Webhook attempts an API process makes at once."
    )
    webhook_key_concurrency: int = Field(
        4,
        ge=1,
        le=1024,
        description="Webhook attempts of one API key an API process makes at once (at most "
        "MT_WEBHOOK_CONCURRENCY): a key whose receiver is slow holds no more of the slots, and "
        "the keys with events due take turns for the others.",
    )
    webhook_poll_s: float = Field(
        1.0,
        gt=0,
        le=60,
        description="Seconds between an API process's looks at the webhook outbox for events "
        "that are due.",
    )
    webhook_allow_private: bool = Field(
        False,
        description="Allow callback URLs that resolve to private, loopback, link-local or other "
        "non-public addresses (checked at submission and again at each attempt). Tests and "
        "single-network deployments only.",
    )
    webhook_secret: SecretStr | None = Field(
        None,
        description="The whsec_ secret that signs webhooks of jobs made with MT_AUTH=off (with "
        "API keys, each key has its own: mtfleet keys create). Unset: callback_url is refused "
        "with MT_AUTH=off.",
    )
    sse_ping_s: float = Field(
        15.0,
        gt=0,
        le=300,
        description="Seconds between keep-alive comments on GET /v1/jobs/{id}/events.",
    )
    sse_progress_s: float = Field(
        0.5,
        ge=0.05,
        le=60,
        description="Shortest time between two progress events of a job's event stream (the "
        "final event is sent at once).",
    )
    max_waits_per_key: int = Field(
        100,
        ge=1,
        le=100_000,
        description="Event streams (GET /v1/jobs/{id}/events) and ?wait= requests one API key "
        "may hold open at once per API process; past it 429 with Retry-After, so one tenant's "
        "streams never take the connections another's requests need.",
    )
    sse_max_s: float = Field(
        3600.0,
        gt=0,
        description="Seconds an event stream stays open; then it ends and a client reconnects "
        "with Last-Event-ID.",
    )

    @field_validator("webhook_secret")
    @classmethod
    def _whsec(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None:
            from mtfleet.core.apikeys import check_webhook_secret

            check_webhook_secret(v.get_secret_value())
        return v

    # --- Flower ------------------------------------------------------------------------------
    flower_host: str = Field("127.0.0.1", description="Flower bind address.")
    flower_port: int = Field(5555, ge=1, le=65535, description="Flower port.")
    flower_user: str = Field("admin", min_length=1, description="Flower basic-auth user.")
    flower_password: SecretStr = Field(
        SecretStr("change-me"), description="Flower basic-auth password."
    )

    # --- API keys ----------------------------------------------------------------------------
    auth: Literal["required", "off"] = Field(
        "required",
        description="required: every /v1 request needs an API key (Bearer); off: anything is "
        "allowed and jobs have no owner (local development only).",
    )
    auth_failures_per_minute: int = Field(
        30,
        ge=1,
        description="Requests with an invalid API key one client address may send per minute "
        "(per API process, on every surface); past it that address's requests with a bad key "
        "are 429 with Retry-After for the rest of the minute. A valid key is served whatever "
        "its address sent. Behind a proxy, set MT_TRUSTED_PROXIES so the address is the "
        "client's, not the proxy's.",
    )
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Addresses or networks of the reverse proxies in front of the API, "
        "comma-separated (127.0.0.1,10.0.0.0/8; mtfleet api --trusted-proxies): from them, and "
        "only them, X-Forwarded-For names the client (for the bad-key throttle) and "
        "X-Forwarded-Proto the scheme (in links the API answers with). Default: none, so "
        "X-Forwarded-* from anyone is ignored.",
    )
    libretranslate_key_in_query: bool = Field(
        False,
        description="Take LibreTranslate's api_key from the query string too (?api_key=, where "
        "proxy logs and Referer headers keep it). Default: only from the body (JSON or form); a "
        "key in the query is 400, saying where to put it.",
    )
    key_storage_mb: int = Field(
        1024,
        ge=1,
        description="MiB an API key may keep in Redis (its jobs' texts, results and documents, "
        "and its glossaries) unless the key sets its own (mtfleet keys create --storage-mb); "
        "past it a request that stores more is 429 storage_quota_exceeded.",
    )
    auth_cache_s: float = Field(
        5.0,
        ge=0,
        le=300,
        description="Seconds an API process trusts an API key it has read from Redis; a revoke "
        "takes effect within this (0: read Redis on every request).",
    )
    key_rate: float = Field(
        10.0,
        gt=0,
        le=1_000_000,
        description="Requests per second (bursts of a second's worth) of an API key made "
        "without --rate, keys made before this setting included; past it 429 with Retry-After. "
        "mtfleet keys create --rate N gives a key its own, --rate none no limit.",
    )
    key_interactive_segments: int = Field(
        200,
        ge=1,
        description="Interactive segments one API key may have queued or being translated at "
        "once, fleet-wide (its interactive jobs' segments not yet done); past it an "
        "interactive request is 429 with Retry-After, so one tenant cannot take the "
        "interactive lane from the others. A key holding none may always send one job.",
    )
    key_interactive_jobs: int = Field(
        16,
        ge=1,
        description="Interactive jobs one API key may have queued or being translated at once, "
        "fleet-wide; past it an interactive request is 429 with Retry-After (send large work "
        "as a bulk job).",
    )
    key_detections: int = Field(
        1,
        ge=1,
        le=64,
        description="Language detections (source_lang auto) one API key may have running at "
        "once per API process (one of 10,000 texts takes seconds of the API's CPU); four times "
        "as many more of its requests wait for them, the next are 429 with Retry-After, so one "
        "tenant's detections never slow another's requests. A key whose daily quota is spent "
        "is refused before its texts are detected.",
    )

    # --- glossaries / checks -----------------------------------------------------------------
    glossary_max_terms: int = Field(
        10_000, ge=1, le=100_000, description="Entries plus protected terms in one glossary."
    )
    glossary_max_term_chars: int = Field(
        200, ge=1, le=1_000, description="Characters one glossary term may have."
    )
    glossary_max_per_key: int = Field(
        1_000, ge=1, description="Glossaries one API key may keep (MT_AUTH=off: in all)."
    )
    tm_max_pairs: int = Field(
        100_000, ge=1, le=1_000_000, description="Pairs one translation memory may hold."
    )
    tm_max_segment_bytes: int = Field(
        4_096, ge=64, le=65_536, description="Bytes (UTF-8) of one source or target in a memory."
    )
    tm_max_import_bytes: int = Field(
        64 * 1024 * 1024,
        ge=1024,
        description="Bytes of one TMX, TSV or CSV file imported as a translation memory.",
    )
    tm_max_per_key: int = Field(
        100, ge=1, description="Translation memories one API key may keep (MT_AUTH=off: in all)."
    )
    tm_work_per_key: int = Field(
        2,
        ge=1,
        le=64,
        description="Translation-memory imports, exports, corrections and segment listings "
        "one API key may run at once per API process (each in a document process, within the "
        "key's share of them); past it 429 with Retry-After, before the request's body is parsed.",
    )
    check_length_ratio: float = Field(
        3.0,
        gt=1,
        le=100,
        description="Output check: warn when a translation (source of 20+ characters) is more "
        "than this many times longer or shorter than expected.",
    )
    check_language: bool = Field(
        True,
        description="Output check: warn when a translation is confidently in another language "
        "than the target (lingua; false: workers never load the detector).",
    )

    # --- quality estimation ------------------------------------------------------------------
    qe_model: str | None = Field(
        None,
        description="A quality-estimation model a worker loads beside its engine (mtfleet "
        "worker --qe-model; a local path or a Hugging Face name): a MetricX-24 regressor, "
        "google/metricx-24-hybrid-large-v2p6 (or -xl-, -xxl-; Apache-2.0), read with "
        "transformers as an mT5 encoder-decoder. Its "
        "pool then scores each translated segment of a request asking quality_estimation "
        "(0 best, 25 worst; docs/quality.md); a request asking it of a pool without one is "
        "refused. Unset: no quality estimation.",
    )
    qe_tokenizer: str | None = Field(
        None,
        description="The tokenizer of MT_QE_MODEL (a path or a Hugging Face name). MetricX-24's "
        "checkpoints ship without one: google/mt5-xl. Default: the model's own.",
    )
    qe_threshold: float = Field(
        5.0,
        ge=0,
        le=25,
        description="A scored segment above this MetricX score (0 best, 25 worst) gets a "
        "low_quality warning and is marked for review in a document (#, fuzzy in a PO file, "
        "state needs-review-translation in XLIFF).",
    )
    qe_batch_size: int = Field(
        16, ge=1, le=1024, description="Segments the quality-estimation model scores at once."
    )

    @field_validator("redis_url", "cache_url")
    @classmethod
    def _redis_scheme(cls, v: str | None) -> str | None:
        schemes = ("redis://", "rediss://", "unix://", "sentinel://", "sentinels://")
        if v is not None and not v.startswith(schemes):
            raise ValueError(
                "must be a redis://, rediss://, unix://, sentinel:// or sentinels:// URL"
            )
        return v

    @field_validator("engine")
    @classmethod
    def _engine_name(cls, v: str) -> str:
        if v not in ENGINES and not _PLUGIN.match(v):
            raise ValueError(f"must be one of {', '.join(sorted(ENGINES))} or module:Class")
        return v

    @field_validator("openai_base_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is not None:
            if not v.startswith(("http://", "https://")):
                raise ValueError("must be an http:// or https:// URL (its /v1 included)")
            v = v.rstrip("/")
        return v

    @field_validator("pool")
    @classmethod
    def _pool_name(cls, v: str | None) -> str | None:
        from mtfleet.core import keys

        if v is not None and not keys.is_pool(v):
            raise ValueError(
                "a pool name is 1-32 lowercase letters, digits, - or _, starting with a letter "
                "or digit"
            )
        return v

    @field_validator("pairs", mode="before")
    @classmethod
    def _split_pairs(cls, v: object) -> object:
        if isinstance(v, str):
            v = [p for p in v.split(",") if p.strip()]
        if isinstance(v, list):
            return ["{}:{}".format(*parse_pair(str(p))) for p in v]
        return v

    @field_validator("routes", mode="before")
    @classmethod
    def _parse_routes(cls, v: object) -> object:
        from mtfleet.core import keys

        v = _mapping(v, "MT_ROUTES")
        if not isinstance(v, dict):
            return v
        out: dict[str, str] = {}
        for pattern, pool in v.items():
            if not isinstance(pool, str) or not keys.is_pool(pool):
                raise ValueError(f"route {pattern!r}: {pool!r} is not a pool name")
            out[route_pattern(str(pattern))] = pool
        return out

    @field_validator("lora_adapters", mode="before")
    @classmethod
    def _parse_adapters(cls, v: object) -> object:
        v = _mapping(v, "MT_LORA_ADAPTERS")
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

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _parse_proxies(cls, v: object) -> object:
        if isinstance(v, str):
            v = [p.strip() for p in v.split(",") if p.strip()]
        if isinstance(v, list):
            out = []
            for p in v:
                try:
                    out.append(str(ipaddress.ip_network(str(p).strip(), strict=False)))
                except ValueError:
                    raise ValueError(
                        f"trusted proxy {p!r}: an IP address or network (10.0.0.0/8) is needed"
                    ) from None
            return out
        return v

    @field_validator("lanes", mode="before")
    @classmethod
    def _split_lanes(cls, v: object) -> object:
        if isinstance(v, str):
            if v.strip().startswith("["):
                return json.loads(v)
            return [p.strip() for p in v.split(",") if p.strip()]
        return v

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if not self.lanes:
            raise ValueError("lanes must name at least one of: interactive, bulk")
        if self.engine == "openai" and not self.openai_base_url:
            raise ValueError(
                "engine openai needs MT_OPENAI_BASE_URL (the server's API, e.g. "
                "http://127.0.0.1:8000/v1)"
            )
        ceiling = self.visibility_timeout_s * ENGINE_DEADLINE_SHARE
        if (
            "engine_deadline_floor_s" in self.model_fields_set
            and self.engine_deadline_floor_s > ceiling
        ):
            floor = self.engine_deadline_floor_s
            raise ValueError(
                f"MT_ENGINE_DEADLINE_FLOOR_S={floor:g} does not fit "
                f"MT_VISIBILITY_TIMEOUT_S={self.visibility_timeout_s}: one engine call may take "
                f"at most a quarter of it ({ceiling:g}s; a chunk holds its lease for half), so no "
                f"call could be given that floor; set MT_VISIBILITY_TIMEOUT_S to at least "
                f"{math.ceil(floor / ENGINE_DEADLINE_SHARE)} or the floor to at most {ceiling:g}"
            )
        if self.max_seqs and self.max_step_tokens and self.max_seqs > self.max_step_tokens:
            raise ValueError(
                f"max_seqs ({self.max_seqs}) must not exceed max_step_tokens "
                f"({self.max_step_tokens}): every running sequence takes a token of each step"
            )
        return self

    @property
    def effective_cache_url(self) -> str:
        return self.cache_url or self.redis_url

    @property
    def offered_pairs(self) -> list[tuple[str, str]]:
        """MT_PAIRS as (source, target) pairs (empty: every pair the engine translates)."""
        return [(a, b) for a, _, b in (p.partition(":") for p in self.pairs)]

    @property
    def pool_name(self) -> str:
        """The pool this worker serves (``MT_POOL``, else the engine's name)."""
        return self.pool or default_pool(self.engine)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read from the environment once."""
    return Settings()
