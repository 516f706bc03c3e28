"""Redis URLs as every connection maker reads them (``core/redis_conn.py``): Sentinel URLs for
the job store, the phrase cache and the broker, and the errors a bad one gets at start-up.
The fleet on real Sentinels is ``tests/integration/test_sentinel.py``."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from kombu import Connection
from pydantic import ValidationError

from mtfleet.core.broker import make_celery
from mtfleet.core.redis_urls import kombu_broker, parse_sentinel
from mtfleet.core.settings import Settings

URL = "sentinel://mt:p%40ss@10.0.0.1:26379,10.0.0.2,[fd00::3]:26380/2?master=mymaster"


def test_a_sentinel_url_names_every_sentinel_the_master_and_both_credentials() -> None:
    s = parse_sentinel(URL + "&sentinel_password=s3nt&sentinel_username=watch")
    assert s.sentinels == (("10.0.0.1", 26379), ("10.0.0.2", 26379), ("fd00::3", 26380))
    assert (s.master, s.db, s.username, s.password) == ("mymaster", 2, "mt", "p@ss")
    assert (s.sentinel_username, s.sentinel_password) == ("watch", "s3nt")
    assert s.tls is None
    server = s.server_kwargs()
    assert server == {"db": 2, "username": "mt", "password": "p@ss"}
    assert s.sentinel_kwargs()["password"] == "s3nt"


def test_sentinels_scheme_is_tls_to_sentinels_and_servers(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("not read here")
    s = parse_sentinel(f"sentinels://:pw@h:26379/0?master=m&ssl_ca_certs={ca}")
    assert s.tls == {"ssl_cert_reqs": ssl.CERT_REQUIRED, "ssl_check_hostname": True,
                     "ssl_ca_certs": str(ca)}  # fmt: skip
    assert s.server_kwargs()["ssl"] is True and s.sentinel_kwargs()["ssl"] is True
    assert s.sentinel_kwargs()["ssl_ca_certs"] == str(ca)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("sentinel://h:26379/0", "master's name"),
        ("sentinel://h:26379/0?master=", "master's name"),
        ("sentinel:///0?master=m", "at least one Sentinel"),
        ("sentinel://h:notaport/0?master=m", "Sentinel address"),
        ("sentinel://h/db1?master=m", "database 'db1'"),
        ("sentinel://h/0?master=m&mastername=x", "unknown Sentinel URL parameter(s) mastername"),
        ("sentinel://h/0?master=m&ssl_cert_reqs=none", "need a sentinels:// URL"),
        ("sentinels://h/0?master=m&ssl_ca_certs=/nowhere.pem", "no such file"),
    ],
)
def test_a_bad_sentinel_url_fails_at_settings_saying_why(url: str, problem: str) -> None:
    with pytest.raises(ValidationError) as err:
        Settings(redis_url=url)
    assert problem in str(err.value)
    with pytest.raises(ValidationError):
        Settings(cache_url=url)


def test_kombu_reads_the_broker_form_of_a_sentinel_url() -> None:
    broker = kombu_broker(URL + "&sentinel_password=s3nt")
    assert broker.url == (
        "sentinel://mt:p%40ss@10.0.0.1:26379/2;sentinel://mt:p%40ss@10.0.0.2:26379/2;"
        "sentinel://mt:p%40ss@[fd00::3]:26380/2"
    )
    assert broker.transport_options["master_name"] == "mymaster"
    assert broker.transport_options["sentinel_kwargs"]["password"] == "s3nt"
    # kombu itself: its Sentinel transport, one alternate per Sentinel, the server's password
    conn = Connection(broker.url, transport_options=broker.transport_options)
    assert conn.transport_cls == "sentinel"
    assert len(conn.alt) == 3
    assert (conn.userid, conn.password, conn.virtual_host) == ("mt", "p@ss", "2")


def test_the_celery_app_on_a_sentinel_url_keeps_its_own_transport_options() -> None:
    app = make_celery(Settings(redis_url=URL, visibility_timeout_s=600))
    options = app.conf.broker_transport_options
    assert options["master_name"] == "mymaster"
    assert options["visibility_timeout"] == 600
    assert app.conf.broker_url.startswith("sentinel://")
    assert app.conf.broker_use_ssl is False


def test_plain_and_tls_urls_are_unchanged_for_kombu() -> None:
    plain = kombu_broker("redis://:pw@h:6379/0")
    assert (plain.url, plain.use_ssl, plain.transport_options) == ("redis://:pw@h:6379/0", None, {})
    tls = kombu_broker("rediss://h:6380/0?ssl_cert_reqs=none")
    assert tls.url == "rediss://h:6380/0"
    assert tls.use_ssl == {"ssl_cert_reqs": ssl.CERT_NONE, "ssl_check_hostname": False}
