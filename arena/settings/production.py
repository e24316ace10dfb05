"""Production settings: every secret comes from the environment, or the process stops."""

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F403
from .base import FIELD_ENCRYPTION_KEYS, SECRET_KEY, env_bool, env_int

if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set in production.")
if not FIELD_ENCRYPTION_KEYS:
    raise ImproperlyConfigured(
        "FIELD_ENCRYPTION_KEY must be set in production (a Fernet key: python -c "
        "'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')."
    )

DEBUG = False
# The scheme is the one uvicorn gives: X-Forwarded-Proto counts only from the proxies
# named in FORWARDED_ALLOW_IPS (the Procfile's web command), so Django reads no header
# of its own (SECURE_PROXY_SSL_HEADER would believe it from anyone).
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
# Probes and Prometheus call the web process directly, over plain HTTP inside the
# deployment's network, with no proxy to say the scheme: not redirected.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
