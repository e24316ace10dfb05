"""Celery tasks of evaluations: thin, idempotent interfaces to the services."""

from __future__ import annotations

from celery import shared_task

from evaluations import services


@shared_task(name="evaluations.reviews_due", soft_time_limit=240, time_limit=300)
def reviews_due_task() -> list[int]:
    """Review the debates whose horizon has passed (beat); return the debates reviewed."""
    return services.reviews_due()
