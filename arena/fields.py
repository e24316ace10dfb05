"""Encrypted model fields: secrets are stored as Fernet tokens, never in the clear."""

from __future__ import annotations

from functools import cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models

TOKEN_PREFIX = "fernet:"  # noqa: S105 - a format marker, not a secret


@cache
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    if not keys:
        raise ImproperlyConfigured("FIELD_ENCRYPTION_KEY is not set.")
    return MultiFernet([Fernet(key.encode()) for key in keys])


def encrypt(value: str) -> str:
    """Return the stored form of ``value`` (encrypted with the first configured key)."""
    token = _fernet(tuple(settings.FIELD_ENCRYPTION_KEYS)).encrypt(value.encode())
    return TOKEN_PREFIX + token.decode()


def decrypt(stored: str) -> str:
    """Return the plain value of a stored token (any configured key may have made it)."""
    if not stored.startswith(TOKEN_PREFIX):
        raise ImproperlyConfigured("An encrypted column holds a value that is not a token.")
    try:
        plain = _fernet(tuple(settings.FIELD_ENCRYPTION_KEYS)).decrypt(
            stored[len(TOKEN_PREFIX) :].encode()
        )
    except InvalidToken as exc:
        raise ImproperlyConfigured(
            "A stored secret cannot be decrypted with the configured FIELD_ENCRYPTION_KEY."
        ) from exc
    return plain.decode()


MASK_PLACEHOLDER = "****"
MASK_HEAD, MASK_TAIL = 3, 4
MASK_SHARE = 4  # a mask shows at most one character in this many


def mask_secret(value: str) -> str:
    """Return a masked form that is safe to show, such as ``sk-...abcd``.

    A mask shows at most a quarter of the secret: its last four characters from 16
    characters on, also its first three from 28 on; a shorter secret shows only
    ``MASK_PLACEHOLDER``, whatever its length.
    """
    if not value:
        return ""
    if len(value) < MASK_TAIL * MASK_SHARE:
        return MASK_PLACEHOLDER
    long_enough = len(value) >= (MASK_HEAD + MASK_TAIL) * MASK_SHARE
    head = value[:MASK_HEAD] if long_enough and value[:MASK_HEAD].isascii() else ""
    return f"{head}...{value[-MASK_TAIL:]}"


class EncryptedTextField(models.TextField):
    """A text column whose value is encrypted at rest; empty stays empty."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> str:
        if value is None or value == "":
            return "" if value == "" else value
        return decrypt(value)

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return encrypt(value)
