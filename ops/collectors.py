"""The Prometheus collector behind ``/metrics``: everything is read when it is scraped.

- Counters and histograms (model calls, steps, errors, cache lookups, guard trips) are
  the counts every process added to the metrics store (``arena.metrics``).
- Gauges are measured now: rows counted in the database (debates, executions, paused
  traders, today's spend), the model slots and the broker's queues in Redis, the age of
  beat's heartbeat.

A source that cannot be read (the database or Redis down) leaves its metrics out and
says so in ``arena_metrics_source_up``; the rest is still exported.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterator

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

from arena import metrics
from ops import selectors

logger = logging.getLogger(__name__)


def _counter(metric: metrics.Counter, fields: dict[str, float]) -> Metric:
    family = CounterMetricFamily(metric.name, metric.help, labels=metric.labels)
    for field, value in sorted(fields.items()):
        family.add_metric(metric.label_values(field), value)
    return family


def _histogram(metric: metrics.Histogram, fields: dict[str, float]) -> Metric:
    family = HistogramMetricFamily(metric.name, metric.help, labels=metric.labels)
    series: dict[str, dict[str, float]] = defaultdict(dict)
    for field, value in fields.items():
        labels, _, part = field.rpartition(metrics.PART_SEP)
        series[labels][part] = value
    for labels, parts in sorted(series.items()):
        total, buckets = 0.0, []
        for index, bound in enumerate([*metric.buckets, float("inf")]):
            total += parts.get(str(index), 0.0)
            buckets.append((floatToGoString(bound), total))
        family.add_metric(metric.label_values(labels), buckets, parts.get(metrics.SUM, 0.0))
    return family


def counted_families() -> list[Metric]:
    """Return the counters and histograms of the metrics store."""
    return [
        _histogram(metric, fields)
        if isinstance(metric, metrics.Histogram)
        else _counter(metric, fields)
        for metric, fields in metrics.counted()
    ]


def _by_label(name: str, help_text: str, label: str, values: dict[str, int]) -> Metric:
    family = GaugeMetricFamily(name, help_text, labels=[label])
    for value, count in sorted(values.items()):
        family.add_metric([value], count)
    return family


def database_families() -> list[Metric]:
    """Return the gauges counted in the database."""
    spend = selectors.spend_today()
    return [
        _by_label(
            "arena_debates", "Debates in each status.", "status", selectors.debates_by_status()
        ),
        _by_label(
            "arena_executions",
            "Executions of decisions in each status.",
            "status",
            selectors.executions_by_status(),
        ),
        _by_label(
            "arena_traders_paused",
            "Traders a tripped portfolio guard keeps paused, by guard.",
            "guard",
            selectors.traders_paused_by_guard(),
        ),
        GaugeMetricFamily(
            "arena_spend_today_usd",
            "What the model calls of the current UTC day cost, in US dollars.",
            value=float(spend.cost_usd),
        ),
        GaugeMetricFamily(
            "arena_spend_today_tokens",
            "Prompt and completion tokens of the model calls of the current UTC day.",
            value=spend.tokens,
        ),
    ]


def redis_families() -> list[Metric]:
    """Return the gauges measured in Redis: slots, queues, beat's heartbeat."""
    slots = selectors.slot_use()
    found = [
        GaugeMetricFamily(
            "arena_model_slots_in_use", "Model-call slots held now.", value=slots.in_use
        ),
        GaugeMetricFamily(
            "arena_model_slots_cap", "Model calls allowed in flight at once.", value=slots.cap
        ),
        GaugeMetricFamily(
            "arena_model_slots_waiting", "Model calls waiting for a slot now.", value=slots.waiting
        ),
    ]
    depth = selectors.queue_depth()
    if depth is not None:
        found.append(
            _by_label(
                "arena_celery_queue_length",
                "Celery messages waiting in each queue (every priority).",
                "queue",
                depth.queued,
            )
        )
        found.append(
            GaugeMetricFamily(
                "arena_celery_unacked_messages",
                "Celery messages taken by a worker and not yet acknowledged.",
                value=depth.unacked,
            )
        )
    age = selectors.beat_heartbeat_age()
    if age is not None:
        found.append(
            GaugeMetricFamily(
                "arena_beat_heartbeat_age_seconds",
                "Seconds since beat's latest heartbeat.",
                value=age,
            )
        )
    return found


# Each source of metrics, and how its metrics are read.
SOURCES: dict[str, tuple[Callable[[], list[Metric]], ...]] = {
    "redis": (counted_families, redis_families),
    "database": (database_families,),
}


class ArenaCollector(Collector):
    """Every metric of the service, read at each scrape (see the module docstring)."""

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "arena_metrics_source_up",
            "Whether a source of metrics could be read at this scrape.",
            labels=["source"],
        )
        for source, readers in SOURCES.items():
            try:
                found = [family for read in readers for family in read()]
            except Exception as exc:
                logger.warning("metrics: %s unreadable: %s: %s", source, type(exc).__name__, exc)
                up.add_metric([source], 0)
                continue
            up.add_metric([source], 1)
            yield from found
        yield up


def registry() -> CollectorRegistry:
    """Return a registry holding the arena's collector alone (no process metrics: the
    web process that answers is one of many)."""
    found = CollectorRegistry(auto_describe=False)
    found.register(ArenaCollector())
    return found
