"""Load (``bench/load.py``): concurrent clients mixing ``/v1/translate``, bulk ``/v1/jobs`` and
status reads against a real ``mtfleet api`` process and a fast cost-model worker.

Expected: zero 5xx and zero broken connections; backpressure once the bulk queue passes
``MT_MAX_QUEUE_BULK`` (429, ``Retry-After``, error type ``overloaded``) while interactive work
still gets through; API and worker memory level off instead of growing with the requests served;
both processes alive at the end. 500 clients for 60 s run under ``make soak``; 100 clients for
10 s run in ``make test``.
"""

from __future__ import annotations

import httpx
import pytest

from bench.fleet import running_fleet
from bench.load import LoadReport, load_env, run_on

pytestmark = pytest.mark.slow


def leveled_off(samples: list[float], slack_mib: float) -> bool:
    """The second half of the run never went more than ``slack_mib`` above the first half's
    peak (warm-up — threads, connection buffers — happens in the first half; a leak that grows
    with the requests served keeps growing in the second)."""
    half = len(samples) // 2
    return max(samples[half:]) <= max(samples[:half]) + slack_mib


def check(report: LoadReport) -> None:
    summary = report.summary()
    print(summary)  # the figures, for -s runs and failure reports
    assert report.server_errors == [], report.server_errors[:5]
    assert not report.transport_errors, report.transport_errors
    # backpressure: bulk submissions refused once the queue is past its limit, each refusal
    # saying when to come back; interactive translations and status reads kept working
    assert report.rejected > 0 and report.counts["jobs"][429] == report.rejected
    assert report.rejected_without_retry_after == 0 and not report.rejected_other_type
    assert report.counts["jobs"][202] > 0 and report.counts["translate"][200] > 0
    assert report.counts["status"][200] > 0
    for name in ("api", "worker"):
        samples = report.rss_mib[name]
        assert len(samples) >= 4 and all(s > 0 for s in samples), (name, samples)
        assert leveled_off(samples, slack_mib=64), (name, samples)
        assert samples[-1] < samples[0] + 256, (name, samples)


def run(clients: int, duration_s: float, max_queue_bulk: int) -> None:
    with running_fleet(load_env(max_queue_bulk)) as fleet:
        report = run_on(fleet, clients=clients, duration_s=duration_s)
        assert all(p.alive() for p in fleet.fleet.procs), fleet.log_tails()
        assert httpx.get(f"{fleet.api_url}/healthz", timeout=30).status_code == 200
    check(report)


def test_100_clients_for_10_seconds() -> None:
    run(clients=100, duration_s=10, max_queue_bulk=2)


@pytest.mark.soak
def test_500_clients_for_60_seconds() -> None:
    run(clients=500, duration_s=60, max_queue_bulk=8)
