"""The pool lanes' queues on the broker (real Redis, kombu's Redis transport): each is bound to
an exchange of its own, so a message published to a lane's exchange and key reaches that lane
only; and a worker takes off the binding older workers declared, of the interactive queue to the
bulk lane's exchange and key (through which such a message reached both lanes)."""

from __future__ import annotations

import redis
from celery import Celery
from kombu import Exchange, Queue

from mtfleet.core import keys
from mtfleet.core.broker import forget_shared_binding, lane_queue, make_celery
from mtfleet.core.settings import Settings

POOL = "bindings"


def app_on(redis_url: str) -> Celery:
    return make_celery(Settings(redis_url=redis_url, pool=POOL))


def declare(app: Celery, queues: list[Queue]) -> None:
    """What a worker does for the queues it consumes, and the API for those it sends to."""
    with app.connection_for_write() as conn:
        for queue in queues:
            queue.bind(conn.default_channel).declare()


def publish_raw(app: Celery, exchange: str, routing_key: str) -> None:
    """A message published as AMQP routes it: to an exchange, with a key (not by queue name,
    which is how Celery itself sends)."""
    with app.connection_for_write() as conn:
        conn.Producer(conn.default_channel).publish(
            {"raw": True}, exchange=Exchange(exchange), routing_key=routing_key, serializer="json"
        )


def lengths(r: redis.Redis) -> dict[str, int]:
    return {lane: int(r.llen(keys.queue(POOL, lane))) for lane in keys.LANES}


def test_a_message_published_to_a_lanes_exchange_reaches_that_lane_only(
    redis_url: str, r: redis.Redis
) -> None:
    app = app_on(redis_url)
    declared = list(app.amqp.queues.values())
    assert sorted(q.name for q in declared) == sorted(keys.queue(POOL, lane) for lane in keys.LANES)
    declare(app, declared)
    for queue in declared:
        assert (queue.exchange.name, queue.routing_key) == (queue.name, queue.name)
    publish_raw(app, keys.queue(POOL, "bulk"), keys.queue(POOL, "bulk"))
    assert lengths(r) == {"interactive": 0, "bulk": 1}
    publish_raw(app, keys.queue(POOL, "interactive"), keys.queue(POOL, "interactive"))
    assert lengths(r) == {"interactive": 1, "bulk": 1}


def test_a_worker_takes_off_the_shared_binding_older_workers_declared(
    redis_url: str, r: redis.Redis
) -> None:
    app = app_on(redis_url)
    bulk, interactive = keys.queue(POOL, "bulk"), keys.queue(POOL, "interactive")
    # what a worker before lane_queue declared: both lanes on the bulk exchange and key
    declare(app, [Queue(name, Exchange(bulk), routing_key=bulk) for name in (bulk, interactive)])
    publish_raw(app, bulk, bulk)
    assert lengths(r) == {"interactive": 1, "bulk": 1}  # the trap: one message, two lanes

    declare(app, [lane_queue(POOL, lane) for lane in keys.LANES])  # the upgraded worker's
    assert forget_shared_binding(app, POOL) is True
    assert forget_shared_binding(app, POOL) is False  # nothing left to take off
    publish_raw(app, bulk, bulk)
    assert lengths(r) == {"interactive": 1, "bulk": 2}
    publish_raw(app, interactive, interactive)
    assert lengths(r) == {"interactive": 2, "bulk": 2}
