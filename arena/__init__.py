"""Project configuration: settings, URLs, ASGI/WSGI entry points, Celery, the SSE door."""

from .celery import app as celery_app

__all__ = ["celery_app"]
