"""The JSON body parser of every API operation.

DRF's own parser lets a body nested a thousand levels deep escape as a ``RecursionError``
(a 500), refuses ``NaN`` and ``Infinity`` without naming the field that holds them, and
reads a body of any size. This one reads at most ``DATA_UPLOAD_MAX_MEMORY_SIZE`` bytes
(413 ``body_too_large`` beyond), refuses nesting deeper than ``MAX_DEPTH`` (400 naming
the body) and names each field holding a non-finite number (400), all before a
serializer sees the data.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser
from rest_framework.renderers import JSONRenderer

from arena.exceptions import ApplicationError, ValidationError

# Deeper than any body of this API (a debate's participants are three levels down).
MAX_DEPTH = 32
BODY = "body"


class BodyTooLarge(ApplicationError):
    code = "body_too_large"
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE


class _NonFinite:
    """What ``NaN``, ``Infinity`` and ``-Infinity`` parse to, until they are refused."""

    def __init__(self, literal: str) -> None:
        self.literal = literal


def _path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def check_parsed(data: Any) -> None:
    """Raise ``ValidationError`` if ``data`` nests past ``MAX_DEPTH`` or holds a
    non-finite number; the fields are named as ``arena.inputs.flatten_errors`` names them."""
    refused: dict[str, list[str]] = {}
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, _NonFinite):
            name = path or BODY
            refused[name] = [f"Must be a finite number; {value.literal} is not valid JSON."]
        elif isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                raise ValidationError(fields={BODY: [f"Nested more than {MAX_DEPTH} levels deep."]})
            items = value.items() if isinstance(value, dict) else enumerate(value)
            stack.extend((item, _path(path, key), depth + 1) for key, item in items)
    if refused:
        raise ValidationError(fields=dict(sorted(refused.items())))


class JsonBodyParser(BaseParser):
    """Parse a JSON body of bounded size and depth, with finite numbers only.

    Not a subclass of DRF's ``JSONParser``: DRF reads the whole body of those into memory
    first, through Django's own size check (a ``RequestDataTooBig`` logged as an error).
    """

    media_type = "application/json"
    renderer_class = JSONRenderer

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(raw) > limit:
            raise BodyTooLarge(
                f"The body is larger than {limit} bytes.", fields={BODY: ["Too large."]}
            )
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            data = json.loads(raw.decode(encoding), parse_constant=_NonFinite)
        except RecursionError:
            raise ValidationError(
                fields={BODY: [f"Nested more than {MAX_DEPTH} levels deep."]}
            ) from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        check_parsed(data)
        return data
