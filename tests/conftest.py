"""Fixtures shared by the whole suite."""

import pytest
from rest_framework.test import APIClient

from tests.factories import UserFactory


@pytest.fixture
def user(db):
    """A plain user: the owner of the objects under test."""
    return UserFactory()


@pytest.fixture
def other_user(db):
    """A second user, whose objects must stay invisible to ``user``."""
    return UserFactory()


@pytest.fixture
def staff_user(db):
    """A staff superuser, for the admin."""
    return UserFactory(is_staff=True, is_superuser=True)


@pytest.fixture
def api_client(user):
    """An API client authenticated as ``user``."""
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture(scope="session", autouse=True)
def clean_redis():
    """Start from an empty test Redis database: no queued tasks, claims or slot leases
    left behind by an earlier run."""
    import redis
    from django.conf import settings

    redis.Redis.from_url(settings.REDIS_URL).flushdb()
