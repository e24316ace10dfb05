"""ASGI entry point, served by uvicorn: SSE streams hold their connections open."""

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.settings.local")

application = get_asgi_application()

from arena.auth import redact_access_log  # noqa: E402 - needs the settings loaded

# Stream tokens travel in query strings, which the server's access log writes out.
redact_access_log()

# Everything loaded so far lives as long as the process: keep it out of the garbage
# collector's full passes, which otherwise pause every open stream of the process for
# 70-150 ms (measured by bench/sse.py).
gc.freeze()
