"""The in-process Celery worker of the embedded default (no Redis, no worker process).

With ``REDIS_URL`` unset, Celery's broker is in memory, so a worker must live in the
process that enqueues the work. The first enqueue starts one worker thread with a
thread pool of ``MODEL_CALL_THREADS`` threads, which serves both queues the full stack
gives workers of their own (the steps' and the model calls'); it consumes the same
canvas as a real worker does.
"""

from __future__ import annotations

import threading

from celery import worker as celery_worker
from celery.canvas import Signature
from django.conf import settings
from django.db import transaction

from arena.celery import app

_lock = threading.Lock()
_worker: celery_worker.WorkController | None = None


class _InProcessWorker(celery_worker.WorkController):
    def __init__(self, *args, **kwargs) -> None:
        self.ready = threading.Event()
        super().__init__(*args, **kwargs)

    def on_consumer_ready(self, consumer) -> None:
        self.ready.set()


def ensure_in_process_worker(timeout_s: float = 30.0) -> celery_worker.WorkController:
    """Start the in-process worker thread unless it runs already; return it once ready."""
    global _worker
    with _lock:
        if _worker is None:
            app.set_current()
            worker = _InProcessWorker(
                app=app,
                concurrency=settings.MODEL_CALL_THREADS,
                pool="threads",
                loglevel="WARNING",
                hostname="in-process@arena",
                without_heartbeat=True,
                without_mingle=True,
                without_gossip=True,
            )
            threading.Thread(target=worker.start, name="celery-in-process", daemon=True).start()
            if not worker.ready.wait(timeout_s):
                raise RuntimeError("the in-process Celery worker did not start")
            _worker = worker
    return _worker


def send_on_commit(signature: Signature) -> None:
    """Send ``signature`` to the workers once the current transaction commits.

    In the embedded default the in-process worker is started first, so the work has a
    worker to run on.
    """

    def send() -> None:
        if settings.CELERY_IN_PROCESS_WORKER:
            ensure_in_process_worker()
        signature.apply_async()

    transaction.on_commit(send)
