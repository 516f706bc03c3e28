"""Glossaries and output checks on a real fleet (API, one Apertium worker, separate processes),
driven through the ``mtfleet`` CLI and the SDK as a user would."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from mtfleet.fleet.localfleet import LocalFleet, free_port
from mtfleet.producer.client import AsyncMTClient, MTClient
from tests.e2e.fleet_control import cli

TEXT = "The iphone case costs 20 dollars"


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    redis.Redis.from_url(redis_server).flushall()
    metrics_port = free_port()
    f = LocalFleet(
        redis_url=redis_server,
        env={"MT_REDIS_URL": redis_server, "MT_HEARTBEAT_S": "1"},
    )
    with f:  # stopped however its start ends: nothing left to serve later modules
        f.start_redis()
        f.start_worker(
            "--engine",
            "apertium",
            "--concurrency",
            "2",
            env={"MT_WORKER_METRICS_PORT": str(metrics_port)},
        )
        f.start_api()
        f.wait_ready(60)
        f.env["TEST_METRICS_URL"] = f"http://127.0.0.1:{metrics_port}/metrics"
        yield f


def retries(fleet: LocalFleet) -> float:
    text = httpx.get(fleet.env["TEST_METRICS_URL"], timeout=5).text
    m = re.search(r"^mt_worker_check_retries_total (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def make_glossary(fleet: LocalFleet, tmp_path: Path, case: str) -> str:
    terms = tmp_path / f"terms-{case}.tsv"
    terms.write_text(f"case\t{case}\n", encoding="utf-8")
    made = cli(
        fleet,
        *("glossary", "create", "--name", f"shop {case}", "--from", "en", "--to", "es"),
        *("--file", str(terms), "--protect", "iPhone,PlayStation"),
    )
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def test_glossary_terms_and_protected_names_in_real_translations(
    fleet: LocalFleet, tmp_path: Path
) -> None:
    plain = cli(fleet, "translate", TEXT, "--from", "en", "--to", "es")
    assert plain.returncode == 0, plain.stderr
    assert "funda" not in plain.stdout  # Apertium's own word for it: "caso"

    gid = make_glossary(fleet, tmp_path, "funda")
    out = cli(fleet, "translate", TEXT, "--from", "en", "--to", "es", "--glossary", gid)
    assert out.returncode == 0, out.stderr
    assert "iPhone" in out.stdout and "funda" in out.stdout
    assert "iphone" not in out.stdout and "caso" not in out.stdout

    listed = cli(fleet, "glossary", "list")
    assert gid in listed.stdout and "en->es" in listed.stdout
    shown = cli(fleet, "glossary", "show", gid)
    assert '"case": "funda"' in shown.stdout and '"iPhone"' in shown.stdout

    with MTClient(fleet.api_url) as mt:
        # the same text and glossary again: answered from the phrase cache
        again = mt.submit([TEXT], source="en", target="es", glossary_id=gid)
        assert again.cached == 1 and again.status.value == "succeeded"
        # another glossary (another version): another cache key, its own term
        other = make_glossary(fleet, tmp_path, "estuche")
        assert mt.glossary(other).version != mt.glossary(gid).version
        job = mt.submit([TEXT], source="en", target="es", glossary_id=other)
        assert job.cached == 0
        mt.wait(job.id, timeout=60)
        result = mt.result(job.id)
        (translation,) = result.translations
        assert translation is not None and "estuche" in translation and "iPhone" in translation
        assert result.warnings == []

    deleted = cli(fleet, "glossary", "delete", gid)
    assert deleted.returncode == 0, deleted.stderr
    refused = cli(fleet, "translate", TEXT, "--from", "en", "--to", "es", "--glossary", gid)
    assert refused.returncode != 0 and "unknown_glossary" in refused.stderr


def test_placeholders_survive_apertium_and_clean_output_is_cached(fleet: LocalFleet) -> None:
    # Apertium would translate a placeholder's name ({price} -> {dólares}); the worker hands it
    # "<x1/>" instead (a superblank to Apertium) and puts {price} back afterwards
    text = "It costs {price} dollars"
    with MTClient(fleet.api_url) as mt:
        before = retries(fleet)
        job = mt.submit([text], source="en", target="es")
        mt.wait(job.id, timeout=60)
        result = mt.result(job.id)
        (translation,) = result.translations
        assert translation is not None and "{price}" in translation and "dólares" in translation
        assert result.warnings == []
        assert retries(fleet) == before  # nothing to retry
        assert mt.submit([text], source="en", target="es").cached == 1


def test_async_sdk_glossaries(fleet: LocalFleet) -> None:
    async def use() -> list[str | None]:
        async with AsyncMTClient(fleet.api_url) as mt:
            g = await mt.create_glossary("async", source="en", target="es", protected=["iPhone"])
            assert g.id in [x.id for x in await mt.glossaries()]
            assert (await mt.glossary(g.id)).protected == ["iPhone"]
            out = await mt.translate(
                ["I love my iphone"], source="en", target="es", glossary_id=g.id
            )
            await mt.delete_glossary(g.id)
            assert g.id not in [x.id for x in await mt.glossaries()]
            return out

    (translation,) = asyncio.run(use())
    assert translation is not None and "iPhone" in translation


def test_protected_patterns_through_the_cli_and_a_glossary(fleet: LocalFleet) -> None:
    """A game's colour codes and a shop's tokens (issue 40 item 5): kept byte for byte by a
    request's patterns (the CLI) and by a glossary's (the SDK), the text around them
    translated; a bad pattern is refused naming it."""
    text = "§aWelcome to the shop, [NAME]!"
    colours = ("--protect-pattern", "§[0-9a-fk-or]", "--protect-pattern", r"\[[A-Z_]+\]")
    done = cli(fleet, "translate", text, "--from", "en", "--to", "es", *colours)
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert line.startswith("§a") and "[NAME]" in line and "tienda" in line, line
    bad = cli(fleet, "translate", text, "--from", "en", "--to", "es", "--protect-pattern", "(a")
    assert bad.returncode != 0 and "'(a' is not a regular expression" in bad.stderr, bad.stderr
    with MTClient(fleet.api_url) as mt:
        g = mt.create_glossary(
            "game codes", source="en", target="es", protected_patterns=["§[0-9a-fk-or]"]
        )
        assert g.protected_patterns == ["§[0-9a-fk-or]"]
        (out,) = mt.translate(
            ["§lThe shop §ris open, [NAME]"],
            source="en",
            target="es",
            glossary_id=g.id,
            protected_patterns=[r"\[[A-Z_]+\]"],
        )
    assert out is not None and out.startswith("§l") and "§r" in out and "[NAME]" in out, out
    assert "tienda" in out, out
