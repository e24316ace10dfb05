"""Settings for a developer machine and the embedded default (``make demo``)."""

import base64
import hashlib

from .base import *  # noqa: F403
from .base import FIELD_ENCRYPTION_KEYS, env_bool, env_list

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = SECRET_KEY or "local-development-key-not-for-production"  # noqa: F405
# A stable local key so a developer's stored secrets survive restarts; production
# refuses to start without an explicit FIELD_ENCRYPTION_KEY.
FIELD_ENCRYPTION_KEYS = FIELD_ENCRYPTION_KEYS or [
    base64.urlsafe_b64encode(hashlib.sha256(SECRET_KEY.encode()).digest()).decode()
]
# The embedded default runs on one machine: its local servers (Ollama, a fake exchange)
# are on loopback.
OUTBOUND_ALLOWED_ADDRESSES = env_list("OUTBOUND_ALLOWED_ADDRESSES", "127.0.0.0/8,::1")
