"""One validated settings object for every mtfleet process (env prefix ``MT_``).

Read once per process with :func:`get_settings`; a bad value raises before any model loads or
any socket opens. docs/configuration.md lists every field; ``make docs`` writes it from this
class and a test fails when it is out of date.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

_PLUGIN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MT_", env_file=None, extra="ignore")

    # --- Redis -------------------------------------------------------------------------------
    redis_url: str = Field(
        "redis://127.0.0.1:6379/0",
        description="Job state and Celery broker (durable: AOF, noeviction).",
    )
    cache_url: str | None = Field(
        None, description="Phrase cache (may be an allkeys-lru instance). Default: MT_REDIS_URL."
    )

    # --- Redis TLS / remote control ----------------------------------------------------------
    # TLS options live in a rediss:// URL's query (ssl_ca_certs, ssl_certfile, ssl_keyfile,
    # ssl_cert_reqs, ssl_check_hostname): checked here, applied by core.redis_conn.split_tls.
    worker_remote_control: bool = Field(
        True,
        description="Workers answer Celery remote control (ping, inspect: Flower's worker "
        "pages); false turns the pidbox off.",
    )

    @field_validator("redis_url", "cache_url")
    @classmethod
    def _redis_tls(cls, v: str | None) -> str | None:
        if v is not None:
            from mtfleet.core.redis_conn import split_tls

            split_tls(v)  # raises ValueError on a bad or missing TLS option
        return v

    # --- engine ------------------------------------------------------------------------------
    engine: str = Field(
        "apertium",
        description="Engine a worker runs: vllm, apertium, or a plugin as module:Class "
        "(a workers.engines.Engine subclass built with the settings).",
    )
    model: str = Field(
        "tencent/Hunyuan-MT-7B", description="vLLM model name or local path (vllm engine)."
    )
    prompt_style: Literal["auto", "hunyuan", "chat"] = Field(
        "auto",
        description="auto: Hunyuan-MT templates when the model name says hunyuan-mt, else the "
        "model's chat template.",
    )
    tensor_parallel_size: int = Field(1, ge=1, le=64, description="GPUs per engine (vllm).")
    dtype: str = Field("auto", description="vLLM dtype (auto, bfloat16, float16, float32).")
    max_model_len: int | None = Field(None, gt=0, description="vLLM max_model_len override.")
    max_step_tokens: int | None = Field(
        None,
        ge=16,
        description="Tokens one engine step may carry (vLLM max_num_batched_tokens; prefill "
        "is chunked to fit). A step lasts about max(weight read, tokens x compute per token): "
        "near the knee where the two meet (interactive slowdown x weight read / compute per "
        "token, about 260 for a 7B model in bf16 on an H200) bulk loses no throughput and an "
        "interactive request's steps are at most that much slower. Unset: the engine's own "
        "default (vLLM's is thousands: prefill-heavy steps of 100 ms and more).",
    )
    max_seqs: int | None = Field(
        None,
        ge=1,
        description="Sequences an engine runs at once (vLLM max_num_seqs). Keep it at most "
        "three quarters of MT_MAX_STEP_TOKENS, so a step always has room to start a new "
        "request (interactive ones first). Unset: the engine's own default.",
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
        description="Shortest engine deadline, whatever the estimate (never more than a quarter "
        "of the visibility timeout: a chunk's own budget is half of it).",
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
    process_per_lane: bool = Field(
        False,
        description="mtfleet worker: run each lane in a Celery worker process of its own, the "
        "bulk one at the lowest CPU priority, so the interactive lane's Python never waits "
        "behind the bulk lane's (its own GIL, the CPU first). For engines that can run twice on "
        "one host (apertium, CPU plugins); refused with --gpus, where each process would load "
        "the model again.",
    )
    interactive_max_segments: int = Field(
        50, ge=1, description="Jobs up to this many segments default to the interactive lane."
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
        "(per API process); past it every /v1 request from it is 429 for the rest of the minute.",
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

    @field_validator("redis_url", "cache_url")
    @classmethod
    def _redis_scheme(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must be a redis://, rediss:// or unix:// URL")
        return v

    @field_validator("engine")
    @classmethod
    def _engine_name(cls, v: str) -> str:
        if v not in {"vllm", "apertium"} and not _PLUGIN.match(v):
            raise ValueError("must be vllm, apertium or module:Class")
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
        if self.max_seqs and self.max_step_tokens and self.max_seqs > self.max_step_tokens:
            raise ValueError(
                f"max_seqs ({self.max_seqs}) must not exceed max_step_tokens "
                f"({self.max_step_tokens}): every running sequence takes a token of each step"
            )
        return self

    @property
    def effective_cache_url(self) -> str:
        return self.cache_url or self.redis_url


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read from the environment once."""
    return Settings()
