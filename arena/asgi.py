"""ASGI entry point, served by uvicorn: SSE streams hold their connections open."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.settings.local")

application = get_asgi_application()
