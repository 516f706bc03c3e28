"""Schemathesis over every operation of ``/openapi.json``, against a real ``mtfleet api`` process
with a live worker: zero server errors, and every error answer in the API's JSON error shape.

Generated requests include invalid ones (schemathesis' negative mode: wrong types, missing
fields, values outside the schema's bounds). The worker runs the cost-model engine with zero
step time, so a valid translation request finishes at once and the run stays well under a
minute. ``SCHEMATHESIS_EXAMPLES`` raises the examples per operation for a longer local run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error

from mtfleet.api.app import create_app
from mtfleet.core.settings import Settings
from mtfleet.fleet.localfleet import LocalFleet

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "40"))


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    url = redis_server.rsplit("/", 1)[0] + "/11"
    redis.Redis.from_url(url).flushdb()
    env = {
        "MT_ENGINE": "bench.costengine:CostModelEngine",
        "MTBENCH_PRESET": "zero",
        "PYTHONPATH": str(ROOT),
        "MT_AUTH": "off",
        "MT_HEARTBEAT_S": "1",
        "MT_MAX_REQUEST_BYTES": str(1 << 20),
    }
    with LocalFleet(redis_url=url, env=env) as f:
        f.start_redis()
        f.start_worker("--lanes", "interactive,bulk", "--concurrency", "4")
        f.start_api()
        f.wait_ready(90)  # /readyz is one of the operations: it must have a live worker
        yield f


def app_openapi() -> dict[str, Any]:
    """The app's OpenAPI document, built without serving (no Redis needed at collection)."""
    return create_app(Settings(auth="off")).openapi()


# One test per operation. (schemathesis.pytest.from_fixture would read /openapi.json from the
# running server instead, but its lazy loader sets a private pytest attribute that pytest 9.2
# removed; the test below checks that the server serves this very document.)
schema = schemathesis.openapi.from_dict(app_openapi())


def test_the_server_serves_the_document_under_test(fleet: LocalFleet) -> None:
    assert httpx.get(f"{fleet.api_url}/openapi.json").json() == app_openapi()


@schemathesis.check
def json_error_shape(
    ctx: schemathesis.CheckContext, response: schemathesis.Response, case: object
) -> None:
    """Every 4xx/5xx answer is ``{"error": {"type": str, "message": str, ...}}``."""
    if response.status_code < 400:
        return
    body = response.json()
    error = body.get("error") if isinstance(body, dict) else None
    assert isinstance(error, dict), f"not an error body: {body!r}"
    assert isinstance(error.get("type"), str) and isinstance(error.get("message"), str), body


# Random language codes are almost never valid and random texts mostly fail the text checks,
# so generated bodies would all stop at validation. Most bodies get a real pair (or two spellings
# of one language) and half get their texts cleaned of what the checks refuse: those go through
# the whole path (cache lookup, Redis, the worker and back) with generated Unicode.
PAIRS = [None, ("en", "es"), ("zh-TW", "fr"), ("EN_us", "en"), ("ar", "he")]
REFUSED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")


def adjust(body: dict[str, Any], pair: tuple[str, str] | None, clean: bool) -> dict[str, Any]:
    if pair is not None:
        body = {**body, "source_lang": pair[0], "target_lang": pair[1]}
    texts = body.get("texts")
    if clean and isinstance(texts, list):
        cleaned = [REFUSED.sub("", t) + " ok" if isinstance(t, str) else t for t in texts]
        body = {**body, "texts": cleaned}
    return body


@schema.hook
def flatmap_body(context: schemathesis.HookContext, body: Any) -> st.SearchStrategy[Any]:
    if not (isinstance(body, dict) and "source_lang" in body and "target_lang" in body):
        return st.just(body)
    return st.tuples(st.sampled_from(PAIRS), st.booleans()).map(lambda pc: adjust(body, *pc))


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,  # no .hypothesis folder: runs are -p no:cacheprovider clean
)
def test_no_operation_answers_with_a_server_error(
    case: schemathesis.Case, fleet: LocalFleet
) -> None:
    response = case.call(base_url=fleet.api_url, timeout=30)
    case.validate_response(response, checks=[not_a_server_error, json_error_shape])
