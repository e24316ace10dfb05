"""The one door for counting: counters and histograms every process adds to, read by
``/metrics``.

A worker process counts its model calls, steps and errors, and the web process's
``/metrics`` must see those counts. So they are not kept in the process that makes
them: each is a field of a Redis hash (``METRICS_KEY``), added to with ``HINCRBY`` /
``HINCRBYFLOAT``, and ``ops.collectors`` reads the hashes at scrape time. Every process
of a deployment, prefork children included, adds to the same counts, and none has a
file or a registry of its own to clean up. Without Redis (the embedded default, one
process) they are kept in this process's memory.

``record`` sends all the updates of one event (a model call: its count, its latency,
its tokens and cost) in one pipeline: one round trip. Within a ``batch`` block (a debate
step) what is recorded is sent at the block's end, so a step and the model call it made
cost one round trip together. A count that cannot be written (Redis gone) is dropped
with a warning; the work that was being counted goes on.

The metrics themselves are declared here, below the store, so that ``/metrics``
describes every one of them, with no sample until something counts it.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)

# Separators of the fields of a metric's hash: between label values, and before a
# histogram's bucket or sum. Neither can appear in a label value (``_value``).
LABELS_SEP = "\x1f"
PART_SEP = "\x1e"
SUM = "sum"
# A label value longer than this is cut (a model name is free text).
LABEL_MAX = 80


@dataclass(frozen=True)
class Update:
    """One addition to one field of one metric's hash: of a whole number, or not
    (Redis adds to a field either as an integer or as a float, not both)."""

    metric: str
    field: str
    amount: float
    whole: bool = True


def _value(text: object) -> str:
    return str(text).replace(LABELS_SEP, " ").replace(PART_SEP, " ")[:LABEL_MAX]


@dataclass(frozen=True)
class Metric:
    """A counted metric: its Prometheus name (without ``_total``), help and labels."""

    name: str
    help: str
    labels: tuple[str, ...] = ()

    def _field(self, labels: dict[str, object]) -> str:
        if set(labels) != set(self.labels):
            raise ValueError(f"{self.name} takes the labels {self.labels}, not {tuple(labels)}")
        return LABELS_SEP.join(_value(labels[name]) for name in self.labels)

    def label_values(self, field: str) -> list[str]:
        """Return the label values a field of the hash stands for."""
        return field.split(LABELS_SEP) if self.labels else []


@dataclass(frozen=True)
class Counter(Metric):
    """A count that only goes up (``<name>_total`` in the exposition); ``whole``: of
    whole numbers only."""

    whole: bool = True

    def inc(self, amount: float = 1, **labels: object) -> list[Update]:
        """Return the update adding ``amount`` to the count of ``labels``."""
        return [Update(self.name, self._field(labels), amount, self.whole)]


@dataclass(frozen=True)
class Histogram(Metric):
    """Observations counted in buckets (upper bounds, ``+Inf`` implied) and summed."""

    buckets: tuple[float, ...] = ()

    def observe(self, value: float, **labels: object) -> list[Update]:
        """Return the updates counting ``value`` in its bucket and adding it to the sum."""
        field = self._field(labels)
        bucket = bisect.bisect_left(self.buckets, value)  # len(buckets): the +Inf bucket
        return [
            Update(self.name, f"{field}{PART_SEP}{bucket}", 1),
            Update(self.name, f"{field}{PART_SEP}{SUM}", value, whole=False),
        ]


class RedisStore:
    """The counts in Redis hashes, one per metric, under ``prefix``."""

    def __init__(self, url: str, prefix: str) -> None:
        import redis

        self.prefix = prefix
        self._redis = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)

    def key(self, name: str) -> str:
        """Return the Redis key of metric ``name`` (or of the beat's heartbeat)."""
        return f"{self.prefix}:{name}"

    def add(self, updates: list[Update]) -> None:
        """Apply ``updates`` in one round trip."""
        pipe = self._redis.pipeline(transaction=False)
        for update in updates:
            if update.whole:
                pipe.hincrby(self.key(update.metric), update.field, int(update.amount))
            else:
                pipe.hincrbyfloat(self.key(update.metric), update.field, update.amount)
        pipe.execute()

    def read(self, names: Iterable[str]) -> dict[str, dict[str, float]]:
        """Return the fields of each metric of ``names``, in one round trip."""
        names = list(names)
        pipe = self._redis.pipeline(transaction=False)
        for name in names:
            pipe.hgetall(self.key(name))
        found = pipe.execute()
        return {
            name: {field.decode(): float(value) for field, value in fields.items()}
            for name, fields in zip(names, found, strict=True)
        }

    def set_value(self, name: str, value: float) -> None:
        """Store one value under ``name`` (the beat's heartbeat)."""
        self._redis.set(self.key(name), repr(value))

    def get_value(self, name: str) -> float | None:
        """Return the value stored under ``name``, None when there is none."""
        value = self._redis.get(self.key(name))
        return None if value is None else float(value)

    def clear(self) -> None:
        """Drop every count and value (tests and operators' reset only)."""
        keys = list(self._redis.scan_iter(match=f"{self.prefix}:*", count=500))
        if keys:
            self._redis.delete(*keys)


class LocalStore:
    """The counts in this process's memory (the embedded default: one process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self._values: dict[str, float] = {}

    def add(self, updates: list[Update]) -> None:
        """Apply ``updates``."""
        with self._lock:
            for update in updates:
                self._counts[update.metric][update.field] += update.amount

    def read(self, names: Iterable[str]) -> dict[str, dict[str, float]]:
        """Return the fields of each metric of ``names``."""
        with self._lock:
            return {name: dict(self._counts.get(name, {})) for name in names}

    def set_value(self, name: str, value: float) -> None:
        """Store one value under ``name``."""
        with self._lock:
            self._values[name] = value

    def get_value(self, name: str) -> float | None:
        """Return the value stored under ``name``, None when there is none."""
        with self._lock:
            return self._values.get(name)

    def clear(self) -> None:
        """Drop every count and value."""
        with self._lock:
            self._counts.clear()
            self._values.clear()


_lock = threading.Lock()
_stores: dict[tuple[str, str], RedisStore | LocalStore] = {}


def store() -> RedisStore | LocalStore:
    """Return the store of this process's settings (``REDIS_URL``, ``METRICS_KEY``)."""
    config = (settings.REDIS_URL, settings.METRICS_KEY)
    with _lock:
        found = _stores.get(config)
        if found is None:
            found = _stores[config] = RedisStore(*config) if config[0] else LocalStore()
        return found


def _flat(groups: Iterable[list[Update]]) -> list[Update]:
    return [update for group in groups for update in group]


def _send(updates: list[Update]) -> None:
    if not updates:
        return
    try:
        store().add(updates)
    except Exception as exc:  # a count is never worth failing the work it counts
        logger.warning("metrics not recorded (%s): %s", type(exc).__name__, exc)


_batches = threading.local()


@contextlib.contextmanager
def batch() -> Iterator[None]:
    """Keep what this thread records in the block and send it all at the block's end, in
    one round trip (within an outer block, at the outer block's end)."""
    if getattr(_batches, "updates", None) is not None:
        yield
        return
    _batches.updates = []
    try:
        yield
    finally:
        updates, _batches.updates = _batches.updates, None
        _send(updates)


def record(*groups: list[Update]) -> None:
    """Add the updates of ``groups`` (from ``Counter.inc``, ``Histogram.observe``) to
    the counts, in one round trip or with the enclosing ``batch``; log and drop them if
    the store cannot be written."""
    updates = _flat(groups)
    pending = getattr(_batches, "updates", None)
    if pending is not None:
        pending.extend(updates)
    else:
        _send(updates)


def record_on_commit(*groups: list[Update]) -> None:
    """``record`` once the current transaction commits (at once outside one)."""
    updates = _flat(groups)
    transaction.on_commit(lambda: record(updates))


# --- The metrics counted -------------------------------------------------------------------
# Seconds: a model call takes from milliseconds (the simulated model) to minutes.
CALL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 240)
STEP_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 240)

MODEL_CALLS = Counter(
    "arena_model_calls",
    "Model calls made, by provider, model and outcome (ok or error).",
    ("provider", "model", "outcome"),
)
MODEL_CALL_SECONDS = Histogram(
    "arena_model_call_seconds",
    "Time a model call took, retries included, by provider and model.",
    ("provider", "model"),
    CALL_BUCKETS,
)
MODEL_TOKENS = Counter(
    "arena_model_tokens",
    "Tokens of the model calls answered, by provider, model and kind (prompt or completion).",
    ("provider", "model", "kind"),
)
MODEL_SPEND_USD = Counter(
    "arena_model_spend_usd",
    "What the model calls answered cost, in US dollars, by provider and model.",
    ("provider", "model"),
    whole=False,
)
CACHE_LOOKUPS = Counter(
    "arena_model_cache_lookups",
    "Model calls looked up in the model-call cache, by result (hit or miss).",
    ("result",),
)
STEPS = Counter(
    "arena_steps",
    "Debate steps run, by step and outcome (ok, error, none, retry).",
    ("step", "outcome"),
)
STEP_SECONDS = Histogram(
    "arena_step_seconds",
    "Time a debate step took to run, model call included, by step (retries not counted).",
    ("step",),
    STEP_BUCKETS,
)
ERRORS = Counter(
    "arena_errors",
    "Errors, by where they happened (model_call, debate, task) and their code.",
    ("source", "code"),
)
GUARD_TRIPS = Counter(
    "arena_guard_trips",
    "Portfolio guards tripped (a trader paused), by guard.",
    ("guard",),
)

COUNTED: tuple[Metric, ...] = (
    MODEL_CALLS,
    MODEL_CALL_SECONDS,
    MODEL_TOKENS,
    MODEL_SPEND_USD,
    CACHE_LOOKUPS,
    STEPS,
    STEP_SECONDS,
    ERRORS,
    GUARD_TRIPS,
)


def counted() -> Iterator[tuple[Metric, dict[str, float]]]:
    """Yield each counted metric with the fields of its hash (raise if unreadable)."""
    found = store().read(metric.name for metric in COUNTED)
    for metric in COUNTED:
        yield metric, found[metric.name]
