"""A channel's version, kept in the shared cache, changes once a publish to it (or a
touch) commits, and never before; without a shared cache there is none."""

from __future__ import annotations

import uuid

import pytest
from django.core.cache import cache
from django.db import transaction

from arena.sse import channel_touch_on_commit, channel_version, publish_on_commit

pytestmark = pytest.mark.django_db(transaction=True)


def new_channel() -> str:
    return f"test-{uuid.uuid4().hex}"


def test_a_publish_changes_the_channels_version_when_it_commits():
    # given a channel's version
    channel = new_channel()
    before = channel_version(channel)
    assert isinstance(before, int)
    # when an event is published in a transaction, the version holds until it commits
    with transaction.atomic():
        publish_on_commit(channel, "status", {"n": 1})
        assert channel_version(channel) == before
    # then it has changed, and stays so while nothing else is published
    after = channel_version(channel)
    assert after != before
    assert channel_version(channel) == after


def test_a_rolled_back_publish_leaves_the_version():
    channel = new_channel()
    before = channel_version(channel)
    with pytest.raises(RuntimeError), transaction.atomic():
        publish_on_commit(channel, "status", {"n": 1})
        raise RuntimeError
    assert channel_version(channel) == before


def test_a_touch_changes_the_version_on_commit_and_other_channels_keep_theirs():
    channel, other = new_channel(), new_channel()
    before, other_before = channel_version(channel), channel_version(other)
    with transaction.atomic():
        channel_touch_on_commit(channel)
        assert channel_version(channel) == before
    assert channel_version(channel) != before
    assert channel_version(other) == other_before


def test_a_lost_version_starts_again_at_another_number():
    # given a channel whose version was evicted from the cache
    channel = new_channel()
    before = channel_version(channel)
    cache.delete(f"sse-version:{channel}")
    # when it is asked again (a publish meanwhile found none to change)
    publish_on_commit(channel, "status", {"n": 1})
    again = channel_version(channel)
    # then it is a new number, not the old one given again
    assert again is not None and again != before


def test_there_are_no_versions_without_a_shared_cache(settings):
    settings.CACHE_SHARED = False
    channel = new_channel()
    assert channel_version(channel) is None
    publish_on_commit(channel, "status", {"n": 1})  # nothing to change, nothing fails
    assert channel_version(channel) is None
