"""A worker's pool process keeps what it loaded at its start out of the garbage
collector's full passes, which would otherwise walk about 163,000 objects (over 100 ms)
in the middle of whatever step the process runs."""

import gc

from celery.signals import worker_process_init


def test_a_pool_process_freezes_what_it_has_loaded_once_started():
    # given a process with the project's tasks loaded and nothing frozen
    import arena.celery  # noqa: F401 - connects the worker's signal handlers
    import debates.tasks  # noqa: F401

    gc.unfreeze()
    try:
        # when it starts as a worker's pool process
        worker_process_init.send(sender=None)
        # then what it holds is kept out of the collector's passes
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()
