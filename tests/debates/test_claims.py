"""Step claims: one holder at a time, renewed by its holder, given back only by it."""

from __future__ import annotations

import time
import uuid

import pytest
from django.conf import settings

from debates.claims import (
    Claims,
    LocalClaims,
    RedisClaims,
    StepBusy,
    claim_store,
    step_claim,
    step_held,
)
from debates.tasks import resume_after_boot, resume_stale_task


@pytest.fixture(params=["local", "redis"])
def store(request: pytest.FixtureRequest) -> Claims:
    """Either store, so both are held to the same contract."""
    return LocalClaims() if request.param == "local" else RedisClaims(settings.REDIS_URL)


@pytest.fixture
def key() -> str:
    return f"test-claim:{uuid.uuid4().hex}"


def test_a_claim_has_one_holder_until_given_back(store: Claims, key: str) -> None:
    assert store.take(key, "a", 10)
    assert store.take(key, "a", 10)  # its holder renews it
    assert not store.take(key, "b", 10)

    store.give_back(key, "b")  # not b's to give back
    assert not store.take(key, "b", 10)

    store.give_back(key, "a")
    assert store.take(key, "b", 10)


def test_a_claim_lapses_after_its_ttl_unless_renewed(store: Claims, key: str) -> None:
    # Margins of 0.4 s either side of each expiry, so a stalled host does not decide it.
    assert store.take(key, "a", 1.0)
    time.sleep(0.6)
    assert store.take(key, "a", 1.0)  # renewed: 1 s more from now
    time.sleep(0.6)  # past the first expiry, before the renewed one
    assert not store.take(key, "b", 10)
    time.sleep(0.8)
    assert store.take(key, "b", 10)


def test_local_claims_forget_those_left_to_lapse(key: str) -> None:
    store = LocalClaims()
    assert store.take(key, "a", 0.05)  # its step raised: never given back
    time.sleep(0.1)
    assert store.take("another step", "b", 10)
    assert list(store._claims) == ["another step"]


def test_redis_claims_are_shared_by_every_process(key: str) -> None:
    first, second = RedisClaims(settings.REDIS_URL), RedisClaims(settings.REDIS_URL)
    assert first.take(key, "a", 10)
    assert not second.take(key, "b", 10)
    first.give_back(key, "a")
    assert second.take(key, "b", 10)


@pytest.mark.django_db
def test_a_step_held_by_another_copy_is_busy_and_free_once_released() -> None:
    step = f"test:{uuid.uuid4().hex}"
    with step_held(step=step, holder="copy-1", on_beat=lambda: None):
        with pytest.raises(StepBusy), step_held(step=step, holder="copy-2", on_beat=lambda: None):
            pass
        assert not step_claim(step=step, holder="copy-2")
    assert step_claim(step=step, holder="copy-2")


def test_the_store_follows_the_settings(settings) -> None:
    assert isinstance(claim_store(), RedisClaims)
    settings.REDIS_URL = ""
    assert isinstance(claim_store(), LocalClaims)


def test_a_claim_lives_as_long_as_the_setting_says(settings) -> None:
    # Margins of 0.4 s either side of the expiry, as above.
    settings.STEP_CLAIM_TTL_S = 1
    step = f"test:{uuid.uuid4().hex}"
    assert step_claim(step=step, holder="copy-1")  # its worker dies: never given back
    time.sleep(0.6)
    assert not step_claim(step=step, holder="copy-2")
    time.sleep(0.8)
    assert step_claim(step=step, holder="copy-2")


@pytest.mark.django_db
def test_a_held_step_is_renewed_every_third_of_the_setting(settings) -> None:
    settings.STEP_CLAIM_TTL_S = 1
    step = f"test:{uuid.uuid4().hex}"
    with step_held(step=step, holder="copy-1", on_beat=lambda: None):
        time.sleep(1.6)  # past the claim's first expiry: the heartbeat renewed it
        assert not step_claim(step=step, holder="copy-2")


def test_a_worker_resumes_left_behind_debates_once_their_claims_expired(
    settings, monkeypatch
) -> None:
    settings.STEP_CLAIM_TTL_S = 6
    sent: list[dict] = []
    monkeypatch.setattr(resume_stale_task, "apply_async", lambda **options: sent.append(options))
    resume_after_boot()
    assert sent == [{"kwargs": {"older_than_s": 6.0}, "countdown": 11.0}]
