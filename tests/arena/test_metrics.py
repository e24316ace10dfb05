"""The metrics store (``arena.metrics``): counts and histograms every process adds to,
in Redis or, without it, in the process; one write per batch; a store that cannot be
written never fails the work it counts."""

from __future__ import annotations

import logging

import pytest
from django.db import transaction
from prometheus_client import CollectorRegistry, generate_latest

from arena import metrics
from ops.collectors import counted_families
from tests.ops.conftest import samples
from tests.ports import free_port

CALL = {"provider": "openai_compatible", "model": "fake-model"}


@pytest.fixture(params=["redis", "memory"])
def store(request, settings) -> metrics.RedisStore | metrics.LocalStore:
    """An empty metrics store: in the test Redis, or in this process (no ``REDIS_URL``)."""
    if request.param == "memory":
        settings.REDIS_URL = ""
    found = metrics.store()
    found.clear()
    yield found
    found.clear()


def exposed(*names: str) -> dict:
    """Return the samples of the counted metrics whose family is one of ``names``."""

    class Counted:
        def collect(self):
            return [family for family in counted_families() if family.name in names]

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Counted())
    return samples(generate_latest(registry).decode())


def test_a_histogram_counts_each_observation_in_its_bucket_and_sums_them(store):
    # given calls of 0.05 s (a bucket's bound: in it), 0.3 s and 500 s (past the last)
    for seconds in (0.05, 0.3, 500):
        metrics.record(metrics.MODEL_CALL_SECONDS.observe(seconds, **CALL))
    # when the histogram is exposed
    found = exposed("arena_model_call_seconds")
    # then each bucket counts the calls at most its bound, +Inf all three, with their sum

    def bucket(le: str) -> float:
        key = tuple(sorted({**CALL, "le": le}.items()))
        return found["arena_model_call_seconds_bucket", key]

    bounds = ("0.05", "0.1", "0.25", "0.5", "240.0", "+Inf")
    assert [bucket(le) for le in bounds] == [1, 1, 1, 2, 2, 3]
    labels = tuple(sorted(CALL.items()))
    assert found["arena_model_call_seconds_count", labels] == 3
    assert found["arena_model_call_seconds_sum", labels] == pytest.approx(500.35)


def test_counters_add_whole_and_fractional_amounts(store):
    metrics.record(
        metrics.MODEL_CALLS.inc(**CALL, outcome="ok"),
        metrics.MODEL_CALLS.inc(2, **CALL, outcome="ok"),
        metrics.MODEL_SPEND_USD.inc(0.25, **CALL),
        metrics.MODEL_SPEND_USD.inc(1, **CALL),
    )
    found = exposed("arena_model_calls", "arena_model_spend_usd")
    calls = tuple(sorted({**CALL, "outcome": "ok"}.items()))
    assert found["arena_model_calls_total", calls] == 3
    assert found["arena_model_spend_usd_total", tuple(sorted(CALL.items()))] == 1.25


def test_a_label_value_cannot_break_the_fields_of_the_hash(store):
    name = "fake" + metrics.LABELS_SEP + "model" + metrics.PART_SEP + "x" * 100
    metrics.record(metrics.MODEL_CALL_SECONDS.observe(1, provider="p", model=name))
    found = exposed("arena_model_call_seconds")
    model = ("fake model " + "x" * 100)[: metrics.LABEL_MAX]
    assert found["arena_model_call_seconds_count", (("model", model), ("provider", "p"))] == 1


def test_a_metric_takes_exactly_its_labels():
    with pytest.raises(ValueError, match="arena_steps takes the labels"):
        metrics.STEPS.inc(step="opening")


def test_a_batch_writes_once_at_its_outermost_end(store, monkeypatch):
    # given the store's writes watched
    writes: list[int] = []
    add = store.add
    monkeypatch.setattr(store, "add", lambda updates: (writes.append(len(updates)), add(updates)))
    # when counts are recorded in a batch, and in a batch within it
    with metrics.batch():
        metrics.record(metrics.STEPS.inc(step="opening", outcome="ok"))
        with metrics.batch():
            metrics.record(metrics.STEPS.inc(step="voting", outcome="ok"))
        # then nothing is written before the outer batch ends
        assert writes == []
    # and everything at once when it does
    assert writes == [2]
    found = exposed("arena_steps")
    assert found["arena_steps_total", (("outcome", "ok"), ("step", "voting"))] == 1


@pytest.mark.django_db
def test_a_count_on_commit_is_dropped_with_a_rolled_back_transaction(
    store, django_capture_on_commit_callbacks
):
    # given a count on commit in a transaction kept, and one in a transaction rolled back
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            metrics.record_on_commit(metrics.ERRORS.inc(source="debate", code="kept"))
        with transaction.atomic():
            metrics.record_on_commit(metrics.ERRORS.inc(source="debate", code="dropped"))
            transaction.set_rollback(True)
    # then only the first is counted
    assert list(exposed("arena_errors")) == [
        ("arena_errors_total", (("code", "kept"), ("source", "debate")))
    ]


def test_a_store_that_cannot_be_written_is_logged_not_raised(settings, caplog):
    # given the metrics store on a Redis that does not answer
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    # when a count is recorded, then the caller goes on, and the loss is logged
    with caplog.at_level(logging.WARNING, logger="arena.metrics"):
        metrics.record(metrics.STEPS.inc(step="opening", outcome="ok"))
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "metrics not recorded (ConnectionError)"
    ]
