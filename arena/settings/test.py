"""Test settings: the real PostgreSQL and Redis of the machine, never SQLite."""

import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/arena")
# A dedicated Redis database, so tests never touch a developer's data.
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/14")

from .local import *  # noqa: F403

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_IN_PROCESS_WORKER = False
MODEL_SLOT_KEY = "arena-test:model-slots"
# Separate test databases let several suites run side by side on one machine.
# Redis pub/sub ignores database numbers: a suite on another database hears only its own.
SSE_PUBSUB_CHANNEL = f"events_channel:{REDIS_URL.rsplit('/', 1)[-1]}"  # noqa: F405
DATABASES["default"]["TEST"] = {"NAME": os.environ.get("TEST_DATABASE_NAME", "test_arena")}  # noqa: F405
