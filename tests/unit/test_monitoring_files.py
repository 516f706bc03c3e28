"""deploy/: the Grafana dashboard, the Prometheus alert rules and scrape config hold together.
(That every metric they name is exported by a running fleet: tests/e2e/test_pages.py.)"""

from __future__ import annotations

import re

import yaml

from tests.deployfiles import (
    PROMETHEUS,
    ROOT,
    alert_exprs,
    alert_rules,
    dashboard,
    dashboard_exprs,
    metric_names,
)

COMPOSE = ROOT / "docker-compose.yml"


def balanced(expr: str) -> bool:
    depth = {"(": 0, "{": 0, "[": 0}
    closing = {")": "(", "}": "{", "]": "["}
    for ch in re.sub(r'"[^"]*"', '""', expr):
        if ch in depth:
            depth[ch] += 1
        elif ch in closing:
            depth[closing[ch]] -= 1
            if depth[closing[ch]] < 0:
                return False
    return not any(depth.values())


def test_dashboard_panels_query_the_datasource_variable_and_name_fleet_metrics() -> None:
    board = dashboard()
    assert board["uid"] == "mtfleet-overview"
    assert [v["name"] for v in board["templating"]["list"]] == ["datasource"]
    panels = [p for p in board["panels"] if p["type"] != "row"]
    assert len(panels) >= 12
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in panels:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert balanced(target["expr"]), target["expr"]
    names = metric_names(dashboard_exprs())
    # the figures the issue asks for, each on the dashboard
    assert {
        "mt_worker_segments_total",
        "mt_job_latency_seconds_bucket",
        "mt_queue_depth",
        "mt_oldest_queued_chunk_seconds",
        "mt_lane_live_workers",
        "mt_api_cache_lookups_total",
        "mt_dead_letter_chunks",
        "flower_worker_online",
        "flower_task_runtime_seconds_bucket",
    } <= names


def test_alert_rules_cover_what_the_issue_asks_for() -> None:
    rules = {rule["alert"]: rule for rule in alert_rules()}
    assert {
        "MtfleetQueuedChunkTooOld",
        "MtfleetLaneWithoutWorker",
        "MtfleetDeadLettersGrowing",
        "MtfleetSegmentErrorRatio",
        "MtfleetApiServerErrors",
        "MtfleetInteractiveP95High",
    } <= set(rules)
    for name, rule in rules.items():
        assert balanced(str(rule["expr"])), name
        assert rule["labels"]["severity"] in {"warning", "critical"}, name
        assert rule["annotations"]["summary"], name
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, name
    names = metric_names(alert_exprs())
    assert "mt_oldest_queued_chunk_seconds" in names and "mt_lane_live_workers" in names


def test_prometheus_loads_the_rules_and_scrapes_api_workers_and_flower() -> None:
    config = yaml.safe_load(PROMETHEUS.read_text(encoding="utf-8"))
    assert config["rule_files"] == ["/etc/prometheus/alerts.yml"]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    flower = next(job for name, job in jobs.items() if "flower" in name)
    assert "celery" in flower["job_name"]  # what the celery-mixin alerts select on
    assert flower["static_configs"][0]["targets"] == ["flower:5555"]
    assert {"mtfleet-api", "mtfleet-workers"} <= set(jobs)


def test_compose_mounts_what_prometheus_and_grafana_read() -> None:
    services = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]
    mounts = {
        name: [v.split(":")[0] for v in services[name]["volumes"] if v.startswith("./")]
        for name in ("prometheus", "grafana")
    }
    assert "./deploy/prometheus/alerts.yml" in mounts["prometheus"]
    assert {"./deploy/grafana/provisioning", "./deploy/grafana/dashboards"} <= set(
        mounts["grafana"]
    )
    for paths in mounts.values():
        for path in paths:
            assert (ROOT / path).exists(), path
    assert services["grafana"]["profiles"] == ["monitoring"]
    assert services["grafana"]["ports"] == ["127.0.0.1:3000:3000"]
