"""Settings of the embedded default with kombu's own in-memory transport instead of
``arena.broker``'s, for ``bench.backtest`` to measure what the project's one removes."""

from arena.settings.local import *  # noqa: F403

CELERY_BROKER_TRANSPORT = None
