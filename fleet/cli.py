"""The operator's commands: start a fleet's components and administer it.

``mtfleet api`` · ``mtfleet worker`` · ``mtfleet flower`` · ``mtfleet demo`` start the
components (they need ``mtfleet[server]``, Flower ``[flower]`` too); ``mtfleet keys ...`` (API
keys), ``mtfleet pools forget`` (a pool gone for good) and ``mtfleet dead-letters ...``
(:mod:`~mtfleet.fleet.dead_letters`) act on the fleet's Redis directly (``MT_REDIS_URL``);
``mtfleet plan`` (:mod:`~mtfleet.fleet.plan`) sizes a fleet's GPUs and needs nothing.

They are commands of the one ``mtfleet`` command: its entry point, :mod:`mtfleet.__main__`,
mounts them on the client's app (:func:`mount`; the client CLI never imports them). This
module imports nothing of the server stack itself (each command imports what it runs once
:func:`~mtfleet.producer.extras.require` has found it installed), so the client install's
``mtfleet`` loads it, and a command of it says which extra to install.

Settings come from ``MT_*`` environment variables (docs/configuration.md); command-line options
override them for the process they start.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from mtfleet.core.errors import InvalidInput
from mtfleet.core.models import PoolModelType
from mtfleet.core.scopes import FAMILIES
from mtfleet.fleet.dead_letters import dead_letters_app
from mtfleet.fleet.plan import plan_command
from mtfleet.producer.extras import require

if TYPE_CHECKING:
    from mtfleet.core.apikeys import KeyStore

err_console = Console(stderr=True, soft_wrap=True)


def mount(app: typer.Typer, pools: typer.Typer) -> None:
    """Make these commands ``app``'s (the ``mtfleet`` command) and ``pools forget`` one of
    ``pools`` (whose ``list`` is a client command)."""
    for command in (api, worker, flower, demo):
        app.command()(command)
    # capacity planning: no fleet needed (fleet/plan.py, fleet/capacity.py)
    app.command("plan")(plan_command)
    app.add_typer(dead_letters_app, name="dead-letters")
    app.add_typer(keys_app, name="keys")
    pools.command("forget")(pools_forget)


def _settings_or_exit(overrides: dict[str, str]) -> None:
    """Validate settings (with overrides) before starting anything: a bad value exits 2."""
    os.environ.update(overrides)
    from mtfleet.core.settings import Settings, get_settings

    get_settings.cache_clear()
    try:
        Settings()
    except ValidationError as exc:
        err_console.print(f"[red]invalid settings:[/red]\n{escape(str(exc))}")
        raise typer.Exit(2) from None


# --- components -------------------------------------------------------------------------------
def api(
    host: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8000,
    workers: Annotated[int, typer.Option(help="Uvicorn worker processes.")] = 1,
    log_level: Annotated[str, typer.Option()] = "info",
    trusted_proxies: Annotated[
        str | None,
        typer.Option(
            help="Reverse proxies whose X-Forwarded-For/-Proto are honoured, comma-separated "
            "addresses or networks (MT_TRUSTED_PROXIES; default: none)."
        ),
    ] = None,
) -> None:
    """Serve the HTTP API (uvicorn)."""
    require("api", "server")
    import uvicorn

    from mtfleet.core.settings import get_settings

    _settings_or_exit({} if trusted_proxies is None else {"MT_TRUSTED_PROXIES": trusted_proxies})
    proxies = get_settings().keys.trusted_proxies
    metrics_port = get_settings().api.api_metrics_port
    if workers > 1 and metrics_port is not None:
        # each process would bind it: one wins, the others fail and are restarted, forever
        err_console.print(
            f"[red]--workers {workers} with MT_API_METRICS_PORT={metrics_port}:[/red] each API "
            "process counts its own metrics and they cannot share one port. Run one process per "
            "port (several `mtfleet api --workers 1` behind a load balancer, each with its own "
            "MT_API_METRICS_PORT), or unset MT_API_METRICS_PORT and scrape /metrics with an "
            "operator key."
        )
        raise typer.Exit(2)
    uvicorn.run(
        "mtfleet.api.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        access_log=False,
        timeout_keep_alive=30,
        http="mtfleet.api.guard:HeaderTimeoutProtocol",  # a deadline on request headers
        # X-Forwarded-* from the trusted proxies only (uvicorn's default trusts loopback, and
        # anyone there could then pick the address the bad-key throttle counts)
        proxy_headers=bool(proxies),
        forwarded_allow_ips=proxies,
    )


def worker(
    engine: Annotated[
        str | None,
        typer.Option(
            help="vllm, openai, transformers, apertium or a plugin module:Class (MT_ENGINE)."
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name or path (MT_MODEL).")] = None,
    pool: Annotated[
        str | None,
        typer.Option(help="The pool these workers join (MT_POOL; default: the engine's name)."),
    ] = None,
    pairs: Annotated[
        str | None,
        typer.Option(help="Pairs to offer, e.g. en-es,es-en (MT_PAIRS; default: all)."),
    ] = None,
    model_type: Annotated[
        PoolModelType | None,
        typer.Option(
            "--model-type",
            help="What the pool is marked for (MT_MODEL_TYPE): requests asking for it go to it.",
        ),
    ] = None,
    qe_model: Annotated[
        str | None,
        typer.Option(
            "--qe-model",
            help="A quality-estimation model to load beside the engine, e.g. "
            "google/metricx-24-hybrid-large-v2p6 (MT_QE_MODEL; docs/quality.md).",
        ),
    ] = None,
    gpus: Annotated[str | None, typer.Option(help="GPU ids, e.g. 0,1,2,3 or 0-7.")] = None,
    tp: Annotated[int, typer.Option("--tp", help="GPUs per engine (tensor parallel).")] = 1,
    pp: Annotated[
        int | None,
        typer.Option("--pp", help="Pipeline stages per engine (MT_PIPELINE_PARALLEL_SIZE)."),
    ] = None,
    lanes: Annotated[str | None, typer.Option(help="interactive,bulk (MT_LANES).")] = None,
    concurrency: Annotated[
        int | None, typer.Option(help="Most chunks a worker holds (MT_WORKER_CONCURRENCY).")
    ] = None,
    loglevel: Annotated[str, typer.Option()] = "INFO",
) -> None:
    """Start one Celery worker per GPU group of --tp x --pp GPUs (one CPU worker without
    --gpus) in pool --pool; restart on death."""
    require("worker", "server")
    from mtfleet.core.errors import ConfigError
    from mtfleet.workers.gpus import gpu_groups, parse_gpus
    from mtfleet.workers.preflight import problems
    from mtfleet.workers.supervisor import lanes_apart, run_workers, worker_plan

    overrides = {
        k: v
        for k, v in {
            "MT_ENGINE": engine,
            "MT_MODEL": model,
            "MT_POOL": pool,
            "MT_PAIRS": pairs,
            "MT_MODEL_TYPE": model_type,
            "MT_QE_MODEL": qe_model,
            "MT_PIPELINE_PARALLEL_SIZE": str(pp) if pp else None,
            "MT_LANES": lanes,
            "MT_WORKER_CONCURRENCY": str(concurrency) if concurrency else None,
        }.items()
        if v is not None
    }
    _settings_or_exit(overrides)
    from mtfleet.core.settings import get_settings

    settings = get_settings()
    try:
        gpu_ids = parse_gpus(gpus)
        groups = gpu_groups(gpu_ids, tp, settings.engine.pipeline_parallel_size)
        prefix = f"{settings.worker.pool}-" if settings.worker.pool else ""
        apart = lanes_apart(settings, gpu_ids)
        plan = worker_plan(groups, list(settings.worker.lanes), apart, prefix)
    except ConfigError as exc:
        err_console.print(f"[red]{escape(exc.message)}[/red]")
        raise typer.Exit(2) from None
    found = problems(settings, gpu_ids)
    if found:
        err_console.print(
            f"[red]mtfleet worker (engine {settings.worker.engine}) cannot start:[/red]\n"
            + "\n".join(f"  - {escape(line)}" for line in found),
            soft_wrap=True,
        )
        raise typer.Exit(2)
    err_console.print(
        f"starting {len(plan)} worker(s): {', '.join(name for name, _, _ in plan)} "
        f"engine={settings.worker.engine} pool={settings.worker.pool_name} "
        f"lanes={','.join(settings.worker.lanes)}"
    )
    code = run_workers(
        gpus=gpus,
        tp=tp,
        pp=settings.engine.pipeline_parallel_size,
        pool=settings.worker.pool_name,
        lanes=list(settings.worker.lanes),
        concurrency=settings.worker.worker_concurrency,
        loglevel=loglevel,
        env_overrides=overrides,
        interactive_prefetch=settings.scheduler.interactive_prefetch,
        process_per_lane=apart,
        lower_bulk=settings.engine.bulk_priority == "lowest",
        prefix=prefix,
    )
    raise typer.Exit(code)


def flower(
    host: Annotated[str | None, typer.Option(help="Bind address (MT_FLOWER_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (MT_FLOWER_PORT).")] = None,
) -> None:
    """Run Flower on the broker with basic auth (credentials from MT_FLOWER_USER/PASSWORD)."""
    require("flower", "server", "flower")
    _settings_or_exit({})
    from mtfleet.core.errors import ConfigError
    from mtfleet.core.settings import get_settings
    from mtfleet.workers.flower import check_flower_auth, run_flower

    s = get_settings()
    address = host or s.flower.flower_host
    try:
        warning = check_flower_auth(
            address, s.flower.flower_user, s.flower.flower_password.get_secret_value()
        )
    except ConfigError as exc:
        err_console.print(f"[red]{escape(exc.message)}[/red]", soft_wrap=True)
        raise typer.Exit(2) from None
    if warning:
        err_console.print(f"[bold red]WARNING: {warning}[/bold red]", soft_wrap=True)
    raise typer.Exit(run_flower(s, address, port or s.flower.flower_port))


def demo(
    keep_running: Annotated[bool, typer.Option(help="Leave the fleet running afterwards.")] = False,
    bulk_lines: Annotated[int, typer.Option(help="Lines in the bulk job.")] = 300,
    redis_url: Annotated[
        str | None,
        typer.Option(
            help="Use this Redis instead of a private redis-server (e.g. redis://h:6379/5)."
        ),
    ] = None,
) -> None:
    """Start a private Redis, the API, an Apertium worker and Flower; translate en->es."""
    require("demo", "server", "flower")
    from mtfleet.fleet.demo import run_demo

    raise typer.Exit(
        run_demo(keep_running=keep_running, bulk_lines=bulk_lines, redis_url=redis_url)
    )


# --- pools ------------------------------------------------------------------------------------
def pools_forget(name: Annotated[str, typer.Argument(help="The pool's name.")]) -> None:
    """Take a pool that is gone for good out of the registry (talks to MT_REDIS_URL): no job is
    routed to it any more. A pool whose workers start again comes back by itself."""
    require("pools forget", "server")
    _settings_or_exit({})
    from mtfleet.core.redis_conn import connect
    from mtfleet.core.registry import Registry
    from mtfleet.core.settings import get_settings

    if not Registry(connect(get_settings().redis.redis_url)).forget_pool(name):
        err_console.print(f"[red]no pool {escape(repr(name))}[/red]")
        raise typer.Exit(1)
    print(f"forgot pool {name}")


# --- API keys (straight to Redis) -------------------------------------------------------------
keys_app = typer.Typer(
    no_args_is_help=True,
    help="API keys: create, list, usage, set-weight, set-scope, revoke, delete, "
    "rotate-webhook-secret (talks to the Redis at MT_REDIS_URL directly).",
)


def _key_store() -> KeyStore:
    require("keys", "server")
    _settings_or_exit({})
    from mtfleet.core.apikeys import KeyStore
    from mtfleet.core.redis_conn import connect
    from mtfleet.core.settings import get_settings

    settings = get_settings()
    return KeyStore(
        connect(settings.redis.redis_url), cache_s=0, default_rate=settings.keys.key_rate
    )


WEIGHT_HELP = (
    "Share of a pool's workers while keys' work waits: weight 2 gets twice the turns of "
    "weight 1 (docs/reliability.md)."
)


SCOPE_HELP = (
    "The route families the key may call, comma-separated: "
    + ", ".join(FAMILIES)
    + "; or all (the default). Languages, limits and health are every key's "
    "(docs/security.md#api-keys)."
)


@keys_app.command("create")
def keys_create(
    name: Annotated[str, typer.Option(help="Who the key is for, e.g. shop1.")],
    chars_per_day: Annotated[
        int | None,
        typer.Option(min=1, help="Characters of text per UTC day (default: no limit)."),
    ] = None,
    rate: Annotated[
        str | None,
        typer.Option(
            help="Requests per second, or none: no limit (default: MT_KEY_RATE, which then "
            "applies to the key whatever it is set to later)."
        ),
    ] = None,
    storage_mb: Annotated[
        int | None,
        typer.Option(min=1, help="MiB the key may keep in Redis (default: MT_KEY_STORAGE_MB)."),
    ] = None,
    role: Annotated[
        str,
        typer.Option(help="user, or operator: may also read /v1/ops and the panel at /ops."),
    ] = "user",
    scope: Annotated[str | None, typer.Option(help=SCOPE_HELP)] = None,
    weight: Annotated[int, typer.Option(min=1, max=1000, help=WEIGHT_HELP)] = 1,
    no_trace: Annotated[
        bool,
        typer.Option(
            "--no-trace",
            help="Every request of the key is no-trace: no phrase-cache write, its texts and "
            "results deleted once delivered (docs/security.md#no-trace-requests).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Create an API key; its token is printed once (only its hash is stored)."""
    try:
        key, token = _key_store().create(
            name,
            chars_per_day=chars_per_day,
            rate=_rate_option(rate),
            storage_mb=storage_mb,
            role=role,
            scope=scope,
            weight=weight,
            no_trace=no_trace,
        )
    except InvalidInput as exc:
        err_console.print(f"[red]{escape(exc.message)}[/red]")
        raise typer.Exit(2) from None
    if as_json:
        print(
            json.dumps(
                {
                    **key.model_dump(mode="json"),
                    "token": token,
                    "webhook_secret": key.webhook_secret,
                }
            )
        )
        return
    err_console.print(
        f"created key {key.id} ({key.name}); its webhook signing secret (for the client's "
        f"receiver, docs/webhooks.md): {key.webhook_secret}\n"
        "the token below is shown only this once:"
    )
    print(token)


def _rate_option(text: str | None) -> float | Literal["none"] | None:
    """``--rate``: a number of requests per second, ``none`` (no limit) or unset (the default)."""
    if text is None:
        return None
    if text.strip().lower() in ("none", "unlimited"):
        return "none"
    try:
        return float(text)
    except ValueError:
        raise InvalidInput(
            f"--rate {text!r}: a number of requests per second, or none for no limit"
        ) from None


@keys_app.command("list")
def keys_list(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List API keys (never their tokens) with today's characters."""
    store = _key_store()
    found = store.list_keys()
    used = store.used_today(k.id for k in found)
    stored = {k.id: store.storage(k, 0).used() for k in found}
    rows = [
        {**k.model_dump(mode="json"), "chars_today": used[k.id], "stored_bytes": stored[k.id]}
        for k in found
    ]
    if as_json:
        print(json.dumps(rows))
        return
    print(
        "id\tname\tcreated (UTC)\tchars today/per day\trate/s\tstored MiB\trole\tweight"
        "\tscopes\tstate"
    )
    for k in found:
        created = time.strftime("%Y-%m-%d %H:%M", time.gmtime(k.created_at))
        per_day = k.chars_per_day if k.chars_per_day is not None else "-"
        rate = f"{k.rate:g}" if k.rate is not None else "none"
        rate += " (default)" if k.rate_default else ""
        state = "revoked" if k.revoked else "active"
        state += ", no-trace" if k.no_trace else ""
        mib = f"{stored[k.id] / 1024 / 1024:.1f}"
        print(
            f"{k.id}\t{k.name}\t{created}\t{used[k.id]}/{per_day}\t{rate}\t{mib}\t{k.role}"
            f"\t{k.weight}\t{_scopes_text(k.scopes)}\t{state}"
        )


@keys_app.command("set-weight")
def keys_set_weight(
    key_id: Annotated[str, typer.Argument(help="The key's id (keys list).")],
    weight: Annotated[int, typer.Argument(min=1, max=1000, help=WEIGHT_HELP)],
) -> None:
    """Set a key's weight: its share of the turns from its next turn on."""
    key = _key_store().set_weight(key_id, weight)
    if key is None:
        err_console.print(f"[red]no API key {key_id!r}[/red]")
        raise typer.Exit(1)
    print(f"key {key.id} ({key.name}) has weight {key.weight}")


@keys_app.command("set-scope")
def keys_set_scope(
    key_id: Annotated[str, typer.Argument(help="The key's id (keys list).")],
    scope: Annotated[
        str,
        typer.Argument(
            help="The route families, comma-separated (keys create --help lists them), or all."
        ),
    ],
) -> None:
    """Set the route families a key may call: API processes apply it within MT_AUTH_CACHE_S
    seconds."""
    try:
        key = _key_store().set_scopes(key_id, scope)
    except InvalidInput as exc:
        err_console.print(f"[red]{escape(exc.message)}[/red]")
        raise typer.Exit(2) from None
    if key is None:
        err_console.print(f"[red]no API key {escape(repr(key_id))}[/red]")
        raise typer.Exit(1)
    print(f"key {key.id} ({key.name}) may call {_scopes_text(key.scopes)}")


def _scopes_text(scopes: tuple[str, ...] | None) -> str:
    return "all" if scopes is None else ",".join(scopes) or "none"


@keys_app.command("usage")
def keys_usage(
    key_id: Annotated[str, typer.Argument(help="The key's id (keys list).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """A key's characters today (UTC), in all and per reporting tag (X-DeepL-Reporting-Tag;
    '' counts the tags past the day's 1,000th)."""
    from mtfleet.core.apikeys import is_key_id

    store = _key_store()
    key = store.get(key_id) if is_key_id(key_id) else None
    if key is None:
        err_console.print(f"[red]no API key {escape(repr(key_id))}[/red]")
        raise typer.Exit(1)
    used = store.used_today([key.id])[key.id]
    tags = store.tags_today(key.id)
    if as_json:
        print(json.dumps({"id": key.id, "chars_today": used, "chars_per_tag_today": tags}))
        return
    per_day = key.chars_per_day if key.chars_per_day is not None else "-"
    print(f"key {key.id} ({key.name}): {used}/{per_day} characters today (UTC)")
    if tags:
        print("tag\tcharacters")
        for tag, chars in tags.items():
            print(f"{tag}\t{chars}")


@keys_app.command("revoke")
def keys_revoke(key_id: Annotated[str, typer.Argument(help="The key's id (keys list).")]) -> None:
    """Revoke a key: API processes refuse it within MT_AUTH_CACHE_S seconds."""
    key = _key_store().revoke(key_id)
    if key is None:
        err_console.print(f"[red]no API key {key_id!r}[/red]")
        raise typer.Exit(1)
    print(f"revoked key {key.id} ({key.name})")


@keys_app.command("rotate-webhook-secret")
def keys_rotate_webhook_secret(
    key_id: Annotated[str, typer.Argument(help="The key's id (keys list).")],
    keep_old_for: Annotated[
        float,
        typer.Option(
            min=0,
            help="Seconds webhooks still carry a signature by the old secret too (0: none).",
        ),
    ] = 86_400,
) -> None:
    """Give a key a new webhook signing secret, printed on stdout. For --keep-old-for seconds
    (a day by default) webhooks are signed with both, so the receiver can switch over."""
    secret = _key_store().rotate_webhook_secret(key_id, keep_old_s=keep_old_for)
    if secret is None:
        err_console.print(f"[red]no API key {escape(repr(key_id))}[/red]")
        raise typer.Exit(1)
    err_console.print(
        f"new webhook signing secret of key {key_id}"
        + (f"; the old one also signs for {keep_old_for:g}s" if keep_old_for else "")
    )
    print(secret)


@keys_app.command("delete")
def keys_delete(key_id: Annotated[str, typer.Argument(help="The key's id (keys list).")]) -> None:
    """Delete a key for good (revoke keeps it listed): API processes refuse it within
    MT_AUTH_CACHE_S seconds; its glossaries go with it (kept for jobs already accepted until
    MT_RESULT_TTL_S) and its style rules, its jobs expire with their results."""
    from mtfleet.core.apikeys import is_key_id
    from mtfleet.core.glossary.store import GlossaryStore
    from mtfleet.core.settings import get_settings
    from mtfleet.core.style_rules import StyleRuleStore
    from mtfleet.core.tm import TranslationMemoryStore

    store = _key_store()
    key = store.get(key_id) if is_key_id(key_id) else None
    if key is None:
        err_console.print(f"[red]no API key {escape(repr(key_id))}[/red]")
        raise typer.Exit(1)
    n = GlossaryStore(store.r).delete_owned(key.id, retention_s=get_settings().jobs.result_ttl_s)
    rules = StyleRuleStore(store.r).delete_owned(key.id)
    memories = TranslationMemoryStore(store.r).delete_owned(
        key.id, retention_s=get_settings().jobs.result_ttl_s
    )
    store.delete(key.id)
    print(
        f"deleted key {key.id} ({key.name}), {n} glossary(ies), {rules} style rule(s) and "
        f"{memories} translation memory(ies) it owned"
    )
