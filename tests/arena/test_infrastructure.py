"""The suite runs against the real services, never a stand-in."""

import redis
from django.conf import settings
from django.db import connection


def test_database_is_postgresql(db):
    # given the test settings / when a query runs / then it runs on PostgreSQL
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
    assert connection.vendor == "postgresql"


def test_redis_answers_ping():
    # given the configured Redis / when pinged / then it answers
    client = redis.Redis.from_url(settings.REDIS_URL)
    assert client.ping() is True
    assert settings.CELERY_BROKER_URL == settings.REDIS_URL


def test_redis_replies_are_parsed_by_hiredis():
    # given the Redis client library the broker, events, claims and slots use
    from redis.utils import HIREDIS_AVAILABLE

    # then it found the compiled reply parser, which it uses whenever it can
    assert HIREDIS_AVAILABLE is True
