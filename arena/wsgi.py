"""WSGI entry point (the admin and API work; SSE streams need the ASGI entry point)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.settings.local")

application = get_wsgi_application()
