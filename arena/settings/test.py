"""Test settings: the real PostgreSQL and Redis of the machine, never SQLite.

Under pytest-xdist (``make test`` runs several workers) each worker process gets a
database and a Redis database of its own, so the workers never see each other's rows,
queued tasks, claims or events:

- PostgreSQL: pytest-django adds the worker's id to the test database's name
  (``test_arena_gw0``, ``test_arena_gw1``, ...).
- Redis: worker ``gwN`` uses the database numbered ``REDIS_URL``'s plus N (2, 3, 4, ...
  by default); ``TEST_SPARE_REDIS_URL`` is the one after the last worker's, for a test
  that needs a Redis database no worker uses (the README's full stack).

The resolved values are written back to the environment, so a process a test starts
(a Celery worker, uvicorn, ``manage.py``) inherits this worker's Redis, not the first.
"""

import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/arena")
# Dedicated Redis databases, so tests never touch a developer's data (database 0) or the
# benchmarks' (11 and 12, bench/common.py): 2 to 9 for up to 8 workers, then the spare.
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/2")

_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
_server, _number = os.environ["REDIS_URL"].rsplit("/", 1)
# A process started by an xdist worker inherits both variables and must not move again.
if _worker and os.environ.get("ARENA_TEST_WORKER") != _worker:
    _first = int(_number)
    os.environ["REDIS_URL"] = f"{_server}/{_first + int(_worker.removeprefix('gw'))}"
    os.environ["ARENA_TEST_WORKER"] = _worker
    os.environ["TEST_SPARE_REDIS_URL"] = f"{_server}/{_first + _workers}"
os.environ.setdefault("TEST_SPARE_REDIS_URL", f"{_server}/{int(_number) + 1}")

from .local import *  # noqa: E402, F403

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_IN_PROCESS_WORKER = False
# Redis keys are per database, so this key is already the worker's own.
MODEL_SLOT_KEY = "arena-test:model-slots"
METRICS_KEY = "arena-test:metrics"
# Redis pub/sub ignores database numbers: the channel names the database, so a worker (or
# another suite) on another database hears only its own events.
SSE_PUBSUB_CHANNEL = f"events_channel:{REDIS_URL.rsplit('/', 1)[-1]}"  # noqa: F405
TEST_SPARE_REDIS_URL = os.environ["TEST_SPARE_REDIS_URL"]
# Separate test databases let several suites run side by side on one machine.
DATABASES["default"]["TEST"] = {"NAME": os.environ.get("TEST_DATABASE_NAME", "test_arena")}  # noqa: F405
