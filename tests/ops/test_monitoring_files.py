"""The monitoring files agree with what ``/metrics`` exports: the Grafana dashboard
queries only exported metrics, the documentation lists every one of them, and the
compose profile hands Prometheus the token and Grafana the dashboard."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from ops.services import beat_heartbeat_record

ROOT = settings.BASE_DIR
DASHBOARD = ROOT / "docs" / "operations" / "grafana-dashboard.json"
SUFFIXES = re.compile(r"_(total|bucket|count|sum)$")


def family(name: str) -> str:
    """Return the family a sample or series name belongs to (no _total, _bucket, ...)."""
    return SUFFIXES.sub("", name)


@pytest.fixture
def exported(db, metrics_text) -> set[str]:
    """The metric families ``/metrics`` describes (beat's heartbeat age once it beat)."""
    beat_heartbeat_record()
    return {family(found.name) for found in text_string_to_metric_families(metrics_text())}


def test_the_dashboard_queries_only_exported_metrics(exported):
    # given every query of every panel of the dashboard
    panels = json.loads(DASHBOARD.read_text())["panels"]
    targets = [target for panel in panels for target in panel.get("targets", [])]
    queries = [target["expr"] for target in targets]
    # then each metric it reads is one /metrics exports, and each family is shown
    queried = {family(name) for query in queries for name in re.findall(r"arena_\w+", query)}
    assert queried - exported == set()
    assert exported - queried == set()
    # on the data source the dashboard's variable picks (Grafana's provisioned one, or
    # another on import)
    assert {target["datasource"]["uid"] for target in targets} == {"${datasource}"}


def test_the_documentation_lists_every_exported_metric(exported):
    page = (ROOT / "docs" / "operations" / "monitoring.md").read_text()
    listed = {family(name) for name in re.findall(r"`(arena_\w+)`", page)}
    assert exported - listed == set()
    assert listed - exported == set()


def test_the_monitoring_profile_hands_prometheus_the_token_and_grafana_the_dashboard():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    # the profile's services start only with it; the others without it
    monitoring = {name for name, s in services.items() if s.get("profiles") == ["monitoring"]}
    assert monitoring == {"prometheus", "grafana", "flower"}
    assert all("profiles" not in s for name, s in services.items() if name not in monitoring)
    # Prometheus scrapes the web process's /metrics with the web process's token
    scrape = yaml.safe_load((ROOT / "monitoring" / "prometheus.yml").read_text())
    (job,) = scrape["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"] == [{"targets": ["web:8000"]}]
    assert job["authorization"]["credentials_file"] == "/run/secrets/metrics_token"
    assert services["prometheus"]["secrets"] == ["metrics_token"]
    assert compose["secrets"]["metrics_token"] == {"environment": "METRICS_TOKEN"}
    assert services["web"]["environment"]["METRICS_TOKEN"] == "${METRICS_TOKEN:-}"
    assert ",web}" in services["web"]["environment"]["ALLOWED_HOSTS"]
    # Grafana's provisioning reads the dashboard of docs/ where compose mounts it
    mounts = dict(volume.split(":")[:2] for volume in services["grafana"]["volumes"])
    provider = yaml.safe_load((ROOT / "monitoring/grafana/dashboards.yml").read_text())
    folder = provider["providers"][0]["options"]["path"]
    assert mounts["./docs/operations/grafana-dashboard.json"] == f"{folder}/arena.json"
    home = services["grafana"]["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == f"{folder}/arena.json"
    sources = yaml.safe_load((ROOT / "monitoring/grafana/datasources.yml").read_text())
    assert [(s["type"], s["url"]) for s in sources["datasources"]] == [
        ("prometheus", "http://prometheus:9090")
    ]


def test_flower_is_an_optional_process_of_its_own_procfile():
    procfile = (ROOT / "Procfile").read_text()
    assert "flower" not in procfile
    (line,) = (ROOT / "Procfile.monitoring").read_text().splitlines()
    assert line.startswith("flower: ")
    assert " flower --address=127.0.0.1 " in line
