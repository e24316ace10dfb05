"""Fixtures of the health and metrics tests: an empty metrics store, a scrape of
``/metrics`` read into samples."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from arena import metrics
from tests.debates.conftest import llm, make_debate  # noqa: F401 (whole debates)
from tests.streams.conftest import private_redis  # noqa: F401 (a Redis a test may stop)

# A sample of a scrape: its name and its labels, sorted.
SampleKey = tuple[str, tuple[tuple[str, str], ...]]


@pytest.fixture
def empty_counts() -> None:
    """Start from a metrics store with nothing counted: the counts of earlier tests (of
    this run, in this Redis database) would add to this test's."""
    metrics.store().clear()


def samples(text: str) -> dict[SampleKey, float]:
    """Return every sample of a scrape in Prometheus's text format."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


@pytest.fixture
def metrics_text(operator: Client) -> Callable[[], str]:
    """Read ``/metrics`` as a staff user; return its text."""

    def read() -> str:
        answer = operator.get("/metrics")
        assert answer.status_code == 200, answer.content
        return answer.content.decode()

    return read


@pytest.fixture
def scrape(metrics_text: Callable[[], str]) -> Callable[[], dict[SampleKey, float]]:
    """Read ``/metrics`` as a staff user; return its samples."""
    return lambda: samples(metrics_text())


def sample(found: dict[SampleKey, float], name: str, **labels: str) -> float | None:
    """Return the value of the sample ``name`` with exactly ``labels``, None if absent."""
    return found.get((name, tuple(sorted(labels.items()))))
