"""Scoped keys and reporting tags without servers: every route the app registers has its family
in core/scopes.py's one table (a new route without one fails here), ``--scope`` parsing, a key's
scopes as stored (keys made before scopes: every family), the guard's reading of a reporting
tag, and the per-tag count taken with the charge (core/lua/key_charge.lua, on fakeredis)."""

from __future__ import annotations

import asyncio

import fakeredis
import pytest
from starlette.routing import BaseRoute, Mount

from mtfleet.api.app import create_app
from mtfleet.api.guard import reporting_tag
from mtfleet.core import keys, scopes, scripts
from mtfleet.core.apikeys import REPORTING_TAG, KeyStore, utc_day
from mtfleet.core.errors import Forbidden, InvalidInput, QuotaExceeded
from mtfleet.core.settings import Settings


def paths(routes: list[BaseRoute]) -> list[str]:
    found = []
    for route in routes:
        found.append(str(getattr(route, "path", "")))
        if isinstance(route, Mount):
            found += [route.path + p for p in paths(route.routes)]
    return found


def test_every_route_the_app_registers_has_a_family() -> None:
    app = create_app(Settings())
    registered = paths(app.routes)
    assert len(registered) > 80  # every surface's routes, not an empty app
    missing = [p for p in registered if scopes.families_of(p) is None]
    assert missing == [], f"routes without a family in core/scopes.py ROUTES: {missing}"
    # and no entry names a family that does not exist
    assert {f for fams in scopes.ROUTES.values() for f in fams} <= set(scopes.FAMILIES)


@pytest.mark.parametrize(
    ("path", "families"),
    [
        ("/v1/translate", ("translate",)),
        ("/v1/jobs/abc/result", ("translate", "documents")),
        ("/v1/documents", ("documents",)),
        ("/v2/translate", ("translate",)),
        ("/v2/document/D1/result", ("documents",)),
        ("/v3/glossaries/g/entries", ("glossaries",)),
        ("/v2/write/rephrase", ("write",)),
        ("/v2/usage", ("usage",)),
        ("/v3/languages", ()),
        ("/libretranslate/translate", ("translate",)),
        ("/libretranslate/translate_file", ("documents",)),  # not translate's prefix
        ("/crowdin/mt_x_y/translate", ("translate",)),
        ("/v2/translatex", None),  # a prefix matches whole segments only
        ("/nowhere", None),
    ],
)
def test_a_path_s_family_is_its_longest_prefix_s(
    path: str, families: tuple[str, ...] | None
) -> None:
    assert scopes.families_of(path) == families


def test_a_scoped_key_is_refused_outside_its_families_with_a_sentence() -> None:
    scopes.check(None, "/v2/document")  # every family
    scopes.check(("translate",), "/v2/translate")
    scopes.check(("translate",), "/v3/languages")  # any key's
    scopes.check(("documents",), "/v1/jobs/x")  # either family
    with pytest.raises(Forbidden) as refused:
        scopes.check(("translate", "usage"), "/v2/document")
    assert refused.value.message == (
        "this API key may not use documents (/v2/document): its scopes are translate, usage; "
        "an operator can allow it with mtfleet keys set-scope"
    )


def test_scope_options_parse_to_families_in_order() -> None:
    assert scopes.parse_scopes(None) is None
    assert scopes.parse_scopes("all") is None
    assert scopes.parse_scopes(" ") is None
    assert scopes.parse_scopes("usage, Translate") == ("translate", "usage")
    with pytest.raises(InvalidInput, match="unknown scope documnets"):
        scopes.parse_scopes("translate,documnets")


@pytest.fixture
def r() -> fakeredis.FakeRedis:
    return fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True)


def test_a_key_keeps_its_scopes_and_an_older_key_has_every_family(r: fakeredis.FakeRedis) -> None:
    store = KeyStore(r, cache_s=0)
    key, token = store.create("scoped", scope="translate,glossaries")
    assert store.verify(token).scopes == ("translate", "glossaries")
    assert store.set_scopes(key.id, "documents") is not None
    assert store.verify(token).scopes == ("documents",)
    assert store.set_scopes(key.id, "all") is not None
    assert store.verify(token).scopes is None
    assert store.set_scopes("0" * 16, "all") is None
    old, old_token = store.create("before scopes")
    r.hdel(keys.api_key(old.id), "scopes")  # as a key made before scopes is stored
    assert store.verify(old_token).scopes is None


def test_a_reporting_tag_is_read_and_checked() -> None:
    assert reporting_tag({}) == ""
    assert reporting_tag({b"x-deepl-reporting-tag": b" shop-eu "}) == "shop-eu"
    assert reporting_tag({b"x-reporting-tag": "café".encode()}) == "café"
    for bad in (b"x" * 65, b"a\tb", b"\xff"):
        with pytest.raises(InvalidInput, match="reporting tag"):
            reporting_tag({b"x-deepl-reporting-tag": bad})


def test_a_charge_counts_its_tag_and_a_refused_one_nothing(r: fakeredis.FakeRedis) -> None:
    server = r.connection_pool.connection_kwargs["server"]
    ar = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    store = KeyStore(r, aclient=ar)
    key, _ = store.create("tagged", chars_per_day=100)
    other, _ = store.create("other")

    async def charge(k: object, chars: int, tag: str) -> None:
        token = REPORTING_TAG.set(tag)
        try:
            await store.charge(k, chars)  # type: ignore[arg-type]
        finally:
            REPORTING_TAG.reset(token)

    async def go() -> None:
        await charge(key, 10, "a")
        await charge(key, 5, "b")
        await charge(key, 7, "a")
        await charge(key, 3, "")  # no tag: the day's count only
        await charge(other, 4, "b")
        with pytest.raises(QuotaExceeded):
            await charge(key, 90, "a")

    asyncio.run(go())
    assert store.used_today([key.id]) == {key.id: 25}
    assert store.tags_today(key.id) == {"a": 17, "b": 5}
    assert store.tags_today(other.id) == {"b": 4}
    assert r.ttl(keys.api_key_tags(key.id, utc_day(store._wall()))) > 0


def test_a_keys_day_counts_at_most_1000_tags_and_the_rest_under_the_empty_tag(
    r: fakeredis.FakeRedis,
) -> None:
    charge = scripts.register(r, "key_charge")
    counter, tags = keys.api_key_chars("k", "day"), keys.api_key_tags("k", "day")
    for n in range(1003):
        charge(keys=[counter, tags], args=[2, -1, 100, f"tag{n}"])
    charge(keys=[counter, tags], args=[5, -1, 100, "tag7"])  # a known tag still counts as itself
    counts = r.hgetall(tags)
    assert len(counts) == 1000 + 1 and int(r.get(counter)) == 2 * 1003 + 5
    assert counts["tag999"] == "2" and counts["tag7"] == "7"
    assert counts[""] == str(2 * 3) and "tag1000" not in counts  # tag1000-tag1002
