"""Settings shared by every environment, read from the process environment.

With nothing set, the service runs on the embedded default: SQLite, no Redis (an
in-memory Celery broker with an in-process worker, in-process SSE delivery), the
simulated model provider, the bundled dataset and a paper exchange. ``DATABASE_URL``
and ``REDIS_URL`` switch to PostgreSQL and Redis.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from kombu import Exchange, Queue

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(os.environ.get("ARENA_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool = False) -> bool:
    """Return the boolean value of environment variable ``name``."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    """Return the integer value of environment variable ``name``."""
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


def env_list(name: str, default: str = "") -> list[str]:
    """Return the comma-separated values of environment variable ``name``."""
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


SECRET_KEY = os.environ.get("SECRET_KEY", "")
# Fernet keys (urlsafe base64, 32 bytes), comma-separated: the first encrypts, all decrypt.
FIELD_ENCRYPTION_KEYS = env_list("FIELD_ENCRYPTION_KEY")
DEBUG = env_bool("DEBUG")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "django_eventstream",
    "axes",
    "arena",
    "strategies",
    "traders",
    "debates",
    "evaluations",
    "backtests",
    "ops",
    "web",
]

MIDDLEWARE = [
    "arena.middleware.ApiErrorsAsJson",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, so that it sees the answer of a locked-out login and replaces it (a 429).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "arena.urls"
ASGI_APPLICATION = "arena.asgi.application"
WSGI_APPLICATION = "arena.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Connections are not kept by default: under ASGI each request runs in a thread of its
# own, and kept connections would pile up with the threads. On PostgreSQL they are taken
# from a pool instead (psycopg_pool, at most DB_POOL_MAX_SIZE per process): a request
# no longer opens a connection of its own (a new server process each time). Celery
# workers, one thread per process, keep theirs (DB_CONN_MAX_AGE=60 in the Procfile).
# Either way a connection lives on, so PostgreSQL keeps the plan of each statement run
# on it again (psycopg's prepared statements, which need its parameters bound by the
# server): a debate's steps run the same few statements over and over, and planning
# them was half the server's work.
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'arena.sqlite3'}",
        conn_max_age=env_int("DB_CONN_MAX_AGE", 0),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["OPTIONS"] = {"server_side_binding": True, "prepare_threshold": 2}
    if not DATABASES["default"]["CONN_MAX_AGE"]:
        DATABASES["default"]["OPTIONS"]["pool"] = {
            "min_size": 1,
            "max_size": env_int("DB_POOL_MAX_SIZE", 8),
        }
elif DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Worker threads and the web process share one file: wait for locks instead of failing.
    DATABASES["default"]["OPTIONS"] = {"timeout": 30, "transaction_mode": "IMMEDIATE"}
    # The file's directory (``var/`` by default) is made on first use: a fresh clone has none.
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# django-axes checks first whether a user name and address are locked out (arena.auth).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"

# --- Redis: Celery broker and results, SSE fan-out, the model-call semaphore -------------
REDIS_URL = os.environ.get("REDIS_URL", "")

# Django's own cache. The project's Redis state (model slots, step claims) keeps its own
# keys and clients, in process memory without Redis.
CACHES = {
    "default": (
        {"BACKEND": "arena.cache.RedisCache", "LOCATION": REDIS_URL}
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}
# Whether every process reads what another wrote to the cache at once (Redis): only then
# are channel versions (arena.sse) and API tokens (arena.auth) kept there. Without Redis
# the cache is each process's own and they are read from the database.
CACHE_SHARED = bool(REDIS_URL)

# --- Celery -------------------------------------------------------------------------------
# The in-memory broker has no host; naming one keeps kombu from warning that none was given.
CELERY_BROKER_URL = REDIS_URL or "memory://localhost/"
# kombu's in-memory transport polls its queues once a second; this one wakes the
# in-process worker as each message arrives (arena.broker).
CELERY_BROKER_TRANSPORT = None if REDIS_URL else "arena.broker:InProcessTransport"
# Celery's Redis result backend, tracking a result only while something waits for it
# (arena.celery.RedisResults).
CELERY_RESULT_BACKEND = f"arena.celery:RedisResults+{REDIS_URL}" if REDIS_URL else "cache+memory://"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TIMEZONE = TIME_ZONE
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 300)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 240)
CELERY_RESULT_EXPIRES = 24 * 3600
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # Longer than the longest task plus its countdown, so a slow task is never run twice.
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 900),
    # Restore the unacked messages of a dead worker within about 30 s (kombu sweeps on
    # every interval, throttled): the crash-recovery target of SPEC 13.
    "unacked_restore_throttle": 0.5,
}
# Celery's Django fixup closes a worker's database connection around every task unless
# it is told how many tasks may share one; a new PostgreSQL connection costs a backend
# process, about 10 ms a step. Workers keep theirs for this many tasks, and within
# CONN_MAX_AGE: arena.celery drops old or broken connections before each task, as Django
# does before each request.
CELERY_DB_REUSE_MAX = env_int("CELERY_DB_REUSE_MAX", 1000)
# Seconds an active debate may go without progress before the watchdog deems it stale
# and resumes it from its stored steps (its steps were lost: a dead worker, a Redis
# restart that emptied the queues). The watchdog looks every third of it, in whole
# seconds (beat's database scheduler stores its intervals as integers).
DEBATE_STALE_AFTER_S = env_int("DEBATE_STALE_AFTER_S", 45)
# The trading app's reader of a debate's book, which the prepare step of a debate with a
# trader calls (the debates app imports nothing of trading).
DEBATE_BOOK_READER = "traders.books.debate_book"
# The evaluations app's reader of each voter's track record, read with a debate's book.
DEBATE_TRACK_RECORD_READER = "evaluations.selectors.track_records"
# Seconds an execution's lease outlives the worker submitting it (renewed every quarter
# of it while the worker works): how long an execution whose worker died waits before
# it is submitted again, which first looks up what already reached the exchange. Its
# watchdog looks every third of it.
EXECUTION_LEASE_S = env_int("EXECUTION_LEASE_S", 20)
# Backtests: seconds between the ticks of a run (each starts debates and counts those
# that ended); debates of one backtest running at once; seconds a run's ticks may stop
# before the watchdog gives it a new chain; backtests a user may run at once.
BACKTEST_TICK_S = float(os.environ.get("BACKTEST_TICK_S", "0.5"))
BACKTEST_DEBATES_IN_FLIGHT = env_int("BACKTEST_DEBATES_IN_FLIGHT", 6)
BACKTEST_STALE_AFTER_S = env_int("BACKTEST_STALE_AFTER_S", 15)
# Seconds between two looks for the turns and votes of human seats whose time ran out.
HUMAN_STEPS_EXPIRE_EVERY_S = float(os.environ.get("HUMAN_STEPS_EXPIRE_EVERY_S", "15"))
# Seconds between two reconciliations of each running exchange trader with its exchange.
RECONCILE_EVERY_S = float(os.environ.get("RECONCILE_EVERY_S", "60"))
# Seconds between two heartbeats of beat; /readyz deems beat down after two missed.
BEAT_HEARTBEAT_S = env_int("BEAT_HEARTBEAT_S", 15)
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BEAT_SCHEDULE = {
    # The watchdog of debates (DEBATE_STALE_AFTER_S).
    "debates-resume-stale": {
        "task": "debates.resume_stale",
        "schedule": max(1, DEBATE_STALE_AFTER_S // 3),
    },
    # ... and unfinished executions that no live worker holds.
    "traders-executions-resume-stale": {
        "task": "traders.executions_resume_stale",
        "schedule": max(1, EXECUTION_LEASE_S // 3),
    },
    # ... and backtests whose tick chain stopped.
    "backtests-resume-stale": {
        "task": "backtests.resume_stale",
        "schedule": max(1, BACKTEST_STALE_AFTER_S // 3),
    },
    # ... and the turns and votes of human seats whose time ran out (debates.services.human).
    "debates-human-steps-expire": {
        "task": "debates.human_steps_expire",
        "schedule": HUMAN_STEPS_EXPIRE_EVERY_S,
    },
    # Automatic executions awaiting approval past their deadline, or gone stale, lapse.
    "traders-executions-lapse": {"task": "traders.executions_lapse", "schedule": 60.0},
    # Exchange accounts: the local book reconciled with the exchange (traders.services.reconcile).
    "traders-reconcile": {"task": "traders.reconcile_all", "schedule": RECONCILE_EVERY_S},
    # Paper trading: fill the stops and targets that prices crossed since the last sweep.
    "traders-paper-check-stops": {"task": "traders.paper_check_stops", "schedule": 60.0},
    # Outcome reviews of the debates whose horizon has passed (evaluations.services).
    "evaluations-reviews-due": {"task": "evaluations.reviews_due", "schedule": 60.0},
    # The beat's heartbeat, which /readyz reads (ops.services); one that waited in the
    # queue past the next is dropped (django-celery-beat's name of Celery's ``expires``).
    "ops-beat-heartbeat": {
        "task": "ops.beat_heartbeat",
        "schedule": BEAT_HEARTBEAT_S,
        "options": {"expire_seconds": BEAT_HEARTBEAT_S},
    },
}
# A debate's steps go out with a priority from their owner's load, so a light user's are
# taken off the queue before a heavy user's backlog (debates.routing).
CELERY_TASK_ROUTES = ("debates.routing.route_step",)
# The steps that call a model go to a queue of their own (debates.routing), served by the
# call workers, each a pool of MODEL_CALL_THREADS threads: waiting on a provider costs a
# thread there, not one of the step workers' processes. A worker started without
# `--queues` serves both, as the in-process worker of the embedded default does.
CELERY_TASK_DEFAULT_QUEUE = "celery"
MODEL_CALL_QUEUE = "calls"
CELERY_TASK_QUEUES = [
    Queue(name, Exchange(name), routing_key=name)
    for name in (CELERY_TASK_DEFAULT_QUEUE, MODEL_CALL_QUEUE)
]
# Embedded default: run a worker thread inside the process that enqueues the work.
CELERY_IN_PROCESS_WORKER = not REDIS_URL

# The consensus weightings that read more than the ballots: weighting -> the function
# returning each voter's multiplier for a debate (debates.services.consensus).
CONSENSUS_VOTER_WEIGHTS = {"calibrated": "evaluations.selectors.calibrated_voter_weights"}

# --- Model calls --------------------------------------------------------------------------
# Model calls in flight at once across every worker, and the most of them one user's
# debates may have (the others keep the rest, whatever that user's models do); while a
# user's calls hang, only as many more of them wait for a slot (debates.providers.slots).
MODEL_CALL_CAP = env_int("MODEL_CALL_CAP", 6)
MODEL_CALLS_PER_USER = env_int("MODEL_CALLS_PER_USER", 3)
# Threads of a call worker (the Procfile's `calls`, MODEL_CALL_QUEUE), and of the
# in-process worker of the embedded default.
MODEL_CALL_THREADS = env_int("MODEL_CALL_THREADS", 12)
MODEL_SLOT_KEY = os.environ.get("MODEL_SLOT_KEY", "arena:model-slots")
# Seconds a debate step's claim and model slot outlive their holder (both renewed every
# third of it while the step runs, which marks its debate alive): how long a step killed
# with its worker blocks a resume of its debate, and holds one of the MODEL_CALL_CAP
# slots. Keep a third of it well under DEBATE_STALE_AFTER_S.
STEP_CLAIM_TTL_S = env_int("STEP_CLAIM_TTL_S", 15)
# Seconds the simulated model takes per answer, so a demo can be watched as it happens.
SIMULATED_MODEL_LATENCY_S = float(os.environ.get("SIMULATED_MODEL_LATENCY_S", "0"))

# --- Health and metrics (ops) ------------------------------------------------------------
# /metrics answers staff sessions and ``Authorization: Bearer <METRICS_TOKEN>`` (when
# set); METRICS_PUBLIC opens it to anyone who reaches it.
METRICS_PUBLIC = env_bool("METRICS_PUBLIC")
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
# The Redis key prefix of the counts every process adds to (arena.metrics) and of the
# beat's heartbeat.
METRICS_KEY = os.environ.get("METRICS_KEY", "arena:metrics")
# Seconds each dependency /readyz checks may take to answer.
READYZ_TIMEOUT_S = env_int("READYZ_TIMEOUT_S", 3)

# --- Per-user quotas (debates.quotas); staff are exempt ---------------------------------
QUOTA_ACTIVE_DEBATES = env_int("QUOTA_ACTIVE_DEBATES", 10)
QUOTA_STARTS_PER_HOUR = env_int("QUOTA_STARTS_PER_HOUR", 100)
QUOTA_SCHEDULES = env_int("QUOTA_SCHEDULES", 20)
QUOTA_RUNNING_BACKTESTS = env_int("QUOTA_RUNNING_BACKTESTS", 1)

# --- Outbound calls -----------------------------------------------------------------------
# Internal addresses (loopback, private, link-local, ...) the service may call anyway
# (arena.outbound): networks or addresses, each optionally with a port, comma-separated,
# e.g. "127.0.0.1:11434" for a local Ollama. Production allows none by default.
OUTBOUND_ALLOWED_ADDRESSES = env_list("OUTBOUND_ALLOWED_ADDRESSES")

# --- Market data --------------------------------------------------------------------------
# Base URL replacing the live exchange's API host (a local fake exchange in tests).
MARKET_LIVE_API_URL = os.environ.get("MARKET_LIVE_API_URL", "")

# Base URL replacing ccxt traders' exchange API host (a local fake exchange in tests).
TRADER_EXCHANGE_API_URL = os.environ.get("TRADER_EXCHANGE_API_URL", "")

# --- Server-sent events -------------------------------------------------------------------
# Events are stored in the database (ids, replay after a reconnect; they outlive a Redis
# restart) and, with REDIS_URL, fanned out to every web process through Redis pub/sub.
# Streams read storage through SSE_DB_THREADS shared threads per web process: open
# streams hold no connection of their own (arena.sse).
EVENTSTREAM_STORAGE_CLASS = "arena.sse_storage.EventStorage"
if REDIS_URL:
    from redis.connection import parse_url as _parse_redis_url

    _redis = _parse_redis_url(REDIS_URL)
    EVENTSTREAM_REDIS = {
        "host": _redis.get("host", "127.0.0.1"),
        "port": _redis.get("port", 6379),
        "db": _redis.get("db", 0),
        **{key: _redis[key] for key in ("username", "password") if _redis.get(key)},
        **({"ssl": True} if REDIS_URL.startswith("rediss://") else {}),
    }
# The Redis pub/sub channel events reach every web process on (django-eventstream's name).
# Pub/sub ignores Redis database numbers: services sharing one Redis server need their own.
SSE_PUBSUB_CHANNEL = os.environ.get("SSE_PUBSUB_CHANNEL", "events_channel")
# Seconds of silence before a stream sends a keep-alive event (proxies close idle ones).
SSE_HEARTBEAT_SECONDS = float(os.environ.get("SSE_HEARTBEAT_SECONDS", "15"))
SSE_DB_THREADS = env_int("SSE_DB_THREADS", 4)
# Lifetime of a stream token (POST /api/debates/{id}/stream-token), in seconds.
SSE_TOKEN_MAX_AGE = env_int("SSE_TOKEN_MAX_AGE", 300)

# --- REST framework and OpenAPI -----------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "arena.auth.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": [
        "arena.renderers.JsonRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PAGINATION_CLASS": "arena.pagination.Pagination",
    "PAGE_SIZE": 20,
    "EXCEPTION_HANDLER": "arena.exceptions.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Debate Arena API",
    "DESCRIPTION": "AI models debate a crypto market and reach a consensus trade decision.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from the project's own static files: the docs page works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Several models have a "status" or "exchange" with different choices: name each set.
    "ENUM_NAME_OVERRIDES": {
        "DebateStatusEnum": "debates.models.DebateStatus",
        "StepStatusEnum": "debates.models.StepStatus",
        "PlanStepStatusEnum": "debates.engine.plan.STEP_STATUSES",
        "TraderStatusEnum": "traders.models.TraderStatus",
        "ExecutionStatusEnum": "traders.models.ExecutionStatus",
        "OrderStatusEnum": "traders.models.OrderStatus",
        "PositionStatusEnum": "traders.models.PositionStatus",
        "TraderExchangeEnum": "traders.models.Exchange",
        "BacktestStatusEnum": "backtests.models.BacktestStatus",
        "JudgeCallKindEnum": "debates.models.JudgeCallKind",
        "SeatKindEnum": "debates.models.SeatKind",
        "PersonalityEnum": "debates.models.Personality",
        "ModelSeatKindEnum": "debates.services.inputs.MODEL_SEAT_KINDS",
        "WeightingEnum": "debates.models.Weighting",
        "TemplateWeightingEnum": "debates.services.inputs.TEMPLATE_WEIGHTINGS",
        "PricedProviderEnum": "debates.services.spend_settings.PRICED_PROVIDERS",
    },
}

# --- Browser security headers --------------------------------------------------------------
# Every page loads scripts, styles and data from this origin only, and runs no inline
# script (the arena page's data is a JSON block, which is not executed); the Swagger UI
# page keeps one inline style block of its own (arena.urls).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# --- Authentication: token lifetime, login throttling (arena.auth) -------------------------
# Seconds an API token is accepted after it was issued; POST /api/auth/token then issues
# a new one.
API_TOKEN_MAX_AGE_S = env_int("API_TOKEN_MAX_AGE_S", 30 * 24 * 3600)
# Failed logins of one user name from one address (the token endpoint, /login/, the
# admin) within the cool-off lock that pair out until the cool-off passes with no try;
# failures of one user name from any addresses lock the name out at a higher limit.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
LOGIN_USER_FAILURE_LIMIT = env_int("LOGIN_USER_FAILURE_LIMIT", 50)
AXES_COOLOFF_TIME = timedelta(seconds=env_int("LOGIN_COOLOFF_S", 15 * 60))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_HANDLER = "arena.auth.LoginAttempts"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "arena.auth.lockout_response"
# The address is the ASGI server's, which believes X-Forwarded-For only from the proxies
# in FORWARDED_ALLOW_IPS (passed to uvicorn by the Procfile and docker compose).
AXES_CLIENT_IP_CALLABLE = "arena.auth.client_address"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "filters": {"quiet_watchdogs": {"()": "arena.logfilters.QuietWatchdogs"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # httpx logs request lines at INFO; keep them out of the normal output.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        # django-axes announces its settings when each process starts.
        "axes.apps": {"level": "WARNING"},
        # The watchdogs and sweeps of CELERY_BEAT_SCHEDULE: INFO only when they act.
        **{
            name: {"filters": ["quiet_watchdogs"]}
            for name in ("celery.beat", "celery.worker.strategy", "celery.app.trace")
        },
    },
}
