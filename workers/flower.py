"""``mtfleet flower``: Flower on the fleet's own Celery configuration, always behind basic auth."""

from __future__ import annotations

import ipaddress
import os

from mtfleet.core.errors import ConfigError
from mtfleet.core.settings import Settings

DEFAULT_FLOWER_PASSWORD = "change-me"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_flower_auth(host: str, user: str, password: str) -> str | None:
    """Refuse (``ConfigError``) credentials Flower must not start with; return a warning for
    ones it may start with but should not keep.

    Basic auth is never off: an empty password is refused. The default password is accepted on
    a loopback address only (a laptop, the demo), with a warning, and refused anywhere else.
    Flower splits its credential list at commas, so a comma in the user or password would
    turn part of it into a credential of its own: refused, as is a colon in the user name.
    """
    if not password:
        raise ConfigError(
            "MT_FLOWER_PASSWORD is empty: Flower always runs with basic auth; set a password"
        )
    if "," in user or "," in password:
        raise ConfigError("MT_FLOWER_USER and MT_FLOWER_PASSWORD must not contain a comma")
    if ":" in user:
        raise ConfigError("MT_FLOWER_USER must not contain a colon")
    if password == DEFAULT_FLOWER_PASSWORD:
        if not is_loopback(host):
            raise ConfigError(
                f"refusing to serve Flower on {host} with the default password "
                f"{DEFAULT_FLOWER_PASSWORD!r}: set MT_FLOWER_PASSWORD"
            )
        return (
            f"Flower uses the default password {DEFAULT_FLOWER_PASSWORD!r} "
            "(accepted on a loopback address only): set MT_FLOWER_PASSWORD"
        )
    return None


def flower_argv(host: str, port: int) -> list[str]:
    """The ``celery flower`` arguments (credentials travel in the environment, not here)."""
    return [
        "flower",
        f"--address={host}",
        f"--port={port}",
        "--purge_offline_workers=60",
        # Persistent mode keeps Flower's state in a shelve file, which is a pickle: never.
        "--persistent=False",
    ]


def show_pool_queues(settings: Settings) -> None:
    """Make Flower's broker page list every pool's queues, both lanes.

    Flower lists the queues its workers' Celery consumers report (``inspect active_queues``),
    or with no worker up the app's own ``task_queues``: a fleet's queues are made per pool as
    pools appear, and a worker's interactive queue has a consumer of its own
    (:mod:`mtfleet.workers.consumers`) that Celery does not report. So the list is the
    workers' report plus the queues of every pool in the registry, read at each request."""
    import redis
    from flower.views import BaseHandler

    from mtfleet.core import keys
    from mtfleet.core.redis_conn import connect
    from mtfleet.core.registry import Registry

    reported = BaseHandler.get_active_queue_names
    registry = Registry(connect(settings.redis.redis_url))

    def queue_names(handler: BaseHandler) -> list[str]:
        names = set(reported(handler))
        try:
            pools = registry.pools()
        except redis.RedisError:
            pools = {}
        names |= {keys.queue(pool, lane) for pool in pools for lane in keys.LANES}
        return sorted(names)

    BaseHandler.get_active_queue_names = queue_names


def run_flower(settings: Settings, host: str, port: int) -> int:
    """Run Flower in this process on the fleet's own Celery app, so it connects to the broker
    exactly as the workers do (credentials, ``rediss://`` with ``broker_use_ssl``, JSON only).
    Call :func:`check_flower_auth` first."""
    from mtfleet.core.broker import make_celery

    user, password = settings.flower.flower_user, settings.flower.flower_password.get_secret_value()
    # Given through the environment so the password is not visible in `ps`.
    os.environ["FLOWER_BASIC_AUTH"] = f"{user}:{password}"
    app = make_celery(settings, name="mtfleet-flower")
    show_pool_queues(settings)
    return int(app.start(flower_argv(host, port)) or 0)
