"""Authentication: expiring API tokens, login throttling, stream tokens out of access logs.

- API tokens (DRF's ``Token``) expire ``API_TOKEN_MAX_AGE_S`` after they were issued (30
  days by default): ``ExpiringTokenAuthentication`` refuses an older one with a 401, and
  ``token_issue`` replaces it. ``token_revoke`` deletes a user's token.
- A user's token is revoked when the user is saved with another password (the admin's
  form, ``changepassword``, ``set_password`` or ``set_unusable_password`` and a save,
  a hash written by hand) or deactivated: a token outlives neither, reactivation
  included. Django's upgrade of the hash of the same password at a login (its
  ``check_password`` saving only ``password``, with no new password set) is not a
  change. A queryset ``update()`` of the users table sends no signal: it revokes
  nothing.
- With a shared cache (``CACHE_SHARED``), a token read from the database is kept there
  with its user (read without the password hash) for ``TOKEN_CACHE_S``: a request
  authenticates with no query. When a
  token is deleted (revoked, replaced, its user deleted) or its user saved, its entry is
  replaced at once and on commit by a mark that sends every request with it to the
  database for ``TOKEN_CACHE_S``; an entry is only ever added where none is
  (``cache.add``), so a read that raced the change cannot bring the old token back.
- Logins are throttled by django-axes on every door that checks a password (the token
  endpoint, the arena's ``/login/`` and the admin's): ``AXES_FAILURE_LIMIT`` failures for
  one user name from one address within ``AXES_COOLOFF_TIME`` lock that pair out, and
  ``LOGIN_USER_FAILURE_LIMIT`` failures for one user name from any addresses lock the
  name out (``LoginAttempts``), so that no change of address gets more tries. Every
  further try, right or wrong, extends the lock. ``lockout_response`` answers a
  locked-out try with 429 and ``Retry-After`` (JSON under ``/api/``, a page elsewhere).
- The address counted is the one the ASGI server gives (``client_address``): the peer's,
  or, from a proxy named in ``FORWARDED_ALLOW_IPS`` (uvicorn's ``--forwarded-allow-ips``,
  none by default), the client's it names in ``X-Forwarded-For``. No header is read here,
  so a client cannot name itself another address.
- The login pages' forms (``LoginForm``, ``AdminLoginForm``) refuse a user name longer
  than the user model's before it is checked: Django's ``AuthenticationForm`` shows the
  limit but does not enforce it, and django-axes would record the failure of a name its
  own table cannot hold (a database error, not a refused login).
- A stream token travels in ``?token=`` (an ``EventSource`` sends no headers), and the
  ASGI server writes each request's query string to its access log:
  ``RedactQueryTokens`` masks it there.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from datetime import datetime, timedelta
from typing import Any

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username, get_cool_off
from axes.models import AccessAttempt
from axes.signals import user_locked_out
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.validators import MaxLengthValidator
from django.db import transaction
from django.db.models import Sum
from django.db.models.signals import post_delete, post_save, pre_save
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from arena.fields import mask_secret

API_PREFIX = "/api/"


def token_max_age() -> timedelta:
    """Return how long an API token is valid after it was issued."""
    return timedelta(seconds=settings.API_TOKEN_MAX_AGE_S)


def token_expires_at(token: Token) -> datetime:
    """Return the instant ``token`` stops being accepted."""
    return token.created + token_max_age()


def token_issue(*, user: Any) -> Token:
    """Return the user's API token, a new one when it has none or it has expired."""
    with transaction.atomic():
        token = Token.objects.select_for_update().filter(user=user).first()
        if token is not None and token_expires_at(token) > timezone.now():
            return token
        if token is not None:
            token.delete()
        return Token.objects.create(user=user)


def token_revoke(*, user: Any) -> bool:
    """Delete the user's API token; say whether there was one."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return deleted > 0


# How long a token read from the database is kept in the shared cache, and how long a
# change to it or its user sends the requests with it to the database.
TOKEN_CACHE_S = 300
_CHANGED = "changed"


def _token_cache_key(key: str) -> str:
    # Named by its digest: a listing of the cache's keys shows no token.
    return "api-token:" + hashlib.sha256(key.encode()).hexdigest()


class ExpiringTokenAuthentication(TokenAuthentication):
    """DRF's token authentication, refusing tokens older than ``API_TOKEN_MAX_AGE_S``,
    through the shared cache when there is one (see the module docstring)."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Token]:
        user, token = self._stored_credentials(key)
        if token_expires_at(token) <= timezone.now():
            raise exceptions.AuthenticationFailed(
                "The token has expired; ask POST /api/auth/token for a new one."
            )
        return user, token

    def _stored_credentials(self, key: str) -> tuple[Any, Token]:
        if not settings.CACHE_SHARED:
            return super().authenticate_credentials(key)
        cache_key = _token_cache_key(key)
        stored = cache.get(cache_key)
        if isinstance(stored, Token):
            return stored.user, stored
        # The user is read without its password hash, which the cache never holds (a
        # save of an instance with a deferred field writes only the fields it loaded).
        token = Token.objects.select_related("user").defer("user__password").filter(key=key).first()
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        if stored is None:  # not while a change's mark is there
            cache.add(cache_key, token, TOKEN_CACHE_S)
        return token.user, token


def _mark_changed(keys: list[str]) -> None:
    """Replace the cache entries of the tokens ``keys`` by the mark of a change, now and
    again on commit (a mark only sends requests to the database: one left by a change
    rolled back costs nothing but queries)."""
    if settings.CACHE_SHARED and keys:
        marks = {_token_cache_key(key): _CHANGED for key in keys}
        cache.set_many(marks, TOKEN_CACHE_S)
        transaction.on_commit(lambda: cache.set_many(marks, TOKEN_CACHE_S))


def _token_deleted(sender: Any, instance: Token, **kwargs: Any) -> None:
    _mark_changed([instance.key])


def _user_saved(sender: Any, instance: Any, created: bool = False, **kwargs: Any) -> None:
    if settings.CACHE_SHARED and not created:
        _mark_changed(list(Token.objects.filter(user_id=instance.pk).values_list("key", flat=True)))


def _credentials_changed(user: Any, stored: tuple[str, bool], update_fields: Any) -> bool:
    """Say whether saving ``user`` over its ``stored`` (password hash, active) takes a
    credential away: another password, or a deactivation."""
    password, active = stored
    if active and not user.is_active:
        return True
    if user.password == password:
        return False
    upgraded = user._password is None and update_fields == {"password"}
    return not upgraded


def _user_saving(
    sender: Any, instance: Any, raw: bool = False, update_fields: Any = None, **kwargs: Any
) -> None:
    """Revoke the API token of a user saved with another password or deactivated."""
    if raw or instance.pk is None:
        return
    if update_fields is not None and not {"password", "is_active"} & set(update_fields):
        return
    stored = sender.objects.filter(pk=instance.pk).values_list("password", "is_active").first()
    if stored is not None and _credentials_changed(instance, stored, update_fields):
        token_revoke(user=instance)


def connect_token_signals() -> None:
    """Keep the tokens and the cached tokens current: called once, when the apps are
    ready."""
    user_model = get_user_model()
    post_delete.connect(_token_deleted, sender=Token, dispatch_uid="arena.auth.token_deleted")
    pre_save.connect(_user_saving, sender=user_model, dispatch_uid="arena.auth.user_saving")
    post_save.connect(_user_saved, sender=user_model, dispatch_uid="arena.auth.user_saved")


class UsernameMaxLengthMixin:
    """Refuse a user name over the user model's length as an error of the field, so
    that no password check (and no failure recorded by django-axes) happens for it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["username"]
        field.validators.append(MaxLengthValidator(field.max_length))


class LoginForm(UsernameMaxLengthMixin, AuthenticationForm):
    """The arena's login form (``/login/``)."""


class AdminLoginForm(UsernameMaxLengthMixin, AdminAuthenticationForm):
    """The admin's login form (``/admin/login/``)."""


def _token_name(token: Token) -> str:
    return mask_secret(token.key)


def mask_token_names() -> None:
    """Name a token by its masked key (called once, when the apps are ready): DRF names it
    by its key, which the admin shows wherever it names an object, such as the related
    objects listed before a user is deleted."""
    Token.__str__ = _token_name  # type: ignore[method-assign]


def client_address(request: HttpRequest) -> str | None:
    """Return the client's address as the ASGI server gave it (``REMOTE_ADDR``), which
    believes ``X-Forwarded-For`` only from the proxies named in ``FORWARDED_ALLOW_IPS``:
    the address django-axes counts failed logins of."""
    return request.META.get("REMOTE_ADDR")


class LoginAttempts(AxesDatabaseHandler):
    """django-axes' handler, also locking a user name out once it has failed
    ``LOGIN_USER_FAILURE_LIMIT`` times within the cool-off, from any addresses."""

    def is_locked(self, request: Any, credentials: dict | None = None) -> bool:
        return super().is_locked(request, credentials) or self._name_locked(request, credentials)

    def user_login_failed(
        self, sender: Any, credentials: dict, request: Any = None, **kwargs: Any
    ) -> None:
        super().user_login_failed(sender, credentials, request=request, **kwargs)
        if request is None or request.axes_locked_out:
            return
        if self._name_locked(request, credentials):
            request.axes_locked_out = True
            request.axes_credentials = credentials
            user_locked_out.send(
                "axes",
                request=request,
                username=get_client_username(request, credentials),
                ip_address=request.axes_ip_address,
            )

    def _name_locked(self, request: Any, credentials: dict | None) -> bool:
        username = get_client_username(request, credentials)
        if username is None:
            return False
        attempts = AccessAttempt.objects.filter(
            username=username, attempt_time__gte=get_cool_off_threshold(request)
        )
        failures = attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0
        return failures >= settings.LOGIN_USER_FAILURE_LIMIT


def retry_after_s(request: HttpRequest) -> int:
    """Return the seconds until a locked-out pair may try again: the whole cool-off,
    since the try being answered extended the lock."""
    cool_off = get_cool_off(request)
    return math.ceil(cool_off.total_seconds()) if cool_off else 0


def lockout_response(
    request: HttpRequest, original_response: Any = None, credentials: Any = None
) -> HttpResponse:
    """Answer a locked-out login: 429 with ``Retry-After``, JSON under ``/api/``."""
    retry_after = retry_after_s(request)
    message = f"Too many failed logins; try again in {math.ceil(retry_after / 60)} minutes."
    if request.path.startswith(API_PREFIX):
        body = {"code": "too_many_attempts", "message": message, "fields": {}}
        response: HttpResponse = JsonResponse(body, status=429)
    else:
        response = render(request, "web/locked_out.html", {"message": message}, status=429)
    response["Retry-After"] = str(retry_after)
    return response


# ``token=<value>`` in a query string, up to the next ``&`` (or the end).
_QUERY_TOKEN = re.compile(r"(?<=[?&]token=)[^&\s]+")


class RedactQueryTokens(logging.Filter):
    """Mask ``token=`` values in the request lines of an access log (uvicorn's)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                _QUERY_TOKEN.sub("[redacted]", arg) if isinstance(arg, str) else arg
                for arg in record.args
            )
        elif isinstance(record.msg, str):
            record.msg = _QUERY_TOKEN.sub("[redacted]", record.msg)
        return True


def redact_access_log() -> None:
    """Mask stream tokens in the ASGI server's access log (called once per web process)."""
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactQueryTokens) for f in access.filters):
        access.addFilter(RedactQueryTokens())
