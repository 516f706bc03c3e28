"""The monitoring files in deploy/ as the tests read them: the Grafana dashboard, the
Prometheus alert rules and scrape config, and the metric names their expressions use."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "mtfleet.json"
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
PROMETHEUS = ROOT / "deploy" / "prometheus" / "prometheus.yml"

#: The fleet's own names and those of Celery's exporters (Flower, celery-exporter).
METRIC = re.compile(r"\b(?:mt|flower|celery)_[a-z0-9_]+\b")


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return data


def alert_rules() -> list[dict[str, Any]]:
    data = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    return [rule for group in data["groups"] for rule in group["rules"]]


def dashboard_exprs() -> list[str]:
    return [t["expr"] for p in dashboard()["panels"] for t in p.get("targets", []) if t.get("expr")]


def alert_exprs() -> list[str]:
    return [str(rule["expr"]) for rule in alert_rules()]


def metric_names(exprs: list[str]) -> set[str]:
    """Every metric the expressions read (label values in quotes are not names)."""
    names: set[str] = set()
    for expr in exprs:
        names |= set(METRIC.findall(re.sub(r'"[^"]*"', '""', expr)))
    return names
